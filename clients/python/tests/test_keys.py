"""Reads, writes, compare-and-set, transactions and update() against a real syncd."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import sharedstate
from sharedstate import Compare, Delete, Put, RawJSON

from .conftest import Daemon, syncctl


def test_put_get_delete_and_list(client: sharedstate.Client) -> None:
    first = client.put("door/state", "open")
    assert first.version == 1
    entry = client.get("door/state")
    assert (entry.key, entry.value, entry.raw, entry.version) == ("door/state", "open", b'"open"', 1)
    assert entry.create_revision == entry.mod_revision == first.revision
    assert entry.ephemeral_session == 0

    second = client.put("door/state", {"open": False, "by": ["é", 1, None]})
    assert (second.revision, second.version) == (first.revision + 1, 2)
    assert client.get("door/state").value == {"open": False, "by": ["é", 1, None]}
    assert client.get("door/state").create_revision == first.revision

    client.put("door/lock", True)
    client.put("doors", 2)
    listed = client.list("door/")
    assert [entry.key for entry in listed.entries] == ["door/lock", "door/state"]
    assert listed.revision == client.status().revision and not listed.truncated
    # A raw prefix matches on bytes; a prefix ending in "/" matches whole segments.
    assert [entry.key for entry in client.list("door").entries] == ["door/lock", "door/state", "doors"]
    limited = client.list("door", limit=1)
    assert [entry.key for entry in limited.entries] == ["door/lock"] and limited.truncated
    assert len(client.list().entries) == 3
    # A count is the list's length without the entries, at the revision it was taken.
    assert client.count("door/") == sharedstate.CountResult(2, client.status().revision)
    assert client.count("door").count == 3 and client.count().count == 3
    assert client.count("nothing/").count == 0
    # Which keys exist, with their versions, at one revision, without their values.
    found = client.exists(["door/lock", "nothing/here", "doors"])
    assert found == sharedstate.ExistsResult({"door/lock": 1, "doors": 1}, client.status().revision)
    assert "door/lock" in found and "nothing/here" not in found
    assert client.exists([]).versions == {}
    with pytest.raises(sharedstate.InvalidArgument):
        client.exists(["a//b"])

    revision = client.delete("door/lock")
    assert revision == client.status().revision
    with pytest.raises(sharedstate.NotFound):
        client.get("door/lock")
    assert client.value("door/lock", default="gone") == "gone"
    # After a delete, the next put creates the key again.
    assert client.put("door/lock", False).version == 1


def test_values_travel_as_the_json_bytes_written(client: sharedstate.Client) -> None:
    client.put("raw/spaced", RawJSON('{ "b": 1, "a": 2 }'))
    assert client.get("raw/spaced").raw == b'{ "b": 1, "a": 2 }'
    client.put("raw/encoded", {"b": 1, "a": "ü"})
    assert client.get("raw/encoded").raw == '{"b":1,"a":"ü"}'.encode()
    for value in [42, 1.5, "text", None, [1, [2]], {"nested": {"deep": True}}]:
        client.put("raw/value", value)
        assert client.get("raw/value").value == value


def test_compare_and_set(client: sharedstate.Client) -> None:
    assert client.put("cas/key", 1, if_version=0).version == 1
    with pytest.raises(sharedstate.Conflict) as conflict:
        client.put("cas/key", 2, if_version=0)
    assert "cas/key" in conflict.value.message
    with pytest.raises(sharedstate.Conflict):
        client.put("cas/key", 2, if_version=5)
    assert client.put("cas/key", 2, if_version=1).version == 2
    with pytest.raises(sharedstate.Conflict):
        client.delete("cas/key", if_version=1)
    # A missing key has version 0: a delete expecting another version conflicts.
    with pytest.raises(sharedstate.Conflict):
        client.delete("cas/missing", if_version=3)
    client.delete("cas/key", if_version=2)
    assert client.value("cas/key") is None
    # A failed compare-and-set changes nothing and uses no revision.
    revision = client.status().revision
    with pytest.raises(sharedstate.Conflict):
        client.put("cas/other", 1, if_version=4)
    assert client.status().revision == revision


def test_transactions_with_compares(client: sharedstate.Client) -> None:
    won = client.transaction(
        compares=[Compare.absent("lock/owner")],
        on_success=[Put("lock/owner", "kiosk-1"), Put("lock/since", 1)],
        on_failure=[Put("lock/lost", True)],
    )
    assert won.succeeded
    owner = client.get("lock/owner")
    assert owner.mod_revision == client.get("lock/since").mod_revision == won.revision

    lost = client.transaction(
        compares=[Compare.absent("lock/owner")],
        on_success=[Put("lock/owner", "kiosk-2")],
        on_failure=[Put("lock/lost", True)],
    )
    assert not lost.succeeded
    assert client.get("lock/owner").value == "kiosk-1" and client.get("lock/lost").value is True

    # Compares by version and by exact bytes; a delete of a missing key inside is a no-op.
    both = client.transaction(
        compares=[Compare.version_is("lock/owner", owner.version), Compare.value_is("lock/owner", "kiosk-1")],
        on_success=[Delete("lock/owner"), Delete("lock/never-there"), Put("lock/free", True)],
    )
    assert both.succeeded and client.value("lock/owner") is None
    assert not client.transaction(compares=[Compare.value_is("lock/free", False)]).succeeded

    # An operation's own if_version failing is a conflict: nothing of the branch is applied.
    revision = client.status().revision
    with pytest.raises(sharedstate.Conflict):
        client.transaction(on_success=[Put("lock/a", 1), Put("lock/free", False, if_version=7)])
    assert client.value("lock/a") is None and client.status().revision == revision

    with pytest.raises(sharedstate.InvalidArgument) as twice:
        client.transaction(on_success=[Put("lock/x", 1), Delete("lock/x")])
    assert "lock/x" in twice.value.message

    # An empty transaction succeeds and uses no revision.
    empty = client.transaction()
    assert empty.succeeded and empty.revision == revision


def test_a_transaction_reaches_watchers_as_one_batch(client: sharedstate.Client) -> None:
    with client.watch("tx/") as watch:
        assert watch.next_batch(timeout=10).kind is sharedstate.BatchKind.SNAPSHOT
        result = client.transaction(on_success=[Put("tx/a", 1), Put("tx/b", 2), Delete("tx/c")])
        batch = watch.next_batch(timeout=10)
        while batch.kind is sharedstate.BatchKind.PROGRESS:
            batch = watch.next_batch(timeout=10)
        assert batch.revision == result.revision
        assert [(change.type, change.key) for change in batch.changes] == [("put", "tx/a"), ("put", "tx/b")]


def test_update_retries_under_contention(connect: Callable[..., sharedstate.Client]) -> None:
    writers, increments = 4, 25
    clients = [connect(client_name=f"updater-{index}") for index in range(writers)]
    calls = [0] * writers
    errors: list[BaseException] = []

    def work(index: int) -> None:
        def increment(value: int) -> int:
            calls[index] += 1
            return value + 1

        try:
            for _ in range(increments):
                clients[index].update("counter", increment, default=0)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    entry = clients[0].get("counter")
    assert entry.value == writers * increments == entry.version
    # Every lost race was retried: more computations than writes when they overlapped.
    assert sum(calls) >= writers * increments


def test_a_list_is_a_sequence_of_entries_that_knows_its_revision(client: sharedstate.Client) -> None:
    first = client.put("seq/a", 1)
    last = client.put("seq/b", 2)
    listed = client.list("seq/")
    # What len, for, indexing and unpacking give is the entries, not the result's fields.
    assert len(listed) == 2
    assert [entry.key for entry in listed] == ["seq/a", "seq/b"]
    assert listed[0].value == 1 and listed[-1].value == 2
    assert [entry.key for entry in listed[1:]] == ["seq/b"]
    a, b = listed
    assert (a.key, b.key) == ("seq/a", "seq/b")
    assert listed.revision == last.revision > first.revision and not listed.truncated
    assert listed == listed.entries and listed == client.list("seq/")
    assert client.list("seq/none/") == [] and not client.list("seq/none/")
    assert "revision=" in repr(listed)


def test_update_gives_up_after_max_attempts(client: sharedstate.Client) -> None:
    client.put("contended", 0)

    def meddle(value: int) -> int:
        client.put("contended", value + 100)  # someone else always writes in between
        return value + 1

    with pytest.raises(sharedstate.Conflict) as gave_up:
        client.update("contended", meddle, max_attempts=3)
    assert "gave up after 3 attempts" in gave_up.value.message


def test_update_gives_up_when_its_time_is_up(client: sharedstate.Client) -> None:
    client.put("contended", 0)
    calls = []

    def meddle(value: int) -> int:
        calls.append(value)
        client.put("contended", value + 100)  # someone else always writes in between
        return value + 1

    started = time.monotonic()
    with pytest.raises(sharedstate.Conflict, match="kept changing; gave up after"):
        client.update("contended", meddle, timeout=0.3)
    # It kept trying, waiting between attempts, for about its time and not for ever.
    assert len(calls) > 3
    assert time.monotonic() - started < 30


def test_one_client_from_many_threads(client: sharedstate.Client) -> None:
    results: dict[int, sharedstate.PutResult] = {}

    def work(index: int) -> None:
        for step in range(20):
            results[index * 100 + step] = client.put(f"threads/{index}", step)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 120
    assert len({result.revision for result in results.values()}) == 120
    assert [client.get(f"threads/{index}").value for index in range(6)] == [19] * 6


def test_status_history_clients_and_compact(client: sharedstate.Client, daemon: Daemon) -> None:
    for value in range(5):
        client.put("history/key", value)
    history = client.history("history/key")
    assert [change.value for change in history.changes] == [0, 1, 2, 3, 4]
    assert [change.value for change in client.history("history/key", limit=2).changes] == [3, 4]
    status = client.status()
    assert status.keys == 1 and status.database_path == daemon.database and status.server_version
    assert client.session_id in {info.session_id for info in client.clients()}
    mine = [info for info in client.clients() if info.session_id == client.session_id]
    assert [(info.name, info.admission) for info in mine] == [("pytest", "client")]
    # Its watches were sent no live event here.
    assert [info.events_delivered for info in mine] == [0]
    assert client.compact(status.revision - 2) == status.revision - 2
    assert [change.value for change in client.history("history/key").changes] == [3, 4]
    # syncctl reads what the Python client wrote.
    assert syncctl(daemon, "get", "history/key").stdout.strip() == "4"
