"""The asyncio client.

::

    import asyncio
    import sharedstate.aio

    async def main() -> None:
        async with sharedstate.aio.connect() as client:
            await client.put("door/state", "open")
            async with client.watch("door/") as watch:
                async for batch in watch:
                    print(batch.kind, batch.revision, [(c.key, c.value) for c in batch.changes])

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable
from types import TracebackType
from typing import Any

from . import _requests as requests
from ._backoff import DEFAULT_UPDATE_TIMEOUT, UpdateAttempts
from ._buffer import DEFAULT_MAX_PENDING_BYTES, WatchBuffer
from ._core import DEFAULT_REQUEST_TIMEOUT, ClientCore, Configuration
from ._request_methods import AsyncRequestMethods
from .errors import Conflict, NotFound, Unavailable
from .locations import client_socket_path
from .types import (
    ConnectionState,
    Limits,
    WatchBatch,
)

__all__ = ["AsyncClient", "AsyncWatch", "connect"]


def default_client_name() -> str:
    """The script's file name, as syncctl clients shows it."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return name or "python"


def make_configuration(
    socket_path: str | None,
    client_name: str | None,
    reconnects: bool,
    max_reconnect_delay: float,
    connect_timeout: float | None,
    request_timeout: float | None,
    limits: Limits | None,
) -> Configuration:
    return Configuration(
        socket_path=socket_path or client_socket_path(),
        client_name=client_name or default_client_name(),
        reconnects=reconnects,
        max_reconnect_delay=max_reconnect_delay,
        connect_timeout=connect_timeout,
        request_timeout=request_timeout,
        limits=limits or Limits(),
    )


class AsyncWatch:
    """The batches of one watch, in revision order: a snapshot (or replay) first, then every
    change; use it with ``async for``. It outlives connections (see :meth:`AsyncClient.watch`).

    However slow the consumer, what waits for it is bounded by the keys the watch selects: past
    ``max_pending_bytes`` of undelivered batches, they fold into one resync batch holding the latest
    change of each key they touched. The consumer may then miss intermediate values; never the
    latest value of a key, nor a deletion, nor half a revision.

    Close it (or leave its ``async with`` block) to end the watch on syncd.
    """

    def __init__(self, buffer: WatchBuffer) -> None:
        self._buffer = buffer

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> WatchBatch:
        batch = await self._buffer.next_async()
        if batch is None:
            raise StopAsyncIteration
        return batch

    async def next_batch(self) -> WatchBatch | None:
        """The next batch, or ``None`` once the watch was closed. Raises the error that ended the
        watch (:class:`~sharedstate.Compacted` for a ``from_revision`` already compacted,
        :class:`~sharedstate.Unavailable` when the client closed, ...). Cancelling the caller (a
        timeout, say) loses no batch."""
        return await self._buffer.next_async()

    def close(self) -> None:
        """Ends the watch; iteration stops. Any thread."""
        self._buffer.terminate()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
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


