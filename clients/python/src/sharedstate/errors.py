"""The errors syncd and the client report: one exception class per error code."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from ._generated import sharedstate_pb2 as pb

__all__ = [
    "SharedStateError",
    "NotFound",
    "Conflict",
    "Compacted",
    "PermissionDenied",
    "InvalidArgument",
    "TooLarge",
    "Unavailable",
    "ProtocolError",
    "InternalError",
    "FutureRevision",
    "LimitReached",
    "SchemaViolation",
    "Violation",
]


class SharedStateError(Exception):
    """An error syncd or the client reports.

    ``code`` names the kind of failure (``"conflict"``, ``"notFound"``, ...) for programs;
    ``message`` is syncd's sentence for a person, kept as syncd sent it. Catch a subclass to
    handle one kind::

        try:
            client.put("door/state", "open", if_version=3)
        except sharedstate.Conflict:
            ...  # someone else wrote first: read again and retry
    """

    code: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class NotFound(SharedStateError):
    """The key does not exist (or, for a watch or transfer id, that id)."""

    code = "notFound"


class Conflict(SharedStateError):
    """An ``if_version`` did not match: someone else wrote first. Nothing was changed."""

    code = "conflict"


class Compacted(SharedStateError):
    """The requested revision was compacted away from syncd's change log."""

    code = "compacted"


class PermissionDenied(SharedStateError):
    """syncd's access policy does not let this client's user do this."""

    code = "permissionDenied"


class InvalidArgument(SharedStateError):
    """A malformed key, prefix, value or request."""

    code = "invalidArgument"


class TooLarge(SharedStateError):
    """A key, value, transaction or frame over its limit."""

    code = "tooLarge"


class Unavailable(SharedStateError):
    """syncd cannot be reached, went away during the call, or cannot serve it now.

    A write that failed with it may or may not have been committed.
    """

    code = "unavailable"


class ProtocolError(SharedStateError):
    """syncd or the client broke the wire protocol; the connection was closed."""

    code = "protocol"


class InternalError(SharedStateError):
    """An unexpected failure, or an error code this client does not know."""

    code = "internal"


class FutureRevision(SharedStateError):
    """A watch asked to resume after a revision syncd has not reached: its database lost commits."""

    code = "futureRevision"


class LimitReached(SharedStateError):
    """A count limit of syncd is reached (clients, watches, transfers); try again later."""

    code = "limitReached"


class Violation(NamedTuple):
    """The first rule of a schema that a value breaks."""

    #: The key whose value breaks it.
    key: str
    #: Where inside the value, as a JSON Pointer (``""`` for the value itself).
    pointer: str
    #: The schema keyword whose rule is broken: ``"maximum"``, ``"required"``, ``"type"``, ...
    rule: str
    #: The rule's limit as the schema gives it: ``"30"``, the missing member's name, the types.
    limit: str
    #: What the value holds there, as JSON text; ``None`` when it holds nothing (a missing member).
    found: str | None
    #: What is wrong, said after what the value holds: ``"above the maximum 30"``, ``"missing"``.
    reason: str
    #: The prefix whose schema it breaks.
    prefix: str = ""

    def __str__(self) -> str:
        place = self.pointer or "the value"
        if self.found is None:
            said = f"{place} is {self.reason}"
        else:
            said = f"{place} is {self.found}, {self.reason}"
        return f"{self.key}: {said}" if self.key else said


class SchemaViolation(SharedStateError):
    """A value breaks the schema that governs its key, and nothing of the request was written; or
    a schema being set is broken by values already written under its prefix.

    ``violations`` holds the first rule the written value breaks, or, for a refused schema, up to
    20 of the values already written with their first violation. ``key``, ``pointer``, ``rule``,
    ``limit`` and ``found`` are the first one's::

        try:
            client.put("climate/living", {"target": 40, "mode": "heat"})
        except sharedstate.SchemaViolation as error:
            print(error.pointer, error.rule, error.limit)  # /target maximum 30
    """

    code = "schemaViolation"

    def __init__(self, message: str, violations: list[Violation] | None = None) -> None:
        super().__init__(message)
        self.violations: list[Violation] = list(violations or [])
        first = self.violations[0] if self.violations else Violation("", "", "", "", None, "")
        self.key = first.key
        self.pointer = first.pointer
        self.rule = first.rule
        self.limit = first.limit
        self.found = first.found


_BY_WIRE_CODE: dict[int, type[SharedStateError]] = {
    pb.ERROR_CODE_NOT_FOUND: NotFound,
    pb.ERROR_CODE_CONFLICT: Conflict,
    pb.ERROR_CODE_COMPACTED: Compacted,
    pb.ERROR_CODE_PERMISSION_DENIED: PermissionDenied,
    pb.ERROR_CODE_INVALID_ARGUMENT: InvalidArgument,
    pb.ERROR_CODE_TOO_LARGE: TooLarge,
    pb.ERROR_CODE_UNAVAILABLE: Unavailable,
    pb.ERROR_CODE_PROTOCOL: ProtocolError,
    pb.ERROR_CODE_INTERNAL: InternalError,
    pb.ERROR_CODE_FUTURE_REVISION: FutureRevision,
    pb.ERROR_CODE_LIMIT_REACHED: LimitReached,
}


def violation_from_wire(v: pb.SchemaViolation) -> Violation:
    """The :class:`Violation` a ``SchemaViolation`` message describes."""
    return Violation(v.key, v.pointer, v.rule, v.limit, v.found if v.found else None, v.reason, v.prefix)


def error_from_wire(error: pb.Error) -> SharedStateError:
    """The exception for an ``Error`` message; unknown codes become :class:`InternalError`."""
    if error.code == pb.ERROR_CODE_SCHEMA_VIOLATION:
        return SchemaViolation(error.message, [violation_from_wire(v) for v in error.violations])
    return _BY_WIRE_CODE.get(error.code, InternalError)(error.message)
