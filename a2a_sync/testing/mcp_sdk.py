"""An official ``mcp`` SDK server object in this process, as an MCP transport for tests.

The official servers (``mcp.server.mcpserver.MCPServer``, the low-level
``mcp.server.lowlevel.Server``) are asyncio/anyio code. :class:`SDKServerTransport` runs
one on its own event loop in one named daemon thread (``a2a-sync-mcp-sdk-loop``), connected
by in-memory streams; the loop never leaves that thread, so the test code stays plain and
blocking, and ``close()`` ends the server and joins the thread::

    from mcp.server.mcpserver import MCPServer
    from a2a_sync.mcp import MCPConnection
    from a2a_sync.testing.mcp_sdk import SDKServerTransport

    server = MCPServer("demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with MCPConnection(lambda: SDKServerTransport(server)) as conn:
        assert conn.client().call_tool_data("add", {"a": 1, "b": 2}) == 3

Both protocol eras work, as the server decides per connection. Needs the ``mcp`` package
(this module imports it; ``a2a_sync.testing`` itself does not).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
from collections.abc import Hashable
from typing import Any, Final

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

from ..errors import A2ASyncError, ConfigurationError, ConnectionClosed
from ..mcp.transports import MessageSink, Outgoing, RequestId
from .mcp_memory import identity_key

__all__ = ["SDKServerTransport"]

logger = logging.getLogger(__name__)

#: How long ``start`` waits for the loop thread, and ``close`` for the server to end.
LOOP_TIMEOUT: Final = 10.0


class SDKServerTransport:
    """The MCP :class:`~a2a_sync.mcp.Transport` seam over an official SDK server object.

    Thread-safe. One transport serves one connection (the server object may serve many,
    one after another or at once).

    Args:
        server: An ``MCPServer`` or a low-level ``Server``.

    Raises:
        ConfigurationError: ``server`` is neither.
    """

    #: The wire, as every transport names it: here, a server object in this process.
    kind = "in-memory"
    wants_context = False

    def __init__(self, server: Any) -> None:
        low = getattr(server, "_lowlevel_server", server)
        if not isinstance(low, Server):
            raise ConfigurationError(
                f"SDKServerTransport needs an mcp MCPServer or low-level Server, got "
                f"{type(server).__name__}"
            )
        self._server: Server[Any] = low
        self.name = f"in-process mcp server {low.name!r}"
        self._key = identity_key("in-process-sdk", low)
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._sink: MessageSink | None = None
        self._thread: threading.Thread | None = None
        self._token: Any = None
        self._inbound: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._closed = False
        self._reported = False

    @property
    def era_key(self) -> Hashable:
        """The server object's identity."""
        return self._key

    def start(self, sink: MessageSink) -> None:
        """Start the server's event loop thread.

        Raises:
            ConnectionClosed: The loop did not come up in time.
        """
        with self._lock:
            if self._thread is not None:
                raise ConfigurationError("an SDKServerTransport can be started once")
            self._sink = sink
            self._thread = threading.Thread(
                target=self._run, name="a2a-sync-mcp-sdk-loop", daemon=True
            )
            self._thread.start()
        if not self._ready.wait(LOOP_TIMEOUT):
            raise ConnectionClosed(f"{self.name} did not start within {LOOP_TIMEOUT:g} s")

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        """Hand ``message`` to the server (validated as the SDK's stdio transport does).

        Raises:
            ConnectionClosed: The transport is closed or the server ended.
        """
        inbound = self._inbound
        if self._closed or inbound is None:
            raise ConnectionClosed(f"{self.name} is closed")
        parsed = jsonrpc_message_adapter.validate_json(json.dumps(message), by_name=False)
        if threading.current_thread() is self._thread:  # already on the loop
            inbound.send_nowait(SessionMessage(parsed))
            return
        try:
            anyio.from_thread.run_sync(
                inbound.send_nowait, SessionMessage(parsed), token=self._token
            )
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, RuntimeError) as exc:
            raise ConnectionClosed(f"{self.name} has ended") from exc

    def abandon(self, request_id: RequestId) -> bool:
        """The session sends ``notifications/cancelled``, which the server honours."""
        return False

    def close(self) -> None:
        """End the server (its input closes) and join the loop thread (bounded)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread, inbound = self._thread, self._inbound
        if inbound is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                anyio.from_thread.run_sync(inbound.close, token=self._token)
        if thread is not None and thread is not threading.current_thread():
            thread.join(LOOP_TIMEOUT)
            if thread.is_alive():
                logger.warning("%s still running %g s after close", self.name, LOOP_TIMEOUT)
        self._report(None)

    # --- the loop thread ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            anyio.run(self._serve)
        except Exception as exc:  # the loop thread's top level: a crashed server ends it
            logger.exception("%s crashed", self.name)
            error = ConnectionClosed(f"{self.name} crashed: {type(exc).__name__}: {exc}")
            error.__cause__ = exc
            self._report(error)
            return
        self._report(None if self._closed else ConnectionClosed(f"{self.name} ended"))

    async def _serve(self) -> None:
        inbound, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](
            math.inf
        )
        server_writes, outbound = anyio.create_memory_object_stream[SessionMessage](math.inf)
        self._token = anyio.lowlevel.current_token()
        self._inbound = inbound
        self._ready.set()
        async with anyio.create_task_group() as group:
            group.start_soon(self._forward, outbound)
            async with server_reads, server_writes:
                await self._server.run(
                    server_reads, server_writes, self._server.create_initialization_options()
                )
            group.cancel_scope.cancel()

    async def _forward(self, outbound: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with outbound:
            async for item in outbound:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                sink = self._sink
                if sink is not None and not self._reported:
                    sink.deliver(json.loads(text))

    def _report(self, error: A2ASyncError | None) -> None:
        with self._lock:
            if self._reported or self._sink is None:
                return
            self._reported = True
            sink = self._sink
        sink.transport_closed(error)
