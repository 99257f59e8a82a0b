"""Where syncd's socket is when nothing says otherwise: the same search syncctl and the Swift
client make, so every client meets syncd without configuration."""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["SYSTEM_SOCKET_PATH", "default_socket_path", "client_socket_path"]

#: The socket of the system-wide syncd that systemd's ``syncd.socket`` listens on.
SYSTEM_SOCKET_PATH = "/run/syncd/syncd.sock"


def default_socket_path(environment: Mapping[str, str] | None = None) -> str:
    """The socket a ``syncd`` started without ``--socket`` listens on.

    ``$SYNCD_SOCKET``; else ``$RUNTIME_DIRECTORY/syncd.sock`` (the first directory, under systemd);
    else ``$XDG_RUNTIME_DIR/syncd/syncd.sock``; else ``/tmp/syncd-<uid>/syncd.sock``. Empty
    variables count as unset.
    """
    environment = os.environ if environment is None else environment
    if environment.get("SYNCD_SOCKET"):
        return environment["SYNCD_SOCKET"]
    runtime = [part for part in environment.get("RUNTIME_DIRECTORY", "").split(":") if part]
    if runtime:
        return runtime[0] + "/syncd.sock"
    if environment.get("XDG_RUNTIME_DIR"):
        return environment["XDG_RUNTIME_DIR"] + "/syncd/syncd.sock"
    return f"/tmp/syncd-{os.getuid()}/syncd.sock"


def client_socket_path(environment: Mapping[str, str] | None = None) -> str:
    """The socket a client connects to when it is given none.

    ``$SYNCD_SOCKET`` if set; else :func:`default_socket_path` when something exists there; else
    the system-wide syncd's socket (:data:`SYSTEM_SOCKET_PATH`) when that exists; else
    :func:`default_socket_path`, so that a failure names where a personal syncd would be.
    """
    environment = os.environ if environment is None else environment
    personal = default_socket_path(environment)
    if environment.get("SYNCD_SOCKET") or os.path.lexists(personal):
        return personal
    return SYSTEM_SOCKET_PATH if os.path.lexists(SYSTEM_SOCKET_PATH) else personal
