"""The part of a client that outlives connections: reconnecting, presence, and watches that
resume. It runs on one event loop; the blocking client drives it from other threads."""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import _requests as requests
from ._backoff import Backoff
from ._buffer import WatchBuffer
from ._connection import Connection, WatchHandlers, result_of
from ._cursor import WatchCursor
from ._generated import sharedstate_pb2 as pb
from .errors import Compacted, Conflict, FutureRevision, NotFound, SharedStateError, Unavailable
from .types import BatchKind, ConnectionState, Limits, WatchBatch

#: How long a presence key still bound to the previous session is waited for, after a dropped
#: connection, before the client concludes someone else holds it.
PREVIOUS_SESSION_GRACE = 2.0

#: How long a call waits for syncd's answer unless told otherwise, in seconds: long enough for a
#: large list or history, short enough that a stopped syncd does not hang its callers.
DEFAULT_REQUEST_TIMEOUT = 30.0


@dataclass
class Configuration:
    """How a client reaches syncd and behaves when it goes away."""

    socket_path: str
    client_name: str
    #: Whether to reconnect when syncd goes away; without it, the client closes instead.
    reconnects: bool = True
    #: The longest wait between two reconnection attempts (the first is 50 ms, then doubling).
    max_reconnect_delay: float = 2.0
    #: How long to wait for syncd's Welcome.
    connect_timeout: float | None = 10.0
    #: How long a call waits for its response; ``None`` waits until the connection ends.
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT
    limits: Limits = field(default_factory=Limits)


