#!/usr/bin/env bash
# The C writers' row of scripts/bench-ab.sh alone, where the journal's move into SQLite weighs
# most: two syncd builds in alternating rounds (which goes first alternates too), each on a fresh
# database that first takes WARM puts unmeasured (so the database already holds a change log and
# moves are under way), then PUTS puts from 4 C writers × 16 in flight, 100 B values; prints each
# round's throughput and syncd's CPU per put (from /proc), then the medians.
#
#   scripts/bench-ab-writers.sh OLD_SYNCD NEW_SYNCD [ROUNDS] [PUTS] [WARM]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-5} puts=${4:-600000} warm=${5:-400000}
swift build -c release --product syncctl >/dev/null
syncctl="$(swift build -c release --show-bin-path)/syncctl"
work=$(mktemp -d /tmp/bench-ab-writers.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
gcc -O2 -o "$work/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
. scripts/bench/ab-common.sh
for round in $(seq "$rounds"); do
    order="old new"
    [ $((round % 2)) -eq 0 ] && order="new old"
    for build in $order; do
        rm -rf "$work/db"*
        "${!build}" --socket "$work/s" --database "$work/db" 2>>"$work/syncd.log" &
        pid=$!
        until "$syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.01; done
        "$work/fanout-peer" writers syncd "$work/s" 4 "$warm" 16 100 >/dev/null
        c0=$(cpu_us $pid)
        w=$("$work/fanout-peer" writers syncd "$work/s" 4 "$puts" 16 100)
        c1=$(cpu_us $pid)
        kill $pid; wait $pid 2>/dev/null || true; pid=""
        rate=$(python3 -c "import json, sys; print(json.loads(sys.argv[1])['writes_per_sec'])" "$w")
        echo "round $round $build: c-puts/s $rate cpu/c-put $(python3 -c "print(f'{($c1 - $c0) / $puts:.2f}')")" | tee -a "$work/rounds"
    done
done
print_medians "$work/rounds"
