"""Watches that ask for previous values (etcd's ``prev_kv``): each change of a ``changes`` batch
carries the key's entry before it, live and replayed, across a restart of syncd, and through the
fold of a slow consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import sharedstate
import sharedstate.aio
from sharedstate import UNKNOWN, BatchKind, ChangeType, Entry

from .conftest import Daemon, eventually, next_changes


def test_live_changes_carry_the_entry_before_them(client: sharedstate.Client) -> None:
    client.put("cfg/mode", "auto")
    with client.watch("cfg/", previous_values=True) as watch, client.watch("cfg/") as plain:
        snapshot = watch.next_batch(timeout=10)
        # A snapshot carries no previous values, even for a watch that asked.
        assert snapshot.kind is BatchKind.SNAPSHOT and [change.previous for change in snapshot.changes] == [UNKNOWN]
        plain.next_batch(timeout=10)
        mode = client.get("cfg/mode")
        client.put("cfg/level", 1)  # created
        client.put("cfg/mode", "manual")  # overwritten
        level = client.get("cfg/level")
        client.delete("cfg/level")  # deleted

        created, overwritten, deleted = (next_changes(watch).changes for _ in range(3))
        assert [(change.type, change.key) for change in created + overwritten + deleted] == [
            (ChangeType.PUT, "cfg/level"),
            (ChangeType.PUT, "cfg/mode"),
            (ChangeType.DELETE, "cfg/level"),
        ]
        # The key did not exist before: None, not UNKNOWN.
        assert created[0].previous is None and created[0].previous_value is None
        # The entry before, whole: value, version and revisions.
        assert overwritten[0].previous == mode
        assert isinstance(overwritten[0].previous, Entry)
        assert (overwritten[0].previous_value, overwritten[0].value) == ("auto", "manual")
        assert deleted[0].previous == level and deleted[0].previous_value == 1

        # A watch that did not ask knows nothing of the entry before.
        others = [change for _ in range(3) for change in next_changes(plain).changes]
        assert [change.key for change in others] == ["cfg/level", "cfg/mode", "cfg/level"]
        assert all(change.previous is UNKNOWN and change.previous_value is None for change in others)
        assert not UNKNOWN  # falsy, like None: `if change.previous:` means "there was an entry"
        # Two watches of this connection were each sent the three changes live.
        mine = [info for info in client.clients() if info.session_id == client.session_id]
        assert [info.events_delivered for info in mine] == [6]


def test_a_replay_finds_previous_values_in_the_change_log(client: sharedstate.Client) -> None:
    start = client.status().revision
    first = client.put("log/x", {"n": 0})
    entries = [client.get("log/x")]
    for value in range(1, 4):
        client.put("log/x", {"n": value})
        entries.append(client.get("log/x"))
    deleted = client.delete("log/x")
    with client.watch("log/", from_revision=start, previous_values=True) as watch:
        replayed = [next_changes(watch) for _ in range(5)]
    assert [batch.revision for batch in replayed] == [first.revision] + [entry.mod_revision for entry in entries[1:]] + [deleted]
    changes = [batch.changes[0] for batch in replayed]
    assert changes[0].previous is None
    assert [change.previous for change in changes[1:]] == entries
    assert changes[-1].type is ChangeType.DELETE and changes[-1].previous_value == {"n": 3}


def test_a_replay_past_the_compacted_log_does_not_know_the_previous_values(client: sharedstate.Client) -> None:
    client.put("old/k", 1)
    compacted = client.put("old/k", 2).revision
    client.compact(compacted)
    later = client.put("old/k", 3).revision
    again = client.put("old/k", 4).revision
    with client.watch("old/", from_revision=compacted, previous_values=True) as watch:
        first, second = next_changes(watch), next_changes(watch)
    assert (first.revision, second.revision) == (later, again)
    # The entry before the first is older than the change log holds; the second's is in it.
    assert first.changes[0].previous is UNKNOWN
    assert second.changes[0].previous_value == 3 and second.changes[0].previous.mod_revision == later


def test_a_resumed_watch_keeps_asking_for_previous_values(
    connect: Callable[..., sharedstate.Client], daemon: Daemon
) -> None:
    watcher = connect(client_name="watcher")
    writer = connect(client_name="writer")
    writer.put("crash/k", 0)
    watch = watcher.watch("crash/", previous_values=True)
    watch.next_batch(timeout=10)
    writer.put("crash/k", 1)
    assert next_changes(watch).changes[0].previous_value == 0

    daemon.kill()
    daemon.start("--progress-interval", "0.2")
    writer.wait_until(sharedstate.ConnectionState.CONNECTED, timeout=20)
    # Written before or after the watcher is back: replayed or live, it knows the entry before.
    writer.put("crash/k", 2)
    writer.put("crash/k", 3)
    writer.delete("crash/k")
    resumed = [next_changes(watch, timeout=30).changes[0] for _ in range(3)]
    assert [(change.type, change.previous_value) for change in resumed] == [
        (ChangeType.PUT, 1),
        (ChangeType.PUT, 2),
        (ChangeType.DELETE, 3),
    ]
    watch.close()


def test_a_fold_for_a_slow_consumer_keeps_the_entry_before_the_first_change(
    connect: Callable[..., sharedstate.Client],
) -> None:
    watcher = connect(client_name="slow")
    writer = connect(client_name="writer")
    writer.put("fold/k", "initial")
    before = writer.get("fold/k")
    watch = watcher.watch("fold/", max_pending_bytes=4 * 1024, previous_values=True)
    watch.next_batch(timeout=10)
    # The consumer takes nothing while the changes pile up past the bound.
    last = 0
    for sequence in range(200):
        last = writer.put("fold/k", {"sequence": sequence, "padding": "x" * 100}).revision
    writer.put("fold/new", 1)
    last = writer.delete("fold/new")
    eventually(lambda: watch.latest_revision >= last, "the watch to receive every change")
    assert watch.folds >= 1
    resync = watch.next_batch(timeout=10)
    assert resync.kind is BatchKind.RESYNC and resync.revision == last
    by_key = {change.key: change for change in resync.changes}
    # The folded change stands for all 200: before them, the key held what the snapshot showed.
    assert by_key["fold/k"].value == {"sequence": 199, "padding": "x" * 100}
    assert by_key["fold/k"].previous == before
    # Created then deleted within the fold: it did not exist before the first of them.
    assert by_key["fold/new"].type is ChangeType.DELETE and by_key["fold/new"].previous is None
    watch.close()


def test_asyncio_watches_ask_for_previous_values_too(daemon: Daemon) -> None:
    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket) as client:
            await client.put("a/k", "before")
            async with client.watch("a/", previous_values=True) as watch:
                assert (await watch.next_batch()).kind is BatchKind.SNAPSHOT
                await client.put("a/k", "after")
                while True:
                    batch = await asyncio.wait_for(watch.next_batch(), 10)
                    if batch.kind is not BatchKind.PROGRESS:
                        break
                change = batch.changes[0]
                assert (change.previous_value, change.value) == ("before", "after")
                assert change.previous.mod_revision < batch.revision

    asyncio.run(asyncio.wait_for(scenario(), 60))
