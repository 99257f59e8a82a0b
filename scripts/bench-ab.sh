#!/usr/bin/env bash
# syncd's own cost and speed, two builds against each other in one run: rounds alternate between
# the builds, each on a fresh database, and which build goes first in a round alternates too, so
# the machine's noise falls on both alike. Each round takes `syncctl bench put` (4 connections ×
# pipeline 16, and 1 × 1), `syncctl bench fanout` (1 writer × 16 in flight → 8 subscriber
# processes), then the same 4 × 16 and 1 × 1 puts from C writers (`fanout-peer writers`, no Swift
# client sharing the cores), then one C writer putting one value at a time to 8 C subscribers
# (each event alone in its commit: `cpu/c-lone-event`), 100 B values, and syncd's CPU time per
# operation from /proc (what it spent, whatever the clients spent). Prints every round, then the median per build.
#
#   scripts/bench-ab.sh OLD_SYNCD NEW_SYNCD [ROUNDS] [PUTS]
#
# OLD_SYNCD and NEW_SYNCD are syncd binaries (release builds: copy .build/release/syncd aside
# before the change). Both are driven by this checkout's release syncctl.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-3} puts=${4:-100000}
swift build -c release --product syncctl >/dev/null
syncctl="$(swift build -c release --show-bin-path)/syncctl"

work=$(mktemp -d /tmp/bench-ab.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
gcc -O2 -o "$work/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
. scripts/bench/ab-common.sh
field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }
per_op() { python3 -c "print(f'{($2 - $1) / $3:.2f}')"; }

for round in $(seq "$rounds"); do
    for build in $(round_order "$round"); do
        start_fresh_syncd "${!build}"
        c0=$(cpu_us $pid)
        s=$("$syncctl" --socket "$work/s" --json bench put --connections 4 --pipeline 16 --count "$puts" --value-size 100 --keys 1000)
        c1=$(cpu_us $pid)
        l=$("$syncctl" --socket "$work/s" --json bench put --connections 1 --pipeline 1 --count $((puts / 10)) --value-size 100 --keys 1000)
        c2=$(cpu_us $pid)
        f=$("$syncctl" --socket "$work/s" --json bench fanout --subscribers 8 --writers 1 --pipeline 16 --count $((puts / 2)) --value-size 100)
        c3=$(cpu_us $pid)
        w=$("$work/fanout-peer" writers syncd "$work/s" 4 "$puts" 16 100)
        c4=$(cpu_us $pid)
        "$work/fanout-peer" writers syncd "$work/s" 1 $((puts / 5)) 1 100 >/dev/null
        c5=$(cpu_us $pid)
        "$work/fanout-peer" syncd "$work/s" 8 $((puts / 10)) 1 100 >/dev/null
        c6=$(cpu_us $pid)
        kill $pid; wait $pid 2>/dev/null || true; pid=""
        echo "round $round $build: puts/s $(field ops_per_sec <<<"$s") cpu/put $(per_op "$c0" "$c1" "$puts")" \
            "lone-p50 $(field p50_us <<<"$l") cpu/lone $(per_op "$c1" "$c2" $((puts / 10)))" \
            "events/s $(field delivered_per_sec <<<"$f") cpu/event $(per_op "$c2" "$c3" $((puts / 2 * 8)))" \
            "c-puts/s $(field writes_per_sec <<<"$w") cpu/c-put $(per_op "$c3" "$c4" "$puts")" \
            "cpu/c-lone $(per_op "$c4" "$c5" $((puts / 5)))" \
            "cpu/c-lone-event $(per_op "$c5" "$c6" $((puts / 10 * 8)))" | tee -a "$work/rounds"
    done
done
print_medians "$work/rounds"
