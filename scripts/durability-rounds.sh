#!/usr/bin/env bash
# The durability promise's load pattern, in rounds: pipelined writers (`syncctl bench put`,
# 16 in flight per connection) for a while, then quiet, on 1, 2, 4 and 8 connections. After each
# quiet period the journal must be synced (nothing unsynced) and moved into the database (no
# byte of it outside SQLite); at the end the longest any acknowledged write stayed
# unsynced (syncd's own metric) must be under the sync interval plus 0.5 s. Prints one line per
# pattern and exits 1 when any round broke the promise.
#
#   scripts/durability-rounds.sh [ROUNDS] [LOAD_SECONDS] [QUIET_SECONDS]
#
# SYNCD and SYNCCTL name the binaries (default: the debug build's, built when missing), so the
# same rounds can be run against another build of syncd.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-50} load=${2:-2} quiet=${3:-1.5}
if [ -z "${SYNCD:-}" ] || [ -z "${SYNCCTL:-}" ]; then
    swift build --product syncd >/dev/null
    swift build --product syncctl >/dev/null
fi
bin="$(swift build --show-bin-path)"
syncd=${SYNCD:-$bin/syncd} syncctl=${SYNCCTL:-$bin/syncctl}

work=$(mktemp -d /tmp/durability-rounds.XXXXXX)
socket=$work/syncd.sock database=$work/state.sqlite
"$syncd" --socket "$socket" --database "$database" 2>"$work/syncd.log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 200); do grep -q "syncd ready" "$work/syncd.log" && break; sleep 0.05; done

broken=0
for connections in 1 2 4 8; do
    unmoved=0 unsynced=0
    for _ in $(seq "$rounds"); do
        timeout --signal=INT "$load" "$syncctl" --socket "$socket" bench put --connections "$connections" --pipeline 16 \
            --count 1000000000 >/dev/null 2>&1 || true
        sleep "$quiet"
        status=$("$syncctl" --socket "$socket" --json status)
        # Moved: nothing of the journal left outside SQLite (a syncd without the field: the
        # journal back to its header alone).
        moved=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("unmovedBytes", "none"))' <<<"$status")
        if [ "$moved" = "none" ]; then
            [ "$(stat -c %s "$database-segments")" -le 64 ] || unmoved=$((unmoved + 1))
        else
            [ "$moved" = "0" ] || unmoved=$((unmoved + 1))
        fi
        age=$(python3 -c 'import json,sys; print(json.load(sys.stdin).get("unsyncedSeconds", "none"))' <<<"$status")
        [ "$age" = "0" ] || [ "$age" = "0.0" ] || unsynced=$((unsynced + 1))
    done
    echo "$connections connection(s) x 16 in flight, $rounds rounds of ${load}s then ${quiet}s quiet: journal not moved after $unmoved, not synced after $unsynced"
    [ $((unmoved + unsynced)) -eq 0 ] || broken=1
done
"$syncctl" --socket "$socket" --json status | python3 -c '
import json, sys
status = json.load(sys.stdin)
longest, interval = status.get("longestUnsyncedSeconds"), status.get("syncIntervalSeconds")
revision = status.get("revision")
print(f"longest any acknowledged write stayed unsynced: {longest} s (interval {interval} s); revision {revision}")
sys.exit(0 if longest is not None and longest <= interval + 0.5 else 1)
' || broken=1
exit $broken
