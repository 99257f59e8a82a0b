"""A real syncd for each test, on its own socket and database, always killed afterwards.

``SYNCD_BINARY`` names the syncd to run (default: the debug build of the repository this file is
in); syncctl and the climate examples are looked for next to it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sharedstate
import sharedstate.aio

REPOSITORY = Path(__file__).resolve().parents[3]
SYNCD_BINARY = Path(os.environ.get("SYNCD_BINARY") or REPOSITORY / ".build" / "debug" / "syncd")


def binary(name: str) -> Path:
    """A built executable next to syncd (syncctl, climate-panel, ...)."""
    path = SYNCD_BINARY.parent / name
    if not os.access(path, os.X_OK):
        pytest.fail(f"{name} is not built next to {SYNCD_BINARY}; build the package first (swift build)")
    return path


def eventually(condition: Callable[[], Any], what: str, timeout: float = 20.0, interval: float = 0.02) -> Any:
    """Polls ``condition`` until it returns something true; fails the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Daemon:
    """A syncd process for one test. ``start`` may be called again after ``kill`` or ``stop``,
    on the same database or another one, on the same socket or another one."""

    def __init__(self, directory: Path) -> None:
        if not os.access(SYNCD_BINARY, os.X_OK):
            pytest.fail(f"no syncd at {SYNCD_BINARY}; build it (swift build) or set SYNCD_BINARY")
        self.directory = directory
        self.socket = str(directory / "syncd.sock")
        self.database = str(directory / "db" / "state.sqlite")
        self.process: subprocess.Popen[bytes] | None = None
        self._starts = 0

    @property
    def log_path(self) -> Path:
        return self.directory / f"syncd-{self._starts}.log"

    def start(self, *arguments: str, socket: str | None = None, database: str | None = None) -> None:
        assert self.process is None, "syncd is already running"
        self._starts += 1
        log = open(self.log_path, "wb")
        environment = {key: value for key, value in os.environ.items() if not key.startswith("SYNCD_")}
        self.process = subprocess.Popen(
            [str(SYNCD_BINARY), "--socket", socket or self.socket, "--database", database or self.database, *arguments],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=environment,
        )
        log.close()
        deadline = time.monotonic() + 30
        while b"syncd ready" not in self.log_path.read_bytes():
            if self.process.poll() is not None:
                output = self.log_path.read_text(errors="replace")
                self.process = None
                pytest.fail(f"syncd exited at start: {output}")
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail("syncd was not ready within 30 s")
            time.sleep(0.01)

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as in a crash."""
        self._end(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM, and a clean exit expected."""
        status = self._end(signal.SIGTERM)
        assert status == 0, f"syncd exited with {status}: {self.log_path.read_text(errors='replace')}"

    def _end(self, signal_number: int) -> int | None:
        process, self.process = self.process, None
        if process is None:
            return None
        process.send_signal(signal_number)
        try:
            return process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
            pytest.fail("syncd did not exit within 20 s")


def short_directory(prefix: str) -> Path:
    # Unix socket paths are limited to 107 bytes: pytest's tmp_path can be longer.
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@pytest.fixture
def scratch() -> Iterator[Path]:
    directory = short_directory("sspy-")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def daemon(scratch: Path) -> Iterator[Daemon]:
    """A running syncd (progress notices every 0.2 s); killed after the test whatever happens."""
    daemon = Daemon(scratch)
    daemon.start("--progress-interval", "0.2")
    try:
        yield daemon
    finally:
        daemon.kill()


@pytest.fixture
def connect(daemon: Daemon) -> Iterator[Callable[..., sharedstate.Client]]:
    """Connects blocking clients to the test's syncd; all of them are closed afterwards."""
    clients: list[sharedstate.Client] = []

    def make(**options: Any) -> sharedstate.Client:
        options.setdefault("request_timeout", 20.0)
        client = sharedstate.connect(daemon.socket, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(connect: Callable[..., sharedstate.Client]) -> sharedstate.Client:
    return connect(client_name="pytest")


def syncctl(daemon: Daemon, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary("syncctl")), "--socket", daemon.socket, *arguments], capture_output=True, text=True, timeout=30
    )


def next_changes(watch: sharedstate.Watch, timeout: float = 10) -> sharedstate.WatchBatch:
    """The next batch that is not a progress notice."""
    deadline = time.monotonic() + timeout
    while True:
        batch = watch.next_batch(timeout=max(0.01, deadline - time.monotonic()))
        assert batch is not None, "the watch ended"
        if batch.kind is not sharedstate.BatchKind.PROGRESS:
            return batch


async def next_changes_async(watch: sharedstate.aio.AsyncWatch, timeout: float = 10) -> sharedstate.WatchBatch:
    """The next batch of an asyncio watch that is not a progress notice."""
    while True:
        batch = await asyncio.wait_for(watch.__anext__(), timeout)
        if batch.kind is not sharedstate.BatchKind.PROGRESS:
            return batch
