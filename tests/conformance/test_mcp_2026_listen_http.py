"""MCP 2026-07-28 ``subscriptions/listen`` over Streamable HTTP, against a scripted server
(:class:`tests.support.servers.ScriptedServer`) that answers the listen POST with an SSE
stream and notes when the client closes it. Sections are pages of
modelcontextprotocol/modelcontextprotocol ``docs/specification/2026-07-28/``; the stdio
counterpart and the official-server check are in :mod:`.test_mcp_2026_features`.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Mapping
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

requirement = pytest.mark.requirement
MODERN = "2026-07-28"
WAIT = 10.0
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
URI = "file:///a.txt"
GRANTED = {"toolsListChanged": True, "resourceSubscriptions": [URI]}


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Any:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def event(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


class ListeningServer:
    """A modern HTTP server: ``subscriptions/listen`` gets an SSE stream (the
    acknowledgement and one ``resources/updated`` event, both tagged with the listen
    request's id) held open until the client closes the connection."""

    def __init__(self) -> None:
        self.gone = threading.Event()
        self.listen_headers: Mapping[str, str] = {}
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method != "POST":
            respond(sock, 405)
            return
        message = request.json()
        if message.get("method") == "subscriptions/listen":
            self.listen_headers = request.headers
            self.stream(sock, message["id"])
            return
        capabilities = {"tools": {"listChanged": True}, "resources": {"subscribe": True}}
        result = {"resultType": "complete", "supportedVersions": [MODERN]}
        result["capabilities"] = capabilities
        if "id" in message:
            respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        else:
            respond(sock, 202)

    def stream(self, sock: socket.socket, listen_id: Any) -> None:
        tag = {SUBSCRIPTION: listen_id}
        write_head(
            sock, 200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]
        )
        ack = {"notifications": GRANTED, "_meta": tag}
        updated = {"uri": URI, "_meta": tag}
        for method, params in (
            ("notifications/subscriptions/acknowledged", ack),
            ("notifications/resources/updated", updated),
        ):
            write_chunk(sock, event({"jsonrpc": "2.0", "method": method, "params": params}))
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:  # bounded: until the client hangs up
            readable, _, _ = select.select([sock], [], [], 0.05)
            if readable and sock.recv(1, socket.MSG_PEEK) == b"":
                self.gone.set()
                return


@requirement("mcp-2026-07-28-§subscriptions-listen-over-streamable-http")
def test_listen_over_http_is_an_sse_stream_and_closing_it_ends_the_subscription() -> None:
    """Over Streamable HTTP the listen request is a POST answered with a long-lived SSE
    stream: the acknowledgement and the tagged events reach the subscription, and closing
    the subscription closes that stream (no ``notifications/cancelled``, which is the
    stdio way)."""
    script = ListeningServer()
    with script.server:
        with MCPConnection.http(script.url, era=MODERN, timeout=WAIT) as conn:
            client = conn.client()
            subscription = client.listen(tools=True, resource_uris=[URI])
            assert subscription.granted == GRANTED
            got = subscription.get_event(WAIT)
            assert got is not None
            assert (got.kind, got.uri) == ("resource_updated", URI)
            subscription.close()
            assert script.gone.wait(WAIT)
            assert subscription.closed
            client.ping()  # anything sent after the close has arrived by now
        posts = [r.json() for r in script.server.requests if r.method == "POST"]
    (listen,) = [m for m in posts if m.get("method") == "subscriptions/listen"]
    assert listen["params"]["notifications"] == GRANTED
    assert "text/event-stream" in script.listen_headers.get("Accept", "")
    assert script.listen_headers.get("MCP-Protocol-Version") == MODERN
    assert "notifications/cancelled" not in [m.get("method") for m in posts]
