"""Bad input gives typed errors with syncd's own message, and never costs the connection."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import sharedstate
from sharedstate import Put, RawJSON
from sharedstate._generated import sharedstate_pb2 as pb

from .conftest import Daemon


@pytest.mark.parametrize(
    ("key", "error", "mentions"),
    [
        ("a//b", sharedstate.InvalidArgument, "a//b"),
        ("/a", sharedstate.InvalidArgument, "/a"),
        ("a/", sharedstate.InvalidArgument, "a/"),
        ("", sharedstate.InvalidArgument, "empty"),
        ("bell\x07", sharedstate.InvalidArgument, "control"),
        ("e\u0301", sharedstate.InvalidArgument, "normalization"),
    ],
)
def test_syncd_refuses_malformed_keys_with_its_message(
    client: sharedstate.Client, key: str, error: type[sharedstate.SharedStateError], mentions: str
) -> None:
    with pytest.raises(error) as raised:
        client.put(key, 1)
    assert raised.value.code == error.code
    assert mentions.lower() in raised.value.message.lower()
    assert str(raised.value) == raised.value.message


@pytest.mark.parametrize("value", ["{bad", "", "1 2", "[1,]", '{"a":1} // no', "NaN"])
def test_syncd_refuses_values_that_are_not_one_json_document(client: sharedstate.Client, value: str) -> None:
    with pytest.raises(sharedstate.InvalidArgument) as raised:
        client.put("bad/value", RawJSON(value))
    assert raised.value.message
    assert client.value("bad/value") is None


def test_errors_from_syncd_and_their_codes(client: sharedstate.Client) -> None:
    with pytest.raises(sharedstate.NotFound) as missing:
        client.get("no/such/key")
    assert "no/such/key" in missing.value.message and missing.value.code == "notFound"
    with pytest.raises(sharedstate.NotFound):
        client.delete("no/such/key")
    with pytest.raises(sharedstate.InvalidArgument):
        client.count("a//")
    with pytest.raises(sharedstate.TooLarge):
        client.transaction(on_success=[Put(f"many/{index}", index) for index in range(129)])
    with pytest.raises(sharedstate.TooLarge):
        client.watch([f"p{index}/" for index in range(65)]).next_batch(timeout=10)
    revision = client.status().revision
    with pytest.raises(sharedstate.FutureRevision):
        client.watch("x/", from_revision=revision + 100).next_batch(timeout=10)
    with pytest.raises(sharedstate.InvalidArgument):
        client.compact(revision + 100)
    client.put("x/a", 1)
    client.put("x/a", 2)
    client.compact(client.status().revision)
    with pytest.raises(sharedstate.Compacted) as compacted:
        client.watch("x/", from_revision=revision).next_batch(timeout=10)
    assert compacted.value.code == "compacted" and compacted.value.message
    # Every error class is a SharedStateError and keeps the message it was given.
    for name in ["NotFound", "Conflict", "Compacted", "PermissionDenied", "InvalidArgument", "TooLarge", "Unavailable", "ProtocolError"]:
        cls = getattr(sharedstate, name)
        assert issubclass(cls, sharedstate.SharedStateError)
        assert cls("why").message == "why"


def test_limits_past_syncd_s_come_back_from_syncd_and_keep_the_connection(connect: Callable[..., sharedstate.Client]) -> None:
    # With the client's own checks widened, syncd is the one that refuses.
    client = connect(limits=sharedstate.Limits(max_key_bytes=10_000, max_value_bytes=3 << 20))
    session = client.session_id
    with pytest.raises(sharedstate.TooLarge) as long_key:
        client.put("k" * 600, 1)
    assert "512" in long_key.value.message
    with pytest.raises(sharedstate.TooLarge):
        client.put("big/value", "x" * (1 << 20))
    assert client.put("still/connected", True).version == 1
    assert client.session_id == session


def test_input_checked_before_sending(client: sharedstate.Client) -> None:
    session = client.session_id
    with pytest.raises(sharedstate.TooLarge):
        client.put("k" * 513, 1)
    with pytest.raises(sharedstate.TooLarge):
        client.put("big/value", "x" * (1 << 20))
    with pytest.raises(sharedstate.InvalidArgument):
        client.put("lone\ud800surrogate", 1)
    with pytest.raises(sharedstate.InvalidArgument):
        client.put("not/json", object())
    with pytest.raises(sharedstate.InvalidArgument):
        client.put("not/json", float("nan"))
    with pytest.raises(sharedstate.InvalidArgument):
        client.put("cas/key", 1, if_version=-1)
    with pytest.raises(sharedstate.InvalidArgument):
        client.list("", limit=0)
    with pytest.raises(sharedstate.InvalidArgument):
        client.watch("x/", from_revision=-1)
    # None of this reached syncd or cost the connection.
    assert client.put("still/connected", True).version == 1
    assert client.session_id == session


@pytest.mark.parametrize(
    ("prefix", "reason"),
    [
        ("/bad", "a prefix cannot start with '/'"),
        ("a//b", "segments between '/' cannot be empty"),
        ("a\nb", "it contains the control character U+000A"),
        ("cafe\u0301/", "it must be in Unicode normalization form C"),
    ],
)
def test_a_watch_refuses_a_bad_prefix_at_the_call_in_syncd_s_words(client: sharedstate.Client, prefix: str, reason: str) -> None:
    with pytest.raises(sharedstate.InvalidArgument) as local:
        client.watch(prefix)
    assert reason in local.value.message

    async def from_the_async_client() -> None:
        async with sharedstate.aio.connect(client.socket_path) as other:
            with pytest.raises(sharedstate.InvalidArgument, match=re.escape(reason)):
                other.watch(["ok/", prefix])

    asyncio.run(from_the_async_client())
    # The same words as syncd's own check (here, through a list, which syncd checks).
    with pytest.raises(sharedstate.InvalidArgument) as remote:
        client.list(prefix)
    assert remote.value.message == local.value.message
    # Good prefixes still watch.
    with client.watch(["", "ok/", "ok"]) as watch:
        assert watch.next_batch(timeout=10) is not None


def test_a_frame_over_the_limit_is_refused_locally(connect: Callable[..., sharedstate.Client]) -> None:
    client = connect(limits=sharedstate.Limits(max_value_bytes=8 << 20))
    session = client.session_id
    with pytest.raises(sharedstate.TooLarge) as raised:
        client.put("big/value", "x" * (5 << 20))
    assert "4194304" in raised.value.message
    assert client.put("still/connected", True).version == 1
    assert client.session_id == session


def test_an_unreachable_socket_is_unavailable_naming_it(scratch: Path) -> None:
    path = str(scratch / "nobody.sock")
    with pytest.raises(sharedstate.Unavailable) as raised:
        sharedstate.connect(path)
    assert path in raised.value.message


def test_calls_fail_at_once_while_syncd_is_away(client: sharedstate.Client, daemon: Daemon) -> None:
    daemon.kill()
    client.wait_until(sharedstate.ConnectionState.RECONNECTING, timeout=10)
    started = time.monotonic()
    with pytest.raises(sharedstate.Unavailable) as raised:
        client.put("while/away", 1)
    assert time.monotonic() - started < 1
    assert "reconnecting" in raised.value.message
    daemon.start()
    client.wait_until(sharedstate.ConnectionState.CONNECTED, timeout=20)
    assert client.put("while/away", 2).version == 1


def test_a_closed_client_is_unavailable(connect: Callable[..., sharedstate.Client]) -> None:
    client = connect()
    watch = client.watch("closing/")
    assert watch.next_batch(timeout=10) is not None
    client.close()
    with pytest.raises(sharedstate.Unavailable):
        client.get("closing/x")
    with pytest.raises(sharedstate.Unavailable):
        # Progress notices taken in before close() come out first.
        while watch.next_batch(timeout=10).kind is sharedstate.BatchKind.PROGRESS:
            pass
    assert client.connection_state is sharedstate.ConnectionState.CLOSED


def test_a_peer_that_refuses_the_handshake_is_a_protocol_error(scratch: Path) -> None:
    path = str(scratch / "fake.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def refuse() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(1024)
            frame = pb.ServerFrame()
            frame.fatal.code = pb.ERROR_CODE_PROTOCOL
            frame.fatal.message = "this peer speaks protocol version 9"
            payload = frame.SerializeToString()
            connection.sendall(len(payload).to_bytes(4, "big") + payload)
            time.sleep(0.2)

    server = threading.Thread(target=refuse, daemon=True)
    server.start()
    try:
        with pytest.raises(sharedstate.ProtocolError) as raised:
            sharedstate.connect(path, connect_timeout=10)
        assert raised.value.message == "this peer speaks protocol version 9"
    finally:
        server.join(timeout=10)
        listener.close()
        os.unlink(path)


def stop(daemon: Daemon) -> None:
    """Stops syncd with SIGSTOP and returns once it is stopped: the signal takes effect a moment
    after it is sent, and a request in that moment would still be answered."""
    assert daemon.process is not None
    daemon.process.send_signal(signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open(f"/proc/{daemon.process.pid}/stat") as stat:
            if stat.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.005)
    pytest.fail("syncd did not stop within 10 s of SIGSTOP")


def test_calls_to_a_stopped_syncd_time_out_by_default(connect: Callable[..., sharedstate.Client], daemon: Daemon) -> None:
    # A stopped syncd keeps its socket open and answers nothing: without a bound the call would
    # wait for as long as syncd stays stopped.
    with sharedstate.connect(daemon.socket) as default:
        assert default._core.configuration.request_timeout == 30.0
    client = connect(request_timeout=0.5)
    client.put("t/a", 1)
    assert daemon.process is not None
    stop(daemon)
    try:
        with pytest.raises(sharedstate.Unavailable, match=r"did not answer within 0\.5 s; the request may or may not"):
            client.get("t/a")
    finally:
        daemon.process.send_signal(signal.SIGCONT)
    # The late answer is dropped; the connection goes on.
    assert client.get("t/a").value == 1


def test_async_calls_to_a_stopped_syncd_time_out(daemon: Daemon) -> None:
    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket) as default:
            assert default._core.configuration.request_timeout == 30.0
        async with sharedstate.aio.connect(daemon.socket, request_timeout=0.5) as client:
            await client.put("t/b", 2)
            assert daemon.process is not None
            stop(daemon)
            try:
                with pytest.raises(sharedstate.Unavailable, match=r"did not answer within 0\.5 s"):
                    await client.get("t/b")
            finally:
                daemon.process.send_signal(signal.SIGCONT)
            assert (await client.get("t/b")).value == 2

    asyncio.run(scenario())


def test_a_client_used_in_a_forked_child_fails_at_once(client: sharedstate.Client) -> None:
    client.put("fork/a", 1)
    child = os.fork()
    if child == 0:
        # The child: every way in fails at once, naming the fork, instead of waiting for ever.
        status = 0
        for call in (lambda: client.get("fork/a"), lambda: client.put("fork/b", 2), lambda: client.watch("fork/")):
            try:
                call()
                status = 1
            except sharedstate.Unavailable as error:
                if "forked" not in error.message or "connect a new one" not in error.message:
                    status = 2
            except BaseException:
                status = 3
        os._exit(status)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(child, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            pytest.fail("the forked child hung on the parent's client")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's client is unaffected.
    assert client.get("fork/a").value == 1


def test_a_user_outside_the_socket_s_group_is_told_why_and_what_to_do(daemon: Daemon, tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root, to connect as another user")
    # A socket in a directory anyone may search, so that only the socket's own mode refuses.
    directory = Path(tempfile.mkdtemp(prefix="sspy-perm-"))
    try:
        directory.chmod(0o755)
        daemon.stop()
        daemon.start(socket=str(directory / "syncd.sock"))
        for path, expected in [
            (str(directory / "syncd.sock"), ("the socket is srw-rw---- (owner root, group root)", "--socket-group")),
            (str(tmp_path / "closed" / "syncd.sock"), ("a directory on the way to the socket is closed",)),
        ]:
            if "closed" in path:
                (tmp_path / "closed").mkdir(mode=0o700)
                tmp_path.chmod(0o700)
            read, write = os.pipe()
            child = os.fork()
            if child == 0:
                os.close(read)
                message = b"connected"
                try:
                    os.setgid(65534)
                    os.setgroups([])
                    os.setuid(65534)
                    sharedstate.connect(path, reconnects=False).close()
                except sharedstate.Unavailable as error:
                    message = error.message.encode()
                except BaseException as error:
                    message = repr(error).encode()
                os.write(write, message)
                os._exit(0)
            os.close(write)
            with os.fdopen(read, "rb") as pipe:
                message = pipe.read().decode()
            os.waitpid(child, 0)
            assert message.startswith(f"cannot reach syncd at {path}: permission denied"), message
            for words in expected:
                assert words in message
            assert "Is syncd running" not in message
    finally:
        shutil.rmtree(directory, ignore_errors=True)
