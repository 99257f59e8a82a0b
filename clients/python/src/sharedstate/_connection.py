"""One socket connection to syncd: frames out, frames in, and who waits for what."""

from __future__ import annotations

import asyncio
import grp
import itertools
import os
import pwd
import socket
import stat
import struct
import threading
from collections.abc import Callable
from typing import Any, Union

from google.protobuf.message import DecodeError

from ._generated import sharedstate_pb2 as pb
from .errors import ProtocolError, SharedStateError, TooLarge, Unavailable, error_from_wire
from .types import WatchBatch, batch_from_wire

#: The protocol version this client speaks.
PROTOCOL_VERSION = 1
#: The largest frame accepted from syncd (syncd puts no limit on its own frames).
MAX_SERVER_FRAME_BYTES = 1 << 30

_READ_SIZE = 256 * 1024
_LENGTH = struct.Struct(">I")
_ServerFrame = pb.ServerFrame



def socket_permission_refusal(path: str) -> str:
    """Why this process may not connect to the socket at ``path``, and the way out: syncd makes its
    socket readable and writable by its owner and its group only (mode 0660), so a user in
    neither is refused, in words that read as if nothing were listening."""
    try:
        status = os.stat(path)
    except OSError as error:
        return f"permission denied: a directory on the way to the socket is closed to this process ({error.strerror})"

    def user(uid: int) -> str:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return str(uid)

    try:
        group = grp.getgrgid(status.st_gid).gr_name
    except KeyError:
        group = str(status.st_gid)
    return (
        f"permission denied: the socket is {stat.filemode(status.st_mode)} (owner {user(status.st_uid)}, group {group}), "
        f"and this process (user {user(os.getuid())}) is neither its owner nor in group {group}. "
        f"Add the user to group {group} (then log in again), or start syncd with --socket-group naming a group the user is in"
    )

class _ThreadWaiter:
    """A response awaited by a thread other than the event loop's."""

    __slots__ = ("_done", "response", "error")

    def __init__(self) -> None:
        self._done = threading.Lock()
        self._done.acquire()
        self.response: pb.Response | None = None
        self.error: SharedStateError | None = None

    def resolve(self, response: pb.Response) -> None:
        self.response = response
        self._done.release()

    def fail(self, error: SharedStateError) -> None:
        self.error = error
        self._done.release()

    def wait(self, timeout: float | None) -> bool:
        return self._done.acquire(timeout=-1 if timeout is None else timeout)


class _WatchStart:
    """The response to a watch request: only an error matters, it ends the watch."""


class _Ignored:
    """A response nobody waits for (the answer to a cancelled watch)."""


_WATCH_START = _WatchStart()
_IGNORED = _Ignored()

_Waiter = Union["asyncio.Future[pb.Response]", _ThreadWaiter, _WatchStart, _Ignored]


class WatchHandlers:
    """Where one watch's start, batches and end go; called on the event loop. With
    ``previous_values``, the watch asks for each change's previous entry."""

    __slots__ = ("on_start", "on_batch", "on_end", "previous_values")

    def __init__(
        self,
        on_start: Callable[[int], None],
        on_batch: Callable[[WatchBatch], None],
        on_end: Callable[[SharedStateError], None],
        previous_values: bool = False,
    ) -> None:
        self.on_start = on_start
        self.on_batch = on_batch
        self.on_end = on_end
        self.previous_values = previous_values


