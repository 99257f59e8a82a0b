#!/usr/bin/env bash
# The inspector's figures: the page's load time with 1,000,000 keys, and how fast it answers a
# click while 1,000 writes a second stream in. Release builds, a private syncd, Debian's Chromium
# driven by Playwright (in .build/python-venv, as .ci/run prepares it).
#
#   scripts/bench-inspector.sh [KEYS]
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-1000000}
swift build -c release --product syncd >/dev/null
swift build -c release --product syncctl >/dev/null
bin=$(swift build -c release --show-bin-path)
python=.build/python-venv/bin/python
"$python" -c "import playwright, sharedstate" 2>/dev/null \
    || .build/python-venv/bin/pip install --quiet --disable-pip-version-check "./clients/python[test]" playwright
work=$(mktemp -d /tmp/bench-inspector.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
"$bin/syncd" --socket "$work/s" --database "$work/db" 2>"$work/syncd.log" &
pids+=($!)
until "$bin/syncctl" --socket "$work/s" status >/dev/null 2>&1; do sleep 0.05; done
echo "bench-inspector: writing $keys keys of 100 B"
"$bin/syncctl" --socket "$work/s" bench put --connections 4 --pipeline 16 --count "$keys" --keys "$keys" --value-size 100 >/dev/null
"$bin/syncctl" --socket "$work/s" inspect >"$work/inspect.out" 2>"$work/inspect.log" &
pids+=($!)
until grep -q http "$work/inspect.out" 2>/dev/null; do sleep 0.05; done
url=$(grep -o 'http://[^ ]*' "$work/inspect.out")
PYTHONPATH=clients/python/src "$python" Tests/Browser/bench_inspector.py "$work/s" "$url"
