"""What the browser test and the inspector's benchmark share: writers at a steady pace, and a
click on the newest revision timed inside the page."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sharedstate


@contextmanager
def paced_writes(socket: str, per_second: int = 1_000, lanes: int = 4, keys: int = 20) -> Iterator[list[int]]:
    """Writes ``per_second`` puts a second to syncd at ``socket`` until the block ends, from
    ``lanes`` connections (a round trip per write: several keep the pace on a busy machine where
    one could not); yields the count of writes of each lane."""
    stop = threading.Event()
    written = [0] * lanes
    pace = per_second / lanes

    def write(lane: int) -> None:
        with sharedstate.connect(socket, client_name=f"load-writer-{lane}") as client:
            started = time.monotonic()
            while not stop.is_set():
                # The n-th write of a lane at n / pace seconds.
                delay = started + written[lane] / pace - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                key = f"load/{(lane * keys // lanes + written[lane] % (keys // lanes))}"
                client.put(key, {"n": written[lane]}, cause="load")
                written[lane] += 1

    writers = [threading.Thread(target=write, args=(lane,)) for lane in range(lanes)]
    for writer in writers:
        writer.start()
    try:
        yield written
    finally:
        stop.set()
        for writer in writers:
            writer.join(timeout=10)


def timed_click_on_newest_revision(page: Any) -> float:
    """Clicks the newest row of the timeline; returns the milliseconds until the detail panel
    shows its revision, measured in the page."""
    return page.evaluate(
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
