"""A Swift feature process and this Python process sharing a request channel: the climate
example's panel (Swift) applies navigation requests that Python and syncctl publish under
climate/panel/requests/, each exactly once, in the order they were created, across a SIGKILL of
the panel."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sharedstate
from sharedstate import BatchKind, ChangeType

from .conftest import Daemon, binary, eventually, syncctl

REQUESTS = "climate/panel/requests/"
SCREEN = "climate/panel/screen"


@contextmanager
def panel(daemon: Daemon) -> Iterator[subprocess.Popen[bytes]]:
    log = open(daemon.directory / "panel.log", "ab")
    process = subprocess.Popen(
        [str(binary("climate-panel")), "--socket", daemon.socket], stdin=subprocess.DEVNULL, stdout=log, stderr=log
    )
    log.close()
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=20)


def request(screen: str) -> dict[str, Any]:
    return {"command": "push", "screen": screen}


def test_requests_from_python_and_swift_are_each_applied_once(
    connect: Callable[..., sharedstate.Client], daemon: Daemon
) -> None:
    client = connect(client_name="python-requester")
    screens: list[dict[str, Any]] = []
    watch = client.watch(SCREEN, max_pending_bytes=64 << 20)
    assert watch.next_batch(timeout=10).changes == ()

    def collect_until(applied: int) -> bool:
        try:
            batch = watch.next_batch(timeout=0.5)
        except TimeoutError:
            return False
        assert batch is not None and batch.kind in (BatchKind.CHANGES, BatchKind.PROGRESS)
        for change in batch.changes:
            assert change.type is ChangeType.PUT
            screens.append(change.value)
        return bool(screens) and screens[-1]["applied"] == applied

    with panel(daemon) as running:
        # Published before the panel watches: it finds them in its first snapshot.
        for index in range(4):
            client.put(f"{REQUESTS}py-{index:02}", request(f"py/{index}"), if_version=0)
        eventually(lambda: collect_until(4), "the panel to apply the first requests")
        running.send_signal(signal.SIGKILL)
        running.wait(timeout=20)

    # Published while the panel is down, by Python and by syncctl (the Swift client).
    for index in range(4, 7):
        client.put(f"{REQUESTS}py-{index:02}", request(f"py/{index}"), if_version=0)
    result = syncctl(daemon, "put", f"{REQUESTS}swift-07", '{"command":"push","screen":"swift/7"}')
    assert result.returncode == 0, result.stderr

    with panel(daemon) as running:
        eventually(lambda: collect_until(8), "the restarted panel to apply the rest")
        # Published while it runs, from both languages, interleaved.
        client.put(f"{REQUESTS}py-08", request("py/8"), if_version=0)
        assert syncctl(daemon, "put", f"{REQUESTS}swift-09", '{"command":"pop"}').returncode == 0
        client.put(f"{REQUESTS}py-10", request("py/10"), if_version=0)
        eventually(lambda: collect_until(11), "the panel to apply the live requests")
        running.send_signal(signal.SIGTERM)
        assert running.wait(timeout=20) == 0
    watch.close()

    # Each save applied exactly one more request: no request lost, none applied twice.
    assert [screen["applied"] for screen in screens] == list(range(1, 12))
    expected = ["overview"] + [f"py/{index}" for index in range(7)] + ["swift/7", "py/10"]
    assert screens[-1]["path"] == expected
    assert client.get(SCREEN).value == {"path": expected, "applied": 11}
    # Each request was deleted in the transaction that applied it.
    assert client.list(REQUESTS).entries == []