class Connection:
    """One socket connection to syncd, after the handshake.

    It lives on one event loop, which reads the socket (``add_reader``) and routes what syncd
    sends: responses to whoever waits for them, events to their watches, the end of the
    connection to everyone. Requests may be sent from any thread: a caller writes its frame to
    the socket itself, under a lock, and only what the socket does not take at once is left to
    the loop. So a blocking call costs one thread hand-off (the response), not two.
    """

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop, path: str) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._loop = loop
        self.path = path
        self.welcome: pb.Welcome | None = None
        self._welcome_waiter: asyncio.Future[pb.Welcome] | None = None
        self._ids = itertools.count(1)
        # Guards the waiters, the watches and the end; taken by the loop and by calling threads.
        self._lock = threading.Lock()
        self._waiters: dict[int, _Waiter] = {}
        self._watches: dict[int, WatchHandlers] = {}
        self._end_error: SharedStateError | None = None
        self._end_callbacks: list[Callable[[Connection], None]] = []
        # Guards the socket's write side.
        self._send_lock = threading.Lock()
        self._outbound = bytearray()
        self._is_writing_closed = False
        self._inbound = bytearray()

    # Opening

    @classmethod
    async def open(cls, path: str, client_name: str, timeout: float | None) -> Connection:
        """Connects to ``path`` and completes the handshake.

        Raises :class:`Unavailable` naming the socket when syncd cannot be reached, or the error of
        syncd's ``fatal`` frame when it refuses the handshake.
        """
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, path)
        except PermissionError:
            sock.close()
            # Not a question of whether syncd runs: of who may talk to it.
            raise Unavailable(f"cannot reach syncd at {path}: {socket_permission_refusal(path)}.") from None
        except OSError as error:
            sock.close()
            reason = error.strerror or str(error)
            raise Unavailable(
                f"cannot reach syncd at {path}: {reason}. Is syncd running? Start it with `syncd`, "
                "or point socket_path / SYNCD_SOCKET at its socket."
            ) from None
        except BaseException:
            sock.close()
            raise
        connection = cls(sock, loop, path)
        connection._welcome_waiter = loop.create_future()
        loop.add_reader(connection._fd, connection._on_readable)
        hello = pb.ClientFrame()
        hello.hello.protocol_version = PROTOCOL_VERSION
        hello.hello.client_name = client_name
        connection._send(_frame(hello.SerializeToString()))
        try:
            welcome = await asyncio.wait_for(asyncio.shield(connection._welcome_waiter), timeout)
        except asyncio.TimeoutError:
            silent = Unavailable(f"syncd at {path} did not answer the handshake within {timeout} s")
            connection._end(silent)
            raise silent from None
        except asyncio.CancelledError:
            connection._end(Unavailable("the connection attempt was cancelled"))
            raise
        if welcome.protocol_version != PROTOCOL_VERSION:
            mismatch = ProtocolError(
                f"syncd at {path} speaks protocol version {welcome.protocol_version}; this client speaks {PROTOCOL_VERSION}"
            )
            connection._end(mismatch)
            raise mismatch
        connection.welcome = welcome
        return connection

    @property
    def session_id(self) -> int:
        """This connection's session id, as syncd assigned it."""
        return self.welcome.session_id if self.welcome is not None else 0

    @property
    def has_ended(self) -> bool:
        return self._end_error is not None

    def when_ended(self, callback: Callable[[Connection], None]) -> None:
        """Calls ``callback`` on the loop once the connection has ended (soon, if it has)."""
        with self._lock:
            if self._end_error is None:
                self._end_callbacks.append(callback)
                return
        self._loop.call_soon(callback, self)

    # Requests

    def next_request_id(self) -> int:
        return next(self._ids)

    def _encode_request(self, frame: pb.ClientFrame, request_id: int, max_bytes: int) -> bytes:
        frame.request.id = request_id
        payload = frame.SerializeToString()
        if len(payload) > max_bytes:
            raise TooLarge(f"the request is {len(payload)} bytes; syncd accepts frames of at most {max_bytes} bytes")
        return _frame(payload)

    async def call(self, frame: pb.ClientFrame, max_frame_bytes: int, timeout: float | None = None) -> pb.Response:
        """Sends a request and waits for its response, at most ``timeout`` seconds when given.
        Must run on the connection's loop."""
        request_id = next(self._ids)
        data = self._encode_request(frame, request_id, max_frame_bytes)
        waiter: asyncio.Future[pb.Response] = self._loop.create_future()
        with self._lock:
            if self._end_error is not None:
                raise self._end_error
            self._waiters[request_id] = waiter
        self._send(data)
        try:
            return await asyncio.wait_for(waiter, timeout)
        except asyncio.TimeoutError:
            with self._lock:
                self._waiters.pop(request_id, None)
            raise self._unanswered(timeout) from None
        except asyncio.CancelledError:
            with self._lock:
                self._waiters.pop(request_id, None)
            raise

    def call_blocking(self, frame: pb.ClientFrame, max_frame_bytes: int, timeout: float | None) -> pb.Response:
        """Sends a request and waits for its response in the calling thread (not the loop's)."""
        request_id = next(self._ids)
        data = self._encode_request(frame, request_id, max_frame_bytes)
        waiter = _ThreadWaiter()
        with self._lock:
            if self._end_error is not None:
                raise self._end_error
            self._waiters[request_id] = waiter
        self._send(data)
        if not waiter.wait(timeout):
            with self._lock:
                self._waiters.pop(request_id, None)
            raise self._unanswered(timeout)
        if waiter.error is not None:
            raise waiter.error
        assert waiter.response is not None
        return waiter.response

    def _unanswered(self, timeout: float | None) -> Unavailable:
        return Unavailable(
            f"syncd at {self.path} did not answer within {timeout} s; the request may or may not have been applied"
        )

    # Watches

    def start_watch(self, prefixes: list[str], start: tuple[str, int], handlers: WatchHandlers) -> int:
        """Starts a watch and returns its id here. ``start`` is ``("snapshot", 0)``,
        ``("after", revision)`` or ``("now", 0)``; it asks for previous entries when ``handlers``
        say so. If the connection has ended, ``on_end`` is called at once. Must run on the
        connection's loop."""
        watch_id = next(self._ids)
        with self._lock:
            error = self._end_error
            if error is None:
                self._watches[watch_id] = handlers
                self._waiters[watch_id] = _WATCH_START
        if error is not None:
            handlers.on_end(error)
            return watch_id
        frame = pb.ClientFrame()
        frame.request.id = watch_id
        watch = frame.request.watch
        watch.prefixes.extend(prefixes)
        if handlers.previous_values:
            watch.previous_values = True
        kind, revision = start
        if kind == "snapshot":
            watch.snapshot = True
        elif kind == "after":
            watch.after_revision = revision
        else:
            # Neither member set: every change after the current revision.
            watch.SetInParent()
        self._send(_frame(frame.SerializeToString()))
        return watch_id

    def cancel_watch(self, watch_id: int) -> None:
        """Ends a watch started here; its answer is ignored."""
        cancel_id = next(self._ids)
        with self._lock:
            if self._end_error is not None or self._watches.pop(watch_id, None) is None:
                return
            self._waiters.pop(watch_id, None)
            self._waiters[cancel_id] = _IGNORED
        frame = pb.ClientFrame()
        frame.request.id = cancel_id
        frame.request.cancel_watch.watch_id = watch_id
        self._send(_frame(frame.SerializeToString()))

    # Closing

    def close(self, reason: SharedStateError | None = None) -> None:
        """Closes the socket; waiting calls fail and watches end with ``reason``. Any thread."""
        error = reason or Unavailable(f"the connection to syncd at {self.path} was closed")
        if _running_loop() is self._loop:
            self._end(error)
        else:
            try:
                self._loop.call_soon_threadsafe(self._end, error)
            except RuntimeError:
                pass  # the loop is closed, and the socket with it

    def _end(self, error: SharedStateError) -> None:
        """Fails every waiting call and ends every watch with ``error``. On the loop only."""
        with self._lock:
            if self._end_error is not None:
                return
            self._end_error = error
            waiters, self._waiters = self._waiters, {}
            watches, self._watches = self._watches, {}
            callbacks, self._end_callbacks = self._end_callbacks, []
        with self._send_lock:
            self._is_writing_closed = True
            self._outbound.clear()
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self._sock.close()
        welcome = self._welcome_waiter
        if welcome is not None and not welcome.done():
            welcome.set_exception(error)
            # Retrieved by open(), or by nobody if open() timed out first.
            welcome.exception()
        for waiter in waiters.values():
            if isinstance(waiter, _ThreadWaiter):
                waiter.fail(error)
            elif isinstance(waiter, asyncio.Future) and not waiter.done():
                waiter.set_exception(error)
        for handlers in watches.values():
            handlers.on_end(error)
        for callback in callbacks:
            callback(self)

    # Writing

    def _send(self, data: bytes) -> None:
        """Writes ``data`` in order with every other frame; any thread."""
        with self._send_lock:
            if self._is_writing_closed:
                return  # the end fails the caller's waiter
            if self._outbound:
                self._outbound += data
                return
            try:
                written = self._sock.send(data)
                failure = None
            except (BlockingIOError, InterruptedError):
                written = 0
                failure = None
            except OSError as error:
                written = len(data)
                failure = Unavailable(f"the connection to syncd at {self.path} failed: {error.strerror or error}")
            if written < len(data):
                self._outbound += memoryview(data)[written:]
                if _running_loop() is self._loop:
                    self._loop.add_writer(self._fd, self._on_writable)
                else:
                    self._loop.call_soon_threadsafe(self._start_writing)
        if failure is not None:
            # Outside the lock: ending the connection takes it.
            self.close(failure)

    def _start_writing(self) -> None:
        with self._send_lock:
            if self._outbound and not self._is_writing_closed:
                self._loop.add_writer(self._fd, self._on_writable)

    def _on_writable(self) -> None:
        with self._send_lock:
            if self._is_writing_closed:
                return
            try:
                written = self._sock.send(self._outbound)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:
                self._loop.call_soon(self._end, Unavailable(f"the connection to syncd at {self.path} failed: {error.strerror or error}"))
                return
            del self._outbound[:written]
            if not self._outbound:
                self._loop.remove_writer(self._fd)

    # Reading

    def _on_readable(self) -> None:
        try:
            data = self._sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._end(Unavailable(f"the connection to syncd at {self.path} failed: {error.strerror or error}"))
            return
        if not data:
            self._end(Unavailable(f"the connection to syncd at {self.path} closed"))
            return
        buffer = self._inbound
        buffer += data
        position = 0
        available = len(buffer)
        view = memoryview(buffer)
        try:
            while available - position >= 4:
                (length,) = _LENGTH.unpack_from(buffer, position)
                if length > MAX_SERVER_FRAME_BYTES:
                    self._end(ProtocolError(f"syncd sent a frame of {length} bytes, over the {MAX_SERVER_FRAME_BYTES} this client accepts"))
                    return
                end = position + 4 + length
                if end > available:
                    break
                frame = _ServerFrame()
                try:
                    # Both runtimes (upb and pure Python) parse from any buffer, so no bytes object is
                    # made for the frame (upb still copies the bytes into its own arena).
                    frame.ParseFromString(view[position + 4 : end])  # type: ignore[arg-type]
                except DecodeError as error:
                    self._end(ProtocolError(f"syncd sent a frame that is not a valid ServerFrame: {error}"))
                    return
                position = end
                self._route(frame)
                if self._end_error is not None:
                    return
        finally:
            view.release()
        if position:
            del buffer[:position]

    def _route(self, frame: pb.ServerFrame) -> None:
        kind = frame.WhichOneof("kind")
        if kind == "event":
            event = frame.event
            if event.kind == pb.EVENT_KIND_ENDED:
                # syncd ended the watch (a new policy left it nothing to read): it is over.
                with self._lock:
                    handlers = self._watches.pop(event.watch_id, None)
                if handlers is not None:
                    handlers.on_end(error_from_wire(event.error))
                return
            handlers = self._watches.get(event.watch_id)
            if handlers is not None:
                handlers.on_batch(batch_from_wire(event, handlers.previous_values))
        elif kind == "response":
            response = frame.response
            with self._lock:
                waiter = self._waiters.pop(response.id, None)
                handlers = None
                if waiter is _WATCH_START:
                    handlers = self._watches.get(response.id)
                    if response.WhichOneof("result") == "error":
                        self._watches.pop(response.id, None)
            if isinstance(waiter, _ThreadWaiter):
                waiter.resolve(response)
            elif isinstance(waiter, asyncio.Future):
                if not waiter.done():
                    waiter.set_result(response)
            elif handlers is not None:
                if response.WhichOneof("result") == "error":
                    handlers.on_end(error_from_wire(response.error))
                else:
                    handlers.on_start(response.watch.revision)
        elif kind == "welcome":
            welcome = self._welcome_waiter
            if welcome is not None and not welcome.done():
                welcome.set_result(frame.welcome)
        elif kind == "fatal":
            self._end(error_from_wire(frame.fatal))


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def result_of(response: pb.Response, field: str) -> Any:
    """The result message ``field`` of a response; raises the error the response carries."""
    which = response.WhichOneof("result")
    if which == field:
        return getattr(response, field)
    if which == "error":
        raise error_from_wire(response.error)
    raise ProtocolError(f"syncd answered a {field} request with {which or 'an empty response'}")

