#!/usr/bin/env python3
"""Writes the Python client's request methods, the blocking `Client`'s and the `AsyncClient`'s,
from one table, so that a request is one row here (and its request and answer in
clients/python/src/sharedstate/_requests.py), not two methods with the same signature,
docstring and body kept in step:

- clients/python/src/sharedstate/_request_methods.py: `RequestMethods` (each call blocks) and
  `AsyncRequestMethods` (each is awaited), which `Client` and `AsyncClient` inherit.

What is built on the requests (`value`, `update`) and the watches stay in client.py and aio.py,
where the blocking and the asyncio ways differ.

    scripts/generate-python-requests.py [--check]

With --check, writes nothing and exits 1 when the file is not what the table says (.ci/run runs
it so). scripts/generate-protos.sh runs it too.
"""
import pathlib
import sys
from typing import NamedTuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "clients/python/src/sharedstate/_request_methods.py"


class Method(NamedTuple):
    name: str
    parameters: str
    returns: str
    doc: str
    # The body's lines; `response(frame, name)` is the call to syncd, blocking or awaited, and
    # `limits` is in scope when `limits`.
    body: str
    limits: bool = True


TABLE = [
    Method(
        "get",
        "key: str",
        "Entry",
        "The entry of ``key``. Raises :class:`~sharedstate.NotFound` when it does not exist.",
        'return requests.entry_of(response(requests.get_request(key, limits), "get"))',
    ),
    Method(
        "put",
        "key: str, value: Any, *, if_version: int | None = None, ephemeral: bool = False, cause: str | None = None",
        "PutResult",
        "Sets ``key`` to ``value``, encoded as JSON (a :class:`~sharedstate.RawJSON` is sent as is).\n"
        "\n"
        '``if_version`` writes only if the key is at that version; 0 means "only if it does not\n'
        'exist". ``ephemeral`` binds the key to this client: syncd deletes it when the connection\n'
        "ends, and the client puts it back after reconnecting (presence). ``cause`` says why, in\n"
        'the writer\'s words (``"door-lock: requestApplied(r7)"``): syncd keeps it with the revision,\n'
        ":meth:`history` and watchers' ``changes`` batches show it. At most 256 bytes of UTF-8,\n"
        'no control characters; ``None`` or ``""`` gives none.\n'
        "\n"
        "Raises :class:`~sharedstate.Conflict` when ``if_version`` does not match,\n"
        ":class:`~sharedstate.InvalidArgument` or :class:`~sharedstate.TooLarge` for a bad key,\n"
        "value or cause, :class:`~sharedstate.Unavailable` when syncd is gone.",
        "data = encode_value(value)\n"
        "frame = requests.put_request(key, data, if_version, ephemeral, limits, cause)\n"
        'result = requests.put_result_of(response(frame, "put"))\n'
        "self._core.note_presence([(key, data if ephemeral else None)])\n"
        "return result",
    ),
    Method(
        "delete",
        "key: str, *, if_version: int | None = None, cause: str | None = None",
        "int",
        "Removes ``key`` and returns the revision of the removal. Raises\n"
        ":class:`~sharedstate.NotFound` when it does not exist, :class:`~sharedstate.Conflict` when\n"
        "``if_version`` does not match. ``cause`` says why, as for :meth:`put`.",
        'answer = response(requests.delete_request(key, if_version, limits, cause), "delete")\n'
        "self._core.note_presence([(key, None)])\n"
        "return int(answer.revision)",
    ),
    Method(
        "list",
        'prefix: str = "", *, limit: int | None = None',
        "ListResult",
        "The entries whose keys start with ``prefix`` (end it with ``/`` for whole segments),\n"
        "in key order, all read at one revision.",
        'return requests.list_result_of(response(requests.list_request(prefix, limit, limits), "list"))',
    ),
    Method(
        "exists",
        "keys: Iterable[str]",
        "ExistsResult",
        "Which of ``keys`` exist, with their versions, all at one revision, without their values:\n"
        'who is online, whether a setting was ever written. ``"key" in result`` says whether it\n'
        "exists; :class:`~sharedstate.PermissionDenied` when this client may not read one of them.",
        "keys = list(keys)\n"
        'return requests.exists_result_of(keys, response(requests.exists_request(keys, limits), "exists"))',
    ),
    Method(
        "count",
        'prefix: str = ""',
        "CountResult",
        "How many keys start with ``prefix`` (empty: every key), of those this client may read,\n"
        "without their values: etcd's ``get --prefix --count-only``.",
        'return requests.count_result_of(response(requests.count_request(prefix, limits), "count"))',
    ),
    Method(
        "transaction",
        "compares: Sequence[Compare] = (), on_success: Sequence[Operation] = (), on_failure: Sequence[Operation] = (), "
        "*, cause: str | None = None",
        "TransactionResult",
        "If every compare holds, applies ``on_success``, otherwise ``on_failure``: atomically, as\n"
        "one revision that watchers see in one batch. A failed compare is not an error\n"
        "(``succeeded`` is false); an operation's own ``if_version`` that fails raises\n"
        ":class:`~sharedstate.Conflict` and nothing is applied. ``cause`` says why, as for\n"
        ":meth:`put`; it covers the revision of whichever branch writes.",
        "frame, success, failure = requests.transaction_request(compares, on_success, on_failure, limits, cause)\n"
        'result = requests.transaction_result_of(response(frame, "transaction"))\n'
        "self._core.note_presence(success if result.succeeded else failure)\n"
        "return result",
    ),
    Method(
        "schema",
        "prefix: str",
        "PrefixSchema | None",
        "The JSON Schema syncd holds for ``prefix``, or ``None`` when it has none.",
        "key = requests.schema_key(prefix, limits)\n"
        "try:\n"
        '    answer = response(requests.get_request(key, limits), "get")\n'
        "except NotFound:\n"
        "    return None\n"
        "return requests.prefix_schema_of(answer.entry)",
    ),
    Method(
        "schemas",
        "",
        "builtins.list[PrefixSchema]",
        "Every schema syncd holds, in byte order of their prefixes.",
        'answer = response(requests.list_request(requests.SCHEMA_KEY_PREFIX, None, limits), "list")\n'
        "return [requests.prefix_schema_of(entry) for entry in answer.entries]",
    ),
    Method(
        "set_schema",
        "prefix: str, schema: Any, *, if_version: int | None = None",
        "PutResult",
        "Sets the JSON Schema every value written under ``prefix`` must satisfy (a ``dict`` or\n"
        "``bool``, or its JSON text). The longest prefix with a schema governs a key.\n"
        "\n"
        "Raises :class:`~sharedstate.InvalidArgument` naming the keyword at fault when ``schema``\n"
        "uses one outside syncd's vocabulary (docs/PROTOCOL.md, \"Schemas\"), and\n"
        ":class:`~sharedstate.SchemaViolation` when values already written under ``prefix`` break\n"
        "it, with up to 20 of them in ``violations``.",
        "key = requests.schema_key(prefix, limits)\n"
        "frame = requests.put_request(key, requests.schema_document(schema), if_version, False, limits)\n"
        'return requests.put_result_of(response(frame, "put"))',
    ),
    Method(
        "delete_schema",
        "prefix: str",
        "int",
        "Removes the schema of ``prefix``; values are left as they are. Returns the revision.\n"
        "Raises :class:`~sharedstate.NotFound` when it has none, and\n"
        ":class:`~sharedstate.SchemaViolation` when a shorter prefix's schema, which would then\n"
        "govern the keys, is broken by values under ``prefix``.",
        "key = requests.schema_key(prefix, limits)\n"
        'return int(response(requests.delete_request(key, None, limits), "delete").revision)',
    ),
    Method(
        "status",
        "",
        "Status",
        "A summary of syncd.",
        'return requests.status_of(response(requests.status_request(), "status"))',
        limits=False,
    ),
    Method(
        "history",
        "key: str, *, limit: int | None = None",
        "History",
        "The changes of ``key`` still in the change log, oldest first (the last ``limit``), and\n"
        "who made each and why: ``origins[i]`` (writer session, client name, pid, uid, gid, and\n"
        "cause) belongs to ``changes[i]``. pid, uid and gid are 0 unless this client runs as syncd's\n"
        "user or root.",
        'return requests.history_of(response(requests.history_request(key, limit, limits), "history"))',
    ),
    Method(
        "compact",
        "revision: int",
        "int",
        "Removes the change log up to and including ``revision``; returns the compacted\n"
        "revision. Watches can no longer resume from before it.",
        'return int(response(requests.compact_request(revision), "compact").compacted_revision)',
        limits=False,
    ),
    Method(
        "clients",
        "",
        "builtins.list[ClientInfo]",
        "Every client connected to syncd, this one included.",
        'return requests.clients_of(response(requests.clients_request(), "clients"))',
        limits=False,
    ),
]

