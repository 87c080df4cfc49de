"""What ``serve`` tells its user: the line it prints at start and stop, and a failed bind
as a :class:`~a2a_sync.errors.ConfigurationError` naming the address and the fix."""

from __future__ import annotations

import errno
import os
import socket
import sys
from typing import Any

from ..errors import ConfigurationError
from .stores.memory import InMemoryTaskStore
from .stores.sqlite import SQLiteTaskStore

__all__ = ["bind_error", "say", "store_location"]


def bind_error(error: OSError, host: str, port: int) -> ConfigurationError:
    """A failed bind, named with its address and the fix."""
    where = f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return ConfigurationError(
            f"cannot serve on {where}: the port is in use (another server?); stop that "
            "server, choose another port, or use port=0 (a2a-sync serve --port 0) for a "
            "free one"
        )
    if error.errno == errno.EADDRNOTAVAIL or isinstance(error, socket.gaierror):
        return ConfigurationError(
            f"cannot serve on {where}: {host!r} is not an address of this machine; "
            "use 127.0.0.1 (local only) or 0.0.0.0 (every interface)"
        )
    if error.errno == errno.EACCES:
        return ConfigurationError(
            f"cannot serve on {where}: permission denied (ports below 1024 need "
            "privileges); choose a port above 1023"
        )
    return ConfigurationError(f"cannot serve on {where}: {error.strerror or error}")


def say(line: str) -> None:
    """Print ``line`` for the person who started the server (stderr, like a log)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def store_location(app: Any, created: bool = False) -> str:
    """Where ``app`` keeps its tasks, in words (``tasks in /path/a2a-tasks.sqlite3``)."""
    store = getattr(getattr(app, "handler", None), "store", None)
    if isinstance(store, SQLiteTaskStore):
        made = ", created now" if created else ""
        return f"tasks in {os.path.abspath(store.path)}{made}"
    if store is None:
        return "a WSGI app of your own"
    if isinstance(store, InMemoryTaskStore):
        return "tasks in memory, lost when it stops"
    return f"tasks in {type(store).__name__}"
