"""Request frames and the results read from their responses, shared by the blocking and the
asyncio client so that both check and encode the same way."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from ._generated import sharedstate_pb2 as pb
from .errors import InternalError, InvalidArgument, TooLarge, violation_from_wire
from .types import (
    Change,
    ChangeOrigin,
    ClientInfo,
    Compare,
    CountResult,
    ExistsResult,
    Delete,
    Entry,
    History,
    Limits,
    ListResult,
    Operation,
    PrefixSchema,
    Put,
    PutResult,
    Status,
    TransactionResult,
    encode_value,
)

#: What a write leaves this client holding: for each key it wrote, the value when it is an
#: ephemeral key of this client's session now, else ``None``.
PresenceNotes = list[tuple[str, "bytes | None"]]


def check_key(key: str, limits: Limits, what: str = "key") -> None:
    """Refuses what would break the frame or the limits; syncd checks the rest (segments,
    control characters, normalization) and says what is wrong."""
    if not isinstance(key, str):
        raise InvalidArgument(f"a {what} is a str, not {type(key).__name__}")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what} {key!r} is not valid Unicode text (it holds a lone surrogate)") from None
    if size > limits.max_key_bytes:
        raise TooLarge(f"{what} is {size} bytes of UTF-8; the limit is {limits.max_key_bytes}")


def check_value(data: bytes, limits: Limits) -> None:
    if len(data) > limits.max_value_bytes:
        raise TooLarge(f"the value is {len(data)} bytes; the limit is {limits.max_value_bytes}")


#: The most bytes of UTF-8 a write's cause may have (syncd's ``RequestRules.maxCauseBytes``).
MAX_CAUSE_BYTES = 256

# The Unicode control characters (general category Cc): C0, DEL and C1.
_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_cause(cause: str | None) -> str:
    """The cause to send (``""`` for none): at most 256 bytes of UTF-8 (else ``TooLarge``) with no
    control character (else ``InvalidArgument``), the rule syncd applies."""
    if cause is None:
        return ""
    if not isinstance(cause, str):
        raise InvalidArgument(f"a cause is a str, not {type(cause).__name__}")
    try:
        size = len(cause.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidArgument("the cause is not valid Unicode text (it holds a lone surrogate)") from None
    if size > MAX_CAUSE_BYTES:
        raise TooLarge(f"the cause has {size} bytes; the limit is {MAX_CAUSE_BYTES}")
    if _CONTROL_CHARACTER.search(cause):
        raise InvalidArgument("the cause contains a control character")
    return cause


def quoted(text: str) -> str:
    """``text`` as syncd quotes a key or a prefix in its messages: a JSON string."""
    return json.dumps(text, ensure_ascii=False)


def check_prefix(prefix: str, limits: Limits) -> None:
    """Refuses a prefix syncd would refuse, with syncd's words, so that ``watch`` fails at the
    call rather than at its first batch: empty, or a key, or a key followed by ``/``."""
    check_key(prefix, limits, "prefix")
    if not prefix:
        return
    control = _CONTROL_CHARACTER.search(prefix)
    if control:
        code = ord(control.group())
        raise InvalidArgument(f"invalid prefix {quoted(prefix)}: it contains the control character U+{code:04X}")
    if prefix.startswith("/"):
        raise InvalidArgument(f"invalid prefix {quoted(prefix)}: a prefix cannot start with '/'")
    if "//" in prefix:
        raise InvalidArgument(f"invalid prefix {quoted(prefix)}: segments between '/' cannot be empty")
    if not unicodedata.is_normalized("NFC", prefix):
        raise InvalidArgument(
            f"invalid prefix {quoted(prefix)}: it must be in Unicode normalization form C (composed characters)"
        )


def prefixes_of(prefixes: str | Iterable[str], limits: Limits) -> list[str]:
    result = [prefixes] if isinstance(prefixes, str) else list(prefixes)
    for prefix in result:
        check_prefix(prefix, limits)
    return result


#: The prefix of every schema's key: the schema of ``climate/`` is the entry of ``$schemas/climate/``.
SCHEMA_KEY_PREFIX = "$schemas/"


def schema_key(prefix: str, limits: Limits) -> str:
    """The key holding the schema of ``prefix``, refusing a prefix that cannot have one."""
    check_prefix(prefix, limits)
    if not prefix:
        raise InvalidArgument("a schema governs a prefix: the empty prefix cannot have one")
    if prefix.startswith("$"):
        raise InvalidArgument(f"invalid prefix {quoted(prefix)}: keys starting with '$' are syncd's")
    return SCHEMA_KEY_PREFIX + prefix


def prefix_schema_of(entry: pb.Entry) -> PrefixSchema:
    return PrefixSchema(entry.key[len(SCHEMA_KEY_PREFIX) :], entry.value, entry.version, entry.mod_revision)


def schema_document(schema: Any) -> bytes:
    """A schema as JSON bytes: a ``dict`` or ``bool`` is encoded, ``str`` or ``bytes`` sent as is."""
    if isinstance(schema, str):
        return schema.encode("utf-8")
    if isinstance(schema, (bytes, bytearray)):
        return bytes(schema)
    return encode_value(schema)


def _check_version(if_version: int | None) -> None:
    if if_version is not None and (not isinstance(if_version, int) or if_version < 0):
        raise InvalidArgument(f"if_version must be a version (an int, 0 or more), not {if_version!r}")


# Requests


def get_request(key: str, limits: Limits) -> pb.ClientFrame:
    check_key(key, limits)
    frame = pb.ClientFrame()
    frame.request.get.key = key
    return frame


def put_request(
    key: str, data: bytes, if_version: int | None, ephemeral: bool, limits: Limits, cause: str | None = None
) -> pb.ClientFrame:
    check_key(key, limits)
    check_value(data, limits)
    _check_version(if_version)
    checked_cause = check_cause(cause)
    frame = pb.ClientFrame()
    _fill_put(frame.request.put, key, data, if_version, ephemeral)
    frame.request.put.cause = checked_cause
    return frame


def _fill_put(put: pb.PutRequest, key: str, data: bytes, if_version: int | None, ephemeral: bool) -> None:
    put.key = key
    put.value = data
    if if_version is not None:
        # A proto3 optional: setting it, 0 included, sends it.
        put.if_version = if_version
    put.ephemeral = ephemeral


def delete_request(key: str, if_version: int | None, limits: Limits, cause: str | None = None) -> pb.ClientFrame:
    check_key(key, limits)
    _check_version(if_version)
    checked_cause = check_cause(cause)
    frame = pb.ClientFrame()
    frame.request.delete.key = key
    if if_version is not None:
        frame.request.delete.if_version = if_version
    frame.request.delete.cause = checked_cause
    return frame


def list_request(prefix: str, limit: int | None, limits: Limits) -> pb.ClientFrame:
    check_key(prefix, limits, "prefix")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidArgument(f"a list limit must be at least 1, not {limit!r}")
    frame = pb.ClientFrame()
    frame.request.list.prefix = prefix
    frame.request.list.limit = min(limit or 0, 0xFFFFFFFF)
    return frame


def count_request(prefix: str, limits: Limits) -> pb.ClientFrame:
    check_key(prefix, limits, "prefix")
    frame = pb.ClientFrame()
    frame.request.count.prefix = prefix
    return frame


def exists_request(keys: Sequence[str], limits: Limits) -> pb.ClientFrame:
    for key in keys:
        check_key(key, limits)
    frame = pb.ClientFrame()
    # SetInParent: a request for no keys is still an exists request.
    frame.request.exists.SetInParent()
    frame.request.exists.keys.extend(keys)
    return frame


def transaction_request(
    compares: Sequence[Compare],
    on_success: Sequence[Operation],
    on_failure: Sequence[Operation],
    limits: Limits,
    cause: str | None = None,
) -> tuple[pb.ClientFrame, PresenceNotes, PresenceNotes]:
    """The frame, and what each branch leaves this client holding. ``cause`` covers the revision
    of whichever branch writes."""
    checked_cause = check_cause(cause)
    frame = pb.ClientFrame()
    transaction = frame.request.transaction
    # SetInParent: an empty transaction is still a transaction.
    transaction.SetInParent()
    transaction.cause = checked_cause
    for compare in compares:
        if not isinstance(compare, Compare):
            raise InvalidArgument(f"a compare is a sharedstate.Compare, not {type(compare).__name__}")
        check_key(compare.key, limits)
        message = transaction.compares.add(key=compare.key)
        if compare.value is not None:
            message.value = compare.value
        elif compare.version is not None:
            message.version = compare.version
        else:
            raise InvalidArgument(f"the compare of {compare.key!r} names neither a version nor a value")
    success = _add_operations(transaction.on_success, on_success, limits)
    failure = _add_operations(transaction.on_failure, on_failure, limits)
    return frame, success, failure


def _add_operations(container: Any, operations: Sequence[Operation], limits: Limits) -> PresenceNotes:
    notes: PresenceNotes = []
    for operation in operations:
        if isinstance(operation, Put):
            data = encode_value(operation.value)
            check_key(operation.key, limits)
            check_value(data, limits)
            _check_version(operation.if_version)
            _fill_put(container.add().put, operation.key, data, operation.if_version, operation.ephemeral)
            notes.append((operation.key, data if operation.ephemeral else None))
        elif isinstance(operation, Delete):
            check_key(operation.key, limits)
            _check_version(operation.if_version)
            delete = container.add().delete
            delete.key = operation.key
            if operation.if_version is not None:
                delete.if_version = operation.if_version
            notes.append((operation.key, None))
        else:
            raise InvalidArgument(f"an operation is a sharedstate.Put or sharedstate.Delete, not {type(operation).__name__}")
    return notes


def status_request() -> pb.ClientFrame:
    frame = pb.ClientFrame()
    frame.request.status.SetInParent()
    return frame


def compact_request(revision: int) -> pb.ClientFrame:
    if not isinstance(revision, int) or revision < 0:
        raise InvalidArgument(f"a revision is an int, 0 or more, not {revision!r}")
    frame = pb.ClientFrame()
    frame.request.compact.revision = revision
    return frame


def history_request(key: str, limit: int | None, limits: Limits) -> pb.ClientFrame:
    check_key(key, limits)
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise InvalidArgument(f"a history limit must be at least 1, not {limit!r}")
    frame = pb.ClientFrame()
    frame.request.history.key = key
    frame.request.history.limit = min(limit or 0, 0xFFFFFFFF)
    return frame


def clients_request() -> pb.ClientFrame:
    frame = pb.ClientFrame()
    frame.request.clients.SetInParent()
    return frame


# Results


def entry_of(response: pb.GetResponse) -> Entry:
    return Entry.from_wire(response.entry)


def put_result_of(response: pb.PutResponse) -> PutResult:
    return PutResult(response.revision, response.version)


def list_result_of(response: pb.ListResponse) -> ListResult:
    return ListResult([Entry.from_wire(entry) for entry in response.entries], response.revision, response.truncated)


def count_result_of(response: pb.CountResponse) -> CountResult:
    return CountResult(response.count, response.revision)


def exists_result_of(keys: Sequence[str], response: pb.ExistsResponse) -> ExistsResult:
    if len(response.versions) != len(keys):
        raise InternalError(f"syncd answered {len(response.versions)} versions for {len(keys)} keys")
    return ExistsResult({key: version for key, version in zip(keys, response.versions) if version}, response.revision)


def transaction_result_of(response: pb.TransactionResponse) -> TransactionResult:
    return TransactionResult(response.succeeded, response.revision)


def status_of(response: pb.StatusResponse) -> Status:
    return Status(
        response.revision,
        response.keys,
        response.clients,
        response.watches,
        response.compacted_revision,
        response.database_bytes,
        response.uptime_seconds,
        response.server_version,
        response.database_path,
    )


def history_of(response: pb.HistoryResponse) -> History:
    origins = response.origins
    # A syncd from before writers were recorded sends no origins: each change gets an empty one
    # (session 0, no client name), as the Swift client does.
    return History(
        [Change.from_wire(change) for change in response.changes],
        response.compacted_revision,
        [ChangeOrigin.from_wire(origins[i] if i < len(origins) else pb.Origin()) for i in range(len(response.changes))],
    )


def clients_of(response: pb.ClientsResponse) -> list[ClientInfo]:
    return [
        ClientInfo(
            client.session_id,
            client.name,
            client.pid,
            client.uid,
            client.gid,
            client.watches,
            client.queued_bytes,
            client.resyncs,
            client.connected_seconds,
            _ADMISSIONS.get(client.admission, "waitingForHello"),
            client.events_delivered,
            client.schema_refusals,
            violation_from_wire(client.last_schema_refusal) if client.HasField("last_schema_refusal") else None,
        )
        for client in response.clients
    ]


_ADMISSIONS = {
    pb.ADMISSION_WAITING_FOR_HELLO: "waitingForHello",
    pb.ADMISSION_CLIENT: "client",
    pb.ADMISSION_RESERVED: "reserved",
}


def watch_start(from_revision: int | None) -> tuple[str, int]:
    if from_revision is None:
        return ("snapshot", 0)
    if not isinstance(from_revision, int) or from_revision < 0:
        raise InvalidArgument(f"from_revision is a revision (an int, 0 or more), not {from_revision!r}")
    return ("after", from_revision)
