"""Ephemeral (presence) keys: gone with their connection, put back by the client after it
reconnects, and left to whoever wrote them meanwhile."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import sharedstate
from sharedstate import BatchKind, ConnectionState

from .conftest import Daemon, eventually


def holder_of(client: sharedstate.Client, key: str) -> int | None:
    """The session an ephemeral key is bound to (0: persists), or None when it does not exist."""
    try:
        return client.get(key).ephemeral_session
    except sharedstate.NotFound:
        return None


def test_an_ephemeral_key_goes_with_its_client(connect: Callable[..., sharedstate.Client]) -> None:
    observer = connect(client_name="observer")
    present = connect(client_name="present")
    present.put("presence/p", {"pid": 1}, ephemeral=True)
    assert holder_of(observer, "presence/p") == present.session_id
    present.close()
    eventually(lambda: holder_of(observer, "presence/p") is None, "syncd to remove the key")


def test_presence_is_put_back_after_syncd_restarts(connect: Callable[..., sharedstate.Client], daemon: Daemon) -> None:
    present = connect(client_name="present")
    present.put("presence/p", {"pid": 1}, ephemeral=True)
    present.put("presence/q", "was ephemeral", ephemeral=True)
    present.put("presence/q", "persists now")  # a plain put ends the binding
    present.transaction(on_success=[sharedstate.Put("presence/t", "tx", ephemeral=True)])
    daemon.kill()
    present.wait_until(ConnectionState.RECONNECTING, timeout=10)
    daemon.start()
    present.wait_until(ConnectionState.CONNECTED, timeout=20)

    observer = connect(client_name="observer")
    # Put back before the client reported itself connected: no wait needed.
    assert holder_of(observer, "presence/p") == present.session_id
    assert holder_of(observer, "presence/t") == present.session_id
    assert observer.get("presence/p").value == {"pid": 1}
    assert observer.get("presence/q").ephemeral_session == 0
    # It is still a presence key of the new session: it goes when the client goes.
    present.close()
    eventually(lambda: holder_of(observer, "presence/p") is None, "the key to go with the client")


def test_a_key_written_meanwhile_by_another_process_stays_theirs(
    connect: Callable[..., sharedstate.Client], daemon: Daemon, scratch: Path
) -> None:
    present = connect(client_name="present")
    present.put("presence/mine", "me", ephemeral=True)
    present.put("presence/contested", "me", ephemeral=True)

    # While present is away, another process takes one of its keys.
    daemon.stop()
    present.wait_until(ConnectionState.RECONNECTING, timeout=10)
    elsewhere = str(scratch / "elsewhere.sock")
    daemon.start(socket=elsewhere)
    with sharedstate.connect(elsewhere) as other:
        other.put("presence/contested", "someone else")
    daemon.stop()
    daemon.start()
    present.wait_until(ConnectionState.CONNECTED, timeout=20)

    observer = connect(client_name="observer")
    assert holder_of(observer, "presence/mine") == present.session_id
    contested = observer.get("presence/contested")
    assert (contested.value, contested.ephemeral_session) == ("someone else", 0)
    # The client no longer holds it: another restart does not bring its value back either.
    observer.delete("presence/contested")
    daemon.kill()
    for client in (present, observer):
        client.wait_until(ConnectionState.RECONNECTING, timeout=10)
    daemon.start()
    for client in (present, observer):
        client.wait_until(ConnectionState.CONNECTED, timeout=20)
    eventually(lambda: holder_of(observer, "presence/mine") == present.session_id, "presence/mine back")
    assert holder_of(observer, "presence/contested") is None


def test_after_a_dropped_connection_the_old_session_s_key_is_waited_for(
    connect: Callable[..., sharedstate.Client],
) -> None:
    observer = connect(client_name="observer")
    present = connect(client_name="present")
    present.put("presence/d", "here", ephemeral=True)
    old_session = present.session_id
    with observer.watch("presence/") as watch:
        assert [change.key for change in watch.next_batch(timeout=10).changes] == ["presence/d"]
        # The connection drops while syncd runs on: syncd removes the old session's key in its
        # own time, and the client puts the key back only after that.
        present._core.connection()._sock.shutdown(socket.SHUT_RDWR)
        eventually(lambda: present.session_id not in (0, old_session), "present to reconnect")
        changes = []
        while len(changes) < 2:
            batch = watch.next_batch(timeout=10)
            if batch is not None and batch.kind is not BatchKind.PROGRESS:
                changes.extend(batch.changes)
        assert [(change.type, change.key) for change in changes] == [("delete", "presence/d"), ("put", "presence/d")]
        assert changes[1].entry.ephemeral_session == present.session_id
    assert "presence/d" in present._core.held_presence
    assert holder_of(observer, "presence/d") == present.session_id


def test_presence_puts_back_with_the_asyncio_client_too(daemon: Daemon) -> None:
    import asyncio

    import sharedstate.aio

    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket, client_name="async-present") as present:
            await present.put("presence/async", 1, ephemeral=True)
            states = present.connection_states()
            assert await states.__anext__() is ConnectionState.CONNECTED
            daemon.kill()
            assert await asyncio.wait_for(states.__anext__(), 10) is ConnectionState.RECONNECTING
            daemon.start()
            assert await asyncio.wait_for(states.__anext__(), 20) is ConnectionState.CONNECTED
            await states.aclose()
            entry = await present.get("presence/async")
            assert entry.ephemeral_session == present.session_id

    started = time.monotonic()
    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert time.monotonic() - started < 60


def test_put_back_waits_for_the_previous_session_to_let_go(
    connect: Callable[..., sharedstate.Client], daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    import sharedstate._core
    import sharedstate.aio

    # Far more than the 0.3 s the old session holds on, however busy the machine.
    monkeypatch.setattr(sharedstate._core, "PREVIOUS_SESSION_GRACE", 20.0)
    holder = connect(client_name="old-session")
    holder.put("presence/w", "old", ephemeral=True)
    old_session = holder.session_id

    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket, client_name="new-session") as fresh:
            core = fresh._core
            loop = asyncio.get_running_loop()
            # The old session's connection ends a moment after the put-back starts.
            started = loop.time()
            ending = loop.run_in_executor(None, lambda: (time.sleep(0.3), holder.close()))
            outcome = await core._put_back("presence/w", b'"new"', core.connection(), old_session)
            await ending
            assert outcome == "restored" and loop.time() - started >= 0.3
            entry = await fresh.get("presence/w")
            assert (entry.value, entry.ephemeral_session) == ("new", fresh.session_id)

            # A key held by anyone but the previous session is left alone at once.
            await fresh.put("presence/x", "theirs")
            started = loop.time()
            outcome = await core._put_back("presence/x", b'"mine"', core.connection(), old_session)
            assert outcome == "taken over" and loop.time() - started < 1
            assert (await fresh.get("presence/x")).value == "theirs"

    asyncio.run(asyncio.wait_for(scenario(), 30))
