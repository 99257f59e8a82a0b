#!/usr/bin/env bash
# Takes docs/inspector.png, the README's picture of `syncctl inspect`, from the browser tests'
# screenshot test (Tests/Browser/test_screenshot.py): a private syncd with a small home in it,
# the page in Debian's Chromium at 1400×900.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product syncd >/dev/null
swift build --product syncctl >/dev/null
python=.build/python-venv/bin/python
"$python" -c "import playwright, sharedstate, pytest_timeout" 2>/dev/null \
    || .build/python-venv/bin/pip install --quiet --disable-pip-version-check "./clients/python[test]" playwright
INSPECTOR_SCREENSHOT="$PWD/docs/inspector.png" PYTHONPATH=clients/python/src \
    "$python" -m pytest Tests/Browser/test_screenshot.py -q -p no:cacheprovider
echo "wrote docs/inspector.png"
