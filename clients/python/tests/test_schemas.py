"""Schemas from Python: read and set them, and get the typed error, with its fields, for a write
that breaks one (issue 57). The Swift side is in Tests/IntegrationTests/SchemaTests.swift."""

from __future__ import annotations

import asyncio

import pytest

import sharedstate
import sharedstate.aio
from sharedstate import Put

from .conftest import Daemon, syncctl

FAN = {
    "title": "A fan",
    "type": "object",
    "properties": {"on": {"type": "boolean"}, "speed": {"type": "integer", "minimum": 0, "maximum": 3}},
    "required": ["on", "speed"],
}


def test_a_write_that_breaks_the_schema_raises_with_where_and_why(client: sharedstate.Client) -> None:
    client.set_schema("fan/", FAN)
    with pytest.raises(sharedstate.SchemaViolation) as raised:
        client.put("fan/hall", {"on": "yes", "speed": 1})
    error = raised.value
    assert error.code == "schemaViolation"
    assert error.message == 'fan/hall: /on is "yes", a string, not a boolean'
    assert (error.key, error.pointer, error.rule, error.limit, error.found) == ("fan/hall", "/on", "type", "boolean", '"yes"')
    assert [str(v) for v in error.violations] == [error.message]
    with pytest.raises(sharedstate.SchemaViolation) as missing:
        client.put("fan/hall", {"on": True})
    assert (missing.value.pointer, missing.value.rule, missing.value.limit, missing.value.found) == ("/speed", "required", "speed", None)
    # Nothing was written; a value that keeps to it is.
    with pytest.raises(sharedstate.NotFound):
        client.get("fan/hall")
    client.put("fan/hall", {"on": True, "speed": 2})
    # Inside a transaction, whatever branch it is in, the whole request is refused.
    with pytest.raises(sharedstate.SchemaViolation) as in_transaction:
        client.transaction(on_failure=[Put("fan/den", {"on": False, "speed": 9})])
    assert in_transaction.value.limit == "3"
    assert in_transaction.value.violations[0].prefix == "fan/"
    assert client.exists(["fan/den"]).versions == {}
    # syncd counts this client's refused writes.
    (me,) = [info for info in client.clients() if info.session_id == client.session_id]
    assert me.schema_refusals == 3
    assert me.last_schema_refusal is not None
    assert (me.last_schema_refusal.key, me.last_schema_refusal.limit) == ("fan/den", "3")


def test_schemas_are_read_listed_and_removed(client: sharedstate.Client, daemon: Daemon) -> None:
    assert client.schema("fan/") is None
    assert client.set_schema("fan/", FAN).version == 1
    schema = client.schema("fan/")
    assert schema is not None and schema.prefix == "fan/" and schema.schema == FAN and schema.version == 1
    client.set_schema("fan/big/", '{"type": "object"}')
    assert [s.prefix for s in client.schemas()] == ["fan/", "fan/big/"]
    # syncctl sees what Python set.
    assert syncctl(daemon, "schema", "list").stdout == "fan/\tA fan\nfan/big/\n"
    with pytest.raises(sharedstate.InvalidArgument, match='the keyword "oneOf" is not one syncd checks'):
        client.set_schema("lamp/", {"oneOf": []})
    with pytest.raises(sharedstate.InvalidArgument, match="empty prefix"):
        client.set_schema("", FAN)
    client.put("fan/big/one", {"speed": 7})
    # Without its own schema, fan/big/one would break fan/'s: refused, listed.
    with pytest.raises(sharedstate.SchemaViolation) as refused:
        client.delete_schema("fan/big/")
    assert [str(v) for v in refused.value.violations] == ["fan/big/one: /on is missing"]
    client.delete("fan/big/one")
    client.delete_schema("fan/big/")
    with pytest.raises(sharedstate.NotFound):
        client.delete_schema("fan/big/")
    # A schema that values already written break is refused with them.
    client.put("speed/a", 5)
    client.put("speed/b", -1)
    with pytest.raises(sharedstate.SchemaViolation) as broken:
        client.set_schema("speed/", {"type": "integer", "minimum": 0, "maximum": 3})
    assert [v.key for v in broken.value.violations] == ["speed/a", "speed/b"]
    assert client.schema("speed/") is None


def test_the_asyncio_client_reads_schemas_and_raises_the_typed_error(daemon: Daemon) -> None:
    async def run() -> None:
        async with sharedstate.aio.connect(daemon.socket) as client:
            await client.set_schema("fan/", FAN)
            assert (await client.schema("fan/")).schema == FAN  # type: ignore[union-attr]
            with pytest.raises(sharedstate.SchemaViolation) as raised:
                await client.put("fan/hall", {"on": True, "speed": 4})
            assert raised.value.rule == "maximum"

    asyncio.run(run())
