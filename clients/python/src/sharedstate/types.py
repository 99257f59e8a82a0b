"""The values the client takes and returns: entries, changes, watch batches, results, and the
parts of a transaction."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Union, overload

from ._generated import sharedstate_pb2 as pb
from .errors import Violation

__all__ = [
    "RawJSON",
    "Entry",
    "ChangeType",
    "Unknown",
    "UNKNOWN",
    "Previous",
    "Change",
    "BatchKind",
    "WatchBatch",
    "PutResult",
    "PrefixSchema",
    "ListResult",
    "TransactionResult",
    "Status",
    "ClientInfo",
    "History",
    "ChangeOrigin",
    "Writer",
    "Compare",
    "Put",
    "Delete",
    "Operation",
    "Limits",
    "ConnectionState",
]


class RawJSON:
    """A value that is already JSON text, sent as these bytes exactly.

    Values are otherwise encoded with :func:`json.dumps` (compact, UTF-8). Use ``RawJSON`` to keep a
    byte-exact form, for example to compare with :meth:`Compare.value`::

        client.put("door/state", sharedstate.RawJSON('{"open": true}'))
    """

    __slots__ = ("data",)

    def __init__(self, text: str | bytes) -> None:
        self.data: bytes = text.encode("utf-8") if isinstance(text, str) else bytes(text)

    def __repr__(self) -> str:
        return f"RawJSON({self.data!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawJSON) and other.data == self.data

    def __hash__(self) -> int:
        return hash(self.data)


def encode_value(value: Any) -> bytes:
    """The JSON bytes of ``value``. :class:`~sharedstate.InvalidArgument` when it is not JSON."""
    if isinstance(value, RawJSON):
        return value.data
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError) as error:
        from .errors import InvalidArgument

        raise InvalidArgument(f"the value is not a JSON document: {error}") from None


class Entry(NamedTuple):
    """A key and its current value, as syncd holds it."""

    key: str
    #: The JSON bytes as written (empty for a deleted key).
    raw: bytes
    #: Writes to the key since it was (last) created; 1 after the first put.
    version: int
    #: The revision that created the key.
    create_revision: int
    #: The revision of the last write to the key.
    mod_revision: int
    #: For an ephemeral key, the session it is bound to; 0 for a key that persists.
    ephemeral_session: int

    @property
    def value(self) -> Any:
        """The value decoded from JSON; ``None`` for a deleted key."""
        return json.loads(self.raw) if self.raw else None

    @classmethod
    def from_wire(cls, entry: pb.Entry) -> Entry:
        return cls(entry.key, entry.value, entry.version, entry.create_revision, entry.mod_revision, entry.ephemeral_session)


class ChangeType(str, enum.Enum):
    """What a change did to its key."""

    PUT = "put"
    DELETE = "delete"

    def __str__(self) -> str:
        return self.value


class Unknown(enum.Enum):
    """The type of :data:`UNKNOWN`, the one value that says a change's previous entry is unknown."""

    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        # Falsy, as ``None`` is: ``if change.previous:`` holds only when there is an entry.
        return False


#: What :attr:`Change.previous` is when the entry before the change is not known: the watch did
#: not ask for previous values, the change is part of a snapshot or resync, or (for a replayed
#: change) the entry before it is older than syncd's change log holds. Compare with ``is``.
UNKNOWN = Unknown.UNKNOWN

#: What is known of a key before a change: its :class:`Entry`, ``None`` when the key did not
#: exist, or :data:`UNKNOWN`.
Previous = Union[Entry, None, Unknown]


