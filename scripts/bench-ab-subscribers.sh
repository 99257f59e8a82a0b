#!/usr/bin/env bash
# The Swift client's side of the fan-out, two builds against each other in one run: each round
# runs `syncctl bench fanout` (1 writer × 16 in flight → 8 subscriber processes, 100 B values)
# from each build's syncctl against one syncd, alternating which goes first; prints each round's
# delivered events/s, then the medians. On 2 cores the subscribers' own CPU bounds the figure, so
# it moves with what the client spends per event.
#
#   scripts/bench-ab-subscribers.sh OLD_BIN NEW_BIN [ROUNDS] [PUTS]
#
# OLD_BIN and NEW_BIN hold syncctl (release builds: copy .build/release/syncctl aside before the
# change); syncd is this checkout's release build.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-8} puts=${4:-60000}
swift build -c release --product syncd >/dev/null
syncd="$(swift build -c release --show-bin-path)/syncd"
work=$(mktemp -d /tmp/bench-ab-subscribers.XXXXXX)
"$syncd" --socket "$work/s" --database "$work/db" 2>"$work/syncd.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
until "$new/syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.1; done
. scripts/bench/ab-common.sh
for round in $(seq "$rounds"); do
    order="old new"
    [ $((round % 2)) -eq 0 ] && order="new old"
    for build in $order; do
        rate=$("${!build}/syncctl" --socket "$work/s" --json bench fanout --subscribers 8 --writers 1 --pipeline 16 \
            --count "$puts" --value-size 100 | python3 -c "import json, sys; print(json.load(sys.stdin)['delivered_per_sec'])")
        echo "round $round $build: events/s $rate" | tee -a "$work/rounds"
    done
done
print_medians "$work/rounds"
