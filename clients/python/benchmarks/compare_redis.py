"""Measures this client against a private syncd beside redis-py against a private Redis, in one
run, and prints a Markdown table. Run through scripts/bench-python.sh, which starts both servers.

    python compare_redis.py --syncd-socket S --syncctl PATH --redis-socket R --redis-benchmark PATH

Rows:
- put round trip: one connection, one request in flight, 100-byte values over 1,000 keys; the
  blocking clients (sharedstate.Client, redis.Redis SET) and the asyncio ones
  (sharedstate.aio, redis.asyncio). Rates are requests per second; latencies are p50 in µs.
- received events/s: a separate writer process (``syncctl bench put``, durable puts from 4
  connections with 16 in flight each; ``redis-benchmark PUBLISH``, one connection with 16 in
  flight) and one Python receiver counting every event (a sharedstate watch; a redis-py pub/sub
  subscription), from the first event to the last. Where the receiver keeps up, the row measures
  the writer: the note gives the writer's own rate.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import redis
import redis.asyncio

import sharedstate
import sharedstate.aio
from sharedstate import BatchKind

VALUE = "x" * 98  # 100 bytes as a JSON string
KEYS = 1000


def timed(operation: Callable[[int], object], count: int) -> tuple[float, float]:
    """Requests per second and p50 latency in µs of ``count`` calls, after a warm-up."""
    for index in range(min(500, count)):
        operation(index)
    samples = []
    started = time.perf_counter()
    for index in range(count):
        before = time.perf_counter()
        operation(index)
        samples.append(time.perf_counter() - before)
    elapsed = time.perf_counter() - started
    return count / elapsed, statistics.median(samples) * 1e6


async def timed_async(operation: Callable[[int], object], count: int) -> tuple[float, float]:
    for index in range(min(500, count)):
        await operation(index)  # type: ignore[misc]
    samples = []
    started = time.perf_counter()
    for index in range(count):
        before = time.perf_counter()
        await operation(index)  # type: ignore[misc]
        samples.append(time.perf_counter() - before)
    elapsed = time.perf_counter() - started
    return count / elapsed, statistics.median(samples) * 1e6


def syncd_put_round_trip(socket: str, count: int) -> tuple[float, float]:
    with sharedstate.connect(socket, client_name="bench-put") as client:
        return timed(lambda index: client.put(f"rtt/{index % KEYS}", VALUE), count)


def redis_set_round_trip(socket: str, count: int) -> tuple[float, float]:
    client = redis.Redis(unix_socket_path=socket)
    try:
        return timed(lambda index: client.set(f"rtt/{index % KEYS}", VALUE), count)
    finally:
        client.close()


def syncd_async_put_round_trip(socket: str, count: int) -> tuple[float, float]:
    async def run() -> tuple[float, float]:
        async with sharedstate.aio.connect(socket, client_name="bench-aput") as client:
            return await timed_async(lambda index: client.put(f"artt/{index % KEYS}", VALUE), count)

    return asyncio.run(run())


def redis_async_set_round_trip(socket: str, count: int) -> tuple[float, float]:
    async def run() -> tuple[float, float]:
        client = redis.asyncio.Redis(unix_socket_path=socket)
        try:
            return await timed_async(lambda index: client.set(f"artt/{index % KEYS}", VALUE), count)
        finally:
            await client.aclose()

    return asyncio.run(run())


def syncctl_put(syncctl: str, socket: str, count: int, pipeline: int, connections: int = 1) -> list[str]:
    return [syncctl, "--socket", socket, "--json", "bench", "put", "--connections", str(connections),
            "--pipeline", str(pipeline), "--count", str(count), "--keys", str(KEYS), "--value-size", "100"]


def syncctl_writer(syncctl: str, socket: str, count: int) -> subprocess.Popen[str]:
    # Durable writes from 4 connections, so that the writer outpaces the watcher where it can.
    return subprocess.Popen(syncctl_put(syncctl, socket, count, 16, connections=4), stdout=subprocess.PIPE, text=True)


def redis_writer(redis_benchmark: str, socket: str, count: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [redis_benchmark, "-s", socket, "-c", "1", "-P", "16", "-n", str(count), "--csv", "publish", "bench", VALUE],
        stdout=subprocess.PIPE,
        text=True,
    )


def writer_rate(writer: subprocess.Popen[str]) -> str:
    """What the writing process reported: its own rate, to tell whether the receiver kept up."""
    output, _ = writer.communicate(timeout=600)
    try:
        if output.lstrip().startswith("{"):
            rate = float(json.loads(output)["ops_per_sec"])
        else:
            rate = float(list(csv.reader(output.splitlines()))[1][1])
    except (ValueError, KeyError, IndexError):
        return "writer rate unknown"
    return f"writer {rate:,.0f}/s"


def swift_client_round_trip(syncctl: str, socket: str, count: int) -> tuple[float, float]:
    """The same put round trip through the Swift client, for reference: what syncd itself costs."""
    output = subprocess.run(syncctl_put(syncctl, socket, count, 1), capture_output=True, text=True, timeout=600, check=True)
    result = json.loads(output.stdout)
    return float(result["ops_per_sec"]), float(result["p50_us"])


def syncd_watch_rate(socket: str, syncctl: str, count: int) -> tuple[float, str]:
    with sharedstate.connect(socket, client_name="bench-watch") as client:
        with client.watch("bench/", max_pending_bytes=256 << 20) as watch:
            watch.next_batch(timeout=30)
            writer = syncctl_writer(syncctl, socket, count)
            received = 0
            first = 0.0
            resyncs = 0
            try:
                while received < count:
                    batch = watch.next_batch(timeout=60)
                    assert batch is not None
                    if batch.kind is BatchKind.PROGRESS:
                        continue
                    if not first:
                        first = time.perf_counter()
                    if batch.kind is BatchKind.RESYNC:
                        resyncs += 1
                        break
                    received += len(batch.changes)
                last = time.perf_counter()
            finally:
                note = writer_rate(writer)
    if resyncs or watch.folds:
        note += f"; {resyncs} resync(s), {watch.folds} fold(s)"
    return received / (last - first), note


def syncd_async_watch_rate(socket: str, syncctl: str, count: int) -> tuple[float, str]:
    async def run() -> tuple[float, str]:
        async with sharedstate.aio.connect(socket, client_name="bench-awatch") as client:
            async with client.watch("bench/", max_pending_bytes=256 << 20) as watch:
                await watch.next_batch()
                writer = syncctl_writer(syncctl, socket, count)
                received = 0
                first = 0.0
                resyncs = 0
                try:
                    async for batch in watch:
                        if batch.kind is BatchKind.PROGRESS:
                            continue
                        if not first:
                            first = time.perf_counter()
                        if batch.kind is BatchKind.RESYNC:
                            resyncs += 1
                            break
                        received += len(batch.changes)
                        if received >= count:
                            break
                    last = time.perf_counter()
                finally:
                    note = await asyncio.get_running_loop().run_in_executor(None, writer_rate, writer)
        if resyncs or watch.folds:
            note += f"; {resyncs} resync(s), {watch.folds} fold(s)"
        return received / (last - first), note

    return asyncio.run(run())


def redis_subscribe_rate(socket: str, redis_benchmark: str, count: int) -> tuple[float, str]:
    client = redis.Redis(unix_socket_path=socket)
    pubsub = client.pubsub()
    pubsub.subscribe("bench")
    assert pubsub.get_message(timeout=10)["type"] == "subscribe"
    writer = redis_writer(redis_benchmark, socket, count)
    received = 0
    first = 0.0
    try:
        while received < count:
            message = pubsub.get_message(timeout=60)
            if message is None or message["type"] != "message":
                continue
            if not first:
                first = time.perf_counter()
            received += 1
        last = time.perf_counter()
    finally:
        note = writer_rate(writer)
        pubsub.close()
        client.close()
    return received / (last - first), note


def redis_async_subscribe_rate(socket: str, redis_benchmark: str, count: int) -> tuple[float, str]:
    async def run() -> tuple[float, str]:
        client = redis.asyncio.Redis(unix_socket_path=socket)
        pubsub = client.pubsub()
        await pubsub.subscribe("bench")
        while (await pubsub.get_message(timeout=10)) is None:
            pass
        writer = redis_writer(redis_benchmark, socket, count)
        received = 0
        first = 0.0
        try:
            while received < count:
                message = await pubsub.get_message(timeout=60)
                if message is None or message["type"] != "message":
                    continue
                if not first:
                    first = time.perf_counter()
                received += 1
            last = time.perf_counter()
        finally:
            note = await asyncio.get_running_loop().run_in_executor(None, writer_rate, writer)
            await pubsub.aclose()
            await client.aclose()
        return received / (last - first), note

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--syncd-socket", required=True)
    parser.add_argument("--syncctl", required=True)
    parser.add_argument("--redis-socket", required=True)
    parser.add_argument("--redis-benchmark", required=True)
    parser.add_argument("--puts", type=int, default=5000)
    parser.add_argument("--events", type=int, default=50000)
    options = parser.parse_args()

    def log(what: str) -> None:
        print(f"bench-python: {what}", file=sys.stderr, flush=True)

    rows = []
    log(f"put round trip, blocking, {options.puts} puts")
    ours, theirs = syncd_put_round_trip(options.syncd_socket, options.puts), redis_set_round_trip(options.redis_socket, options.puts)
    rows.append(("put round trip, blocking client, 1 in flight", ours, theirs))
    log(f"put round trip, asyncio, {options.puts} puts")
    ours, theirs = syncd_async_put_round_trip(options.syncd_socket, options.puts), redis_async_set_round_trip(options.redis_socket, options.puts)
    rows.append(("put round trip, asyncio client, 1 in flight", ours, theirs))
    log(f"put round trip, Swift client (syncctl bench put), {options.puts} puts")
    swift = swift_client_round_trip(options.syncctl, options.syncd_socket, options.puts)

    events = []
    log(f"received events/s, blocking, {options.events} events")
    ours_rate, ours_note = syncd_watch_rate(options.syncd_socket, options.syncctl, options.events)
    their_rate, their_note = redis_subscribe_rate(options.redis_socket, options.redis_benchmark, options.events)
    events.append(("received events/s, blocking watch vs pub/sub", ours_rate, their_rate, f"{ours_note} / {their_note}"))
    log(f"received events/s, asyncio, {options.events} events")
    ours_rate, ours_note = syncd_async_watch_rate(options.syncd_socket, options.syncctl, options.events)
    their_rate, their_note = redis_async_subscribe_rate(options.redis_socket, options.redis_benchmark, options.events)
    events.append(("received events/s, asyncio watch vs pub/sub", ours_rate, their_rate, f"{ours_note} / {their_note}"))

    print("| workload | sharedstate + syncd | redis-py + Redis | ratio (target ≥ 0.8×) | note |")
    print("| --- | --- | --- | --- | --- |")
    for name, (ours_ops, ours_p50), (their_ops, their_p50) in rows:
        print(
            f"| {name} | {ours_ops:,.0f}/s, p50 {ours_p50:.0f} µs | {their_ops:,.0f}/s, p50 {their_p50:.0f} µs "
            f"| {ours_ops / their_ops:.2f}× | |"
        )
    print(f"| put round trip, Swift client (syncctl bench put), for reference | {swift[0]:,.0f}/s, p50 {swift[1]:.0f} µs | | | what syncd costs |")
    for name, ours_rate, their_rate, note in events:
        print(f"| {name} | {ours_rate:,.0f}/s | {their_rate:,.0f}/s | {ours_rate / their_rate:.2f}× | {note} |")

if __name__ == "__main__":
    main()
