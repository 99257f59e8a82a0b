#!/usr/bin/env bash
# Runs the suite RUNS times (3 by default) while one busy process per core keeps every core busy,
# as a shared or overloaded machine would, then prints each failing test with how many runs it
# failed in, and every line that reports an SQLite error.
#
#   scripts/test-under-load.sh [RUNS] [-- SWIFT-TEST-ARGUMENTS...]
#
# The build happens first, without the load; each run's whole output is kept in
# .build/test-under-load/run-N.log. Set LOAD_PROCESSES to change how many busy processes run
# (the number of cores by default). Exits 1 when any run failed or reported an SQLite error.
set -uo pipefail
cd "$(dirname "$0")/.."

runs=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then runs=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" = "--" ]; then shift; fi
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/test-under-load.sh [RUNS] [-- SWIFT-TEST-ARGUMENTS...]  (RUNS is a positive number, not '$runs')" >&2
  exit 1
fi
load_processes=${LOAD_PROCESSES:-$(nproc)}
logs=.build/test-under-load
mkdir -p "$logs"
rm -f "$logs"/run-*.log

echo "building the tests (without load)..."
if ! swift build --build-tests >"$logs/build.log" 2>&1; then
  tail -30 "$logs/build.log" >&2
  echo "the build failed; see $logs/build.log" >&2
  exit 1
fi

busy=()
stop_load() {
  if [ ${#busy[@]} -gt 0 ]; then kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null; fi
  busy=()
}
trap stop_load EXIT
trap 'stop_load; exit 130' INT TERM
for _ in $(seq "$load_processes"); do
  # A shell spinning at the same priority as the tests: each takes a core whenever it can.
  bash -c 'while :; do :; done' &
  busy+=($!)
done
echo "load: $load_processes busy processes on $(nproc) cores"

failed_runs=0
for run in $(seq "$runs"); do
  log="$logs/run-$run.log"
  started=$(date +%s)
  swift test "$@" >"$log" 2>&1
  status=$?
  elapsed=$(($(date +%s) - started))
  # swift-testing ends a failed test with `✘ Test name() failed after ...` (and the whole run with
  # `✘ Test run with ...`); XCTest with `Test Case '...' failed`.
  failures=$(grep -E "^✘ Test .* failed after|Test Case '.*' failed" "$log" | grep -vc "^✘ Test run with")
  sqlite=$(grep -ciE "SQLite error|SQLITE_MISUSE" "$log")
  printf 'run %d: exit %d, %d failed tests, %d SQLite error lines, %d s, load average %s\n' \
    "$run" "$status" "$failures" "$sqlite" "$elapsed" "$(cut -d' ' -f1 /proc/loadavg)"
  if [ "$status" -ne 0 ] || [ "$sqlite" -ne 0 ]; then failed_runs=$((failed_runs + 1)); fi
done
stop_load

echo
echo "failing tests (runs failed in, test):"
# The suite's own summary line (`✘ Test run with N tests ...`) is not a test.
grep -hE "^✘ Test .* failed after|Test Case '.*' failed" "$logs"/run-*.log \
  | grep -v "^✘ Test run with" \
  | sed -E "s/^✘ Test ([^ ]+).*/\1/; s/^.*Test Case '([^']+)'.*/\1/" \
  | sort | uniq -c | sort -rn || true
echo
echo "SQLite error lines:"
grep -HiE "SQLite error|SQLITE_MISUSE" "$logs"/run-*.log | sort | uniq -c | head -20 || true
echo
echo "$failed_runs of $runs runs failed; logs in $logs"
[ "$failed_runs" -eq 0 ]
