"""The inspector's figures (scripts/bench-inspector.sh runs this): how long the page takes to be
usable with a million keys, and how fast it answers a click under 1,000 writes a second.

    python bench_inspector.py SOCKET URL
"""

from __future__ import annotations

import os
import statistics
import sys
import time

from load import paced_writes, timed_click_on_newest_revision
from playwright.sync_api import sync_playwright

socket, url = sys.argv[1], sys.argv[2]
chromium = os.environ.get("CHROMIUM") or "/usr/bin/chromium"

with sync_playwright() as playwright:
    browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    loads = []
    for _ in range(3):
        started = time.monotonic()
        page.goto(url)
        page.wait_for_selector(".tree-node[data-path='bench/']", timeout=30_000)
        page.wait_for_selector("#status-keys:not(:empty)", timeout=30_000)
        loaded = time.monotonic()
        page.click(".tree-node[data-path='bench/']")
        page.wait_for_selector(".tree-node[data-path^='bench/'][data-path$='9']", timeout=30_000)
        loads.append((1000 * (loaded - started), 1000 * (time.monotonic() - loaded)))
    print(
        "page usable with the state's keys (tree, status):",
        ", ".join(f"{load:.0f}" for load, _ in loads),
        "ms; bench/ expanded (first 1,000 of its keys):",
        ", ".join(f"{expand:.0f}" for _, expand in loads),
        "ms",
    )

    latencies = []
    started = time.monotonic()
    with paced_writes(socket, per_second=1_000, keys=100) as written:
        time.sleep(1)
        while time.monotonic() - started < 10:
            latencies.append(timed_click_on_newest_revision(page))
            time.sleep(0.5)
    elapsed = time.monotonic() - started
    print(
        f"under {sum(written) / elapsed:.0f} writes/s for {elapsed:.0f} s: click → revision shown, "
        f"median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms ({len(latencies)} clicks)"
    )
    browser.close()