class Change(NamedTuple):
    """One key's change: a put with the entry after it, or a delete."""

    type: ChangeType
    #: For a put, the entry after the write; for a delete, the key with an empty value,
    #: version 0 and ``mod_revision`` set to the deleting revision.
    entry: Entry
    #: The key's entry just before the change, for a watch started with ``previous_values=True``
    #: (as etcd's ``prev_kv``): an :class:`Entry`, ``None`` when the key did not exist before it,
    #: or :data:`UNKNOWN` when that is not known (the watch did not ask, a snapshot or resync, or
    #: a replayed change whose entry before is older than the change log holds).
    previous: Previous = UNKNOWN

    @property
    def key(self) -> str:
        return self.entry.key

    @property
    def value(self) -> Any:
        """The value after a put (decoded from JSON); ``None`` for a delete."""
        return self.entry.value

    @property
    def previous_value(self) -> Any:
        """The value before the change (decoded from JSON); ``None`` when the key did not exist
        or when :attr:`previous` is :data:`UNKNOWN`."""
        previous = self.previous
        return previous.value if isinstance(previous, Entry) else None

    @classmethod
    def from_wire(cls, change: pb.Change, previous_values: bool = False) -> Change:
        """The change of a wire message; ``previous_values`` says whether it may carry the entry
        before it (the changes of a ``CHANGES`` event of a watch that asked for them)."""
        kind = ChangeType.DELETE if change.type == pb.CHANGE_TYPE_DELETE else ChangeType.PUT
        return cls(kind, Entry.from_wire(change.entry), _previous_from_wire(change) if previous_values else UNKNOWN)

    @classmethod
    def deletion(cls, key: str, revision: int) -> Change:
        return cls(ChangeType.DELETE, Entry(key, b"", 0, 0, revision, 0))


def _previous_from_wire(change: pb.Change) -> Previous:
    if change.previous_compacted:
        return UNKNOWN
    if change.HasField("previous"):
        return Entry.from_wire(change.previous)
    return None


class BatchKind(str, enum.Enum):
    """What a watch batch carries."""

    #: Every selected entry at the batch's revision, as puts: replaces what the consumer knew.
    SNAPSHOT = "snapshot"
    #: The changes of one revision, applied on top of what the consumer knew.
    CHANGES = "changes"
    #: No changes: the watch is current with the batch's revision.
    PROGRESS = "progress"
    #: The watch skipped ahead to the batch's revision (the consumer or the connection fell
    #: behind, or the resume point was compacted): the difference from what the consumer had
    #: seen, puts for keys that changed and deletes for keys that are gone. Applied like changes.
    RESYNC = "resync"

    def __str__(self) -> str:
        return self.value


class WatchBatch(NamedTuple):
    """What a watch delivers: every change of one revision together, a snapshot, or a resync."""

    kind: BatchKind
    #: The revision of the changes, or the revision a snapshot or resync is current with.
    revision: int
    #: The changes, in the order the write made them; a snapshot or resync is in key order.
    changes: tuple[Change, ...]
    #: For a ``changes`` batch: the session that wrote the revision (0: syncd itself, removing the
    #: ephemeral keys of a session that ended); :meth:`~sharedstate.Client.history` of one of its
    #: keys names the session's client. 0 for the other kinds.
    writer_session: int = 0
    #: For a ``changes`` batch: the cause the write carried (``""`` when it gave none).
    cause: str = ""

    @property
    def replaces_state(self) -> bool:
        """Whether the batch replaces what the consumer knew (a snapshot)."""
        return self.kind is BatchKind.SNAPSHOT


_BATCH_KINDS = {
    pb.EVENT_KIND_CHANGES: BatchKind.CHANGES,
    pb.EVENT_KIND_SNAPSHOT: BatchKind.SNAPSHOT,
    pb.EVENT_KIND_PROGRESS: BatchKind.PROGRESS,
    pb.EVENT_KIND_RESYNC: BatchKind.RESYNC,
}
_CHANGES = BatchKind.CHANGES
_PUT = ChangeType.PUT
_DELETE = ChangeType.DELETE
_WIRE_DELETE = pb.CHANGE_TYPE_DELETE
_make = tuple.__new__


