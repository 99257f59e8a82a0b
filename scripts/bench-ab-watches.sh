#!/usr/bin/env bash
# The rows of scripts/bench-watches.sh that move with the watch registry, two syncd builds against
# each other in one run: rounds alternate between the builds (which goes first alternates too),
# each on a fresh database holding WATCHES idle watches on other prefixes (`syncctl bench
# watchers --distinct`, 250 per connection) while 4 connections × pipeline 16 put PUTS values of
# 100 B; prints each round's puts/s and syncd's CPU per put (from /proc), then the medians.
#
#   scripts/bench-ab-watches.sh OLD_SYNCD NEW_SYNCD [ROUNDS] [WATCHES] [PUTS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-6} watches=${4:-1000} puts=${5:-200000}
swift build -c release --product syncctl >/dev/null
syncctl="$(swift build -c release --show-bin-path)/syncctl"
work=$(mktemp -d /tmp/bench-ab-watches.XXXXXX)
pid="" holder=""
trap '[ -n "$holder" ] && kill $holder 2>/dev/null; [ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
. scripts/bench/ab-common.sh
cat >"$work/syncd.json" <<JSON
{ "logLevel": "warning", "limits": { "maxConnections": 4096, "maxConnectionsPerUser": 4096, "maxWatchesPerConnection": 1000 } }
JSON
for round in $(seq "$rounds"); do
    order="old new"
    [ $((round % 2)) -eq 0 ] && order="new old"
    for build in $order; do
        rm -rf "$work/db"* "$work/holder.out"
        "${!build}" --socket "$work/s" --database "$work/db" --config "$work/syncd.json" 2>>"$work/syncd.log" &
        pid=$!
        until "$syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.01; done
        "$syncctl" --socket "$work/s" bench watchers --connections $(((watches + 249) / 250)) --watches-per-connection 250 \
            --distinct --prefix w/ >"$work/holder.out" 2>/dev/null &
        holder=$!
        until grep -q '^ready' "$work/holder.out" 2>/dev/null; do sleep 0.2; done
        c0=$(cpu_us $pid)
        rate=$("$syncctl" --socket "$work/s" --json bench put --connections 4 --pipeline 16 --count "$puts" --value-size 100 \
            --keys 1000 | python3 -c "import json, sys; print(json.load(sys.stdin)['ops_per_sec'])")
        c1=$(cpu_us $pid)
        kill $holder; wait $holder 2>/dev/null || true; holder=""
        kill $pid; wait $pid 2>/dev/null || true; pid=""
        echo "round $round $build: puts/s $rate cpu/put $(python3 -c "print(f'{($c1 - $c0) / $puts:.2f}')")" | tee -a "$work/rounds"
    done
done
print_medians "$work/rounds"