class ManagedWatch:
    """A watch as its consumer sees it: one stream that outlives connections. On each new
    connection it restarts after the last revision it delivered, or from a snapshot when that
    revision was compacted (or syncd is behind it), delivered as a difference. Each restart
    asks for previous entries again if the watch did. Loop only."""

    def __init__(
        self,
        prefixes: list[str],
        start: tuple[str, int],
        buffer: WatchBuffer,
        previous_values: bool = False,
        progress: bool = False,
    ) -> None:
        self.prefixes = prefixes
        self.start = start
        self.buffer = buffer
        self.previous_values = previous_values
        #: Whether the consumer asked for progress batches; without, they only move the revision.
        self.progress = progress
        self.cursor = WatchCursor()
        self.has_delivered = False
        self.needs_snapshot = False
        #: The revision syncd said the watch started after, before anything was delivered.
        self.started_after: int | None = None
        self.connection: Connection | None = None
        self.id_on_connection = 0

    def run(self, connection: Connection) -> None:
        """Starts (or restarts) the watch on ``connection``."""
        if self.needs_snapshot:
            start = ("snapshot", 0)
        elif self.has_delivered:
            start = ("after", self.cursor.revision or 0)
        elif self.start[0] == "snapshot":
            # Nothing delivered yet: the snapshot is still owed.
            start = self.start
        elif self.started_after is not None:
            start = ("after", self.started_after)
        else:
            start = self.start
        self.connection = connection
        handlers = WatchHandlers(self._started, self._deliver, lambda error: self._ended(connection, error), self.previous_values)
        self.id_on_connection = connection.start_watch(self.prefixes, start, handlers)

    def cancel(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            connection.cancel_watch(self.id_on_connection)

    def _started(self, revision: int) -> None:
        if not self.has_delivered and self.started_after is None:
            self.started_after = revision

    def _deliver(self, batch: WatchBatch) -> None:
        is_first = not self.has_delivered
        self.has_delivered = True
        self.needs_snapshot = False
        absorbed = self.cursor.absorb(batch, is_first)
        if absorbed.kind is BatchKind.PROGRESS and not self.progress:
            self.buffer.advance(absorbed.revision)
        else:
            self.buffer.put(absorbed)

    def _ended(self, connection: Connection, error: SharedStateError) -> None:
        if connection.has_ended and self.connection is connection:
            # The connection is gone; the client restarts the watch on the next one.
            return
        resumed = self.has_delivered or self.started_after is not None
        if resumed and isinstance(error, (Compacted, FutureRevision)):
            # The resume point is gone (compacted, or syncd lost commits this watch saw): start
            # again from a snapshot, delivered as the difference from what was delivered.
            self.needs_snapshot = True
            self.run(connection)
            return
        self.buffer.finish(error)


class ClientCore:
    """A connection to syncd that reconnects: the state both clients share. Loop only, except
    where a method says otherwise."""

    def __init__(self, configuration: Configuration, loop: asyncio.AbstractEventLoop, connection: Connection) -> None:
        self.configuration = configuration
        self.loop = loop
        #: The process that connected: its connection and thread do not survive a fork.
        self.pid = os.getpid()
        # Guards what other threads read: the state, the connection, the presence keys.
        self._lock = threading.Lock()
        self._state_changed = threading.Condition(self._lock)
        self._state = ConnectionState.CONNECTED
        self._connection: Connection | None = connection
        #: The ephemeral keys this client holds, with the last value it wrote to each.
        self._presence: dict[str, bytes] = {}
        #: The session of the connection that ended last, whose ephemeral keys syncd is removing.
        self._previous_session = 0
        self._watches: dict[int, ManagedWatch] = {}
        self._watch_ids = itertools.count(1)
        self._reconnection: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[ConnectionState], None]] = []
        connection.when_ended(self._connection_ended)

    @classmethod
    async def open(cls, configuration: Configuration) -> ClientCore:
        connection = await Connection.open(configuration.socket_path, configuration.client_name, configuration.connect_timeout)
        return cls(configuration, asyncio.get_running_loop(), connection)

    # Any thread

    @property
    def state(self) -> ConnectionState:
        return self._state

    @property
    def session_id(self) -> int:
        connection = self._connection
        return connection.session_id if connection is not None else 0

    @property
    def held_presence(self) -> dict[str, bytes]:
        with self._lock:
            return dict(self._presence)

    def wait_for_state(self, state: ConnectionState, timeout: float | None) -> bool:
        with self._state_changed:
            return self._state_changed.wait_for(lambda: self._state is state, timeout)

    def check_process(self) -> None:
        """Raises at once in a child process forked after the client connected, where its
        connection and its thread are not: a call there would wait for ever. Any thread."""
        if os.getpid() != self.pid:
            raise Unavailable(
                f"this client connected to syncd in process {self.pid}, which has since forked; "
                f"a client does not survive a fork: connect a new one in process {os.getpid()}"
            )

    def connection(self) -> Connection:
        self.check_process()
        connection = self._connection
        if connection is not None:
            return connection
        if self._state is ConnectionState.CLOSED:
            raise Unavailable("the client is closed")
        raise Unavailable(f"not connected to syncd at {self.configuration.socket_path}; reconnecting")

    async def call(self, frame: pb.ClientFrame, result: str) -> Any:
        """Sends a request on the current connection and returns its result. Loop only."""
        connection = self.connection()
        response = await connection.call(
            frame, self.configuration.limits.max_request_frame_bytes, self.configuration.request_timeout
        )
        return result_of(response, result)

    def call_blocking(self, frame: pb.ClientFrame, result: str) -> Any:
        """Sends a request and waits for its result in the calling thread (never the loop's)."""
        connection = self.connection()
        response = connection.call_blocking(
            frame, self.configuration.limits.max_request_frame_bytes, self.configuration.request_timeout
        )
        return result_of(response, result)

    def note_presence(self, notes: requests.PresenceNotes) -> None:
        """Records what a successful write left this client holding."""
        with self._lock:
            for key, value in notes:
                if value is None:
                    self._presence.pop(key, None)
                else:
                    self._presence[key] = value

    # Watches

    def start_watch(
        self,
        prefixes: list[str],
        start: tuple[str, int],
        max_pending_bytes: int,
        previous_values: bool = False,
        progress: bool = False,
    ) -> WatchBuffer:
        """Starts a watch that resumes across connections and returns the buffer its consumer
        reads; with ``previous_values``, each change carries the key's entry before it; with
        ``progress``, the consumer gets syncd's progress notices too. Loop only."""
        buffer = WatchBuffer(self.loop, max_pending_bytes)
        if self._state is ConnectionState.CLOSED:
            buffer.finish(Unavailable("the client is closed"))
            return buffer
        watch_id = next(self._watch_ids)
        watch = ManagedWatch(prefixes, start, buffer, previous_values, progress)
        self._watches[watch_id] = watch
        buffer.on_terminate(lambda: self._stop_watch_soon(watch_id))
        # While reconnecting, the watch starts when the next connection is made.
        if self._connection is not None:
            watch.run(self._connection)
        return buffer

    def _stop_watch_soon(self, watch_id: int) -> None:
        """Any thread: the consumer went away, or the stream finished."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self._stop_watch(watch_id)
            return
        try:
            self.loop.call_soon_threadsafe(self._stop_watch, watch_id)
        except RuntimeError:
            pass  # the loop is closed: so is the connection, and the watch with it

    def _stop_watch(self, watch_id: int) -> None:
        watch = self._watches.pop(watch_id, None)
        if watch is not None:
            watch.cancel()

    # Connection states

    def add_listener(self, listener: Callable[[ConnectionState], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[ConnectionState], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def _publish(self, state: ConnectionState) -> None:
        with self._state_changed:
            self._state = state
            self._state_changed.notify_all()
        for listener in list(self._listeners):
            listener(state)

    # Reconnecting

    def _connection_ended(self, connection: Connection) -> None:
        with self._lock:
            if self._connection is not connection:
                return
            self._connection = None
            self._previous_session = connection.session_id
        if self._state is ConnectionState.CLOSED:
            return
        if not self.configuration.reconnects:
            self.shut_down(Unavailable(f"the connection to syncd at {self.configuration.socket_path} closed"))
            return
        self._publish(ConnectionState.RECONNECTING)
        self._reconnection = self.loop.create_task(self._reconnect())

    async def _reconnect(self) -> None:
        configuration = self.configuration
        backoff = Backoff(0.05, configuration.max_reconnect_delay)
        while not self._is_closed():
            await asyncio.sleep(backoff.next())
            try:
                connection = await Connection.open(configuration.socket_path, configuration.client_name, configuration.connect_timeout)
            except (SharedStateError, OSError):
                continue
            await self._restore_presence(connection)
            if self._is_closed():
                connection.close()
                return
            self._adopt(connection)
            return

    async def _restore_presence(self, connection: Connection) -> None:
        """Puts back the ephemeral keys this client held, on a new connection, before anything
        else uses it; a key another process wrote meanwhile is left to it."""
        previous_session = self._previous_session
        with self._lock:
            held = sorted(self._presence.items())
        for key, value in held:
            outcome = await self._put_back(key, value, connection, previous_session)
            if outcome == "taken over":
                with self._lock:
                    if self._presence.get(key) == value:
                        del self._presence[key]
            elif outcome == "failed" and connection.has_ended:
                # The new connection failed too: it is replaced, and this runs again.
                return
            # "failed" alone: refused for this key (a limit changed, say); kept for next time.

    async def _put_back(self, key: str, value: bytes, connection: Connection, previous_session: int) -> str:
        """Puts ``key`` back if it does not exist. If it still holds this client's key of the
        previous session (syncd did not restart: it removes that session's keys in its own time),
        waits a little for the removal first."""
        limits = self.configuration.limits
        deadline = self.loop.time() + PREVIOUS_SESSION_GRACE
        while True:
            try:
                frame = requests.put_request(key, value, 0, True, limits)
                result_of(await connection.call(frame, limits.max_request_frame_bytes), "put")
                return "restored"
            except Conflict:
                if previous_session == 0 or self.loop.time() >= deadline:
                    return "taken over"
                try:
                    entry = result_of(await connection.call(requests.get_request(key, limits), limits.max_request_frame_bytes), "get").entry
                except NotFound:
                    continue  # removed between the put and the get: put it back now
                except SharedStateError:
                    return "failed"
                if entry.ephemeral_session != previous_session:
                    return "taken over"
                await asyncio.sleep(0.02)
            except SharedStateError:
                return "failed"

    def _is_closed(self) -> bool:
        return self._state is ConnectionState.CLOSED

    def _adopt(self, connection: Connection) -> None:
        with self._lock:
            self._connection = connection
        self._reconnection = None
        connection.when_ended(self._connection_ended)
        for watch in list(self._watches.values()):
            watch.run(connection)
        self._publish(ConnectionState.CONNECTED)

    # Closing

    def shut_down(self, reason: SharedStateError) -> None:
        """Marks the client closed and ends everything. Loop only."""
        if self._state is ConnectionState.CLOSED:
            return
        with self._lock:
            connection, self._connection = self._connection, None
        watches = list(self._watches.values())
        self._watches.clear()
        reconnection, self._reconnection = self._reconnection, None
        self._publish(ConnectionState.CLOSED)
        if reconnection is not None:
            reconnection.cancel()
        if connection is not None:
            connection.close(reason)
        for watch in watches:
            watch.buffer.finish(reason)
