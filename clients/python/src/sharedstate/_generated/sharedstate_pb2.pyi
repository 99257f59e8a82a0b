from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

ADMISSION_CLIENT: Admission
ADMISSION_RESERVED: Admission
ADMISSION_WAITING_FOR_HELLO: Admission
CHANGE_TYPE_DELETE: ChangeType
CHANGE_TYPE_PUT: ChangeType
DESCRIPTOR: _descriptor.FileDescriptor
ERROR_CODE_COMPACTED: ErrorCode
ERROR_CODE_CONFLICT: ErrorCode
ERROR_CODE_FUTURE_REVISION: ErrorCode
ERROR_CODE_INTERNAL: ErrorCode
ERROR_CODE_INVALID_ARGUMENT: ErrorCode
ERROR_CODE_LIMIT_REACHED: ErrorCode
ERROR_CODE_NOT_FOUND: ErrorCode
ERROR_CODE_PERMISSION_DENIED: ErrorCode
ERROR_CODE_PROTOCOL: ErrorCode
ERROR_CODE_SCHEMA_VIOLATION: ErrorCode
ERROR_CODE_TOO_LARGE: ErrorCode
ERROR_CODE_UNAVAILABLE: ErrorCode
ERROR_CODE_UNSPECIFIED: ErrorCode
EVENT_KIND_CHANGES: EventKind
EVENT_KIND_ENDED: EventKind
EVENT_KIND_PROGRESS: EventKind
EVENT_KIND_RESYNC: EventKind
EVENT_KIND_SNAPSHOT: EventKind

class BackupRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class BackupResponse(_message.Message):
    __slots__ = ["revision", "size", "transfer_id"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    revision: int
    size: int
    transfer_id: int
    def __init__(self, transfer_id: _Optional[int] = ..., size: _Optional[int] = ..., revision: _Optional[int] = ...) -> None: ...

class CancelWatchRequest(_message.Message):
    __slots__ = ["watch_id"]
    WATCH_ID_FIELD_NUMBER: _ClassVar[int]
    watch_id: int
    def __init__(self, watch_id: _Optional[int] = ...) -> None: ...

class CancelWatchResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class Change(_message.Message):
    __slots__ = ["entry", "previous", "previous_compacted", "type"]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_COMPACTED_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    entry: Entry
    previous: Entry
    previous_compacted: bool
    type: ChangeType
    def __init__(self, type: _Optional[_Union[ChangeType, str]] = ..., entry: _Optional[_Union[Entry, _Mapping]] = ..., previous: _Optional[_Union[Entry, _Mapping]] = ..., previous_compacted: bool = ...) -> None: ...

class ClientFrame(_message.Message):
    __slots__ = ["hello", "request"]
    HELLO_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    request: Request
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., request: _Optional[_Union[Request, _Mapping]] = ...) -> None: ...

class ClientInfo(_message.Message):
    __slots__ = ["admission", "connected_seconds", "ephemeral_key_count", "ephemeral_keys", "events_delivered", "gid", "last_schema_refusal", "name", "pid", "queued_bytes", "resyncs", "schema_refusals", "session_id", "uid", "watch_list", "watches"]
    ADMISSION_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_KEYS_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_KEY_COUNT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    LAST_SCHEMA_REFUSAL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    QUEUED_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESYNCS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_REFUSALS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    WATCHES_FIELD_NUMBER: _ClassVar[int]
    WATCH_LIST_FIELD_NUMBER: _ClassVar[int]
    admission: Admission
    connected_seconds: float
    ephemeral_key_count: int
    ephemeral_keys: _containers.RepeatedScalarFieldContainer[str]
    events_delivered: int
    gid: int
    last_schema_refusal: SchemaViolation
    name: str
    pid: int
    queued_bytes: int
    resyncs: int
    schema_refusals: int
    session_id: int
    uid: int
    watch_list: _containers.RepeatedCompositeFieldContainer[WatchInfo]
    watches: int
    def __init__(self, session_id: _Optional[int] = ..., name: _Optional[str] = ..., pid: _Optional[int] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., watches: _Optional[int] = ..., queued_bytes: _Optional[int] = ..., resyncs: _Optional[int] = ..., connected_seconds: _Optional[float] = ..., admission: _Optional[_Union[Admission, str]] = ..., events_delivered: _Optional[int] = ..., schema_refusals: _Optional[int] = ..., last_schema_refusal: _Optional[_Union[SchemaViolation, _Mapping]] = ..., watch_list: _Optional[_Iterable[_Union[WatchInfo, _Mapping]]] = ..., ephemeral_keys: _Optional[_Iterable[str]] = ..., ephemeral_key_count: _Optional[int] = ...) -> None: ...

