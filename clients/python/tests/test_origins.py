"""Who changed what: the cause of a write, the writer and cause in history, and the writer session
and cause of a watch's ``changes`` batches, in the blocking and the asyncio client."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable

import pytest

import sharedstate
import sharedstate.aio
from sharedstate import BatchKind, ChangeOrigin, ChangeType, Compare, Delete, Put, Writer

from .conftest import Daemon, next_changes, next_changes_async


def test_history_names_the_writer_and_the_cause(connect: Callable[..., sharedstate.Client]) -> None:
    writer = connect(client_name="door-lock")
    reader = connect(client_name="reader")
    writer.put("door/state", "open", cause="door-lock: requestApplied(r7)")
    writer.put("door/state", "closed")
    writer.transaction([Compare.version_is("door/state", 2)], [Put("door/state", "locked")], cause="door-lock: locked")
    writer.delete("door/state", cause="door-lock: removed")

    history = reader.history("door/state")
    assert len(history.origins) == len(history.changes) == 4
    assert [change.type for change in history.changes] == [ChangeType.PUT] * 3 + [ChangeType.DELETE]
    assert [origin.cause for origin in history.origins] == [
        "door-lock: requestApplied(r7)",
        "",
        "door-lock: locked",
        "door-lock: removed",
    ]
    # The tests run as root, an administrator: syncd sends the process and its user too.
    expected = Writer(writer.session_id, "door-lock", os.getpid(), os.getuid(), os.getgid())
    assert all(origin.writer == expected for origin in history.origins)
    first = history.origins[0]
    assert isinstance(first, ChangeOrigin) and first.writer.pid == os.getpid() and first.writer.client_name == "door-lock"
    # origins[i] belongs to changes[i], also when only the last ones are asked for.
    last = reader.history("door/state", limit=2)
    assert [origin.cause for origin in last.origins] == ["door-lock: locked", "door-lock: removed"]
    assert [change.entry.mod_revision for change in last.changes] == [change.entry.mod_revision for change in history.changes[2:]]


def test_watch_batches_carry_the_writer_session_and_the_cause(connect: Callable[..., sharedstate.Client]) -> None:
    watcher = connect(client_name="watcher")
    writer = connect(client_name="writer")
    with watcher.watch("room/") as watch:
        snapshot = next_changes(watch)
        assert snapshot.kind is BatchKind.SNAPSHOT and (snapshot.writer_session, snapshot.cause) == (0, "")

        writer.put("room/temperature", 21, cause="thermostat: setpoint(21)")
        batch = next_changes(watch)
        assert batch.kind is BatchKind.CHANGES and [change.key for change in batch.changes] == ["room/temperature"]
        assert (batch.writer_session, batch.cause) == (writer.session_id, "thermostat: setpoint(21)")

        watcher.put("room/light", "on")
        batch = next_changes(watch)
        assert (batch.writer_session, batch.cause) == (watcher.session_id, "")

        writer.transaction([], [Put("room/light", "off"), Delete("room/temperature")], cause="scene: away")
        batch = next_changes(watch)
        assert len(batch.changes) == 2 and (batch.writer_session, batch.cause) == (writer.session_id, "scene: away")

        writer.delete("room/light", cause="cleanup")
        batch = next_changes(watch)
        assert batch.changes[0].type is ChangeType.DELETE
        assert (batch.writer_session, batch.cause) == (writer.session_id, "cleanup")

        # syncd itself removes the ephemeral keys of a session that ended: session 0, and a cause naming it.
        leaving = connect(client_name="leaving", reconnects=False)
        leaving.put("room/presence", "here", ephemeral=True)
        assert next_changes(watch).writer_session == leaving.session_id
        session = leaving.session_id
        leaving.close()
        batch = next_changes(watch)
        assert batch.changes[0].type is ChangeType.DELETE and batch.changes[0].key == "room/presence"
        assert (batch.writer_session, batch.cause) == (0, f"session {session} ended")
        origin = watcher.history("room/presence").origins[-1]
        assert (origin.writer.session_id, origin.writer.client_name, origin.cause) == (0, "syncd", f"session {session} ended")


@pytest.mark.parametrize(
    ("cause", "error"),
    [
        ("x" * 257, sharedstate.TooLarge),
        ("é" * 129, sharedstate.TooLarge),  # 258 bytes of UTF-8
        ("line\nbreak", sharedstate.InvalidArgument),
        ("tab\there", sharedstate.InvalidArgument),
        ("nul\x00", sharedstate.InvalidArgument),
        ("del\x7f", sharedstate.InvalidArgument),
        ("c1\x85", sharedstate.InvalidArgument),
    ],
)
def test_a_bad_cause_is_refused_before_sending(
    client: sharedstate.Client, cause: str, error: type[sharedstate.SharedStateError]
) -> None:
    client.put("cause/key", 1)
    revision = client.status().revision
    with pytest.raises(error):
        client.put("cause/key", 2, cause=cause)
    with pytest.raises(error):
        client.delete("cause/key", cause=cause)
    with pytest.raises(error):
        client.transaction([], [Put("cause/key", 3)], cause=cause)
    assert client.status().revision == revision and client.value("cause/key") == 1
    # The limits themselves are allowed: 256 bytes, and any printable text.
    client.put("cause/key", 4, cause="é" * 128)
    client.put("cause/key", 5, cause="ok: ünïcödé ✓ \u200b")
    assert [origin.cause for origin in client.history("cause/key", limit=2).origins] == ["é" * 128, "ok: ünïcödé ✓ \u200b"]


def test_asyncio_causes_history_and_watch(daemon: Daemon) -> None:
    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket, client_name="async-writer") as client:
            async with client.watch("a/") as watch:
                assert (await next_changes_async(watch)).kind is BatchKind.SNAPSHOT
                await client.put("a/x", 1, cause="async: put")
                batch = await next_changes_async(watch)
                assert (batch.writer_session, batch.cause) == (client.session_id, "async: put")
                await client.transaction([Compare.absent("a/y")], [Put("a/y", 2)], cause="async: transaction")
                batch = await next_changes_async(watch)
                assert (batch.writer_session, batch.cause) == (client.session_id, "async: transaction")
                await client.delete("a/x", cause="async: delete")
                batch = await next_changes_async(watch)
                assert (batch.writer_session, batch.cause) == (client.session_id, "async: delete")

            history = await client.history("a/x")
            assert [origin.cause for origin in history.origins] == ["async: put", "async: delete"]
            writer = Writer(client.session_id, "async-writer", os.getpid(), os.getuid(), os.getgid())
            assert all(origin.writer == writer for origin in history.origins)
            assert [origin.cause for origin in (await client.history("a/x", limit=1)).origins] == ["async: delete"]

            revision = (await client.status()).revision
            with pytest.raises(sharedstate.TooLarge):
                await client.put("a/x", 1, cause="x" * 257)
            with pytest.raises(sharedstate.InvalidArgument):
                await client.delete("a/y", cause="bad\rcause")
            with pytest.raises(sharedstate.InvalidArgument):
                await client.transaction([], [Delete("a/y")], cause="\x1b[31m")
            assert (await client.status()).revision == revision

    asyncio.run(asyncio.wait_for(scenario(), 60))
