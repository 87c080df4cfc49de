"""The limits ``serve()`` runs waitress with: connections, read deadlines, idle time.

::

    serve(app, limits=ServerLimits(connection_limit=2000, header_timeout=5.0))

Capacity model (measured numbers in ``docs/server.md``): waitress reads requests on one
loop thread and runs the application on ``max_streams + unary_threads`` worker threads.
A slow or silent client costs one connection (one file descriptor), never a thread, and
is cut off by the read deadlines; an open stream costs one connection and one thread and
is capped by the app (more get 503 with ``Retry-After``); so ``unary_threads`` threads
stay for everything else.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

__all__ = ["DEFAULT_UNARY_THREADS", "ServerLimits"]

#: waitress threads kept for unary calls besides one per allowed stream.
DEFAULT_UNARY_THREADS: Final = 8
#: How far past the app's body limit waitress still buffers a body for the app to refuse.
BODY_MARGIN: Final = 1024 * 1024


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value > 0:
        raise ValueError(f"ServerLimits.{attribute.name} must be positive, got {value!r}")


@attrs.frozen
class ServerLimits:
    """How much one ``serve()`` process takes on, and how long it waits for a client.

    Attributes:
        connection_limit: Open connections at once (idle, slow and streaming ones
            included). Beyond it new connections wait in the listen backlog. Each takes a
            file descriptor: ``serve`` raises the soft ``ulimit -n`` to fit (up to the
            hard limit) and warns if it cannot.
        header_timeout: Seconds from a connection's opening (or a request's first byte,
            on a kept-alive connection) until its request headers are complete. Counted
            from the start: dripping bytes does not extend it. Late clients get 408 and
            are disconnected.
        body_timeout: Seconds from the end of the headers until the body is complete
            (a 16 MiB body needs about 2.2 Mbit/s to make the 60 s default).
        idle_timeout: Seconds a kept-alive connection may sit between requests.
        max_header_bytes: Largest request head (request line and headers); larger
            requests get 431.
        unary_threads: Worker threads beside one per allowed stream.
        backlog: Listen backlog (connections the kernel queues beyond the limit).
        sweep_interval: How often the deadlines are checked (their resolution).
    """

    connection_limit: int = attrs.field(default=2000, validator=_positive)
    header_timeout: float = attrs.field(default=10.0, validator=_positive)
    body_timeout: float = attrs.field(default=60.0, validator=_positive)
    idle_timeout: float = attrs.field(default=30.0, validator=_positive)
    max_header_bytes: int = attrs.field(default=64 * 1024, validator=_positive)
    unary_threads: int = attrs.field(default=DEFAULT_UNARY_THREADS, validator=_positive)
    backlog: int = attrs.field(default=1024, validator=_positive)
    sweep_interval: float = attrs.field(default=1.0, validator=_positive)

    def waitress_settings(self, max_body_bytes: int) -> dict[str, Any]:
        """The waitress adjustments these limits map to (the deadlines are enforced by
        :mod:`a2a_sync.server._waitress`, waitress has none)."""
        return {
            "connection_limit": self.connection_limit,
            "channel_timeout": self.idle_timeout,
            "cleanup_interval": self.sweep_interval,
            "max_request_header_size": self.max_header_bytes,
            # Above the app's own limit, so that a body just over it reaches the app and
            # gets the binding's JSON 413 (JSON-RPC or google.rpc.Status); waitress buffers
            # whole bodies, and anything past this margin gets its plain 413 unread.
            "max_request_body_size": max_body_bytes + BODY_MARGIN,
            "backlog": self.backlog,
            # select() cannot watch descriptors above FD_SETSIZE (1024): poll() can.
            "asyncore_use_poll": True,
        }