HEADER = '''"""The requests, as methods of the blocking client
(`RequestMethods`, inherited by :class:`~sharedstate.Client`) and the asyncio one
(`AsyncRequestMethods`, inherited by :class:`~sharedstate.aio.AsyncClient`).

Generated by scripts/generate-python-requests.py from its table; edit the table, not this file.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import Any

from . import _requests as requests
from ._core import ClientCore
from .errors import NotFound
from .types import (
    ClientInfo,
    Compare,
    CountResult,
    Entry,
    ExistsResult,
    History,
    ListResult,
    Operation,
    PrefixSchema,
    PutResult,
    Status,
    TransactionResult,
    encode_value,
)
'''


def awaited(answer: str) -> str:
    """`answer` with its `response(...)` awaited, in parentheses where an attribute follows:
    `await` binds looser than it."""
    start = answer.index("response(")
    depth = 0
    for end in range(start + len("response"), len(answer)):
        depth += {"(": 1, ")": -1}.get(answer[end], 0)
        if depth == 0:
            break
    call = f"await self._core.call{answer[start + len('response') : end + 1]}"
    if answer[end + 1 : end + 2] == ".":
        call = f"({call})"
    return answer[:start] + call + answer[end + 1 :]


def method(entry: Method, is_async: bool) -> str:
    parameters = "self" + (", " + entry.parameters if entry.parameters else "")
    doc = entry.doc.replace("\n", "\n        ").replace("\n        \n", "\n\n")
    closing = "\n        " if "\n\n" in entry.doc else ""
    signature = f"    {'async ' if is_async else ''}def {entry.name}({parameters}) -> {entry.returns}:"
    if len(signature) > 120:
        # One line of parameters, or one line each when that is too long too.
        joined = parameters if len(parameters) <= 110 else ",\n        ".join(parameters.split(", ")) + ","
        signature = f"    {'async ' if is_async else ''}def {entry.name}(\n        {joined}\n    ) -> {entry.returns}:"
    lines = [signature, f'        """{doc}{closing}"""']
    if entry.limits:
        lines.append("        limits = self._core.configuration.limits")
    for line in entry.body.split("\n"):
        if "response(" in line:
            line = awaited(line) if is_async else line.replace("response(", "self._core.call_blocking(")
        lines.append(f"        {line}")
    return "\n".join(lines)


def source() -> str:
    parts = [HEADER]
    for name, is_async, summary in [
        ("RequestMethods", False, "each blocks until syncd answers"),
        ("AsyncRequestMethods", True, "each is awaited"),
    ]:
        body = "\n\n".join(method(entry, is_async) for entry in TABLE)
        parts.append(
            f'\n\nclass {name}:\n    """The requests to syncd: {summary}."""\n\n'
            f"    _core: ClientCore\n\n{body}\n"
        )
    return "".join(parts)


def main() -> None:
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] not in ([], ["--check"]):
        sys.exit("usage: scripts/generate-python-requests.py [--check]")
    wanted = source()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
    if current == wanted:
        return
    if check:
        sys.exit(f"generate-python-requests: {OUTPUT.relative_to(ROOT)} is not what the table says: run the script")
    OUTPUT.write_text(wanted, encoding="utf-8")
    print(f"generate-python-requests: wrote {OUTPUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
