#!/usr/bin/env bash
# Paced write -> delivery latency of two builds' client side, in one run against one syncd: the
# rounds alternate between the builds, and which goes first alternates too, so the machine's
# noise falls on both alike. Each round takes `feature-bench e2e` (a write in one process to a
# reducer in another) and `syncctl bench fanout` (a bare client watch), 1,000 writes/s, then
# `fanout-peer syncd` (C clients at both ends, syncd's own path). Prints each round's p50 / p99
# and the median p50 per build.
#
#   scripts/bench-latency-ab.sh OLD_BIN NEW_BIN [ROUNDS] [WRITES]
#
# OLD_BIN and NEW_BIN hold feature-bench and syncctl (release builds: `swift build -c release`,
# then copy .build/release/{feature-bench,syncctl,syncd}); syncd comes from NEW_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-10} writes=${4:-3000}

work=$(mktemp -d /tmp/bench-latency-ab.XXXXXX)
gcc -O2 -o "$work/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
"$new/syncd" --socket "$work/s" --database "$work/db" 2>"$work/syncd.log" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
until "$new/syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.1; done

p50_p99() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["p50_us"], d["p99_us"])'; }
for round in $(seq "$rounds"); do
    # The second build of a round runs on a warmer, busier machine: alternate which goes first.
    order="old new"
    [ $((round % 2)) -eq 0 ] && order="new old"
    for build in $order; do
        bin=${!build}
        e2e=$("$bin/feature-bench" e2e --socket "$work/s" --count "$writes" --rate 1000 --json | p50_p99)
        watch=$("$bin/syncctl" --socket "$work/s" --json bench fanout --subscribers 1 --writers 1 --pipeline 1 \
            --count "$writes" --value-size 100 --rate 1000 | p50_p99)
        echo "round $round $build: e2e $e2e  watch $watch" | tee -a "$work/rounds"
    done
    echo "round $round C clients: $("$work/fanout-peer" syncd "$work/s" 1 "$writes" 1 100 1000 | p50_p99)" | tee -a "$work/rounds"
done
python3 - "$work/rounds" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    words = line.split()
    build = words[2].rstrip(":")
    if build == "C":
        rows.setdefault("C clients, syncd's path", []).append(float(words[4]))
    else:
        rows.setdefault(f"{build}: write -> reducer", []).append(float(words[4]))
        rows.setdefault(f"{build}: bare watch", []).append(float(words[7]))
for name, values in rows.items():
    print(f"median p50 µs, {name}: {statistics.median(values):.0f} ({len(values)} rounds)")
PY