def batch_from_wire(event: pb.WatchEvent, previous_values: bool = False) -> WatchBatch:
    """The batch of a watch event; ``previous_values`` says whether its watch asked for previous
    entries (only a ``CHANGES`` event carries them). The hot path of every watch: it builds the
    tuples directly rather than through the NamedTuple constructors, which cost a Python call each."""
    kind = _BATCH_KINDS.get(event.kind, _CHANGES)
    changes = []
    if previous_values and kind is _CHANGES:
        for change in event.changes:
            entry = change.entry
            decoded = _make(
                Entry, (entry.key, entry.value, entry.version, entry.create_revision, entry.mod_revision, entry.ephemeral_session)
            )
            previous = _previous_from_wire(change)
            changes.append(_make(Change, (_DELETE if change.type == _WIRE_DELETE else _PUT, decoded, previous)))
    else:
        for change in event.changes:
            entry = change.entry
            decoded = _make(
                Entry, (entry.key, entry.value, entry.version, entry.create_revision, entry.mod_revision, entry.ephemeral_session)
            )
            changes.append(_make(Change, (_DELETE if change.type == _WIRE_DELETE else _PUT, decoded, UNKNOWN)))
    return _make(WatchBatch, (kind, event.revision, tuple(changes), event.writer_session, event.cause))


class PutResult(NamedTuple):
    """What a put did."""

    revision: int
    #: The key's version after the write.
    version: int


class PrefixSchema(NamedTuple):
    """The JSON Schema syncd holds for a key prefix: every value written under the prefix must
    satisfy it (unless a longer prefix has a schema of its own)."""

    #: The prefix it governs.
    prefix: str
    #: The schema document as it was set, JSON bytes.
    raw: bytes
    #: Times it was set since it was (last) created.
    version: int
    #: The revision that last set it.
    mod_revision: int

    @property
    def schema(self) -> Any:
        """The schema document, decoded from JSON."""
        return json.loads(self.raw)


class ListResult(Sequence[Entry]):
    """The entries under a prefix, in key order, all read at one revision: a sequence of
    :class:`Entry` (``len``, indexing, ``for``) that also says at which revision it was read
    and whether a limit cut it short::

        doors = client.list("door/")
        for entry in doors:
            print(entry.key, entry.value)
        print(len(doors), "doors at revision", doors.revision)
    """

    __slots__ = ("entries", "revision", "truncated")

    def __init__(self, entries: list[Entry], revision: int, truncated: bool = False) -> None:
        #: The entries, as a list.
        self.entries = entries
        #: The revision they were all read at.
        self.revision = revision
        #: True when the limit cut the list short.
        self.truncated = truncated

    @overload
    def __getitem__(self, index: int) -> Entry: ...

    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...

    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        return self.entries[index]

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __eq__(self, other: object) -> bool:
        # Equal to another result read alike, or to a list of the same entries.
        if isinstance(other, ListResult):
            return (self.entries, self.revision, self.truncated) == (other.entries, other.revision, other.truncated)
        if isinstance(other, list):
            return self.entries == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ListResult({self.entries!r}, revision={self.revision}, truncated={self.truncated})"


class CountResult(NamedTuple):
    """How many keys start with a prefix, of those this client may read, and when they were
    counted."""

    count: int
    revision: int


class ExistsResult(NamedTuple):
    """Which of some keys exist, with their versions, all at one revision; no values."""

    #: The version of each key asked that exists; a key that does not is absent.
    versions: Mapping[str, int]
    revision: int

    def __contains__(self, key: object) -> bool:
        return key in self.versions


class TransactionResult(NamedTuple):
    """What a transaction did."""

    #: Whether every compare held, so the ``on_success`` branch was applied.
    succeeded: bool
    #: The revision of the applied branch; the current revision if it wrote nothing.
    revision: int


class Status(NamedTuple):
    """A summary of a running syncd."""

    revision: int
    keys: int
    clients: int
    watches: int
    compacted_revision: int
    database_bytes: int
    uptime_seconds: float
    server_version: str
    database_path: str


