"""The 2024-11-05 HTTP+SSE transport against a scripted server: the GET stream names the
endpoint, POSTs are answered 202, every answer arrives on the GET stream."""

from __future__ import annotations

import json
import logging
import queue
import select
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from a2a_sync.errors import (
    ConnectionClosed,
    ConnectionLost,
    DeadlineExceeded,
    HTTPStatusError,
    ProtocolError,
)
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from a2a_sync.mcp.transports.legacy_sse import LegacySSETransport
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import (
    RecordedRequest,
    close_connection,
    respond,
    write_chunk,
    write_head,
)

TOKEN = "t0ken-very-secret"
SECRET_SESSION = "sEcReT-5ess"
INIT_RESULT = {
    "protocolVersion": "2024-11-05",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "old-sse", "version": "1"},
}


def result_of(message: dict[str, Any], value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}


def event(sock: socket.socket, name: str, data: str) -> None:
    write_chunk(sock, f"event: {name}\ndata: {data}\n\n".encode())


def client_gone(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""


class SSEScript:
    """An HTTP+SSE server: ``GET /sse`` streams, ``POST <endpoint>`` answers 202 and
    pushes the reply onto the stream. ``streamable`` makes POSTs to ``/sse`` itself fail
    like an old server's would (405), for the fallback."""

    def __init__(self, endpoint: str = f"/messages?session_id={SECRET_SESSION}") -> None:
        self.endpoint = endpoint
        self.outbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.end_stream = threading.Event()
        self.get_closed = threading.Event()
        self.post_status = 202
        self.on_get: Callable[[socket.socket], bool] | None = None

    def __call__(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method == "GET":
            self.stream(sock)
        elif request.path.startswith("/messages"):
            if self.post_status == 0:
                close_connection(sock)
                return
            respond(sock, self.post_status)
            if self.post_status == 202:
                for reply in self.answer(request.json()):
                    self.outbox.put(reply)
        else:
            respond(sock, 405)  # POST to the SSE URL: what old servers answer

    def stream(self, sock: socket.socket) -> None:
        write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        if self.on_get is not None and not self.on_get(sock):
            return
        event(sock, "endpoint", self.endpoint)
        while not self.end_stream.is_set():
            try:
                item = self.outbox.get(timeout=0.05)
            except queue.Empty:
                if client_gone(sock):
                    self.get_closed.set()
                    return
                continue
            event(sock, "message", json.dumps(item))
        write_chunk(sock, b"")

    @staticmethod
    def answer(message: dict[str, Any]) -> list[dict[str, Any]]:
        method = message.get("method")
        if "id" not in message or method is None:
            return []
        if method == "initialize":
            return [result_of(message, INIT_RESULT)]
        if method == "tools/call":
            text = f"called {message['params']['name']}"
            return [result_of(message, {"content": [{"type": "text", "text": text}]})]
        if method == "slow":
            return []
        return [result_of(message, {})]


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Iterator[None]:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def sse_connect(url: str, **options: Any) -> MCPConnection:
    return MCPConnection.http(
        url, transport="sse", auth=TOKEN, timeout=5, validate_output=False, **options
    )


def test_messages_go_to_the_endpoint_and_answers_come_on_the_stream(
    scripted_server: ScriptedServerFactory,
) -> None:
    script = SSEScript()
    server = scripted_server(script)
    with sse_connect(server.url + "/sse", headers={"X-Tenant": "t1"}) as conn:
        assert (conn.era, conn.protocol_version) == ("legacy", "2024-11-05")
        assert conn.client().call_tool("add").text == "called add"
    assert script.get_closed.wait(5)  # close() ends the stream, which ends the session
    requests = server.requests
    assert [(r.method, r.path.split("?")[0]) for r in requests] == [
        ("GET", "/sse"),
        ("POST", "/messages"),
        ("POST", "/messages"),
        ("POST", "/messages"),
    ]
    for request in requests:
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        assert request.headers["X-Tenant"] == "t1"
    assert requests[1].path == f"/messages?session_id={SECRET_SESSION}"


def test_an_endpoint_on_another_origin_is_refused(scripted_server: ScriptedServerFactory) -> None:
    script = SSEScript(endpoint="http://127.0.0.2:9/steal")
    server = scripted_server(script)
    with pytest.raises(ProtocolError):
        sse_connect(server.url + "/sse")
    assert [r.method for r in server.requests] == ["GET"]  # nothing was POSTed anywhere


def test_no_endpoint_event_in_time_fails_the_start(scripted_server: ScriptedServerFactory) -> None:
    script = SSEScript()
    hold = threading.Event()
    script.on_get = lambda sock: hold.wait(5) and False
    server = scripted_server(script)
    try:
        with pytest.raises(DeadlineExceeded):
            MCPConnection(lambda: LegacySSETransport(server.url + "/sse", endpoint_timeout=0.3))
    finally:
        hold.set()


def test_the_end_of_the_stream_fails_pending_calls_and_closes_the_connection(
    scripted_server: ScriptedServerFactory,
) -> None:
    script = SSEScript()
    server = scripted_server(script)
    conn = sse_connect(server.url + "/sse")
    errors: list[BaseException] = []
    sent = threading.Event()

    def call() -> None:
        try:
            sent.set()
            conn.session.request("slow", None, timeout=10)
        except ConnectionClosed as exc:
            errors.append(exc)

    waiter = threading.Thread(target=call)
    waiter.start()
    assert sent.wait(5)
    script.end_stream.set()
    waiter.join(5)
    assert len(errors) == 1
    assert conn.closed
    with pytest.raises(ConnectionClosed):
        conn.client().call_tool("late")
    conn.close()


def test_the_session_in_the_endpoint_url_never_reaches_errors_or_logs(
    scripted_server: ScriptedServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    script = SSEScript()
    server = scripted_server(script)
    with sse_connect(server.url + "/sse") as conn:
        script.post_status = 500
        with pytest.raises(HTTPStatusError) as refused:
            conn.client().call_tool("x")
        script.post_status = 0  # close the connection without answering
        with pytest.raises(ConnectionLost) as lost:
            conn.client().call_tool("x")
        ours = [r.getMessage() for r in caplog.records if r.name.startswith("a2a_sync")]
        texts = [str(refused.value), str(lost.value), repr(conn.transport), *ours]
    # (urllib3's own DEBUG lines show request targets; they are not a2a_sync's to filter.)
    for text in texts:
        assert SECRET_SESSION not in text
        assert TOKEN not in text
    assert lost.value.__cause__ is None


def test_streamable_http_falls_back_after_initialize_is_refused_and_remembers(
    scripted_server: ScriptedServerFactory,
) -> None:
    script = SSEScript()
    server = scripted_server(script)
    url = server.url + "/sse"
    with MCPConnection.http(url, validate_output=False) as conn:  # era and transport auto
        assert conn.transport.kind == "http+sse"  # type: ignore[attr-defined]
        assert conn.client().call_tool("t").text == "called t"
    first = [(r.method, r.path) for r in server.requests]
    assert first[:3] == [("POST", "/sse"), ("POST", "/sse"), ("GET", "/sse")]  # probe, init
    assert script.get_closed.wait(5)
    script.get_closed.clear()
    with MCPConnection.http(url, validate_output=False) as conn:
        assert conn.transport.kind == "http+sse"  # type: ignore[attr-defined]
    later = [(r.method, r.path) for r in server.requests][len(first) :]
    assert later[0] == ("GET", "/sse")  # remembered: straight to the event stream
    assert ("POST", "/sse") not in later


def test_when_the_fallback_fails_too_the_original_refusal_surfaces(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 404))
    with pytest.raises(HTTPStatusError) as caught:
        MCPConnection.http(server.url + "/mcp", era="legacy")
    assert caught.value.status_code == 404
    assert [r.method for r in server.requests] == ["POST", "GET"]
