#!/usr/bin/env bash
# syncd's paced write -> delivery latency, two syncd builds against each other in one run: rounds
# alternate between the builds (which goes first alternates too), each on a fresh database; each
# round, one C writer puts WRITES values of 100 B at 1,000 a second to SUBSCRIBERS C subscribers
# (`fanout-peer syncd`, no Swift client on either end), long enough for the journal's moves into
# SQLite, and their checkpoints, to run meanwhile. Prints each round's p50 / p99 / p99.9 of write ->
# delivery and syncd's CPU per write, then the medians.
#
#   scripts/bench-ab-paced.sh OLD_SYNCD NEW_SYNCD [ROUNDS] [WRITES] [SUBSCRIBERS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-6} writes=${4:-20000} subscribers=${5:-8}
swift build -c release --product syncctl >/dev/null
syncctl="$(swift build -c release --show-bin-path)/syncctl"
work=$(mktemp -d /tmp/bench-ab-paced.XXXXXX)
pid=""
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
gcc -O2 -o "$work/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
. scripts/bench/ab-common.sh
field() { python3 -c "import json, sys; print(json.load(sys.stdin)['$1'])"; }

for round in $(seq "$rounds"); do
    for build in $(round_order "$round"); do
        start_fresh_syncd "${!build}"
        c0=$(cpu_us $pid)
        r=$("$work/fanout-peer" syncd "$work/s" "$subscribers" "$writes" 1 100 1000)
        c1=$(cpu_us $pid)
        kill $pid; wait $pid 2>/dev/null || true; pid=""
        echo "round $round $build: p50 $(field p50_us <<<"$r") p99 $(field p99_us <<<"$r") p999 $(field p999_us <<<"$r")" \
            "cpu/write $(python3 -c "print(f'{($c1 - $c0) / $writes:.2f}')")" | tee -a "$work/rounds"
    done
done
print_medians "$work/rounds"
