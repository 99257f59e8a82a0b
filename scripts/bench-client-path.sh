#!/usr/bin/env bash
# Where a paced write's time goes from a Swift writer to a reducer in another process
# (`feature-bench e2e`), stage by stage, from each write's own timestamp (its value's
# `sentAtNanos`, read back from syncd's history), system calls traced with perf on the same clock
# (CLOCK_MONOTONIC) and the latency the reducer saw:
#
#   written → leaves the writer      the put made, until its bytes reach the socket (`sendto`)
#   → syncd sends the event          syncd reads, commits and writes the event to the reducer
#   → the reducer wakes              its thread back from `epoll_wait`
#   → the reducer sees it            read, decoded, sent to the store, reduced
#
# and how many writes had a tick of the kernel's clock (HZ=250 here; an interrupt that takes
# 15-35 µs on this machine) inside their path, with their latency against the rest's. One write
# at a time at 1,000/s; `--writer PATH` writes from another program (scripts/bench/fanout-peer.c
# built as $work/fanout-peer: pass `c` for it), to tell the Swift writer's share from the
# reducer's.
#
#   scripts/bench-client-path.sh [WRITES] [c]
#
# Needs perf (as root), gcc and libsqlite3-dev (for `c`); builds the release binaries. The
# traced system calls cost a microsecond or two each: compare stages, not totals with other
# tables.
set -euo pipefail
cd "$(dirname "$0")/.."
writes=${1:-4000} writer=${2:-swift}
for tool in perf python3; do
    command -v "$tool" >/dev/null || { echo "bench-client-path: needs $tool" >&2; exit 1; }
done
swift build -c release --product syncd >/dev/null
swift build -c release --product syncctl >/dev/null
swift build -c release --product feature-bench >/dev/null
bin="$(swift build -c release --show-bin-path)"

work=$(mktemp -d /tmp/bench-client-path.XXXXXX)
"$bin/syncd" --socket "$work/syncd.sock" --database "$work/state.sqlite" 2>"$work/syncd.log" &
syncd_pid=$!
perf_pid=
trap 'kill $syncd_pid $perf_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
until "$bin/syncctl" --socket "$work/syncd.sock" status >/dev/null 2>&1; do sleep 0.05; done

extra=()
if [ "$writer" = c ]; then
    gcc -O2 -o "$work/fanout-peer" scripts/bench/fanout-peer.c -lsqlite3
    extra=(--writer "$work/fanout-peer")
fi
events=syscalls:sys_enter_sendto,syscalls:sys_enter_write,syscalls:sys_exit_epoll_wait
events+=,timer:hrtimer_expire_entry
perf record -q -a -k CLOCK_MONOTONIC -e "$events" -o "$work/perf.data" >/dev/null 2>&1 &
perf_pid=$!
sleep 1
"$bin/feature-bench" e2e --socket "$work/syncd.sock" --count "$writes" --rate 1000 --json \
    --samples "$work/samples" "${extra[@]}" >"$work/e2e.json"
kill -INT $perf_pid
wait $perf_pid || true
perf_pid=
key=$("$bin/syncctl" --socket "$work/syncd.sock" list bench/e2e/ | awk '{print $1}' | head -1)
"$bin/syncctl" --socket "$work/syncd.sock" --json history "$key" >"$work/history"
perf script -i "$work/perf.data" -F pid,tid,cpu,time,event,trace 2>/dev/null >"$work/trace"

python3 - "$work" "$syncd_pid" "${key##*/}" "$writer" <<'PY'
import bisect, json, re, sys
work, syncd, reducer, writer = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
history = [json.loads(line) for line in open(f"{work}/history")]
writer_pid = str(history[0]["pid"])
written = {h["value"]["sequence"]: h["value"]["sentAtNanos"] / 1000 for h in history}
latency = [float(line) for line in open(f"{work}/samples")]
e2e = json.load(open(f"{work}/e2e.json"))
if e2e["out_of_order"]:
    sys.exit("bench-client-path: writes arrived out of order; run again")

sends, events, wakes, ticks = [], [], [], []
line_shape = re.compile(r"\s*(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):(.*)")
for line in open(f"{work}/trace"):
    match = line_shape.match(line)
    if not match:
        continue
    pid, tid, cpu, time, event, rest = match.groups()
    at = float(time) * 1e6
    if event.endswith("hrtimer_expire_entry"):
        if "tick_" in rest:
            ticks.append(at)
    elif pid == writer_pid and event.endswith(("sys_enter_sendto", "sys_enter_write")):
        sends.append(at)
    elif pid == syncd and event.endswith("sys_enter_sendto"):
        events.append(at)
    # The reducer runs on its main thread (MainEventLoop); its other threads are libdispatch's.
    elif tid == reducer and event.endswith("sys_exit_epoll_wait"):
        wakes.append(at)
for times in (sends, events, wakes, ticks):
    times.sort()

def first_after(times, at):
    index = bisect.bisect_left(times, at)
    return times[index] if index < len(times) else None

stages = {name: [] for name in ("leaves the writer", "syncd sends the event", "the reducer wakes", "the reducer sees it", "total")}
with_tick, without_tick = [], []
for sequence, total in enumerate(latency, start=1):
    start = written.get(sequence)
    if start is None:
        continue
    seen = start + total
    sent = first_after(sends, start)
    event = sent and first_after(events, sent)
    wake = event and first_after(wakes, event)
    if not (sent and event and wake) or wake > seen:
        continue
    for name, value in zip(stages, (sent - start, event - sent, wake - event, seen - wake, total)):
        stages[name].append(value)
    tick = first_after(ticks, start)
    (with_tick if tick is not None and tick < seen else without_tick).append(total)

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")

count = len(stages["total"])
print(f"{writer} writer → Swift reducer: {count} of {len(latency)} writes traced end to end; µs")
print("| stage | p50 | p90 | p99 |")
print("| --- | --- | --- | --- |")
for name, values in stages.items():
    print(f"| {name} | {pct(values, .5):.1f} | {pct(values, .9):.1f} | {pct(values, .99):.1f} |")
share = 100 * len(with_tick) / max(1, count)
print(f"writes with a kernel tick inside their path: {len(with_tick)} ({share:.1f}%), "
      f"total p50 {pct(with_tick, .5):.1f} against {pct(without_tick, .5):.1f} without")
PY
