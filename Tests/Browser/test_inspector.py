"""`syncctl inspect` in a real browser: what its page shows, to whom, and how fast."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import SYNCCTL, Daemon, Inspector, Processes
from load import paced_writes, timed_click_on_newest_revision

# A hang fails its test instead of stalling the suite (pytest-timeout, from the client's [test]).
pytestmark = pytest.mark.timeout(90)


def open_page(page: Any, inspector: Inspector) -> None:
    page.goto(inspector.url)
    page.wait_for_selector("#live-state:has-text('live')", timeout=10_000)
    page.wait_for_selector(".tree-node", timeout=10_000)


def test_every_request_needs_the_token_and_the_inspectors_own_address(inspector: Inspector) -> None:
    assert inspector.get("/", token="")[0] == 403
    assert inspector.get("/", token="0" * 32)[0] == 403
    assert inspector.get("/api/status", token="")[0] == 403
    assert inspector.get("/api/stream", token="wrong")[0] == 403
    status, body = inspector.get("/")
    assert status == 200 and "<html" in body.lower()
    assert inspector.get("/api/status")[0] == 200
    # A page of another origin, or a name of this machine other than the address (rebinding).
    assert inspector.get("/api/status", headers={"Origin": "http://example.com"})[0] == 403
    assert inspector.get("/api/status", headers={"Host": "attacker.example:80"})[0] == 403
    with urllib.request.urlopen(inspector.url, timeout=10) as response:
        assert "default-src 'none'" in response.headers["Content-Security-Policy"]
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers.get("Access-Control-Allow-Origin") is None


def test_a_put_appears_within_a_second_and_its_revision_shows_writer_cause_and_diff(
    daemon: Daemon, inspector: Inspector, page: Any
) -> None:
    daemon.put("doors/front", '{"locked": false, "battery": 80}')
    open_page(page, inspector)
    revision = daemon.put("doors/front", '{"locked": true, "battery": 80}', cause="door-lock: lockTapped")
    started = time.monotonic()
    row = page.wait_for_selector(f".change-row[data-revision='{revision}']", timeout=1_000)
    print(f"revision {revision} on the page {1000 * (time.monotonic() - started):.0f} ms after syncctl returned")
    assert "doors/front" in row.inner_text()

    row.click()
    page.wait_for_selector(f"#detail-revision:has-text('{revision}')", timeout=5_000)
    assert "syncctl" in page.inner_text("#detail-writer")
    assert "door-lock: lockTapped" in page.inner_text("#detail-cause")
    diff = page.inner_text("#detail-diff")
    assert "/locked" in diff and "true" in diff

    # The key tree shows it, and the key's own view has its value and history.
    page.click(".tree-node[data-path='doors/']")
    page.click(".tree-node[data-path='doors/front']")
    page.wait_for_selector("#detail-key:has-text('doors/front')", timeout=5_000)
    # The key's own answer fills the value: wait for it, not for the name the revision left.
    page.wait_for_selector("#detail-value:has-text('locked')", timeout=5_000)
    assert "locked" in page.inner_text("#detail-value")
    assert page.errors == []


def test_time_travel_shows_an_older_value_and_says_when_a_revision_was_compacted(
    daemon: Daemon, inspector: Inspector, page: Any
) -> None:
    first = daemon.put("lights/hall", '{"on": false}')
    second = daemon.put("lights/hall", '{"on": true}')
    daemon.put("lights/kitchen", '{"on": true}')
    open_page(page, inspector)
    if page.query_selector("#tab-travel"):
        page.click("#tab-travel")
    page.fill("#travel-revision", str(first))
    page.click("#travel-go")
    # The page shows the current state as it opens: wait for the revision asked for.
    page.wait_for_selector(f"#travel-message:has-text('State at revision {first} ')", timeout=5_000)
    entry = page.wait_for_selector(".travel-entry[data-key='lights/hall']", timeout=5_000)
    assert "false" in entry.inner_text()
    assert page.query_selector(".travel-entry[data-key='lights/kitchen']") is None
    page.click("#travel-forward")
    page.wait_for_selector(f"#travel-message:has-text('State at revision {second} ')", timeout=5_000)
    page.wait_for_selector(".travel-entry[data-key='lights/hall']:has-text('true')", timeout=5_000)
    page.wait_for_selector("#travel-diff:has-text('/on')", timeout=5_000)

    daemon.syncctl("compact", "--revision", str(second))
    page.fill("#travel-revision", str(first))
    page.click("#travel-go")
    page.wait_for_selector("#travel-message:has-text('compacted away')", timeout=5_000)
    assert page.errors == [] or all("410" in error for error in page.errors)


def test_the_page_goes_on_after_syncd_crashes_and_comes_back(daemon: Daemon, inspector: Inspector, page: Any) -> None:
    daemon.put("doors/front", '{"locked": false}')
    open_page(page, inspector)
    daemon.kill()
    # Meanwhile the inspector answers, saying what is wrong.
    status, body = inspector.get("/api/status")
    assert status == 502 and "syncd" in body, body
    daemon.start()
    # The inspector's client reconnects and its watch resumes: the next revision reaches the page.
    revision = daemon.put("doors/front", '{"locked": true}', cause="after the crash")
    page.wait_for_selector(f".change-row[data-revision='{revision}']", timeout=15_000)
    assert "after the crash" in page.inner_text(f".change-row[data-revision='{revision}']")


POLICY = {
    "grants": [
        {"prefix": "public/", "groups": ["nogroup"], "read": True},
    ]
}


@pytest.mark.skipif(os.geteuid() != 0, reason="runs syncctl inspect as another user with setpriv, which needs root")
def test_a_user_whose_policy_hides_a_prefix_never_sees_it_on_the_page_or_in_the_stream(
    scratch: Path, processes: Processes, page: Any
) -> None:
    (scratch / "policy.json").write_text(json.dumps(POLICY))
    daemon = Daemon(scratch, processes, ["--socket-group", "65534", "--policy", str(scratch / "policy.json")])
    # A copy of syncctl that nobody may run, whatever the permissions of the build folder.
    syncctl = scratch / "syncctl"
    shutil.copy(SYNCCTL, syncctl)
    os.chmod(syncctl, 0o755)
    daemon.put("public/notice", '"open house"')
    daemon.put("priv/secret", '"TOPSECRET-1"')
    inspector = Inspector(
        daemon,
        processes,
        prefix=["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"],
        syncctl=syncctl,
    )
    stream: list[bytes] = []

    def read_stream() -> None:
        request = urllib.request.Request(inspector.base + "/api/stream?token=" + inspector.token)
        try:
            with urllib.request.urlopen(request, timeout=8) as response:
                deadline = time.monotonic() + 6
                while time.monotonic() < deadline:
                    line = response.readline()
                    if not line:
                        break
                    stream.append(line)
        except Exception:
            pass

    reader = threading.Thread(target=read_stream)
    reader.start()
    open_page(page, inspector)
    time.sleep(0.5)
    for index in range(5):
        daemon.put("priv/secret", f'"TOPSECRET-{index + 2}"', cause="priv-writer")
        daemon.put("public/notice", f'"open house {index}"')
    page.wait_for_selector(".change-row:has-text('public/notice')", timeout=5_000)
    page.click(".tree-node[data-path='public/']")
    page.wait_for_selector(".tree-node[data-path='public/notice']", timeout=5_000)
    if page.query_selector("#tab-travel"):
        page.click("#tab-travel")
    page.fill("#travel-revision", "2")
    page.click("#travel-go")
    page.wait_for_selector("#travel-message", timeout=5_000)
    reader.join(timeout=10)
    seen = page.content() + b"".join(stream).decode(errors="replace")
    for path in ["/api/children?prefix=", "/api/state?revision=2&prefix=", "/api/keys?prefix=", "/api/revision?revision=2"]:
        seen += inspector.get(path)[1]
    assert "open house" in seen
    assert "priv" not in seen and "TOPSECRET" not in seen


def test_the_page_answers_clicks_quickly_under_a_thousand_writes_a_second(
    daemon: Daemon, inspector: Inspector, page: Any
) -> None:
    for index in range(20):
        daemon.put(f"load/{index}", '{"n": 0}')
    open_page(page, inspector)
    began = time.monotonic()
    with paced_writes(daemon.socket, per_second=1_000) as written:
        time.sleep(2)
        latencies = []
        for _ in range(8):
            latencies.append(timed_click_on_newest_revision(page))
            time.sleep(1)
        rows = page.eval_on_selector_all(".change-row", "rows => rows.length")
    total, seconds = sum(written), time.monotonic() - began
    print(f"{total} writes in {seconds:.1f} s; click → detail {sorted(round(x) for x in latencies)} ms; {rows} rows kept")
    # The pace is the premise: a machine too busy to write half of it measured nothing.
    assert total >= 500 * seconds, f"the writers made {total} writes in {seconds:.1f} s, not 1,000 a second"
    assert rows <= 500
    assert statistics.median(latencies) <= 200
    assert page.errors == []
