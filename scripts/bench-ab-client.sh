#!/usr/bin/env bash
# The Swift client's own CPU, two builds against each other in one run against one syncd (this
# checkout's release build): each round runs each build's `syncctl bench put` (4 connections ×
# pipeline 16, then 1 × 1) and `syncctl bench fanout` (1 writer × 16 in flight → 8 subscriber
# processes), 100 B values, alternating which build goes first, and prints the CPU the client
# processes spent (user + system, from getrusage of the children) per put, per lone put and per
# delivered event, then the medians. It moves with what the client library spends, not syncd.
#
#   scripts/bench-ab-client.sh OLD_BIN NEW_BIN [ROUNDS] [PUTS]
#
# OLD_BIN and NEW_BIN hold syncctl (release builds: copy .build/release/syncctl aside before the
# change).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-6} puts=${4:-100000}
swift build -c release --product syncd >/dev/null
syncd="$(swift build -c release --show-bin-path)/syncd"
work=$(mktemp -d /tmp/bench-ab-client.XXXXXX)
"$syncd" --socket "$work/s" --database "$work/db" 2>"$work/syncd.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
until "$new/syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.1; done
. scripts/bench/ab-common.sh

# client_us COUNT COMMAND...: the CPU microseconds COMMAND and its children spent, per COUNT.
client_us() {
    python3 - "$@" <<'PY'
import resource, subprocess, sys
count = int(sys.argv[1])
subprocess.run(sys.argv[2:], check=True, stdout=subprocess.DEVNULL)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{(usage.ru_utime + usage.ru_stime) * 1e6 / count:.2f}")
PY
}

for round in $(seq "$rounds"); do
    for build in $(round_order "$round"); do
        bin=${!build}
        p=$(client_us "$puts" "$bin/syncctl" --socket "$work/s" bench put --connections 4 --pipeline 16 \
            --count "$puts" --value-size 100 --keys 1000)
        l=$(client_us $((puts / 10)) "$bin/syncctl" --socket "$work/s" bench put --connections 1 --pipeline 1 \
            --count $((puts / 10)) --value-size 100 --keys 1000)
        e=$(client_us $((puts / 2 * 8)) "$bin/syncctl" --socket "$work/s" bench fanout --subscribers 8 --writers 1 \
            --pipeline 16 --count $((puts / 2)) --value-size 100)
        echo "round $round $build: client-cpu/put $p client-cpu/lone $l client-cpu/event $e" | tee -a "$work/rounds"
    done
done
print_medians "$work/rounds"
