#!/usr/bin/env bash
# Whether heavy requests hold up everyone else: another client's write round trip (1 connection,
# 1,000 writes a second for 10 s, each timed from when it was due, so a stall counts for every
# write it delays) while syncd, holding 1,000,000 keys, answers a list of all of them, a watch
# snapshot of all of them, a backup of its database, or a restore, each over and over, then the
# last three at once. Prints a Markdown table: the write's p50, p99, p99.9 and longest with each
# running, and idle.
#
#   scripts/bench-loop-blocking.sh [--keys N] [--bin DIR]
#
# --bin takes syncd and syncctl from DIR (default: a release build); SYNCD=path runs another
# syncd binary (to compare with an older build). --keys sets how many keys syncd holds.
set -euo pipefail
cd "$(dirname "$0")/.."

keys=1000000 bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --keys) keys="$2"; shift ;;
        --bin) bin="$2"; shift ;;
        *) echo "usage: scripts/bench-loop-blocking.sh [--keys N] [--bin DIR]" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$bin" ]; then
    swift build -c release --product syncd >/dev/null
    swift build -c release --product syncctl >/dev/null
    bin="$(swift build -c release --show-bin-path)"
fi
syncd="${SYNCD:-$bin/syncd}"
syncctl="$bin/syncctl"

dir="$(mktemp -d /tmp/bench-loop-blocking.XXXXXX)"
syncd_pid="" load_pids=()
stop_load() {
    if [ ${#load_pids[@]} -gt 0 ]; then
        kill "${load_pids[@]}" 2>/dev/null || true
        wait "${load_pids[@]}" 2>/dev/null || true
        load_pids=()
        # syncd finishes what the last one asked for (a client that goes away does not stop it),
        # and the disk writes back what it wrote, which would slow the next scenario's commits.
        sleep 5
        sync
    fi
}
cleanup() {
    stop_load
    [ -n "$syncd_pid" ] && kill "$syncd_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

socket="$dir/syncd.sock"
"$syncd" --socket "$socket" --database "$dir/state.sqlite" 2>>"$dir/syncd.log" &
syncd_pid=$!
until "$syncctl" --socket "$socket" status >/dev/null 2>&1; do sleep 0.01; done
ctl() { "$syncctl" --socket "$socket" "$@"; }

ctl bench put --connections 4 --pipeline 16 --count "$keys" --keys "$keys" --value-size 150 >/dev/null
ctl backup "$dir/backup.sqlite" >/dev/null
backup_mb=$(du -m "$dir/backup.sqlite" | cut -f1)
sync

# Runs `$@` over and over in the background until stop_load.
load() {
    (
        child=""
        trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM
        while true; do
            "$@" >/dev/null 2>>"$dir/load.err" &
            child=$!
            wait "$child" || true
        done
    ) &
    load_pids+=($!)
    # Let the first run get going.
    sleep 0.5
}

# The probe: 1 connection, one write at a time, 1,000 a second for 10 s.
probe() {
    ctl --json bench put --connections 1 --pipeline 1 --count 10000 --rate 1000 --keys 10 --value-size 100 \
        | sed -E 's/.*"p50_us":([0-9]+).*"p99_us":([0-9]+).*"p999_us":([0-9]+).*"max_us":([0-9]+).*/\1 | \2 | \3 | \4/'
}

echo "| while syncd ($keys keys) answers, over and over | write p50 µs | p99 µs | p99.9 µs | longest µs |"
echo "| --- | --- | --- | --- | --- |"
echo "| nothing else | $(probe) |"
load ctl list bench/
echo "| a list of all $keys keys | $(probe) |"
stop_load
load ctl bench snapshot --prefix bench/ --count 1000000
echo "| a watch snapshot of all $keys keys | $(probe) |"
stop_load
load ctl backup "$dir/copy.sqlite"
echo "| a backup (${backup_mb} MB) | $(probe) |"
stop_load
load ctl restore "$dir/backup.sqlite"
echo "| a restore of that backup | $(probe) |"
stop_load
load ctl bench snapshot --prefix bench/ --count 1000000
load ctl backup "$dir/copy.sqlite"
load ctl restore "$dir/backup.sqlite"
echo "| a snapshot, a backup and a restore at once | $(probe) |"
stop_load
if [ -s "$dir/load.err" ]; then
    echo "heavy requests failed:" >&2
    sort -u "$dir/load.err" >&2
    exit 1
fi
