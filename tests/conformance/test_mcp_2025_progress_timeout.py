"""MCP 2025-11-25 ``basic/lifecycle#timeouts``: a timeout reset by progress notifications
is still capped by a maximum. Over Streamable HTTP against a scripted server
(:class:`tests.support.servers.ScriptedServer`) that answers ``tools/call`` with an SSE
stream of ``notifications/progress`` at a steady pace, never with a result, until the
client hangs up.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from typing import Any

import pytest

from a2a_sync.errors import DeadlineExceeded
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from tests.support.servers import (
    RecordedRequest,
    ScriptedServer,
    respond,
    respond_json,
    write_chunk,
    write_head,
)

requirement = pytest.mark.requirement
LEGACY = "2025-11-25"
WAIT = 10.0
#: The per-call timeout: far longer than the pause between progress notifications.
TIMEOUT = 1.0
#: The cap: several timeouts, so reaching it proves progress did reset the timeout.
MAX_TIMEOUT = 3.0
PACE = 0.05  # seconds between progress notifications (the server's select timeout)


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Any:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


class ProgressingServer:
    """A legacy HTTP server whose ``tools/call`` streams progress until the client hangs
    up (bounded by :data:`WAIT`)."""

    def __init__(self) -> None:
        self.progress_sent = 0
        self.gone = threading.Event()
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method != "POST":
            respond(sock, 405)
            return
        message = request.json()
        method = message.get("method")
        if method == "tools/call":
            self.stream(sock, message["params"]["_meta"]["progressToken"])
            return
        if "id" not in message:
            respond(sock, 202)
            return
        result: dict[str, Any] = {}
        if method == "initialize":
            result = {
                "protocolVersion": LEGACY,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "progressing", "version": "1"},
            }
        respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "result": result})

    def stream(self, sock: socket.socket, token: Any) -> None:
        write_head(
            sock, 200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]
        )
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], PACE)
            if readable and sock.recv(1, socket.MSG_PEEK) == b"":
                self.gone.set()
                return
            self.progress_sent += 1
            params = {"progressToken": token, "progress": self.progress_sent}
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
            try:
                write_chunk(sock, b"event: message\ndata: " + json.dumps(note).encode() + b"\n\n")
            except OSError:
                self.gone.set()
                return


@requirement("mcp-2025-11-25-§lifecycle-progress-reset-has-a-maximum")
def test_progress_resets_the_timeout_but_never_past_the_maximum() -> None:
    """``reset_timeout_on_progress`` keeps a call alive past its timeout while progress
    arrives, and ``max_timeout`` still ends it (the server is told by closing the
    stream), however steadily the progress keeps coming."""
    script = ProgressingServer()
    with script.server, MCPConnection.http(script.url, era=LEGACY, timeout=WAIT) as conn:
        client = conn.client()
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            client.call_tool(
                "slow",
                {},
                timeout=TIMEOUT,
                reset_timeout_on_progress=True,
                max_timeout=MAX_TIMEOUT,
            )
        waited = time.monotonic() - started
        assert script.gone.wait(WAIT)  # the call's stream was closed
    # Outlived its timeout thanks to progress, then stopped at the cap (a deadline's lower
    # bound; the upper one only says it did not wait for the server's own bound).
    assert waited >= MAX_TIMEOUT
    assert waited < MAX_TIMEOUT + WAIT / 2
    assert script.progress_sent > MAX_TIMEOUT / PACE / 4  # progress flowed all along
