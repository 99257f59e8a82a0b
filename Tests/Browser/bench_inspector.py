"""The inspector's figures (scripts/bench-inspector.sh runs this): how long the page takes to be
usable with a million keys, and how fast it answers a click under 1,000 writes a second.

    python bench_inspector.py SOCKET URL
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time

import sharedstate
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

    stop = threading.Event()
    written = [0]

    def write() -> None:
        with sharedstate.connect(socket, client_name="load-writer") as client:
            started = time.monotonic()
            while not stop.is_set():
                delay = started + written[0] / 1000 - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                client.put(f"load/{written[0] % 100}", {"n": written[0]}, cause="load")
                written[0] += 1

    writer = threading.Thread(target=write)
    writer.start()
    started = time.monotonic()
    latencies = []
    time.sleep(1)
    while time.monotonic() - started < 10:
        latencies.append(
            page.evaluate(
                """() => new Promise(resolve => {
                    const row = document.querySelector('.change-row');
                    const revision = row.dataset.revision;
                    const detail = document.querySelector('#detail-revision');
                    const started = performance.now();
                    const done = () => detail && detail.textContent.includes(revision);
                    const observer = new MutationObserver(() => {
                        if (done()) { observer.disconnect(); resolve(performance.now() - started); }
                    });
                    observer.observe(document.body, {subtree: true, childList: true, characterData: true});
                    row.click();
                    if (done()) { observer.disconnect(); resolve(performance.now() - started); }
                })"""
            )
        )
        time.sleep(0.5)
    stop.set()
    writer.join()
    elapsed = time.monotonic() - started
    print(
        f"under {written[0] / elapsed:.0f} writes/s for {elapsed:.0f} s: click → revision shown, "
        f"median {statistics.median(latencies):.0f} ms, max {max(latencies):.0f} ms ({len(latencies)} clicks)"
    )
    browser.close()
