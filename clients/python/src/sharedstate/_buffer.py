"""The batches a watch has produced and its consumer has not taken yet, bounded by the keys the
watch selects rather than by the number of changes."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Callable

from .types import UNKNOWN, BatchKind, Change, ChangeType, WatchBatch

#: Undelivered bytes that start folding, unless a watch says otherwise.
DEFAULT_MAX_PENDING_BYTES = 1 << 20

_FINISHED = object()
_DELETE = ChangeType.DELETE
_make = tuple.__new__


def estimated_bytes(batch: WatchBatch) -> int:
    """Roughly what a batch holds in memory: keys and values (the previous ones too), and a little
    per change."""
    total = 64
    for _, entry, previous in batch.changes:
        total += 64 + len(entry.key) + len(entry.raw)
        if previous:  # an Entry: None and UNKNOWN are falsy
            total += 64 + len(previous.raw)
    return total


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class _FoldedBatch:
    """Undelivered batches folded into the latest change of each key they touched. A folded
    change keeps the previous entry of the first change it stands for: what the key held before
    all of them. A fold into a snapshot keeps none, as a snapshot from syncd carries none."""

    __slots__ = ("starts_with_snapshot", "revision", "changes")

    def __init__(self, starts_with_snapshot: bool) -> None:
        #: The consumer has seen nothing yet, so the result is a snapshot (puts only).
        self.starts_with_snapshot = starts_with_snapshot
        self.revision = 0
        self.changes: dict[str, Change] = {}

    def absorb(self, batch: WatchBatch) -> None:
        if batch.revision > self.revision:
            self.revision = batch.revision
        changes = self.changes
        drops_deletes = self.starts_with_snapshot
        for change in batch.changes:
            key = change[1].key
            if drops_deletes:
                if change[0] is _DELETE:
                    changes.pop(key, None)
                    continue
                if change[2] is not UNKNOWN:
                    change = _make(Change, (change[0], change[1], UNKNOWN))
            else:
                earlier = changes.get(key)
                if earlier is not None and earlier[2] is not change[2]:
                    # The folded change stands for both: it comes after what the earlier one found.
                    change = _make(Change, (change[0], change[1], earlier[2]))
            changes[key] = change

    def batch(self) -> WatchBatch:
        ordered = tuple(sorted(self.changes.values(), key=lambda change: change.entry.key))
        kind = BatchKind.SNAPSHOT if self.starts_with_snapshot else BatchKind.RESYNC
        return WatchBatch(kind, self.revision, ordered)

    def estimated_bytes(self) -> int:
        return estimated_bytes(WatchBatch(BatchKind.RESYNC, self.revision, tuple(self.changes.values())))


class WatchBuffer:
    """What waits between a watch's connection and its consumer.

    While the consumer keeps up, each batch is handed over as it is: one revision per batch, in
    order. When the undelivered batches pass ``max_pending_bytes``, they are folded into one batch
    holding the latest change of each key they touched (a put with its last value, or a delete),
    and every later batch folds into it until the consumer takes it. The consumer then gets that
    one batch, as a resync (the difference from what it had seen), or as a snapshot if it had not
    taken the first one yet. So a slow consumer may miss intermediate values and revisions, never
    the latest value of a key nor a deletion, and never half a revision: the Swift client's
    ``WatchBuffer`` rule.

    The producer runs on the client's event loop; the consumer is a coroutine on that loop or any
    thread. One lock guards everything.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES) -> None:
        self._loop = loop
        self._max_pending_bytes = max_pending_bytes
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._pending: deque[tuple[WatchBatch, int]] = deque()
        self._pending_bytes = 0
        self._folded: _FoldedBatch | None = None
        #: How the stream ends once the pending batches are taken: ``_FINISHED``, an error, or
        #: ``None`` while it goes on.
        self._end: object | None = None
        #: The consumer is gone, or has been told of the end: nothing more comes out.
        self._terminated = False
        self._has_delivered_first = False
        self._async_waiter: asyncio.Future[None] | None = None
        self._blocked_consumers = 0
        self._on_terminate: Callable[[], None] | None = None
        self._latest_revision = 0
        self._folds = 0

    # Diagnostics

    @property
    def latest_revision(self) -> int:
        """The highest revision given to the buffer so far, taken by the consumer or not."""
        with self._lock:
            return self._latest_revision

    @property
    def folds(self) -> int:
        """How many times undelivered batches were folded into one."""
        with self._lock:
            return self._folds

    @property
    def buffered_bytes(self) -> int:
        """The estimated size of what waits for the consumer."""
        with self._lock:
            folded = self._folded.estimated_bytes() if self._folded is not None else 0
            return self._pending_bytes + folded

    def on_terminate(self, handler: Callable[[], None]) -> None:
        """Called once, when the producer finishes the stream or the consumer goes away."""
        with self._lock:
            if not self._terminated and self._end is None:
                self._on_terminate = handler
                return
        handler()

    # Producer

    def put(self, batch: WatchBatch) -> None:
        """Keeps ``batch`` for the consumer, folded with the others past the bound."""
        with self._lock:
            if self._terminated or self._end is not None:
                return
            if batch.revision > self._latest_revision:
                self._latest_revision = batch.revision
            if self._folded is not None:
                self._folded.absorb(batch)
            else:
                size = estimated_bytes(batch)
                self._pending.append((batch, size))
                self._pending_bytes += size
                consumer_waits = self._async_waiter is not None or self._blocked_consumers > 0
                # A batch a waiting consumer takes at once is handed over as it is, however large.
                if self._pending_bytes > self._max_pending_bytes and not (consumer_waits and len(self._pending) == 1):
                    self._fold()
            self._wake()

    def advance(self, revision: int) -> None:
        """Notes that the watch has seen everything through ``revision`` (a progress notice the
        consumer did not ask for), without a batch for the consumer."""
        with self._lock:
            if revision > self._latest_revision:
                self._latest_revision = revision

    def finish(self, error: BaseException | None = None) -> None:
        """Ends the stream after the batches already given: normally, or with ``error``."""
        with self._lock:
            if self._terminated or self._end is not None:
                return
            self._end = _FINISHED if error is None else error
            self._wake()
        # The producer is done: its registrations go now, even if the consumer has batches left.
        self._run_termination()

    def _fold(self) -> None:
        first = self._pending[0][0]
        folded = _FoldedBatch(not self._has_delivered_first and first.kind is BatchKind.SNAPSHOT)
        for batch, _ in self._pending:
            folded.absorb(batch)
        self._pending.clear()
        self._pending_bytes = 0
        self._folded = folded
        self._folds += 1

    def _wake(self) -> None:
        waiter = self._async_waiter
        if waiter is not None:
            self._async_waiter = None
            if _running_loop() is self._loop:
                _resolve(waiter)
            else:
                try:
                    self._loop.call_soon_threadsafe(_resolve, waiter)
                except RuntimeError:
                    pass  # the loop is closed: nobody waits on it any more
        if self._blocked_consumers:
            self._ready.notify_all()

    # Consumer

    def _take(self) -> WatchBatch | object | None:
        """The next batch, ``None`` to wait, or ``_FINISHED``; raises the stream's error once."""
        if self._folded is not None:
            batch = self._folded.batch()
            self._folded = None
            self._has_delivered_first = True
            return batch
        if self._pending:
            batch, size = self._pending.popleft()
            self._pending_bytes -= size
            self._has_delivered_first = True
            return batch
        if self._terminated:
            return _FINISHED
        end = self._end
        if end is None:
            return None
        self._terminated = True
        if isinstance(end, BaseException):
            raise end
        return _FINISHED

    async def next_async(self) -> WatchBatch | None:
        """The next batch, ``None`` at the end. Must run on the producer's event loop. Cancelling
        the caller loses nothing: a batch stays in the buffer until it is returned."""
        while True:
            with self._lock:
                item = self._take()
                if item is _FINISHED:
                    return None
                if item is not None:
                    return item  # type: ignore[return-value]
                waiter: asyncio.Future[None] = self._loop.create_future()
                self._async_waiter = waiter
            try:
                await waiter
            finally:
                with self._lock:
                    if self._async_waiter is waiter:
                        self._async_waiter = None

    def next_blocking(self, timeout: float | None = None) -> WatchBatch | None:
        """The next batch, ``None`` at the end; waits in the calling thread. Raises
        :class:`TimeoutError` when nothing came within ``timeout`` seconds."""
        with self._lock:
            self._blocked_consumers += 1
            try:
                deadline = None if timeout is None else time.monotonic() + timeout
                while True:
                    item = self._take()
                    if item is _FINISHED:
                        return None
                    if item is not None:
                        return item  # type: ignore[return-value]
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError(f"no watch batch within {timeout} s")
                    self._ready.wait(remaining)
            finally:
                self._blocked_consumers -= 1

    def terminate(self) -> None:
        """Ends the stream from the consumer's side: it went away. Any thread."""
        with self._lock:
            was_terminated = self._terminated
            self._terminated = True
            self._pending.clear()
            self._pending_bytes = 0
            self._folded = None
            self._wake()
        if not was_terminated:
            self._run_termination()

    def _run_termination(self) -> None:
        with self._lock:
            handler, self._on_terminate = self._on_terminate, None
        if handler is not None:
            handler()
