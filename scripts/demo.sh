#!/usr/bin/env bash
# Runs the climate example: a private syncd, two sensors, the thermostat and the panel, with
# `syncctl watch` printing every shared change as it happens. Midway it publishes navigation
# requests and lowers the target from the shell, then shows the state everything converged on.
#
#   scripts/demo.sh [SECONDS]     (default 8; builds the debug binaries first)
set -euo pipefail

seconds="${1:-8}"
case "$seconds" in '' | *[!0-9]*) echo "usage: scripts/demo.sh [SECONDS]" >&2; exit 1 ;; esac

cd "$(dirname "$0")/.."
swift build --product syncd >/dev/null
swift build --product syncctl >/dev/null
for product in climate-sensor climate-thermostat climate-panel; do swift build --product "$product" >/dev/null; done
bin="$(swift build --show-bin-path)"

dir="$(mktemp -d /tmp/sharedstate-demo.XXXXXX)"
export SYNCD_SOCKET="$dir/syncd.sock"
pids=()
cleanup() {
    # Features first, syncd last, so nobody reports syncd going away.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        kill "${pids[i]}" 2>/dev/null || true
        [ "$i" -eq 0 ] || sleep 0.1
    done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

"$bin/syncd" --database "$dir/state.sqlite" 2>"$dir/syncd.log" &
pids+=($!)
for _ in $(seq 100); do "$bin/syncctl" status >/dev/null 2>&1 && break; sleep 0.05; done

echo "== every change under climate/, as syncctl watch sees it (revision type key value)"
# Process substitution keeps $! the feature's own pid; sed -u passes each line on at once.
"$bin/syncctl" watch climate/ > >(sed -u 's/^/  watch │ /') &
pids+=($!)
"$bin/climate-panel" 2>"$dir/panel.log" > >(sed -u 's/^/  panel │ /') &
pids+=($!)
"$bin/climate-thermostat" --band 0.5 2>"$dir/thermostat.log" &
pids+=($!)
"$bin/climate-sensor" --name kitchen --base-celsius 19 --interval-ms 500 2>"$dir/kitchen.log" &
pids+=($!)
"$bin/climate-sensor" --name hall --base-celsius 21 --interval-ms 700 2>"$dir/hall.log" &
pids+=($!)

sleep $((seconds / 2))
echo "== shell: the panel shows the kitchen, then an alert; the target drops to 18 °C"
"$bin/syncctl" put climate/panel/requests/demo-1 '{"command":"push","screen":"sensor/kitchen"}' >/dev/null
"$bin/syncctl" put climate/panel/requests/demo-2 '{"command":"push","screen":"alert/door open"}' >/dev/null
"$bin/syncctl" put climate/target 18 >/dev/null
sleep $((seconds - seconds / 2))

echo "== where they converged (syncctl list climate/)"
"$bin/syncctl" list climate/ | sed 's/^/  /'
echo "== logs: $dir (removed on exit); run a feature with --log-level debug to see every action" 
