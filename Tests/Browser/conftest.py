"""Real processes for the inspector's browser tests: a private syncd, `syncctl inspect` on it, and
Debian's Chromium driven by Playwright (no browser download).

``SYNCD_BINARY`` and ``SYNCCTL_BINARY`` name the builds to run (default: the debug builds of this
repository); ``CHROMIUM`` the browser (default /usr/bin/chromium).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
BUILD = REPOSITORY / ".build" / "debug"
SYNCD = Path(os.environ.get("SYNCD_BINARY") or BUILD / "syncd")
SYNCCTL = Path(os.environ.get("SYNCCTL_BINARY") or SYNCD.parent / "syncctl")
CHROMIUM = os.environ.get("CHROMIUM") or "/usr/bin/chromium"


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


class Processes:
    """The processes a test started; all killed when it ends."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, arguments: list[str], **options: Any) -> subprocess.Popen[bytes]:
        process = subprocess.Popen(arguments, **options)
        self.started.append(process)
        return process

    def stop_all(self) -> None:
        for process in reversed(self.started):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)


class Daemon:
    """A syncd on a socket of its own, in a directory others may enter (for the policy test)."""

    def __init__(self, directory: Path, processes: Processes, extra: list[str] | None = None) -> None:
        self.directory = directory
        self.socket = str(directory / "syncd.sock")
        self.processes = processes
        self.extra = extra or []
        self.start()

    def start(self) -> None:
        self.process = self.processes.start(
            [str(SYNCD), "--socket", self.socket, "--database", str(self.directory / "state.sqlite"), *self.extra],
            stdout=subprocess.DEVNULL,
            stderr=open(self.directory / "syncd.log", "ab"),
        )
        eventually(lambda: self.syncctl("status", check=False).returncode == 0, "syncd to answer", timeout=15)

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is said to the clients."""
        self.process.kill()
        self.process.wait(timeout=10)

    def syncctl(self, *arguments: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(SYNCCTL), "--socket", self.socket, *arguments], capture_output=True, text=True, timeout=30
        )
        if check and result.returncode != 0:
            pytest.fail(f"syncctl {' '.join(arguments)} failed ({result.returncode}): {result.stderr}")
        return result

    def put(self, key: str, value: str, cause: str | None = None) -> int:
        """Puts ``value`` (JSON text); returns the revision."""
        arguments = ["put", key, value] + (["--cause", cause] if cause else [])
        output = self.syncctl(*arguments).stdout
        match = re.search(r"revision (\d+)", output)
        assert match, output
        return int(match.group(1))


class Inspector:
    """`syncctl inspect` on a daemon, and the URL it printed."""

    def __init__(
        self, daemon: Daemon, processes: Processes, prefix: list[str] | None = None, syncctl: Path = SYNCCTL
    ) -> None:
        self.process = processes.start(
            [*(prefix or []), str(syncctl), "--socket", daemon.socket, "inspect"],
            stdout=subprocess.PIPE,
            stderr=open(daemon.directory / "inspect.log", "wb"),
        )
        line: list[bytes] = []
        reader = threading.Thread(target=lambda: line.append(self.process.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=20)
        text = line[0].decode() if line else ""
        match = re.search(r"(http://\S+)", text)
        if not match:
            pytest.fail(f"syncctl inspect printed no URL: {text!r}; its log: {(daemon.directory / 'inspect.log').read_text()}")
        self.url = match.group(1)
        self.base, self.token = self.url.split("/?token=")

    def get(self, path: str, token: str | None = None, headers: dict[str, str] | None = None) -> tuple[int, str]:
        """GETs ``path`` (with the token unless another is given); returns status and body."""
        token = self.token if token is None else token
        separator = "&" if "?" in path else "?"
        url = self.base + path + (f"{separator}token={token}" if token else "")
        request = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.stop_all()


@pytest.fixture
def scratch() -> Iterator[Path]:
    directory = Path(tempfile.mkdtemp(prefix="inspector-"))
    os.chmod(directory, 0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def daemon(scratch: Path, processes: Processes) -> Daemon:
    return Daemon(scratch, processes)


@pytest.fixture
def inspector(daemon: Daemon, processes: Processes) -> Inspector:
    return Inspector(daemon, processes)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (.ci/run does), or set CHROMIUM")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.errors = errors
    yield page
    context.close()
