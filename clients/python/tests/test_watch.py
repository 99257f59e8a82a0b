"""Watches: snapshot then changes, replay, resume across a crash of syncd with no gap and no
duplicate, a compacted or lost resume point delivered as a difference, and bounded memory for a
slow consumer."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sharedstate
from sharedstate import BatchKind, ChangeType, WatchBatch

from .conftest import Daemon, eventually, next_changes


def apply(state: dict[str, Any], batch: WatchBatch) -> None:
    """What a consumer does with each batch."""
    if batch.replaces_state:
        state.clear()
    for change in batch.changes:
        if change.type is ChangeType.PUT:
            state[change.key] = change.value
        else:
            state.pop(change.key, None)


def test_snapshot_then_every_change(client: sharedstate.Client) -> None:
    client.put("room/b", 2)
    client.put("room/a", 1)
    client.put("roomy", 0)
    with client.watch("room/") as watch:
        snapshot = watch.next_batch(timeout=10)
        assert snapshot.kind is BatchKind.SNAPSHOT and snapshot.revision == client.status().revision
        assert [(change.key, change.value) for change in snapshot.changes] == [("room/a", 1), ("room/b", 2)]
        put = client.put("room/c", 3)
        client.put("roomy", 1)  # not selected
        deleted = client.delete("room/a")
        first, second = next_changes(watch), next_changes(watch)
        assert (first.kind, first.revision, [(c.type, c.key, c.value) for c in first.changes]) == (
            BatchKind.CHANGES,
            put.revision,
            [("put", "room/c", 3)],
        )
        assert (second.revision, [(c.type, c.key) for c in second.changes]) == (deleted, [("delete", "room/a")])
        assert second.changes[0].entry.mod_revision == deleted


def test_several_prefixes_and_progress_notices(client: sharedstate.Client) -> None:
    with client.watch(["a/", "b/"], progress=True) as watch:
        assert watch.next_batch(timeout=10).changes == ()
        client.put("a/1", 1)
        client.put("c/1", 1)
        client.put("b/1", 1)
        assert [next_changes(watch).changes[0].key for _ in range(2)] == ["a/1", "b/1"]
        # Idle: syncd (started with --progress-interval 0.2) says which revision the watch is current with.
        batch = watch.next_batch(timeout=10)
        assert batch.kind is BatchKind.PROGRESS and batch.changes == ()
        assert batch.revision == client.status().revision


def test_replay_from_a_revision(client: sharedstate.Client) -> None:
    start = client.put("log/x", 0).revision
    expected = [client.put("log/x", value).revision for value in range(1, 6)]
    with client.watch("log/", from_revision=start) as watch:
        replayed = [next_changes(watch) for _ in expected]
        assert [batch.revision for batch in replayed] == expected
        assert [batch.changes[0].value for batch in replayed] == [1, 2, 3, 4, 5]
        live = client.put("log/x", 6)
        assert next_changes(watch).revision == live.revision


def test_closing_a_watch_cancels_it_on_syncd(client: sharedstate.Client) -> None:
    watch = client.watch("w/")
    watch.next_batch(timeout=10)
    eventually(lambda: client.status().watches == 1, "the watch on syncd")
    watch.close()
    eventually(lambda: client.status().watches == 0, "the watch to be cancelled")
    assert watch.next_batch(timeout=1) is None
    with client.watch("w/") as other:
        other.next_batch(timeout=10)
        eventually(lambda: client.status().watches == 1, "the second watch")
    eventually(lambda: client.status().watches == 0, "the with block to cancel it")


def test_resume_after_syncd_is_killed_and_restarted_loses_and_repeats_nothing(
    connect: Callable[..., sharedstate.Client], daemon: Daemon
) -> None:
    watcher = connect(client_name="watcher")
    writer = connect(client_name="writer")
    writer.put("crash/0", -1)
    # Progress notices let the check below see the watcher current with the last revision.
    watch = watcher.watch("crash/", progress=True)
    snapshot = watch.next_batch(timeout=10)
    assert snapshot.kind is BatchKind.SNAPSHOT
    seen: list[WatchBatch] = []
    acknowledged: list[tuple[int, str, int]] = []
    stop = threading.Event()
    failures: list[BaseException] = []
    refused: list[int] = []

    def consume() -> None:
        try:
            while not stop.is_set():
                try:
                    batch = watch.next_batch(timeout=0.2)
                except TimeoutError:
                    continue
                if batch is None:
                    return
                seen.append(batch)
        except BaseException as error:  # reported below
            failures.append(error)

    def write() -> None:
        value = 0
        while not stop.is_set():
            key = f"crash/{value % 4}"
            try:
                result = writer.put(key, value)
            except sharedstate.Unavailable:
                refused.append(value)
                time.sleep(0.02)  # syncd is away; this value may or may not have been committed
                value += 1
                continue
            acknowledged.append((result.revision, key, value))
            value += 1

    threads = [threading.Thread(target=consume), threading.Thread(target=write)]
    for thread in threads:
        thread.start()
    try:
        eventually(lambda: len(acknowledged) >= 150, "writes before the crash", timeout=60)
        daemon.kill()
        time.sleep(0.3)
        daemon.start("--progress-interval", "0.2")
        before_restart = len(acknowledged)
        eventually(lambda: len(acknowledged) >= before_restart + 150, "writes after the restart", timeout=60)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not failures
    assert refused, "the writer never noticed syncd was gone"
    final = writer.status().revision

    def caught_up() -> bool:
        batch = watch.next_batch(timeout=5)
        assert batch is not None
        seen.append(batch)
        return batch.revision >= final

    eventually(caught_up, "the watcher to catch up")
    watch.close()

    changes = [batch for batch in seen if batch.kind is not BatchKind.PROGRESS]
    assert all(batch.kind is BatchKind.CHANGES for batch in changes)
    revisions = [batch.revision for batch in changes]
    # No duplicate, in order ...
    assert revisions == sorted(set(revisions))
    # ... and no gap: exactly what the change log holds after the snapshot, change for change.
    with writer.watch("crash/", from_revision=snapshot.revision) as replay:
        logged = [next_changes(replay) for _ in revisions]
    assert [(b.revision, [(c.type, c.key, c.entry.raw) for c in b.changes]) for b in changes] == [
        (b.revision, [(c.type, c.key, c.entry.raw) for c in b.changes]) for b in logged
    ]
    # Every acknowledged write is among them, at its revision.
    by_revision = {batch.revision: batch.changes[0] for batch in changes}
    for revision, key, value in acknowledged:
        assert (by_revision[revision].key, by_revision[revision].value) == (key, value)


def test_a_compacted_resume_point_is_delivered_as_the_difference(
    connect: Callable[..., sharedstate.Client], daemon: Daemon, scratch: Path
) -> None:
    watcher = connect(client_name="watcher")
    for key in ["c/a", "c/b", "c/d"]:
        watcher.put(key, 1)
    watch = watcher.watch("c/")
    state: dict[str, Any] = {}
    apply(state, watch.next_batch(timeout=10))
    assert state == {"c/a": 1, "c/b": 1, "c/d": 1}

    # While the watcher is away, syncd runs where it cannot reach it: keys change and the log
    # is compacted past the watcher's resume point.
    daemon.stop()
    elsewhere = str(scratch / "elsewhere.sock")
    daemon.start(socket=elsewhere)
    with sharedstate.connect(elsewhere) as other:
        other.put("c/a", 2)
        other.delete("c/b")
        other.put("c/c", 1)
        other.put("c/e", 1)
        other.delete("c/e")
        other.put("unrelated", 1)
        other.compact(other.status().revision)
    daemon.stop()
    daemon.start("--progress-interval", "0.2")

    resync = next_changes(watch, timeout=30)
    assert resync.kind is BatchKind.RESYNC
    assert [(change.type, change.key, change.value) for change in resync.changes] == [
        ("put", "c/a", 2),
        ("delete", "c/b", None),
        ("put", "c/c", 1),
    ]
    apply(state, resync)
    assert state == {entry.key: entry.value for entry in watcher.list("c/").entries}
    # Live changes follow from there.
    put = watcher.put("c/d", 2)
    batch = next_changes(watch)
    assert (batch.kind, batch.revision, batch.changes[0].key) == (BatchKind.CHANGES, put.revision, "c/d")
    watch.close()


def test_a_syncd_behind_the_watch_is_delivered_as_the_difference(
    connect: Callable[..., sharedstate.Client], daemon: Daemon, scratch: Path
) -> None:
    watcher = connect(client_name="watcher")
    for value in range(10):
        watcher.put(f"f/old{value % 3}", value)
    watch = watcher.watch("f/")
    state: dict[str, Any] = {}
    apply(state, watch.next_batch(timeout=10))

    # syncd comes back on another database, behind the revision the watcher saw.
    daemon.stop()
    other_database = str(scratch / "other" / "state.sqlite")
    elsewhere = str(scratch / "elsewhere.sock")
    daemon.start(socket=elsewhere, database=other_database)
    with sharedstate.connect(elsewhere) as other:
        other.put("f/new", "fresh")
    daemon.stop()
    daemon.start(database=other_database)

    resync = next_changes(watch, timeout=30)
    assert resync.kind is BatchKind.RESYNC
    assert [(change.type, change.key) for change in resync.changes] == [
        ("put", "f/new"),
        ("delete", "f/old0"),
        ("delete", "f/old1"),
        ("delete", "f/old2"),
    ]
    apply(state, resync)
    assert state == {"f/new": "fresh"}
    watch.close()


def test_after_syncd_went_back_the_watch_resumes_from_where_it_went_back_to(
    connect: Callable[..., sharedstate.Client], daemon: Daemon, scratch: Path
) -> None:
    watcher = connect(client_name="watcher")
    older = [watcher.put("b/k", value).revision for value in range(3)]
    daemon.stop()
    database = Path(daemon.database).parent
    shutil.copytree(database, scratch / "older")
    daemon.start("--progress-interval", "0.2")
    watcher.wait_until(sharedstate.ConnectionState.CONNECTED, timeout=20)
    newer = [watcher.put("b/k", value).revision for value in range(3, 10)]
    watch = watcher.watch("b/")
    assert watch.next_batch(timeout=10).revision == newer[-1]

    # syncd comes back on an older copy of its database, behind the watch: a resync.
    daemon.stop()
    shutil.rmtree(database)
    shutil.copytree(scratch / "older", database)
    daemon.start("--progress-interval", "0.2")
    resync = next_changes(watch, timeout=30)
    assert (resync.kind, resync.revision, resync.changes[0].value) == (BatchKind.RESYNC, older[-1], 2)

    # While the watcher is away again, syncd passes the revision the watch had before.
    daemon.stop()
    elsewhere = str(scratch / "elsewhere.sock")
    daemon.start(socket=elsewhere)
    with sharedstate.connect(elsewhere) as other:
        later = [other.put("b/k", value).revision for value in range(100, 110)]
    assert later[0] <= newer[-1] < later[-1]
    daemon.stop()
    daemon.start("--progress-interval", "0.2")

    # The watch resumes after the resync's revision: every later revision, none skipped.
    resumed = [next_changes(watch, timeout=30) for _ in later]
    assert [(batch.kind, batch.revision, batch.changes[0].value) for batch in resumed] == [
        (BatchKind.CHANGES, revision, value) for revision, value in zip(later, range(100, 110))
    ]
    watch.close()


def test_a_slow_consumer_costs_memory_bounded_by_its_keys_and_converges(
    connect: Callable[..., sharedstate.Client],
) -> None:
    watcher = connect(client_name="slow")
    writer = connect(client_name="writer")
    bound = 64 * 1024
    keys = [f"slow/{index:02}" for index in range(20)]
    watch = watcher.watch("slow/", max_pending_bytes=bound)
    state: dict[str, Any] = {}
    apply(state, watch.next_batch(timeout=10))

    # The consumer takes nothing while about 3 MB of changes arrive.
    padding = "x" * 1000
    largest = 0
    last = 0
    for sequence in range(3000):
        last = writer.put(keys[sequence % len(keys)], {"sequence": sequence, "padding": padding}).revision
        if sequence % 100 == 0:
            largest = max(largest, watch.buffered_bytes)
    for key in keys[:5]:
        last = writer.delete(key)
    eventually(lambda: watch.latest_revision >= last, "the watch to receive every change")
    largest = max(largest, watch.buffered_bytes)

    per_key = 64 + len(keys[0]) + len(f'{{"sequence":9999,"padding":"{padding}"}}')
    assert watch.folds >= 1
    assert largest <= bound + 64 + len(keys) * per_key, f"{largest} bytes waited for the consumer"

    # The consumer then gets one resync: the latest value of every key, and the deletions.
    resync = watch.next_batch(timeout=10)
    assert resync.kind is BatchKind.RESYNC and resync.revision == last
    deleted = [change.key for change in resync.changes if change.type is ChangeType.DELETE]
    assert deleted == keys[:5]
    apply(state, resync)
    assert state == {entry.key: entry.value for entry in writer.list("slow/").entries}
    assert len(state) == 15

    # And live changes follow it, one revision at a time again.
    put = writer.put("slow/new", 1)
    batch = next_changes(watch)
    assert (batch.kind, batch.revision) == (BatchKind.CHANGES, put.revision)
    watch.close()


def test_a_consumer_that_keeps_up_gets_each_revision(connect: Callable[..., sharedstate.Client]) -> None:
    watcher = connect(client_name="fast")
    writer = connect(client_name="writer")
    # All 200 batches (about 28 KB) fit under the bound: even a consumer a busy machine starves
    # for a while cannot make them fold.
    watch = watcher.watch("fast/", max_pending_bytes=64 * 1024)
    watch.next_batch(timeout=10)
    got: list[WatchBatch] = []

    def consume() -> None:
        while len(got) < 200:
            batch = watch.next_batch(timeout=20)
            assert batch is not None
            if batch.kind is not BatchKind.PROGRESS:
                got.append(batch)

    consumer = threading.Thread(target=consume)
    consumer.start()
    revisions = [writer.put("fast/key", value).revision for value in range(200)]
    consumer.join(timeout=60)
    # Each batch was taken as it came, so nothing was folded.
    assert watch.folds == 0
    assert [batch.revision for batch in got] == revisions
    watch.close()


@pytest.mark.parametrize("max_pending_bytes", [1024])
def test_a_large_batch_is_handed_over_whole_to_a_waiting_consumer(
    connect: Callable[..., sharedstate.Client], daemon: Daemon, max_pending_bytes: int
) -> None:
    # No progress notices: one coming just before the transaction would be waiting in the buffer
    # (or have the consumer busy taking it) when the large batch came, and the two would fold.
    daemon.stop()
    daemon.start("--progress-interval", "3600")
    client = connect(client_name="large")
    watch = client.watch("large/", max_pending_bytes=max_pending_bytes)
    watch.next_batch(timeout=10)
    received: list[WatchBatch] = []
    consumer = threading.Thread(target=lambda: received.append(next_changes(watch, timeout=20)))
    consumer.start()
    eventually(lambda: watch._buffer._blocked_consumers == 1, "the consumer to wait")
    result = client.transaction(on_success=[sharedstate.Put(f"large/{index}", "y" * 200) for index in range(20)])
    consumer.join(timeout=30)
    assert received[0].kind is BatchKind.CHANGES and received[0].revision == result.revision
    assert len(received[0].changes) == 20 and watch.folds == 0
    watch.close()


def test_progress_batches_come_only_when_asked_for(client: sharedstate.Client) -> None:
    client.put("p/a", 1)
    with client.watch("p/", progress=True) as asked, client.watch("p/") as quiet:
        first = asked.next_batch(timeout=10)
        assert first is not None and first.kind is BatchKind.SNAPSHOT
        first = quiet.next_batch(timeout=10)
        assert first is not None and first.kind is BatchKind.SNAPSHOT
        # A revision outside both watches: syncd's progress notices (every 0.2 s here) carry it.
        elsewhere = client.put("other/x", 1)
        batch = asked.next_batch(timeout=10)
        while batch is not None and batch.revision < elsewhere.revision:
            assert batch.kind is BatchKind.PROGRESS and batch.changes == ()
            batch = asked.next_batch(timeout=10)
        assert batch is not None and batch.kind is BatchKind.PROGRESS and batch.revision == elsewhere.revision
        # The watch that did not ask gets no batch, but knows how far it is current.
        deadline = time.monotonic() + 10
        while quiet.latest_revision < elsewhere.revision and time.monotonic() < deadline:
            time.sleep(0.02)
        assert quiet.latest_revision == elsewhere.revision
        with pytest.raises(TimeoutError):
            quiet.next_batch(timeout=0.5)
