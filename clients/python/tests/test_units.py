"""The client's pure parts, without syncd: the cursor, the watch buffer's folding, backoff, and
where the socket is."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

import sharedstate

from sharedstate import UNKNOWN, BatchKind, Change, ChangeType, Entry, WatchBatch
from sharedstate._backoff import Backoff, UpdateAttempts
from sharedstate._buffer import WatchBuffer, estimated_bytes
from sharedstate._cursor import WatchCursor
from sharedstate._generated import sharedstate_pb2 as pb
from sharedstate.locations import SYSTEM_SOCKET_PATH, client_socket_path, default_socket_path
from sharedstate.types import batch_from_wire


def put(key: str, value: str, revision: int) -> Change:
    return Change(ChangeType.PUT, Entry(key, value.encode(), 1, revision, revision, 0))


def delete(key: str, revision: int) -> Change:
    return Change.deletion(key, revision)


def batch(kind: BatchKind, revision: int, *changes: Change) -> WatchBatch:
    return WatchBatch(kind, revision, tuple(changes))


def summary(result: WatchBatch) -> list[tuple[str, str]]:
    return [(str(change.type), change.key) for change in result.changes]


class TestWatchCursor:
    def test_a_later_snapshot_becomes_the_difference(self) -> None:
        cursor = WatchCursor()
        first = batch(BatchKind.SNAPSHOT, 3, put("a", "1", 1), put("b", "1", 2), put("c", "1", 3))
        assert cursor.absorb(first, is_first=True) is first
        cursor.absorb(batch(BatchKind.CHANGES, 4, put("d", "1", 4)), is_first=False)
        cursor.absorb(batch(BatchKind.CHANGES, 5, delete("c", 5)), is_first=False)
        later = batch(BatchKind.SNAPSHOT, 9, put("a", "2", 7), put("b", "1", 2), put("e", "1", 8))
        result = cursor.absorb(later, is_first=False)
        assert result.kind is BatchKind.RESYNC and result.revision == 9
        assert summary(result) == [("put", "a"), ("delete", "d"), ("put", "e")]
        assert result.changes[1].entry.mod_revision == 9
        assert cursor.revision == 9

    def test_a_resync_from_syncd_becomes_the_difference_too(self) -> None:
        cursor = WatchCursor()
        cursor.absorb(batch(BatchKind.SNAPSHOT, 2, put("a", "1", 1), put("b", "1", 2)), is_first=True)
        result = cursor.absorb(batch(BatchKind.RESYNC, 6, put("b", "1", 2)), is_first=False)
        assert summary(result) == [("delete", "a")]
        assert summary(cursor.absorb(batch(BatchKind.RESYNC, 7, put("b", "1", 2)), is_first=False)) == []

    def test_progress_moves_the_revision_only(self) -> None:
        cursor = WatchCursor()
        cursor.absorb(batch(BatchKind.SNAPSHOT, 2), is_first=True)
        cursor.absorb(batch(BatchKind.PROGRESS, 40), is_first=False)
        assert cursor.revision == 40

    def test_a_resync_behind_the_cursor_takes_its_revision(self) -> None:
        # syncd's database went back: resuming after the old revision would skip those between.
        cursor = WatchCursor()
        cursor.absorb(batch(BatchKind.SNAPSHOT, 9, put("a", "1", 9)), is_first=True)
        cursor.absorb(batch(BatchKind.SNAPSHOT, 3, put("a", "0", 3)), is_first=False)
        assert cursor.revision == 3


class TestWatchBuffer:
    @pytest.fixture
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.new_event_loop()
        yield loop
        loop.close()

    def test_hands_batches_over_in_order_while_under_the_bound(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop, max_pending_bytes=10_000)
        batches = [batch(BatchKind.CHANGES, revision, put("k", "v", revision)) for revision in range(1, 6)]
        for item in batches:
            buffer.put(item)
        assert [buffer.next_blocking(0) for _ in batches] == batches
        assert buffer.folds == 0 and buffer.buffered_bytes == 0

    def test_folds_into_the_latest_change_of_each_key_past_the_bound(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop, max_pending_bytes=1_000)
        buffer.put(batch(BatchKind.SNAPSHOT, 1, put("a", "0", 1)))
        assert buffer.next_blocking(0).kind is BatchKind.SNAPSHOT
        for revision in range(2, 200):
            buffer.put(batch(BatchKind.CHANGES, revision, put(f"k{revision % 3}", "x" * 50, revision)))
        buffer.put(batch(BatchKind.CHANGES, 200, delete("k0", 200)))
        assert buffer.folds == 1
        assert buffer.buffered_bytes < 1_000
        folded = buffer.next_blocking(0)
        assert folded.kind is BatchKind.RESYNC and folded.revision == 200
        assert summary(folded) == [("delete", "k0"), ("put", "k1"), ("put", "k2")]
        assert [change.entry.mod_revision for change in folded.changes] == [200, 199, 197]
        # Then one revision at a time again.
        buffer.put(batch(BatchKind.CHANGES, 201, put("k1", "y", 201)))
        assert buffer.next_blocking(0).kind is BatchKind.CHANGES

    def test_folding_before_the_first_batch_was_taken_gives_a_snapshot(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop, max_pending_bytes=300)
        buffer.put(batch(BatchKind.SNAPSHOT, 5, put("a", "1", 1), put("b", "1", 2)))
        buffer.put(batch(BatchKind.CHANGES, 6, delete("a", 6)))
        buffer.put(batch(BatchKind.CHANGES, 7, put("c", "x" * 400, 7)))
        folded = buffer.next_blocking(0)
        # A snapshot holds puts only: the deleted key is simply absent.
        assert folded.kind is BatchKind.SNAPSHOT and summary(folded) == [("put", "b"), ("put", "c")]

    def test_a_waiting_consumer_gets_a_large_batch_as_it_is(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop, max_pending_bytes=100)
        large = batch(BatchKind.CHANGES, 3, *[put(f"k{index}", "x" * 100, 3) for index in range(10)])
        assert estimated_bytes(large) > 100
        received: list[WatchBatch | None] = []
        consumer = threading.Thread(target=lambda: received.append(buffer.next_blocking(10)))
        consumer.start()
        while buffer._blocked_consumers == 0:
            pass
        buffer.put(large)
        consumer.join(timeout=10)
        assert received == [large] and buffer.folds == 0

    def test_ends_after_the_pending_batches_with_the_error(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop)
        ended: list[bool] = []
        buffer.on_terminate(lambda: ended.append(True))
        buffer.put(batch(BatchKind.CHANGES, 1))
        buffer.finish(RuntimeError("gone"))
        assert ended == [True]
        assert buffer.next_blocking(0).revision == 1
        with pytest.raises(RuntimeError):
            buffer.next_blocking(0)
        assert buffer.next_blocking(0) is None

    def test_times_out_and_keeps_going(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop)
        with pytest.raises(TimeoutError):
            buffer.next_blocking(0.05)
        buffer.put(batch(BatchKind.CHANGES, 1))
        assert buffer.next_blocking(0).revision == 1

    def test_a_cancelled_async_consumer_loses_nothing(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop)

        async def scenario() -> None:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(buffer.next_async(), 0.05)
            waiting = asyncio.ensure_future(buffer.next_async())
            await asyncio.sleep(0)
            # Woken, then cancelled before it could take the batch: the batch stays.
            buffer.put(batch(BatchKind.CHANGES, 1))
            waiting.cancel()
            buffer.put(batch(BatchKind.CHANGES, 2))
            assert (await buffer.next_async()).revision == 1
            assert (await buffer.next_async()).revision == 2
            buffer.terminate()
            assert await buffer.next_async() is None

        loop.run_until_complete(scenario())

    def test_a_folded_change_keeps_the_entry_before_the_first_change_it_stands_for(
        self, loop: asyncio.AbstractEventLoop
    ) -> None:
        buffer = WatchBuffer(loop, max_pending_bytes=1_024)
        buffer.put(batch(BatchKind.SNAPSHOT, 0))
        buffer.next_blocking(0)
        first = put("k", "0", 1)._replace(previous=None)  # it made the key
        buffer.put(batch(BatchKind.CHANGES, 1, first))
        for revision in range(2, 101):
            change = put("k", str(revision), revision)._replace(previous=put("k", str(revision - 1), revision - 1).entry)
            buffer.put(batch(BatchKind.CHANGES, revision, change))
        buffer.put(batch(BatchKind.CHANGES, 101, delete("gone", 101)._replace(previous=put("gone", "x", 1).entry)))
        assert buffer.folds == 1
        folded = buffer.next_blocking(0)
        assert folded.kind is BatchKind.RESYNC and summary(folded) == [("delete", "gone"), ("put", "k")]
        gone, key = folded.changes
        # The key's first change made it: so did the change that stands for all of them.
        assert (key.entry.raw, key.previous) == (b"100", None)
        # A key changed once keeps its change's own.
        assert gone.previous == put("gone", "x", 1).entry
        # Previous entries count towards the bound.
        assert estimated_bytes(folded) > estimated_bytes(batch(BatchKind.RESYNC, 101, gone._replace(previous=UNKNOWN), key))

    def test_a_fold_into_a_snapshot_keeps_no_previous_values(self, loop: asyncio.AbstractEventLoop) -> None:
        buffer = WatchBuffer(loop, max_pending_bytes=300)
        buffer.put(batch(BatchKind.SNAPSHOT, 5, put("a", "1", 1)))
        buffer.put(batch(BatchKind.CHANGES, 6, put("b", "x" * 400, 6)._replace(previous=None)))
        buffer.put(batch(BatchKind.CHANGES, 7, put("a", "2", 7)._replace(previous=put("a", "1", 1).entry)))
        folded = buffer.next_blocking(0)
        assert folded.kind is BatchKind.SNAPSHOT and summary(folded) == [("put", "a"), ("put", "b")]
        assert [change.previous for change in folded.changes] == [UNKNOWN, UNKNOWN]


class TestPreviousValuesFromTheWire:
    @staticmethod
    def event(kind: int, compacted: bool = False) -> pb.WatchEvent:
        event = pb.WatchEvent(kind=kind, revision=9)
        for key in ["new", "old"]:
            change = event.changes.add()
            change.entry.key, change.entry.value, change.entry.version = key, b"2", 1
            change.entry.mod_revision = 9
        event.changes[1].previous.key, event.changes[1].previous.value = "old", b"1"
        event.changes[1].previous.version, event.changes[1].previous.mod_revision = 3, 4
        event.changes[1].previous_compacted = compacted
        if compacted:
            event.changes[1].ClearField("previous")
        return event

    def test_a_watch_that_asked_gets_absent_or_the_entry_before(self) -> None:
        new, old = batch_from_wire(self.event(pb.EVENT_KIND_CHANGES), previous_values=True).changes
        assert new.previous is None and new.previous_value is None
        assert old.previous == Entry("old", b"1", 3, 0, 4, 0) and old.previous_value == 1

    def test_a_compacted_previous_entry_is_unknown(self) -> None:
        new, old = batch_from_wire(self.event(pb.EVENT_KIND_CHANGES, compacted=True), previous_values=True).changes
        assert (new.previous, old.previous) == (None, UNKNOWN)

    def test_without_asking_or_outside_changes_nothing_is_known(self) -> None:
        for event, asked in [
            (self.event(pb.EVENT_KIND_CHANGES), False),
            (self.event(pb.EVENT_KIND_SNAPSHOT), True),
            (self.event(pb.EVENT_KIND_RESYNC), True),
        ]:
            assert [change.previous for change in batch_from_wire(event, asked).changes] == [UNKNOWN, UNKNOWN]
        assert Change.from_wire(self.event(pb.EVENT_KIND_CHANGES).changes[1]).previous is UNKNOWN
        assert Change.from_wire(self.event(pb.EVENT_KIND_CHANGES).changes[1], previous_values=True).previous_value == 1


def test_backoff_doubles_up_to_the_maximum_with_jitter() -> None:
    fixed = Backoff(0.05, 2.0, uniform=lambda: 0.0)
    assert [round(fixed.next(), 3) for _ in range(8)] == [0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    full = Backoff(0.05, 2.0, uniform=lambda: 1.0)
    assert [round(full.next(), 3) for _ in range(7)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    jittered = Backoff(0.05, 2.0)
    delays = [jittered.next() for _ in range(20)]
    assert 0.025 <= delays[0] <= 0.05 and all(1.0 <= delay <= 2.0 for delay in delays[6:])


def test_update_waits_longer_after_each_lost_race_until_its_time_is_up() -> None:
    now = [100.0]
    attempts = UpdateAttempts("k", timeout=0.05, clock=lambda: now[0], uniform=lambda: 1.0)
    waits = []
    with pytest.raises(sharedstate.Conflict) as gave_up:
        while True:
            wait = attempts.lost()
            waits.append(wait)
            now[0] += wait
    # 1 ms, doubling up to 100 ms: here the time is up before the waits reach the cap.
    assert waits == [0.001, 0.002, 0.004, 0.008, 0.016]
    assert sum(waits) <= 0.05
    assert gave_up.value.message == 'key "k" kept changing; gave up after 6 attempts in 0.031 s'


def test_update_waits_are_jittered_and_capped() -> None:
    attempts = UpdateAttempts("k", timeout=3600, clock=lambda: 0.0)
    waits = [attempts.lost() for _ in range(20)]
    assert all(0.0005 <= wait <= 0.1 for wait in waits)
    assert max(waits[-5:]) >= 0.05
    # Two writers that lost together do not wait alike.
    assert len(set(waits)) > 1


def test_update_gives_up_after_max_attempts_when_given() -> None:
    attempts = UpdateAttempts("k", timeout=3600, max_attempts=2, clock=lambda: 0.0)
    attempts.lost()
    with pytest.raises(sharedstate.Conflict, match="gave up after 2 attempts"):
        attempts.lost()


@pytest.mark.parametrize(("timeout", "max_attempts", "message"), [(0, None, "timeout"), (-1, None, "timeout"), (1, 0, "max_attempts")])
def test_update_refuses_bounds_that_allow_no_attempt(timeout: float, max_attempts: int | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        UpdateAttempts("k", timeout=timeout, max_attempts=max_attempts)


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"SYNCD_SOCKET": "/x/s.sock", "XDG_RUNTIME_DIR": "/run/user/1"}, "/x/s.sock"),
        ({"SYNCD_SOCKET": "", "RUNTIME_DIRECTORY": "/run/a:/run/b"}, "/run/a/syncd.sock"),
        ({"RUNTIME_DIRECTORY": ":/run/b", "XDG_RUNTIME_DIR": "/run/user/1"}, "/run/b/syncd.sock"),
        ({"XDG_RUNTIME_DIR": "/run/user/1"}, "/run/user/1/syncd/syncd.sock"),
        ({"XDG_RUNTIME_DIR": ""}, f"/tmp/syncd-{os.getuid()}/syncd.sock"),
    ],
)
def test_the_default_socket_path(environment: dict[str, str], expected: str) -> None:
    assert default_socket_path(environment) == expected


def test_a_client_looks_for_the_personal_socket_then_the_system_one(tmp_path: Path) -> None:
    environment = {"XDG_RUNTIME_DIR": str(tmp_path)}
    personal = tmp_path / "syncd" / "syncd.sock"
    system_exists = os.path.lexists(SYSTEM_SOCKET_PATH)
    assert client_socket_path(environment) == (SYSTEM_SOCKET_PATH if system_exists else str(personal))
    personal.parent.mkdir()
    personal.touch()
    assert client_socket_path(environment) == str(personal)
    assert client_socket_path({**environment, "SYNCD_SOCKET": "/nowhere.sock"}) == "/nowhere.sock"