class ClientInfo(NamedTuple):
    """One client connected to syncd."""

    session_id: int
    name: str
    pid: int
    uid: int
    gid: int
    watches: int
    queued_bytes: int
    resyncs: int
    connected_seconds: float
    #: The place it holds among syncd's connection limits: ``"waitingForHello"``, ``"client"``,
    #: or ``"reserved"`` (a place kept for syncd's own user and root).
    admission: str
    #: Watch events delivered to it live, as revisions were committed.
    events_delivered: int = 0
    #: Its write requests refused for breaking a schema.
    schema_refusals: int = 0
    #: The first violation of the latest of them; ``None`` while there is none.
    last_schema_refusal: Violation | None = None


class Writer(NamedTuple):
    """The connection that wrote a revision, as its Hello and the kernel described it."""

    #: Its session; 0 is syncd itself (the ephemeral keys of a session that ended, or of an
    #: earlier run's at start-up).
    session_id: int
    #: The name it gave in its Hello (``"syncd"`` for syncd itself; ``""`` for a revision written
    #: before syncd recorded writers).
    client_name: str
    #: The process, user and group that connected (``SO_PEERCRED``). syncd sends them to its own
    #: user and root only, and 0 to others.
    pid: int
    uid: int
    gid: int


class ChangeOrigin(NamedTuple):
    """Who made a change, and why."""

    writer: Writer
    #: The cause its write carried; ``""`` when it gave none.
    cause: str

    @classmethod
    def from_wire(cls, origin: pb.Origin) -> ChangeOrigin:
        writer = origin.writer
        return cls(Writer(writer.session_id, writer.client_name, writer.pid, writer.uid, writer.gid), origin.cause)


class History(NamedTuple):
    """The changes of one key still in the change log, oldest first."""

    changes: list[Change]
    #: Changes up to this revision are no longer kept.
    compacted_revision: int
    #: Who made each change and why: ``origins[i]`` is the origin of ``changes[i]``.
    origins: list[ChangeOrigin]


class Compare(NamedTuple):
    """A condition on one key, checked when a transaction's turn comes."""

    key: str
    #: The key's version must equal this (0: the key must not exist); ``None`` with a value.
    version: int | None = None
    #: The key must exist with exactly these bytes; ``None`` with a version.
    value: bytes | None = None

    @classmethod
    def version_is(cls, key: str, version: int) -> Compare:
        """The key's version is ``version``; 0 means the key does not exist."""
        return cls(key, version=version)

    @classmethod
    def absent(cls, key: str) -> Compare:
        """The key does not exist."""
        return cls(key, version=0)

    @classmethod
    def value_is(cls, key: str, value: Any) -> Compare:
        """The key exists and holds exactly the JSON bytes of ``value``, encoded as
        :meth:`~sharedstate.Client.put` encodes it (pass a :class:`RawJSON` for other bytes).
        No JSON normalization is done: ``{"a":1}`` and ``{ "a": 1 }`` differ."""
        return cls(key, value=encode_value(value))


class Put(NamedTuple):
    """A put inside a transaction; see :meth:`~sharedstate.Client.put`."""

    key: str
    value: Any
    if_version: int | None = None
    ephemeral: bool = False


class Delete(NamedTuple):
    """A delete inside a transaction; a missing key is left alone (unless ``if_version`` says)."""

    key: str
    if_version: int | None = None


Operation = Union[Put, Delete]


class Limits(NamedTuple):
    """Limits checked before a request is sent, so that a mistake fails at once instead of costing
    a round trip or, for an oversized frame, the connection. They are syncd's defaults; syncd's
    configuration may change its own, and syncd's answer is the authority."""

    max_key_bytes: int = 512
    max_value_bytes: int = 1 << 20
    max_request_frame_bytes: int = 4 << 20


class ConnectionState(str, enum.Enum):
    """Whether a client is connected to syncd."""

    #: Connected: calls are sent, watches run.
    CONNECTED = "connected"
    #: syncd went away; the client is trying again with backoff. Calls fail at once with
    #: :class:`~sharedstate.Unavailable`; watches pause and resume when it is back.
    RECONNECTING = "reconnecting"
    #: The client was closed, or the connection ended and reconnecting was turned off.
    CLOSED = "closed"

    def __str__(self) -> str:
        return self.value
