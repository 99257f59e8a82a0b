#!/usr/bin/env bash
# Where a paced write's way to a reducer stands against its floor, in alternating rounds on one
# machine: Redis with C clients (`fanout-peer redis`), the floor under syncd's contract (a C relay
# that commits each write to SQLite before it sends it on: `fanout-peer relay`), syncd with C
# clients (`fanout-peer syncd`), a write reaching a reducer in another process through the
# Swift libraries (`feature-bench e2e`), and the same reducer fed by a C writer (`feature-bench
# e2e --writer fanout-peer`: the Swift writer's share told from the reducer's). 5,000 writes at 1,000/s each; prints each round's p50 and
# p99, then the medians. Rounds, not one run, because this machine's noise moves any one figure by
# ±30 µs.
#
#   scripts/bench-floor.sh [ROUNDS] [WRITES]
#
# Installs redis-server with apt when it is missing (as root); needs gcc and libsqlite3-dev.
# Builds the release binaries it needs.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6} writes=${2:-5000}
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    echo "bench-floor: installing redis-server" >&2
    { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >/dev/null; } \
        || { echo "bench-floor: needs redis-server (apt-get install redis-server, as root)" >&2; exit 1; }
fi
for tool in gcc python3; do
    command -v "$tool" >/dev/null || { echo "bench-floor: needs $tool" >&2; exit 1; }
done
swift build -c release --product syncd >/dev/null
swift build -c release --product syncctl >/dev/null
swift build -c release --product feature-bench >/dev/null
bin="$(swift build -c release --show-bin-path)"

work=$(mktemp -d /tmp/bench-floor.XXXXXX)
source scripts/bench/start-redis-and-syncd.sh

p50_p99() { python3 -c 'import json, sys; d = json.load(sys.stdin); print(round(d["p50_us"]), round(d["p99_us"]))'; }
measure() { # peer label, then the command; a failed run stops the script with its name
    local out
    out=$("${@:2}") || { echo "bench-floor: the $1 run failed" >&2; return 1; }
    p50_p99 <<<"$out"
}
for round in $(seq "$rounds"); do
    redis=$(measure redis "$work/fanout-peer" redis "$work/redis.sock" 1 "$writes" 1 100 1000)
    echo "round $round redis $redis"
    relay=$(measure relay "$work/fanout-peer" relay "$work" 1 "$writes" 1 100 1000)
    echo "round $round relay $relay"
    syncd=$(measure syncd "$work/fanout-peer" syncd "$work/syncd.sock" 1 "$writes" 1 100 1000)
    echo "round $round syncd $syncd"
    e2e=$(measure e2e "$bin/feature-bench" e2e --socket "$work/syncd.sock" --count "$writes" --rate 1000 --json)
    echo "round $round e2e $e2e"
    c_e2e=$(measure c-e2e "$bin/feature-bench" e2e --socket "$work/syncd.sock" --count "$writes" --rate 1000 --json \
        --writer "$work/fanout-peer")
    echo "round $round c-e2e $c_e2e"
done | tee "$work/rounds"
python3 - "$work/rounds" <<'PY'
import statistics, sys
names = {
    "redis": "Redis, C clients",
    "relay": "the floor: C relay, SQLite commit first",
    "syncd": "syncd, C clients",
    "e2e": "syncd, write -> reducer (feature-bench e2e)",
    "c-e2e": "syncd, a C writer -> the same reducer (e2e --writer fanout-peer)",
}
rows = {}
for line in open(sys.argv[1]):
    _, _, peer, p50, p99 = line.split()
    rows.setdefault(peer, []).append((float(p50), float(p99)))
for peer, values in rows.items():
    p50 = statistics.median(v[0] for v in values)
    p99 = statistics.median(v[1] for v in values)
    print(f"median of {len(values)} rounds, {names[peer]}: p50 {p50:.0f} µs, p99 {p99:.0f} µs")
PY
