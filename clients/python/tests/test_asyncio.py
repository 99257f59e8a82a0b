"""The asyncio client: the same operations and guarantees as the blocking one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

import sharedstate
import sharedstate.aio
from sharedstate import BatchKind, Compare, ConnectionState, Put

from .conftest import Daemon, next_changes_async

T = TypeVar("T")


def run(scenario: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(scenario(), timeout)

    return asyncio.run(bounded())


def test_operations(daemon: Daemon) -> None:
    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket, client_name="async") as client:
            first = await client.put("a/x", {"n": 1}, if_version=0)
            assert (await client.get("a/x")).value == {"n": 1}
            with pytest.raises(sharedstate.Conflict):
                await client.put("a/x", 2, if_version=0)
            assert [entry.key for entry in (await client.list("a/")).entries] == ["a/x"]
            assert (await client.count("a/")).count == 1
            assert "a/x" in await client.exists(["a/x", "a/none"])
            result = await client.transaction([Compare.version_is("a/x", 1)], [Put("a/y", 2)])
            assert result.succeeded and result.revision == first.revision + 1
            assert await client.delete("a/y") == result.revision + 1
            with pytest.raises(sharedstate.NotFound):
                await client.get("a/y")
            assert await client.value("a/y", default=0) == 0
            assert (await client.status()).keys == 1
            assert len((await client.history("a/x")).changes) == 1
            assert any(info.name == "async" for info in await client.clients())
            assert await client.compact(first.revision) == first.revision
            with pytest.raises(sharedstate.InvalidArgument):
                await client.put("a//b", 1)

    run(scenario)


def test_update_retries_under_contention(daemon: Daemon) -> None:
    async def scenario() -> int:
        clients = [await sharedstate.aio.connect(daemon.socket, client_name=f"u{index}") for index in range(4)]
        try:

            async def work(client: sharedstate.aio.AsyncClient) -> None:
                for _ in range(25):
                    await client.update("counter", lambda value: value + 1, default=0)

            await asyncio.gather(*(work(client) for client in clients))

            async def slowly(value: int) -> int:
                await asyncio.sleep(0)
                return value + 1

            # The change may be a coroutine function too.
            return int(await clients[0].update("counter", slowly))
        finally:
            for client in clients:
                await client.close()

    assert run(scenario) == 101


def test_update_from_many_tasks_on_one_client_wins_every_race_in_the_end(daemon: Daemon) -> None:
    # Tasks of one client contend in lockstep: each lost race waits a jittered, doubling time.
    async def scenario() -> int:
        async with sharedstate.aio.connect(daemon.socket) as client:

            async def work() -> None:
                for _ in range(25):
                    await client.update("shared/counter", lambda value: value + 1, default=0)

            await asyncio.gather(*(work() for _ in range(8)))
            entry = await client.get("shared/counter")
            assert entry.version == 200
            return int(entry.value)

    assert run(scenario) == 200


def test_watch_snapshot_changes_and_a_timeout_that_loses_nothing(daemon: Daemon) -> None:
    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket) as client:
            await client.put("w/a", 1)
            async with client.watch("w/") as watch:
                snapshot = await watch.next_batch()
                assert snapshot is not None and snapshot.kind is BatchKind.SNAPSHOT
                assert [change.key for change in snapshot.changes] == ["w/a"]
                # A consumer that gives up waiting loses nothing. (Progress notices, which syncd
                # sends an idle watch, are not asked for: none come meanwhile.)
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(watch.next_batch(), 0.5)
                put = await client.put("w/b", 2)
                batch = await next_changes_async(watch)
                assert (batch.revision, batch.changes[0].key) == (put.revision, "w/b")
                assert watch.latest_revision >= put.revision
            # Leaving the block cancelled the watch on syncd.
            for _ in range(200):
                if (await client.status()).watches == 0:
                    break
                await asyncio.sleep(0.02)
            assert (await client.status()).watches == 0

    run(scenario)


def test_a_watch_resumes_after_syncd_is_killed(daemon: Daemon) -> None:
    async def scenario() -> None:
        async with sharedstate.aio.connect(daemon.socket) as client:
            watch = client.watch("r/")
            await watch.next_batch()
            before = [(await client.put("r/k", value)).revision for value in range(5)]
            states = client.connection_states()
            assert await states.__anext__() is ConnectionState.CONNECTED
            daemon.kill()
            assert await asyncio.wait_for(states.__anext__(), 10) is ConnectionState.RECONNECTING
            with pytest.raises(sharedstate.Unavailable):
                await client.put("r/k", -1)
            daemon.start()
            await client.wait_until(ConnectionState.CONNECTED, timeout=20)
            await states.aclose()
            after = [(await client.put("r/k", value)).revision for value in range(5, 10)]
            seen = [(await next_changes_async(watch)) for _ in range(10)]
            assert [batch.revision for batch in seen] == before + after
            assert [batch.changes[0].value for batch in seen] == list(range(10))
            watch.close()

    run(scenario)


def test_close_ends_watches_with_unavailable(daemon: Daemon) -> None:
    async def scenario() -> None:
        client = await sharedstate.aio.connect(daemon.socket)
        watch = client.watch("")
        await watch.next_batch()
        await client.close()
        with pytest.raises(sharedstate.Unavailable):
            # Progress notices taken in before close() come out first.
            while (await watch.next_batch()).kind is BatchKind.PROGRESS:
                pass
        with pytest.raises(sharedstate.Unavailable):
            await client.get("x")
        assert client.connection_state is ConnectionState.CLOSED
        late: Any = client.watch("")
        with pytest.raises(sharedstate.Unavailable):
            await late.next_batch()

    run(scenario)
