"""An in-memory MCP transport: a test runs its server in-process, no subprocess, no port.

Any object that speaks JSON-RPC messages can be the server. The protocol is one method
(or a plain callable)::

    def handle(message: dict) -> Iterable[dict]:
        '''Take one JSON-RPC message from the client (request, notification or a
        response to a server request); return (or yield) every message the server
        writes in answer, notifications first and the response last.'''

:class:`~a2a_sync.testing.ScriptedMCPServer` speaks it, so::

    from a2a_sync.testing import ScriptedMCPServer, connect_in_memory

    server = ScriptedMCPServer({"tools": {"greet": "Hello, {name}!"}})
    with connect_in_memory(server) as conn:
        assert conn.client().call_tool("greet", {"name": "Ada"}).text == "Hello, Ada!"

The transport hands each message to the server on one worker thread
(``a2a-sync-mcp-memory``), in order, so a slow tool blocks only that thread, as a real
single-threaded server would; the caller's ``send`` never waits. Messages pass through
JSON in both directions, so a value JSON cannot carry fails in the test as it would on a
wire. A server that raises ends the connection: pending calls fail with
:class:`~a2a_sync.errors.ConnectionClosed` naming the exception. ``push(message)`` delivers
a message the server sends on its own (``notifications/tools/list_changed``...).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import weakref
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final, Protocol

from ..errors import A2ASyncError, ConfigurationError, ConnectionClosed
from ..mcp.connection import MCPConnection
from ..mcp.transports import MessageSink, Outgoing, RequestId

__all__ = ["InMemoryTransport", "JSONRPCServer", "connect_in_memory", "identity_key"]

logger = logging.getLogger(__name__)

#: How long ``close()`` waits for the server to finish the message it is handling.
CLOSE_TIMEOUT: Final = 5.0


def identity_key(kind: str, server: object) -> Hashable:
    """An era-cache key for a server object: equal while that very object lives, never
    equal to a later object's (a weak reference; a fresh key if it cannot have one)."""
    try:
        key: Hashable = (kind, weakref.ref(server))
        hash(key)
    except TypeError:  # not weakly referenceable, or unhashable: no caching, probe each time
        key = (kind, object())
    return key


class JSONRPCServer(Protocol):
    """A server object for :class:`InMemoryTransport` (``ScriptedMCPServer`` is one)."""

    def handle(self, message: dict[str, Any]) -> Iterable[dict[str, Any]]:
        """Every message the server writes in answer to ``message``, in order."""


Handler = Callable[[dict[str, Any]], Iterable[dict[str, Any]]]


class InMemoryTransport:
    """The MCP :class:`~a2a_sync.mcp.Transport` seam over an in-process server object.

    Thread-safe. Pass a factory to :class:`~a2a_sync.mcp.MCPConnection`
    (``MCPConnection(lambda: InMemoryTransport(server))``) or use
    :func:`connect_in_memory`.

    Args:
        server: An object with ``handle(message) -> Iterable[dict]`` or such a callable.
        name: How messages and logs name the server (default: its class name).

    Raises:
        ConfigurationError: ``server`` has no ``handle`` and is not callable.
    """

    #: The wire, as every transport names it: here, a server object in this process.
    kind = "in-memory"
    wants_context = False

    def __init__(self, server: JSONRPCServer | Handler, *, name: str | None = None) -> None:
        handle = getattr(server, "handle", None)
        if handle is None and callable(server):
            handle = server
        if not callable(handle):
            raise ConfigurationError(
                f"an in-memory MCP server needs handle(message) -> list of messages, or is "
                f"such a callable; got {type(server).__name__}"
            )
        self._handle: Handler = handle
        label = name or getattr(server, "name", None) or type(server).__name__
        self.name = f"in-memory server {label}"
        self._key = identity_key("in-memory", server)
        self._inbox: queue.SimpleQueue[tuple[str, str] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._sink: MessageSink | None = None
        self._closed = False
        self._reported = False
        self._thread: threading.Thread | None = None

    @property
    def era_key(self) -> Hashable:
        """The server object's identity (the era cache remembers it per live object)."""
        return self._key

    def start(self, sink: MessageSink) -> None:
        """Start the worker thread that hands messages to the server."""
        with self._lock:
            if self._thread is not None:
                raise ConfigurationError("an InMemoryTransport can be started once")
            self._sink = sink
            self._thread = threading.Thread(
                target=self._run, name="a2a-sync-mcp-memory", daemon=True
            )
            self._thread.start()

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        """Queue ``message`` for the server (a JSON copy); returns at once.

        Raises:
            ConnectionClosed: The transport is closed or the server failed.
        """
        if self._closed:
            raise ConnectionClosed(f"{self.name} is closed")
        self._inbox.put(("in", json.dumps(message)))

    def push(self, message: dict[str, Any]) -> None:
        """Deliver a message the server sends on its own, after what is queued before it."""
        self._inbox.put(("out", json.dumps(message)))

    def abandon(self, request_id: RequestId) -> bool:
        """Nothing to cut in memory: the session sends ``notifications/cancelled``."""
        return False

    def close(self) -> None:
        """Stop the worker (waits up to :data:`CLOSE_TIMEOUT` for the message in hand)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._inbox.put(None)  # the worker stops
        if thread is not None and thread is not threading.current_thread():
            thread.join(CLOSE_TIMEOUT)
            if thread.is_alive():
                logger.warning("%s still busy %g s after close", self.name, CLOSE_TIMEOUT)
        self._report(None)

    def __repr__(self) -> str:
        return f"<InMemoryTransport {self.name}{' closed' if self._closed else ''}>"

    # --- the worker --------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            item = self._inbox.get()
            if item is None:
                return
            direction, text = item
            if direction == "out":
                self._deliver(json.loads(text))
                continue
            try:
                for answer in self._handle(json.loads(text)):
                    self._deliver(json.loads(json.dumps(answer)))
            except Exception as exc:  # the worker's top level: a crashed server ends it
                logger.exception("%s raised", self.name)
                self._closed = True
                error = ConnectionClosed(
                    f"{self.name} raised {type(exc).__name__}: {exc}; the connection is closed"
                )
                error.__cause__ = exc
                self._report(error)
                return

    def _deliver(self, message: Any) -> None:
        sink = self._sink
        if self._reported or sink is None:
            return
        if isinstance(message, dict):
            sink.deliver(message)
        else:
            logger.warning("%s wrote a message that is not a JSON object; dropped", self.name)

    def _report(self, error: A2ASyncError | None) -> None:
        with self._lock:
            if self._reported or self._sink is None:
                return
            self._reported = True
            sink = self._sink
        sink.transport_closed(error)


def connect_in_memory(
    server: JSONRPCServer | Handler, *, name: str | None = None, **options: Any
) -> MCPConnection:
    """An :class:`~a2a_sync.mcp.MCPConnection` to ``server`` over an
    :class:`InMemoryTransport`; ``options`` are ``MCPConnection``'s (``era``, ``timeout``,
    callbacks...).

    Raises:
        ConfigurationError: ``server`` speaks no ``handle`` protocol.
        (and what :class:`~a2a_sync.mcp.MCPConnection` raises when negotiation fails)
    """
    InMemoryTransport(server, name=name)  # a bad server fails here, before negotiating
    return MCPConnection(lambda: InMemoryTransport(server, name=name), **options)
