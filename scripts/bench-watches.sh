#!/usr/bin/env bash
# What idle watches cost syncd: durable puts/s and syncd's CPU per put while N watches on other
# prefixes (each its own, `syncctl bench watchers --distinct`) are held, for N = 0, 1,000, 10,000
# and 100,000; syncd's memory per idle watch; and the time from starting a watch to its snapshot
# for a prefix of 111 keys among 1,000,000. Prints Markdown tables.
#
#   scripts/bench-watches.sh [--quick] [--bin DIR]
#
# --bin takes syncd and syncctl from DIR (default: a release build); SYNCD=path runs another
# syncd binary (to compare with an older build). --quick stops at 10,000 watches, with fewer puts.
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=true ;;
        --bin) bin="$2"; shift ;;
        *) echo "usage: scripts/bench-watches.sh [--quick] [--bin DIR]" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$bin" ]; then
    swift build -c release --product syncd >/dev/null
    swift build -c release --product syncctl >/dev/null
    bin="$(swift build -c release --show-bin-path)"
fi
syncd="${SYNCD:-$bin/syncd}"
if $quick; then
    scales="0 1000 10000" puts=20000 keys=100000
else
    scales="0 1000 10000 100000" puts=100000 keys=1000000
fi

dir="$(mktemp -d /tmp/bench-watches.XXXXXX)"
syncd_pid="" holder_pid=""
cleanup() {
    [ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null || true
    [ -n "$syncd_pid" ] && kill "$syncd_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

socket="$dir/syncd.sock"
cat >"$dir/syncd.json" <<JSON
{ "logLevel": "warning", "limits": { "maxConnections": 4096, "maxConnectionsPerUser": 4096, "maxWatchesPerConnection": 1000 } }
JSON
"$syncd" --socket "$socket" --database "$dir/state.sqlite" --config "$dir/syncd.json" 2>>"$dir/syncd.log" &
syncd_pid=$!
until "$bin/syncctl" --socket "$socket" status >/dev/null 2>&1; do sleep 0.01; done

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$syncd_pid/stat"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$syncd_pid/status"; }
ticks_per_second=$(getconf CLK_TCK)

echo "| watches on other prefixes | puts/s | syncd CPU µs per put | syncd memory per idle watch |"
echo "| --- | --- | --- | --- |"
for scale in $scales; do
    before_rss=$(rss_kb)
    if [ "$scale" -gt 0 ]; then
        per_connection=$(( scale >= 1000 ? 250 : scale ))
        connections=$(( scale / per_connection ))
        "$bin/syncctl" --socket "$socket" bench watchers --connections "$connections" \
            --watches-per-connection "$per_connection" --distinct --prefix "w/" >"$dir/holder.out" 2>"$dir/holder.err" &
        holder_pid=$!
        until grep -q '^ready' "$dir/holder.out" 2>/dev/null; do
            kill -0 "$holder_pid" 2>/dev/null || { cat "$dir/holder.err" >&2; exit 1; }
            sleep 0.2
        done
        memory=$(awk -v a="$before_rss" -v b="$(rss_kb)" -v n="$scale" 'BEGIN { printf "%.0f B", (b - a) * 1024 / n }')
    else
        memory="–"
    fi
    ticks=$(cpu_ticks)
    rate=$("$bin/syncctl" --socket "$socket" --json bench put --connections 4 --pipeline 16 --count "$puts" \
        --value-size 100 --keys 1000 | sed -E 's/.*"ops_per_sec":([0-9]+).*/\1/')
    cpu=$(awk -v a="$ticks" -v b="$(cpu_ticks)" -v hz="$ticks_per_second" -v n="$puts" \
        'BEGIN { printf "%.1f", (b - a) / hz * 1e6 / n }')
    printf "| %'d | %'d | %s | %s |\n" "$scale" "$rate" "$cpu" "$memory"
    if [ -n "$holder_pid" ]; then
        kill "$holder_pid" 2>/dev/null || true
        wait "$holder_pid" 2>/dev/null || true
        holder_pid=""
    fi
    # Let syncd notice the closed connections before the next scale.
    until [ "$("$bin/syncctl" --socket "$socket" --json status | sed -E 's/.*"watches":([0-9]+).*/\1/')" = 0 ]; do sleep 0.2; done
done

# The keys bench/0 … bench/N-1; bench/1234 selects bench/1234, bench/12340-12349 and, with
# 1,000,000 keys, bench/123400-123499: 111 keys.
"$bin/syncctl" --socket "$socket" bench put --connections 4 --pipeline 16 --count "$keys" --keys "$keys" \
    --value-size 100 >/dev/null
echo
echo "| watch start to snapshot of bench/1234, among $keys keys | p50 µs | p99 µs |"
echo "| --- | --- | --- |"
"$bin/syncctl" --socket "$socket" --json bench snapshot --prefix bench/1234 --count 200 \
    | sed -E 's/.*"keys":([0-9]+).*"p50_us":([0-9]+).*"p99_us":([0-9]+).*/| \1 keys | \2 | \3 |/'
