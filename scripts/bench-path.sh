#!/usr/bin/env bash
# Where a paced write's time goes inside the server, syncd against Redis, from the system calls the
# server's event loop makes (perf's syscall tracepoints; no sampling). C clients at both ends
# (`fanout-peer`), one write at a time at 1,000/s to one subscriber. For each wake-up that handles
# a write it splits: woken → the request read, read → the log written (syncd's journal `pwritev`,
# Redis's AOF `write`), the log written → the event written to the subscriber, the event → the
# answer, the answer → asleep again. The subscriber is woken by the event's write, usually onto the
# server's core (a Unix socket's wake-up is a synchronous one), so everything from the event to
# "asleep" is also time the subscriber can wait.
#
#   scripts/bench-path.sh [WRITES]
#
# Needs perf (as root), redis-server, gcc and libsqlite3-dev; builds the release syncd. Each
# traced system call costs a microsecond or two, so compare the columns, not the figures with
# other tables.
set -euo pipefail
cd "$(dirname "$0")/.."
writes=${1:-4000}
for tool in perf redis-server redis-cli gcc python3; do
    command -v "$tool" >/dev/null || { echo "bench-path: needs $tool" >&2; exit 1; }
done
swift build -c release --product syncd >/dev/null
swift build -c release --product syncctl >/dev/null
bin="$(swift build -c release --show-bin-path)"

work=$(mktemp -d /tmp/bench-path.XXXXXX)
source scripts/bench/start-redis-and-syncd.sh

events=syscalls:sys_exit_epoll_wait,syscalls:sys_enter_epoll_wait,syscalls:sys_exit_read
events+=,syscalls:sys_enter_write,syscalls:sys_enter_sendto,syscalls:sys_enter_pwritev,syscalls:sys_exit_pwritev
trace() { # name pid socket: trace the server for two seconds in the middle of a paced run
    "$work/fanout-peer" "$1" "$3" 1 "$writes" 1 100 1000 >"$work/$1.json" &
    local peer=$!
    sleep 1
    perf record -q -e "$events" -p "$2" -o "$work/$1.data" -- sleep 2 2>/dev/null
    wait $peer
    perf script -i "$work/$1.data" -F tid,time,event,trace >"$work/$1.txt" 2>/dev/null
}
trace syncd "$syncd_pid" "$work/syncd.sock"
trace redis "$redis_pid" "$work/redis.sock"

python3 - "$work" <<'PY'
import re, statistics, sys
work = sys.argv[1]
# A wake-up that handles one write, as the event loop's system calls run:
# syncd: epoll_wait returns, read, pwritev (the journal), write (the event), write (the answer), epoll_wait;
# its connections write with `sendto` where nothing waits in NIO, which counts as a write here.
# Redis: epoll_wait returns, read, write (the AOF), write (the event), write (the answer), epoll_wait.
shapes = {
    "syncd": ["sys_exit_epoll_wait", "sys_exit_read", "sys_enter_pwritev", "sys_exit_pwritev", "sys_enter_write", "sys_enter_write", "sys_enter_epoll_wait"],
    "redis": ["sys_exit_epoll_wait", "sys_exit_read", "sys_enter_write", "sys_enter_write", "sys_enter_write", "sys_enter_epoll_wait"],
}
stages = ["woken → request read", "read → log written", "log → event written", "event → answer", "answer → asleep", "woken → event written"]
def cycles(name):
    events = []
    for line in open(f"{work}/{name}.txt"):
        m = re.search(r"([\d.]+):\s+syscalls:(\S+):", line)
        if m: events.append((float(m.group(1)) * 1e6, m.group(2).replace("sendto", "write")))
    shape = shapes[name]
    found = []
    for i in range(len(events) - len(shape) + 1):
        if [e[1] for e in events[i:i + len(shape)]] == shape:
            t = [e[0] for e in events[i:i + len(shape)]]
            if name == "syncd":  # the journal's pwritev counts as the log's write
                found.append([t[1] - t[0], t[2] - t[1], t[4] - t[2], t[5] - t[4], t[6] - t[5], t[4] - t[0]])
            else:
                found.append([t[1] - t[0], t[2] - t[1], t[3] - t[2], t[4] - t[3], t[5] - t[4], t[3] - t[0]])
    return found
rows = {name: cycles(name) for name in shapes}
print(f"µs, p50 (p90) of {min(len(v) for v in rows.values())}+ wake-ups that each handled one write")
print(f"| stage | syncd | Redis |\n| --- | --- | --- |")
for index, stage in enumerate(stages):
    cells = []
    for name in shapes:
        values = sorted(c[index] for c in rows[name])
        cells.append(f"{statistics.median(values):.0f} ({values[int(len(values) * 0.9)]:.0f})" if values else "–")
    print(f"| {stage} | {cells[0]} | {cells[1]} |")
PY