class AsyncClient(AsyncRequestMethods):
    """A connection to syncd for asyncio code: read and write keys, run transactions, watch.

    Create it with :func:`connect`; use it on the event loop it was created on. Requests from
    several tasks are pipelined on one connection. When syncd goes away (a restart, a crash) the
    client reconnects with backoff and jitter: meanwhile calls fail at once with
    :class:`~sharedstate.Unavailable` (a write is never queued to be sent later), and watches pause,
    then resume after the last revision they delivered. Presence survives too: after reconnecting,
    and before its watches resume, the client puts back the ephemeral keys it held, each only if
    the key does not exist; a key another process wrote meanwhile stays theirs.
    """

    def __init__(self, core: ClientCore) -> None:
        self._core = core

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

    async def connection_states(self) -> AsyncIterator[ConnectionState]:
        """The connection state now, then every change of it, until the client closes."""
        queue: asyncio.Queue[ConnectionState] = asyncio.Queue()
        self._core.add_listener(queue.put_nowait)
        try:
            state = self._core.state
            while True:
                yield state
                if state is ConnectionState.CLOSED:
                    return
                state = await queue.get()
        finally:
            self._core.remove_listener(queue.put_nowait)

    async def wait_until(self, state: ConnectionState, timeout: float | None = None) -> None:
        """Returns once the client is in ``state``; raises :class:`TimeoutError` after ``timeout``."""

        async def reach() -> None:
            async for current in self.connection_states():
                if current is state:
                    return
            raise Unavailable("the client closed")

        try:
            await asyncio.wait_for(reach(), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"the client was not {state} within {timeout} s") from None

    async def close(self) -> None:
        """Closes the connection and stops reconnecting; waiting calls and watches end with
        :class:`~sharedstate.Unavailable`."""
        self._core.shut_down(Unavailable("the client was closed"))

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # Keys

    async def value(self, key: str, default: Any = None) -> Any:
        """The value of ``key`` decoded from JSON, or ``default`` when the key does not exist."""
        try:
            return (await self.get(key)).value
        except NotFound:
            return default

    async def update(
        self,
        key: str,
        change: Callable[[Any], Any] | Callable[[Any], Awaitable[Any]],
        *,
        default: Any = None,
        timeout: float = DEFAULT_UPDATE_TIMEOUT,
        max_attempts: int | None = None,
    ) -> Any:
        """Reads ``key``, computes ``change(value)`` (``default`` when the key does not exist) and
        writes the result if nobody wrote the key meanwhile; otherwise waits a moment and tries
        again. Returns the value written. ``change`` may be called several times, so keep it free
        of side effects; it may be a coroutine function.

        After each lost race it waits (``asyncio.sleep``) a jittered time that doubles from 1 ms up
        to 100 ms, so that tasks contending for one key stop meeting in lockstep. It raises
        :class:`~sharedstate.Conflict` once ``timeout`` seconds have passed since the call without
        a win (10 by default), or after ``max_attempts`` attempts when that is given."""
        attempts = UpdateAttempts(key, timeout, max_attempts)
        while True:
            try:
                entry = await self.get(key)
                current, version = entry.value, entry.version
            except NotFound:
                current, version = default, 0
            updated = change(current)
            if inspect.isawaitable(updated):
                updated = await updated
            try:
                await self.put(key, updated, if_version=version)
                return updated
            except Conflict:
                await asyncio.sleep(attempts.lost())

    # Watches

    def watch(
        self,
        prefixes: str | Iterable[str] = "",
        *,
        from_revision: int | None = None,
        max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES,
        previous_values: bool = False,
        progress: bool = False,
    ) -> AsyncWatch:
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
        return AsyncWatch(self._core.start_watch(selected, start, max_pending_bytes, bool(previous_values), bool(progress)))


class _Connecting:
    """What :func:`connect` returns: await it, or use it with ``async with``."""

    def __init__(self, configuration: Configuration) -> None:
        self._configuration = configuration
        self._client: AsyncClient | None = None

    async def _open(self) -> AsyncClient:
        return AsyncClient(await ClientCore.open(self._configuration))

    def __await__(self) -> Generator[Any, None, AsyncClient]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncClient:
        self._client = await self._open()
        return self._client

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._client is not None:
            await self._client.close()


def connect(
    socket_path: str | None = None,
    *,
    client_name: str | None = None,
    reconnects: bool = True,
    max_reconnect_delay: float = 2.0,
    connect_timeout: float | None = 10.0,
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
    limits: Limits | None = None,
) -> _Connecting:
    """Connects to syncd and completes the handshake::

        client = await sharedstate.aio.connect()
        # or
        async with sharedstate.aio.connect() as client:
            ...

    ``socket_path`` defaults to the socket syncctl would use (see
    :func:`sharedstate.locations.client_socket_path`); ``client_name`` to the script's name.
    ``reconnects=False`` closes the client when syncd goes away instead of reconnecting;
    ``request_timeout`` bounds how long a call waits for its answer (30 s by default; ``None``
    waits until the connection ends): past it the call raises :class:`~sharedstate.Unavailable`,
    and the request may or may not have been applied.

    Raises :class:`~sharedstate.Unavailable` naming the socket when syncd cannot be reached.
    """
    return _Connecting(
        make_configuration(
            socket_path, client_name, reconnects, max_reconnect_delay, connect_timeout, request_timeout, limits
        )
    )