class ClientsRequest(_message.Message):
    __slots__ = ["details"]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    details: bool
    def __init__(self, details: bool = ...) -> None: ...

class ClientsResponse(_message.Message):
    __slots__ = ["clients"]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    clients: _containers.RepeatedCompositeFieldContainer[ClientInfo]
    def __init__(self, clients: _Optional[_Iterable[_Union[ClientInfo, _Mapping]]] = ...) -> None: ...

class CompactRequest(_message.Message):
    __slots__ = ["revision"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class CompactResponse(_message.Message):
    __slots__ = ["compacted_revision"]
    COMPACTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    compacted_revision: int
    def __init__(self, compacted_revision: _Optional[int] = ...) -> None: ...

class Compare(_message.Message):
    __slots__ = ["key", "value", "version"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    version: int
    def __init__(self, key: _Optional[str] = ..., version: _Optional[int] = ..., value: _Optional[bytes] = ...) -> None: ...

class CountRequest(_message.Message):
    __slots__ = ["prefix"]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    def __init__(self, prefix: _Optional[str] = ...) -> None: ...

class CountResponse(_message.Message):
    __slots__ = ["count", "revision"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    count: int
    revision: int
    def __init__(self, count: _Optional[int] = ..., revision: _Optional[int] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ["cause", "if_version", "key"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    IF_VERSION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    cause: str
    if_version: int
    key: str
    def __init__(self, key: _Optional[str] = ..., if_version: _Optional[int] = ..., cause: _Optional[str] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ["revision"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class Entry(_message.Message):
    __slots__ = ["create_revision", "ephemeral_session", "key", "mod_revision", "value", "version"]
    CREATE_REVISION_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_SESSION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MOD_REVISION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    create_revision: int
    ephemeral_session: int
    key: str
    mod_revision: int
    value: bytes
    version: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., version: _Optional[int] = ..., create_revision: _Optional[int] = ..., mod_revision: _Optional[int] = ..., ephemeral_session: _Optional[int] = ...) -> None: ...

class Error(_message.Message):
    __slots__ = ["code", "message", "violations"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    code: ErrorCode
    message: str
    violations: _containers.RepeatedCompositeFieldContainer[SchemaViolation]
    def __init__(self, code: _Optional[_Union[ErrorCode, str]] = ..., message: _Optional[str] = ..., violations: _Optional[_Iterable[_Union[SchemaViolation, _Mapping]]] = ...) -> None: ...

class ExistsRequest(_message.Message):
    __slots__ = ["keys"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, keys: _Optional[_Iterable[str]] = ...) -> None: ...

class ExistsResponse(_message.Message):
    __slots__ = ["revision", "versions"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    revision: int
    versions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, versions: _Optional[_Iterable[int]] = ..., revision: _Optional[int] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ["consistent", "key"]
    CONSISTENT_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    consistent: bool
    key: str
    def __init__(self, key: _Optional[str] = ..., consistent: bool = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ["entry", "revision"]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    entry: Entry
    revision: int
    def __init__(self, entry: _Optional[_Union[Entry, _Mapping]] = ..., revision: _Optional[int] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ["client_name", "protocol_version"]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    client_name: str
    protocol_version: int
    def __init__(self, protocol_version: _Optional[int] = ..., client_name: _Optional[str] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ["key", "limit"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    key: str
    limit: int
    def __init__(self, key: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class HistoryResponse(_message.Message):
    __slots__ = ["changes", "compacted_revision", "origins"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    ORIGINS_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[Change]
    compacted_revision: int
    origins: _containers.RepeatedCompositeFieldContainer[Origin]
    def __init__(self, changes: _Optional[_Iterable[_Union[Change, _Mapping]]] = ..., compacted_revision: _Optional[int] = ..., origins: _Optional[_Iterable[_Union[Origin, _Mapping]]] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ["limit", "prefix", "start"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    limit: int
    prefix: str
    start: str
    def __init__(self, prefix: _Optional[str] = ..., limit: _Optional[int] = ..., start: _Optional[str] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ["entries", "revision", "truncated"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[Entry]
    revision: int
    truncated: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[Entry, _Mapping]]] = ..., revision: _Optional[int] = ..., truncated: bool = ...) -> None: ...

class LogSegment(_message.Message):
    __slots__ = ["revisions"]
    REVISIONS_FIELD_NUMBER: _ClassVar[int]
    revisions: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    def __init__(self, revisions: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ...) -> None: ...

class MetricsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class MetricsResponse(_message.Message):
    __slots__ = ["text"]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class Operation(_message.Message):
    __slots__ = ["delete", "put"]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    PUT_FIELD_NUMBER: _ClassVar[int]
    delete: DeleteRequest
    put: PutRequest
    def __init__(self, put: _Optional[_Union[PutRequest, _Mapping]] = ..., delete: _Optional[_Union[DeleteRequest, _Mapping]] = ...) -> None: ...

class Origin(_message.Message):
    __slots__ = ["cause", "writer"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    WRITER_FIELD_NUMBER: _ClassVar[int]
    cause: str
    writer: Writer
    def __init__(self, writer: _Optional[_Union[Writer, _Mapping]] = ..., cause: _Optional[str] = ...) -> None: ...

class PutRequest(_message.Message):
    __slots__ = ["cause", "ephemeral", "if_version", "key", "value"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    IF_VERSION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    cause: str
    ephemeral: bool
    if_version: int
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., if_version: _Optional[int] = ..., ephemeral: bool = ..., cause: _Optional[str] = ...) -> None: ...

class PutResponse(_message.Message):
    __slots__ = ["revision", "version"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    version: int
    def __init__(self, revision: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class Request(_message.Message):
    __slots__ = ["backup", "cancel_watch", "clients", "compact", "count", "delete", "exists", "get", "history", "id", "list", "metrics", "put", "restore", "status", "transaction", "transfer_end", "transfer_read", "transfer_write", "watch"]
    BACKUP_FIELD_NUMBER: _ClassVar[int]
    CANCEL_WATCH_FIELD_NUMBER: _ClassVar[int]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    COMPACT_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    GET_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    PUT_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_END_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_READ_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_WRITE_FIELD_NUMBER: _ClassVar[int]
    WATCH_FIELD_NUMBER: _ClassVar[int]
    backup: BackupRequest
    cancel_watch: CancelWatchRequest
    clients: ClientsRequest
    compact: CompactRequest
    count: CountRequest
    delete: DeleteRequest
    exists: ExistsRequest
    get: GetRequest
    history: HistoryRequest
    id: int
    list: ListRequest
    metrics: MetricsRequest
    put: PutRequest
    restore: RestoreRequest
    status: StatusRequest
    transaction: TransactionRequest
    transfer_end: TransferEndRequest
    transfer_read: TransferReadRequest
    transfer_write: TransferWriteRequest
    watch: WatchRequest
    def __init__(self, id: _Optional[int] = ..., get: _Optional[_Union[GetRequest, _Mapping]] = ..., put: _Optional[_Union[PutRequest, _Mapping]] = ..., delete: _Optional[_Union[DeleteRequest, _Mapping]] = ..., list: _Optional[_Union[ListRequest, _Mapping]] = ..., transaction: _Optional[_Union[TransactionRequest, _Mapping]] = ..., watch: _Optional[_Union[WatchRequest, _Mapping]] = ..., cancel_watch: _Optional[_Union[CancelWatchRequest, _Mapping]] = ..., status: _Optional[_Union[StatusRequest, _Mapping]] = ..., compact: _Optional[_Union[CompactRequest, _Mapping]] = ..., history: _Optional[_Union[HistoryRequest, _Mapping]] = ..., clients: _Optional[_Union[ClientsRequest, _Mapping]] = ..., backup: _Optional[_Union[BackupRequest, _Mapping]] = ..., transfer_read: _Optional[_Union[TransferReadRequest, _Mapping]] = ..., transfer_write: _Optional[_Union[TransferWriteRequest, _Mapping]] = ..., transfer_end: _Optional[_Union[TransferEndRequest, _Mapping]] = ..., restore: _Optional[_Union[RestoreRequest, _Mapping]] = ..., metrics: _Optional[_Union[MetricsRequest, _Mapping]] = ..., count: _Optional[_Union[CountRequest, _Mapping]] = ..., exists: _Optional[_Union[ExistsRequest, _Mapping]] = ...) -> None: ...

class Response(_message.Message):
    __slots__ = ["backup", "cancel_watch", "clients", "compact", "count", "delete", "error", "exists", "get", "history", "id", "list", "metrics", "put", "restore", "status", "transaction", "transfer_end", "transfer_read", "transfer_write", "watch"]
    BACKUP_FIELD_NUMBER: _ClassVar[int]
    CANCEL_WATCH_FIELD_NUMBER: _ClassVar[int]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    COMPACT_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    GET_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LIST_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    PUT_FIELD_NUMBER: _ClassVar[int]
    RESTORE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_END_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_READ_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_WRITE_FIELD_NUMBER: _ClassVar[int]
    WATCH_FIELD_NUMBER: _ClassVar[int]
    backup: BackupResponse
    cancel_watch: CancelWatchResponse
    clients: ClientsResponse
    compact: CompactResponse
    count: CountResponse
    delete: DeleteResponse
    error: Error
    exists: ExistsResponse
    get: GetResponse
    history: HistoryResponse
    id: int
    list: ListResponse
    metrics: MetricsResponse
    put: PutResponse
    restore: RestoreResponse
    status: StatusResponse
    transaction: TransactionResponse
    transfer_end: TransferEndResponse
    transfer_read: TransferReadResponse
    transfer_write: TransferWriteResponse
    watch: WatchResponse
    def __init__(self, id: _Optional[int] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., get: _Optional[_Union[GetResponse, _Mapping]] = ..., put: _Optional[_Union[PutResponse, _Mapping]] = ..., delete: _Optional[_Union[DeleteResponse, _Mapping]] = ..., list: _Optional[_Union[ListResponse, _Mapping]] = ..., transaction: _Optional[_Union[TransactionResponse, _Mapping]] = ..., watch: _Optional[_Union[WatchResponse, _Mapping]] = ..., cancel_watch: _Optional[_Union[CancelWatchResponse, _Mapping]] = ..., status: _Optional[_Union[StatusResponse, _Mapping]] = ..., compact: _Optional[_Union[CompactResponse, _Mapping]] = ..., history: _Optional[_Union[HistoryResponse, _Mapping]] = ..., clients: _Optional[_Union[ClientsResponse, _Mapping]] = ..., backup: _Optional[_Union[BackupResponse, _Mapping]] = ..., transfer_read: _Optional[_Union[TransferReadResponse, _Mapping]] = ..., transfer_write: _Optional[_Union[TransferWriteResponse, _Mapping]] = ..., transfer_end: _Optional[_Union[TransferEndResponse, _Mapping]] = ..., restore: _Optional[_Union[RestoreResponse, _Mapping]] = ..., metrics: _Optional[_Union[MetricsResponse, _Mapping]] = ..., count: _Optional[_Union[CountResponse, _Mapping]] = ..., exists: _Optional[_Union[ExistsResponse, _Mapping]] = ...) -> None: ...

class RestoreRequest(_message.Message):
    __slots__ = ["transfer_id"]
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    transfer_id: int
    def __init__(self, transfer_id: _Optional[int] = ...) -> None: ...

class RestoreResponse(_message.Message):
    __slots__ = ["deletes", "puts", "revision"]
    DELETES_FIELD_NUMBER: _ClassVar[int]
    PUTS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    deletes: int
    puts: int
    revision: int
    def __init__(self, revision: _Optional[int] = ..., puts: _Optional[int] = ..., deletes: _Optional[int] = ...) -> None: ...

class SchemaViolation(_message.Message):
    __slots__ = ["found", "key", "limit", "pointer", "prefix", "reason", "rule"]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    POINTER_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    found: str
    key: str
    limit: str
    pointer: str
    prefix: str
    reason: str
    rule: str
    def __init__(self, key: _Optional[str] = ..., pointer: _Optional[str] = ..., rule: _Optional[str] = ..., limit: _Optional[str] = ..., found: _Optional[str] = ..., reason: _Optional[str] = ..., prefix: _Optional[str] = ...) -> None: ...

class ServerFrame(_message.Message):
    __slots__ = ["event", "fatal", "response", "welcome"]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    FATAL_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    event: WatchEvent
    fatal: Error
    response: Response
    welcome: Welcome
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., response: _Optional[_Union[Response, _Mapping]] = ..., event: _Optional[_Union[WatchEvent, _Mapping]] = ..., fatal: _Optional[_Union[Error, _Mapping]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ["backend", "backend_revision", "clients", "compacted_revision", "database_bytes", "database_path", "durability", "keys", "longest_unsynced_seconds", "revision", "server_version", "stale_since", "sync_interval_seconds", "unmoved_bytes", "unsynced_bytes", "unsynced_seconds", "uptime_seconds", "watches"]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    BACKEND_REVISION_FIELD_NUMBER: _ClassVar[int]
    CLIENTS_FIELD_NUMBER: _ClassVar[int]
    COMPACTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    DATABASE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DATABASE_PATH_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    LONGEST_UNSYNCED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    STALE_SINCE_FIELD_NUMBER: _ClassVar[int]
    SYNC_INTERVAL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    UNMOVED_BYTES_FIELD_NUMBER: _ClassVar[int]
    UNSYNCED_BYTES_FIELD_NUMBER: _ClassVar[int]
    UNSYNCED_SECONDS_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    WATCHES_FIELD_NUMBER: _ClassVar[int]
    backend: str
    backend_revision: int
    clients: int
    compacted_revision: int
    database_bytes: int
    database_path: str
    durability: str
    keys: int
    longest_unsynced_seconds: float
    revision: int
    server_version: str
    stale_since: float
    sync_interval_seconds: float
    unmoved_bytes: int
    unsynced_bytes: int
    unsynced_seconds: float
    uptime_seconds: float
    watches: int
    def __init__(self, revision: _Optional[int] = ..., keys: _Optional[int] = ..., clients: _Optional[int] = ..., watches: _Optional[int] = ..., compacted_revision: _Optional[int] = ..., database_bytes: _Optional[int] = ..., uptime_seconds: _Optional[float] = ..., server_version: _Optional[str] = ..., database_path: _Optional[str] = ..., backend: _Optional[str] = ..., backend_revision: _Optional[int] = ..., stale_since: _Optional[float] = ..., durability: _Optional[str] = ..., sync_interval_seconds: _Optional[float] = ..., unsynced_seconds: _Optional[float] = ..., unsynced_bytes: _Optional[int] = ..., longest_unsynced_seconds: _Optional[float] = ..., unmoved_bytes: _Optional[int] = ...) -> None: ...

class TransactionRequest(_message.Message):
    __slots__ = ["cause", "compares", "on_failure", "on_success"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    COMPARES_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    ON_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    cause: str
    compares: _containers.RepeatedCompositeFieldContainer[Compare]
    on_failure: _containers.RepeatedCompositeFieldContainer[Operation]
    on_success: _containers.RepeatedCompositeFieldContainer[Operation]
    def __init__(self, compares: _Optional[_Iterable[_Union[Compare, _Mapping]]] = ..., on_success: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., on_failure: _Optional[_Iterable[_Union[Operation, _Mapping]]] = ..., cause: _Optional[str] = ...) -> None: ...

class TransactionResponse(_message.Message):
    __slots__ = ["revision", "succeeded"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SUCCEEDED_FIELD_NUMBER: _ClassVar[int]
    revision: int
    succeeded: bool
    def __init__(self, succeeded: bool = ..., revision: _Optional[int] = ...) -> None: ...

class TransferEndRequest(_message.Message):
    __slots__ = ["transfer_id"]
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    transfer_id: int
    def __init__(self, transfer_id: _Optional[int] = ...) -> None: ...

class TransferEndResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class TransferReadRequest(_message.Message):
    __slots__ = ["length", "offset", "transfer_id"]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    length: int
    offset: int
    transfer_id: int
    def __init__(self, transfer_id: _Optional[int] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ...) -> None: ...

class TransferReadResponse(_message.Message):
    __slots__ = ["data"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class TransferWriteRequest(_message.Message):
    __slots__ = ["data", "transfer_id"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    transfer_id: int
    def __init__(self, transfer_id: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class TransferWriteResponse(_message.Message):
    __slots__ = ["size", "transfer_id"]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_ID_FIELD_NUMBER: _ClassVar[int]
    size: int
    transfer_id: int
    def __init__(self, transfer_id: _Optional[int] = ..., size: _Optional[int] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ["cause", "changes", "error", "kind", "revision", "watch_id", "writer_session"]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    WATCH_ID_FIELD_NUMBER: _ClassVar[int]
    WRITER_SESSION_FIELD_NUMBER: _ClassVar[int]
    cause: str
    changes: _containers.RepeatedCompositeFieldContainer[Change]
    error: Error
    kind: EventKind
    revision: int
    watch_id: int
    writer_session: int
    def __init__(self, watch_id: _Optional[int] = ..., kind: _Optional[_Union[EventKind, str]] = ..., revision: _Optional[int] = ..., changes: _Optional[_Iterable[_Union[Change, _Mapping]]] = ..., error: _Optional[_Union[Error, _Mapping]] = ..., writer_session: _Optional[int] = ..., cause: _Optional[str] = ...) -> None: ...

class WatchInfo(_message.Message):
    __slots__ = ["catching_up", "owes_resync", "prefixes", "previous_values", "watch_id"]
    CATCHING_UP_FIELD_NUMBER: _ClassVar[int]
    OWES_RESYNC_FIELD_NUMBER: _ClassVar[int]
    PREFIXES_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VALUES_FIELD_NUMBER: _ClassVar[int]
    WATCH_ID_FIELD_NUMBER: _ClassVar[int]
    catching_up: bool
    owes_resync: bool
    prefixes: _containers.RepeatedScalarFieldContainer[str]
    previous_values: bool
    watch_id: int
    def __init__(self, watch_id: _Optional[int] = ..., prefixes: _Optional[_Iterable[str]] = ..., previous_values: bool = ..., catching_up: bool = ..., owes_resync: bool = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ["after_revision", "prefixes", "previous_values", "snapshot"]
    AFTER_REVISION_FIELD_NUMBER: _ClassVar[int]
    PREFIXES_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_VALUES_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    after_revision: int
    prefixes: _containers.RepeatedScalarFieldContainer[str]
    previous_values: bool
    snapshot: bool
    def __init__(self, prefixes: _Optional[_Iterable[str]] = ..., snapshot: bool = ..., after_revision: _Optional[int] = ..., previous_values: bool = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ["revision", "watch_id"]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    WATCH_ID_FIELD_NUMBER: _ClassVar[int]
    revision: int
    watch_id: int
    def __init__(self, watch_id: _Optional[int] = ..., revision: _Optional[int] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ["protocol_version", "revision", "server_version", "session_id"]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    revision: int
    server_version: str
    session_id: int
    def __init__(self, protocol_version: _Optional[int] = ..., revision: _Optional[int] = ..., session_id: _Optional[int] = ..., server_version: _Optional[str] = ...) -> None: ...

class Writer(_message.Message):
    __slots__ = ["client_name", "gid", "pid", "session_id", "uid"]
    CLIENT_NAME_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    client_name: str
    gid: int
    pid: int
    session_id: int
    uid: int
    def __init__(self, session_id: _Optional[int] = ..., client_name: _Optional[str] = ..., pid: _Optional[int] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ...) -> None: ...

class ErrorCode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Admission(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ChangeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class EventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
