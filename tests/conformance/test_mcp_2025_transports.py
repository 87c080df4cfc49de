"""MCP 2025-11-25 client transport requirements not covered by test_mcp_2025.py: stdio
shutdown, the Streamable HTTP GET stream and the HTTP+SSE (2024-11-05) fallback.

stdio: the scripted peer (:mod:`.mcp_stdio_peer`) notes when its stdin closes and when it
gets SIGTERM, so the order of the shutdown steps is on record. HTTP: raw-socket scripted
servers record every request. Sections are pages of modelcontextprotocol/modelcontextprotocol
``docs/specification/2025-11-25/``.
"""

from __future__ import annotations

import json
import queue
import select
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

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

from .mcp_peer import peer, received

requirement = pytest.mark.requirement
ERA = "2025-11-25"
WAIT = 10.0
SESSION = "session-1"
INIT = {
    "protocolVersion": ERA,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "scripted", "version": "0"},
}
TEXT = {"content": [{"type": "text", "text": "ok"}]}


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Any:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def events(record: Path) -> list[str]:
    return [m["event"] for m in received(record) if "event" in m]


@requirement("mcp-2025-11-25-§lifecycle-stdio-shutdown-closes-stdin-first")
def test_stdio_shutdown_closes_stdin_and_lets_the_server_exit(tmp_path: Path) -> None:
    """Closing the connection closes the server's stdin first; a server that then exits
    on its own gets no signal."""
    record = tmp_path / "received.jsonl"
    plan = {"version": ERA, "capabilities": {"tools": {}}, "ignore_term": True}
    conn = MCPConnection.stdio(peer(record, plan), era=ERA, timeout=WAIT)
    conn.close()
    assert events(record) == ["eof"]  # no SIGTERM noted, before or after
    assert conn.transport.returncode == 0  # type: ignore[attr-defined]


@requirement("mcp-2025-11-25-§lifecycle-stdio-shutdown-sigterm-then-sigkill")
def test_stdio_shutdown_escalates_to_sigterm_then_sigkill(tmp_path: Path) -> None:
    """A server that ignores the end of its stdin gets SIGTERM; one that ignores SIGTERM
    too is killed (SIGKILL). The waits are shortened to about a second each."""
    record = tmp_path / "received.jsonl"
    plan = {"version": ERA, "capabilities": {}, "ignore_eof": True, "ignore_term": True}
    conn = MCPConnection.stdio(peer(record, plan), era=ERA, timeout=WAIT)
    conn.transport.limit_shutdown(2.0)  # type: ignore[attr-defined]
    conn.close()
    # Both were noted (the order of the two notes is the server's scheduling; that stdin
    # closes before any signal is the test above).
    assert sorted(events(record)) == ["eof", "sigterm"]
    assert conn.transport.returncode == -signal.SIGKILL  # type: ignore[attr-defined]


def client_gone(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0.05)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


def sse_event(sock: socket.socket, data: dict[str, Any], name: str = "message") -> None:
    write_chunk(sock, f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())


class StreamableServer:
    """A 2025-11-25 Streamable HTTP server with a session whose GET stream sends the
    client a ``ping`` request and records the client's answer (POSTed back)."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.server_closing = threading.Event()
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        session = [("Mcp-Session-Id", SESSION)]
        if request.method == "GET":
            write_head(
                sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
            )
            sse_event(sock, {"jsonrpc": "2.0", "id": "srv-get-ping", "method": "ping"})
            while not client_gone(sock) and not self.server_closing.is_set():
                pass
            return
        if request.method == "DELETE":
            respond(sock, 200)
            return
        message = request.json()
        if "method" not in message:
            if message.get("id") == "srv-get-ping" and message.get("result") == {}:
                self.answered.set()
            respond(sock, 202)
        elif "id" not in message:
            respond(sock, 202)
        elif message["method"] == "initialize":
            respond_json(
                sock, {"jsonrpc": "2.0", "id": message["id"], "result": INIT}, headers=session
            )
        else:
            respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "result": TEXT})


@requirement("mcp-2025-11-25-§transports-get-stream-accepts-sse")
@requirement("mcp-2025-11-25-§transports-server-requests-on-get-answered")
def test_the_get_stream_is_opened_for_server_messages_and_its_requests_answered() -> None:
    """After the handshake the client opens a GET stream (``Accept: text/event-stream``,
    with the session id and protocol version) and answers a request the server sends on
    it with a POSTed response carrying the same id."""
    script = StreamableServer()
    try:
        with MCPConnection.http(script.url, era=ERA, timeout=WAIT) as conn:
            assert script.answered.wait(WAIT)
            assert conn.client().call_tool("t", {}).text == "ok"
    finally:
        script.server_closing.set()
        script.server.close()
    (get,) = [r for r in script.server.requests if r.method == "GET"]
    assert "text/event-stream" in get.headers["Accept"]
    assert get.headers["Mcp-Session-Id"] == SESSION
    assert get.headers["MCP-Protocol-Version"] == ERA
    answers = [r for r in script.server.requests if r.method == "POST" and "method" not in r.json()]
    assert [r.json() for r in answers] == [{"jsonrpc": "2.0", "id": "srv-get-ping", "result": {}}]


class OldSSEServer:
    """A 2024-11-05 HTTP+SSE server: POST to ``/sse`` is refused (405), ``GET /sse`` opens
    the stream whose first event names the endpoint; POSTs there are answered 202 and the
    answers arrive on the stream."""

    def __init__(self) -> None:
        self.outbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.closing = threading.Event()
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/sse"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method == "GET":
            write_head(
                sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
            )
            write_chunk(sock, b"event: endpoint\ndata: /messages?session_id=s1\n\n")
            while not self.closing.is_set() and not client_gone(sock):
                try:
                    sse_event(sock, self.outbox.get_nowait())
                except queue.Empty:
                    continue
            return
        if not request.path.startswith("/messages"):
            respond(sock, 405)
            return
        respond(sock, 202)
        message = request.json()
        if "id" in message and "method" in message:
            method = message["method"]
            result = {**INIT, "protocolVersion": "2024-11-05"} if method == "initialize" else TEXT
            self.outbox.put({"jsonrpc": "2.0", "id": message["id"], "result": result})


@requirement("mcp-2025-11-25-§transports-backwards-compatibility-fallback")
def test_a_refused_post_falls_back_to_the_http_sse_transport() -> None:
    """The client POSTs ``initialize`` to the URL; on 405 it GETs the URL, takes the
    ``endpoint`` event and sends every later message there (answers come on the stream)."""
    script = OldSSEServer()
    try:
        with MCPConnection.http(script.url, era="legacy", timeout=WAIT) as conn:
            assert conn.client().call_tool("t", {}).text == "ok"
    finally:
        script.closing.set()
        script.server.close()
    seen = [(r.method, r.path.split("?")[0]) for r in script.server.requests]
    assert seen[0] == ("POST", "/sse")
    assert seen[1] == ("GET", "/sse")
    assert set(seen[2:]) == {("POST", "/messages")}
    posted = [r.json().get("method") for r in script.server.requests[2:]]
    assert posted[:2] == ["initialize", "notifications/initialized"]
    assert "tools/call" in posted
