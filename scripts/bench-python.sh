#!/usr/bin/env bash
# Measures the Python client (clients/python) against a private syncd beside redis-py against a
# private Redis (Unix socket, AOF everysec, no RDB) in the same run, and prints a Markdown table
# with the ratios: put round trip with one request in flight, and events received per second by
# one Python watcher or subscriber while another process writes.
#
#   scripts/bench-python.sh [--quick]
#
# syncd is $SYNCD if set, else .build/release/syncd if it is built, else .build/debug/syncd (debug
# figures are far below release ones); syncctl is taken from the same directory. It builds nothing.
# Installs redis-server with apt when it is missing (as root), keeps a venv with this client and
# redis-py in .build/bench-python-venv, and leaves nothing running. --quick uses smaller counts.
set -euo pipefail
cd "$(dirname "$0")/.."

puts=5000 events=50000
if [ "${1:-}" = "--quick" ]; then puts=1000 events=5000; fi

syncd=${SYNCD:-}
if [ -z "$syncd" ]; then
    if [ -x .build/release/syncd ]; then syncd=.build/release/syncd; else syncd=.build/debug/syncd; fi
fi
syncctl="$(dirname "$syncd")/syncctl"
for binary in "$syncd" "$syncctl"; do
    [ -x "$binary" ] || { echo "bench-python: $binary is not built (swift build, or set SYNCD)" >&2; exit 1; }
done
case "$syncd" in *debug*) echo "bench-python: using the debug build $syncd: figures are debug-build figures" >&2 ;; esac

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "bench-python: installing redis-server" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >/dev/null 2>&1 \
        || { apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y redis-server >/dev/null; }
fi

venv=.build/bench-python-venv
if [ ! -x "$venv/bin/python" ]; then
    echo "bench-python: creating $venv" >&2
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check ./clients/python "redis>=5.0.1"

dir="$(mktemp -d /tmp/bench-python.XXXXXX)"
syncd_pid="" redis_pid=""
cleanup() {
    [ -n "$syncd_pid" ] && kill "$syncd_pid" 2>/dev/null || true
    [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

"$syncd" --socket "$dir/syncd.sock" --database "$dir/state.sqlite" --log-level warning 2>>"$dir/syncd.log" &
syncd_pid=$!
redis-server --port 0 --unixsocket "$dir/redis.sock" --dir "$dir" --save "" --appendonly yes \
    --appendfsync everysec --client-output-buffer-limit "pubsub 0 0 0" --logfile "$dir/redis.log" &
redis_pid=$!
for _ in $(seq 1 3000); do
    if "$syncctl" --socket "$dir/syncd.sock" status >/dev/null 2>&1 && redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1; then
        break
    fi
    sleep 0.01
done

echo "bench-python: syncd $("$syncctl" --socket "$dir/syncd.sock" --json status | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["version"])') ($syncd), Redis $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'), Python $("$venv/bin/python" -c 'import platform; print(platform.python_version())'), redis-py $("$venv/bin/python" -c 'import redis; print(redis.__version__)'), protobuf $("$venv/bin/python" -c 'import google.protobuf as p; print(p.__version__)')" >&2
"$venv/bin/python" clients/python/benchmarks/compare_redis.py \
    --syncd-socket "$dir/syncd.sock" --syncctl "$syncctl" \
    --redis-socket "$dir/redis.sock" --redis-benchmark "$(command -v redis-benchmark)" \
    --puts "$puts" --events "$events"
