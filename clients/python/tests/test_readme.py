"""The README's examples run as written, against a syncd started without --socket, which both
find through the default socket path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import SYNCD_BINARY

README = Path(__file__).resolve().parents[1] / "README.md"


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


@pytest.fixture
def default_environment(scratch: Path) -> dict[str, str]:
    """An environment whose default socket is in the test's directory."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SYNCD_")}
    environment.pop("RUNTIME_DIRECTORY", None)
    environment["XDG_RUNTIME_DIR"] = str(scratch)
    return environment


@pytest.fixture
def default_daemon(scratch: Path, default_environment: dict[str, str]) -> subprocess.Popen[bytes]:
    log_path = scratch / "syncd.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(SYNCD_BINARY), "--database", str(scratch / "state.sqlite")],
            env=default_environment,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 30
        while b"syncd ready" not in log_path.read_bytes():
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "syncd was not ready within 30 s"
            time.sleep(0.01)
        assert (scratch / "syncd" / "syncd.sock").exists()
        yield process
    finally:
        process.kill()
        process.wait(timeout=20)


def run_example(source: str, environment: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", source], env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_ten_line_example(default_daemon: subprocess.Popen[bytes], default_environment: dict[str, str]) -> None:
    example = examples()[0]
    assert len(example.strip().splitlines()) <= 12
    assert run_example(example, default_environment).splitlines() == [
        "snapshot 2 {'door/opens': 1, 'door/state': 'open'}",
        "changes 3 {'door/state': 'closed'}",
    ]
    # Again on the same database: it still runs, with later revisions.
    assert run_example(example, default_environment).splitlines() == [
        "snapshot 5 {'door/opens': 2, 'door/state': 'open'}",
        "changes 6 {'door/state': 'closed'}",
    ]


def test_the_asyncio_example(default_daemon: subprocess.Popen[bytes], default_environment: dict[str, str]) -> None:
    assert run_example(examples()[1], default_environment).splitlines() == ["snapshot [('door/state', 'open')]"]
