"""A Python client for SharedState's syncd: keyed JSON state shared between processes, with
watches that survive restarts.

::

    import sharedstate

    with sharedstate.connect() as client:
        client.put("door/state", "open")
        print(client.get("door/state").value)

The blocking client is :class:`Client` (from :func:`connect`); the asyncio one is
:class:`sharedstate.aio.AsyncClient` (from :func:`sharedstate.aio.connect`). Both keep the Swift
client's guarantees; docs/PROTOCOL.md in the SharedState repository is the contract.
"""

from .client import Client, Watch, connect
from .errors import (
    Compacted,
    Conflict,
    FutureRevision,
    InternalError,
    InvalidArgument,
    LimitReached,
    NotFound,
    PermissionDenied,
    ProtocolError,
    SchemaViolation,
    SharedStateError,
    TooLarge,
    Unavailable,
    Violation,
)
from .locations import client_socket_path, default_socket_path
from .types import (
    UNKNOWN,
    BatchKind,
    Change,
    ChangeOrigin,
    ChangeType,
    ClientInfo,
    Compare,
    ConnectionState,
    CountResult,
    ExistsResult,
    Delete,
    Entry,
    History,
    Limits,
    ListResult,
    Operation,
    Previous,
    PrefixSchema,
    Put,
    PutResult,
    RawJSON,
    Status,
    TransactionResult,
    Unknown,
    WatchBatch,
    Writer,
)

__version__ = "0.1.0"

__all__ = [
    "BatchKind",
    "Change",
    "ChangeOrigin",
    "ChangeType",
    "Client",
    "ClientInfo",
    "Compacted",
    "Compare",
    "Conflict",
    "ConnectionState",
    "CountResult",
    "ExistsResult",
    "Delete",
    "Entry",
    "FutureRevision",
    "History",
    "InternalError",
    "InvalidArgument",
    "LimitReached",
    "Limits",
    "ListResult",
    "NotFound",
    "Operation",
    "PermissionDenied",
    "Previous",
    "PrefixSchema",
    "ProtocolError",
    "Put",
    "PutResult",
    "RawJSON",
    "SchemaViolation",
    "SharedStateError",
    "Status",
    "TooLarge",
    "TransactionResult",
    "UNKNOWN",
    "Unavailable",
    "Unknown",
    "Violation",
    "Watch",
    "WatchBatch",
    "Writer",
    "client_socket_path",
    "connect",
    "default_socket_path",
]
