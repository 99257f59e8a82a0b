"""The blocking client.

::

    import sharedstate

    with sharedstate.connect() as client:
        client.put("door/state", "open")
        with client.watch("door/") as watch:
            for batch in watch:
                print(batch.kind, batch.revision, [(c.key, c.value) for c in batch.changes])
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from . import _requests as requests
from ._backoff import DEFAULT_UPDATE_TIMEOUT, UpdateAttempts
from ._buffer import DEFAULT_MAX_PENDING_BYTES, WatchBuffer
from ._core import DEFAULT_REQUEST_TIMEOUT, ClientCore, Configuration
from ._request_methods import RequestMethods
from .aio import make_configuration
from .errors import Conflict, NotFound, Unavailable
from .types import (
    ConnectionState,
    Limits,
    WatchBatch,
)

__all__ = ["Client", "Watch", "connect"]

_T = TypeVar("_T")


class Watch:
    """The batches of one watch, in revision order: a snapshot (or replay) first, then every
    change; iterate it with ``for``. It outlives connections (see :meth:`Client.watch`).

    However slow the consumer, what waits for it is bounded by the keys the watch selects: past
    ``max_pending_bytes`` of undelivered batches, they fold into one resync batch holding the latest
    change of each key they touched. The consumer may then miss intermediate values; never the
    latest value of a key, nor a deletion, nor half a revision.

    Close it (or leave its ``with`` block) to end the watch on syncd.
    """

    def __init__(self, buffer: WatchBuffer) -> None:
        self._buffer = buffer

    def __iter__(self) -> Iterator[WatchBatch]:
        return self

    def __next__(self) -> WatchBatch:
        batch = self._buffer.next_blocking()
        if batch is None:
            raise StopIteration
        return batch

    def next_batch(self, timeout: float | None = None) -> WatchBatch | None:
        """The next batch, or ``None`` once the watch was closed; raises :class:`TimeoutError`
        when none came within ``timeout`` seconds (the watch goes on), and the error that ended
        the watch (:class:`~sharedstate.Compacted` for a ``from_revision`` already compacted,
        :class:`~sharedstate.Unavailable` when the client closed, ...)."""
        return self._buffer.next_blocking(timeout)

    def close(self) -> None:
        """Ends the watch; iteration stops. Any thread."""
        self._buffer.terminate()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        self._buffer.terminate()

    @property
    def latest_revision(self) -> int:
        """The highest revision the watch has received, whether the consumer took it or not."""
        return self._buffer.latest_revision

    @property
    def buffered_bytes(self) -> int:
        """The estimated size of the batches waiting for the consumer."""
        return self._buffer.buffered_bytes

    @property
    def folds(self) -> int:
        """How many times waiting batches were folded into one because the consumer fell behind."""
        return self._buffer.folds


class Client(RequestMethods):
    """A connection to syncd: read and write keys, run transactions, watch. Blocking; safe to use
    from several threads at once.

    Create it with :func:`connect`. The client runs its connection on an asyncio event loop in a
    background thread of its own, which reads what syncd sends and reconnects; a call writes its
    request from the calling thread and waits there for the answer. When syncd goes away (a
    restart, a crash) the client reconnects with backoff and jitter: meanwhile calls fail at once
    with :class:`~sharedstate.Unavailable` (a write is never queued to be sent later), and watches
    pause, then resume after the last revision they delivered. Presence survives too: after
    reconnecting, and before its watches resume, the client puts back the ephemeral keys it held,
    each only if the key does not exist; a key another process wrote meanwhile stays theirs.
    """

    def __init__(self, core: ClientCore, thread: threading.Thread) -> None:
        self._core = core
        self._loop = core.loop
        self._thread = thread
        # Closes the client when it is closed, released, or at exit; it holds no reference to it.
        self._finalizer = weakref.finalize(self, _shut_down, core, thread, "the client was released")

    # Connection

    @property
    def socket_path(self) -> str:
        return self._core.configuration.socket_path

    @property
    def session_id(self) -> int:
        """The current connection's session id (0 while reconnecting)."""
        return self._core.session_id

    @property
    def connection_state(self) -> ConnectionState:
        return self._core.state

    def wait_until(self, state: ConnectionState, timeout: float | None = None) -> None:
        """Returns once the client is in ``state``; raises :class:`TimeoutError` after ``timeout``."""
        if not self._core.wait_for_state(state, timeout):
            raise TimeoutError(f"the client was not {state} within {timeout} s")

    def close(self) -> None:
        """Closes the connection, stops reconnecting and ends the client's thread; waiting calls
        and watches end with :class:`~sharedstate.Unavailable`."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a Client cannot be closed from its own event loop thread")
        if self._finalizer.detach() is not None:
            _shut_down(self._core, self._thread, "the client was closed")

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _on_loop(self, function: Callable[..., _T], *arguments: Any) -> _T:
        """Runs ``function`` on the client's loop and returns its result here."""
        self._core.check_process()
        future: concurrent.futures.Future[_T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(function(*arguments))
            except BaseException as error:  # handed to the caller
                future.set_exception(error)

        self._loop.call_soon_threadsafe(run)
        return future.result()

    # Keys

    def value(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` decoded from JSON, or ``default`` when the key does not exist."""
        try:
            return self.get(key).value
        except NotFound:
            return default

    def update(
        self,
        key: str,
        change: Callable[[Any], Any],
        *,
        default: Any = None,
        timeout: float = DEFAULT_UPDATE_TIMEOUT,
        max_attempts: int | None = None,
    ) -> Any:
        """Reads ``key``, computes ``change(value)`` (``default`` when the key does not exist) and
        writes the result if nobody wrote the key meanwhile; otherwise waits a moment and tries
        again. Returns the value written. ``change`` may be called several times, so keep it free
        of side effects::

            client.update("counter", lambda count: count + 1, default=0)

        After each lost race it waits a jittered time that doubles from 1 ms up to 100 ms, so
        that writers contending for one key stop meeting in lockstep. It raises
        :class:`~sharedstate.Conflict` once ``timeout`` seconds have passed since the call
        without a win (10 by default), or after ``max_attempts`` attempts when that is given.
        """
        attempts = UpdateAttempts(key, timeout, max_attempts)
        while True:
            try:
                entry = self.get(key)
                current, version = entry.value, entry.version
            except NotFound:
                current, version = default, 0
            updated = change(current)
            try:
                self.put(key, updated, if_version=version)
                return updated
            except Conflict:
                time.sleep(attempts.lost())

    # Watches

    def watch(
        self,
        prefixes: str | Iterable[str] = "",
        *,
        from_revision: int | None = None,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        previous_values: bool = False,
        progress: bool = False,
    ) -> Watch:
        """Watches the keys under ``prefixes`` ("" selects every key).

        Without ``from_revision`` the first batch is a snapshot of the selected entries at some
        revision R, then every change after R follows. With it, every change after that revision
        is replayed from syncd's change log, then live changes follow. Either way each revision's
        changes come in one batch, in revision order, with no gap and no duplicate. With ``progress``,
        an idle watch also gets ``progress`` batches (no changes; the revision syncd has reached),
        as often as syncd's ``--progress-interval``; by default they only advance
        :attr:`latest_revision`. Across reconnects the watch resumes where it stopped; if that point
        was compacted meanwhile, it starts again from a snapshot and delivers only the difference,
        as a ``resync`` batch.

        With ``previous_values``, every change of a ``changes`` batch carries the key's entry
        before it in :attr:`~sharedstate.Change.previous` (as etcd's ``prev_kv``): an
        :class:`~sharedstate.Entry`, or ``None`` when the key did not exist. So a consumer can
        show what each change did without keeping the values it saw. syncd finds them for
        replayed revisions too, except where the entry before is older than its change log holds
        (:data:`~sharedstate.UNKNOWN`). Snapshots and resyncs carry none (``UNKNOWN``); changes
        folded for a slow consumer keep the entry before the first of them. A watch that resumes
        after a reconnect asks for them again.

        The watch ends with an error when it cannot start (:class:`~sharedstate.Compacted` for a
        ``from_revision`` already compacted, :class:`~sharedstate.FutureRevision` for one syncd
        has not reached) or when the client closes (:class:`~sharedstate.Unavailable`).
        """
        limits = self._core.configuration.limits
        selected = requests.prefixes_of(prefixes, limits)
        start = requests.watch_start(from_revision)
        if not self._finalizer.alive:
            raise Unavailable("the client is closed")
        return Watch(
            self._on_loop(self._core.start_watch, selected, start, max_pending_bytes, bool(previous_values), bool(progress))
        )


def _shut_down(core: ClientCore, thread: threading.Thread, reason: str) -> None:
    """Ends a client: its connection, its watches, then its loop and thread."""
    loop = core.loop
    try:
        loop.call_soon_threadsafe(core.shut_down, Unavailable(reason))
        loop.call_soon_threadsafe(loop.stop)
    except RuntimeError:
        return  # the loop is closed already
    if threading.current_thread() is not thread:
        thread.join()


def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()


def connect(
    socket_path: str | None = None,
    *,
    client_name: str | None = None,
    reconnects: bool = True,
    max_reconnect_delay: float = 2.0,
    connect_timeout: float | None = 10.0,
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
    limits: Limits | None = None,
) -> Client:
    """Connects to syncd and completes the handshake::

        with sharedstate.connect() as client:
            client.put("door/state", "open")

    ``socket_path`` defaults to the socket syncctl would use (see
    :func:`sharedstate.locations.client_socket_path`); ``client_name`` to the script's name.
    ``reconnects=False`` closes the client when syncd goes away instead of reconnecting;
    ``request_timeout`` bounds how long a call waits for its answer (30 s by default; ``None``
    waits until the connection ends): past it the call raises :class:`~sharedstate.Unavailable`,
    and the request may or may not have been applied.

    A client does not survive ``fork``: its connection and its thread stay in the parent. In a
    child process, a call raises :class:`~sharedstate.Unavailable` at once; connect a new client
    there.

    Raises :class:`~sharedstate.Unavailable` naming the socket when syncd cannot be reached.
    """
    configuration: Configuration = make_configuration(
        socket_path, client_name, reconnects, max_reconnect_delay, connect_timeout, request_timeout, limits
    )
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=_run_loop, args=(loop,), name="sharedstate", daemon=True)
    thread.start()
    try:
        core = asyncio.run_coroutine_threadsafe(ClientCore.open(configuration), loop).result()
    except BaseException:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        raise
    return Client(core, thread)
