#!/usr/bin/env bash
# Runs a command (a `swift test`) with a deadline. Past it, prints what is still running — the
# tests that started and did not end, the stacks of every thread of the test process and of the
# processes it started — then stops it all and fails, so that a hang is reported with its place
# instead of being cut off silently by CI's own limit.
#
#   scripts/run-with-deadline.sh SECONDS COMMAND [ARGUMENTS...]
#
# The command's output goes to standard output as it comes. Exits with the command's status, or
# 124 when the deadline passed.
set -uo pipefail

if [ $# -lt 2 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/run-with-deadline.sh SECONDS COMMAND [ARGUMENTS...]  (SECONDS is a positive number)" >&2
  exit 2
fi
seconds=$1
shift
log=$(mktemp /tmp/run-with-deadline.XXXXXX)
trap 'rm -f "$log"' EXIT

# Every process below `root`, depth first.
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}

report_hang() {
  local root=$1
  shift
  echo
  echo "run-with-deadline: still running after $seconds s: $*"
  echo "run-with-deadline: tests started and not ended:"
  # swift-testing prints `◇ Test NAME started.` and then `✔`, `✘` or `━` `Test NAME passed|failed ...`.
  sed -n 's/^◇ Test \(.*\) started\.$/\1/p' "$log" | sort >"$log.started"
  sed -n 's/^\(✔\|✘\|━\) Test \(.*\) \(passed\|failed\|skipped\).*/\2/p' "$log" | sed 's/ with [0-9]* test cases*$//' | sort >"$log.ended"
  comm -23 "$log.started" "$log.ended" | sed 's/^/  /'
  rm -f "$log.started" "$log.ended"
  for pid in "$root" $(descendants "$root"); do
    echo "run-with-deadline: process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
    if command -v gdb >/dev/null 2>&1; then
      timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt 25" 2>/dev/null | grep -E '^(Thread|#)' | head -400
    fi
  done
}

# Its own process group, so that the whole tree can be stopped at once; its output is shown as
# it comes.
setsid "$@" >"$log" 2>&1 &
pid=$!
tail -n +1 -f --pid="$pid" "$log" &
deadline=$((SECONDS + seconds))
while kill -0 "$pid" 2>/dev/null; do
  if [ "$SECONDS" -ge "$deadline" ]; then
    report_hang "$pid" "$@"
    kill -KILL -- "-$pid" 2>/dev/null
    wait 2>/dev/null
    exit 124
  fi
  sleep 5
done
wait "$pid"
status=$?
wait
exit "$status"
