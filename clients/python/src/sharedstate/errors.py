"""The errors syncd and the client report: one exception class per error code."""

from __future__ import annotations

from typing import ClassVar

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


def error_from_wire(error: pb.Error) -> SharedStateError:
    """The exception for an ``Error`` message; unknown codes become :class:`InternalError`."""
    return _BY_WIRE_CODE.get(error.code, InternalError)(error.message)
