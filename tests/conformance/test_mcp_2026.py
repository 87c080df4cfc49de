"""MCP 2026-07-28 client requirements (modern era) over Streamable HTTP.

A scripted HTTP server plays a modern-only server (``server/discover``, per-request
``_meta``, no sessions) and records every request, so the tests see exactly what
a2a_sync's MCP client sends. Sections are pages of modelcontextprotocol/modelcontextprotocol
``docs/specification/2026-07-28/``.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from a2a_sync.errors import A2ASyncError
from a2a_sync.mcp import ERA_CACHE, MCPConnection
from tests.support.servers import RecordedRequest, ScriptedServer, respond, respond_json

requirement = pytest.mark.requirement
MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
TOOLS = [
    {"name": "say", "inputSchema": {"type": "object"}},
    {
        "name": "weather",
        "inputSchema": {
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        },
    },
]


class ModernHTTPServer:
    """A modern-only server. ``supported`` are the versions it accepts; a request for any
    other is answered 400 with UnsupportedProtocolVersionError (-32022)."""

    def __init__(self, supported: tuple[str, ...] = (MODERN,)) -> None:
        self.supported = supported
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method != "POST":
            respond(sock, 405)
            return
        message = request.json()
        method = message.get("method")
        meta = (message.get("params") or {}).get("_meta") or {}
        if method == "initialize" or meta.get(META_VERSION) not in self.supported:
            error = {
                "code": -32022,
                "message": "Unsupported protocol version",
                "data": {"supported": list(self.supported), "requested": meta.get(META_VERSION)},
            }
            respond_json(
                sock, {"jsonrpc": "2.0", "id": message.get("id"), "error": error}, status=400
            )
            return
        info = {"io.modelcontextprotocol/serverInfo": {"name": "modern", "version": "0"}}
        result: dict[str, Any]
        if method == "server/discover":
            result = {
                "supportedVersions": list(self.supported),
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "private",
            }
        elif method == "tools/list":
            result = {"tools": TOOLS, "ttlMs": 0, "cacheScope": "private"}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}]}
            answer = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": {**result, "resultType": "complete", "_meta": info},
            }
            body = f"event: message\ndata: {json.dumps(answer)}\n\n".encode()
            respond(sock, 200, body, headers=[("Content-Type", "text/event-stream")])
            return
        else:
            error = {"code": -32601, "message": "Method not found"}
            respond_json(
                sock, {"jsonrpc": "2.0", "id": message.get("id"), "error": error}, status=404
            )
            return
        answer = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {**result, "resultType": "complete", "_meta": info},
        }
        respond_json(sock, answer)


@pytest.fixture(scope="module")
def modern() -> Iterator[ModernHTTPServer]:
    server = ModernHTTPServer()
    with server.server:
        yield server


@pytest.fixture(scope="module")
def modern_requests(modern: ModernHTTPServer) -> list[RecordedRequest]:
    """One auto-era connection: discover, list, two calls; the requests made."""
    ERA_CACHE.clear()
    before = len(modern.server.requests)
    with MCPConnection.http(modern.url, transport="streamable-http") as conn:
        assert conn.era == "modern"
        client = conn.client()
        client.list_tools()
        assert client.call_tool("say", {}).text == "ok"
        assert client.call_tool("weather", {"region": "Zürich-Nord"}).text == "ok"
    return modern.server.requests[before:]


def bodies(made: list[RecordedRequest]) -> list[dict[str, Any]]:
    return [r.json() for r in made if r.method == "POST"]


@requirement("mcp-2026-07-28-§index-meta-on-every-request")
def test_every_request_carries_version_and_capabilities_in_meta(
    modern_requests: list[RecordedRequest],
) -> None:
    sent = [b for b in bodies(modern_requests) if "id" in b]
    assert next(b["method"] for b in sent) == "server/discover"
    for body in sent:
        meta = body["params"]["_meta"]
        assert meta[META_VERSION] == MODERN
        assert isinstance(meta[META_CAPABILITIES], dict)
        assert meta[META_CLIENT]["name"]


@requirement("mcp-2026-07-28-§streamable-http-post-accepting-json-and-sse")
@requirement("mcp-2026-07-28-§streamable-http-no-responses-no-sessions")
def test_modern_messages_are_posts_without_sessions(
    modern_requests: list[RecordedRequest],
) -> None:
    """Every message is a POST to the endpoint accepting JSON and SSE; no JSON-RPC
    response is ever sent and no session header exists."""
    assert {r.method for r in modern_requests} == {"POST"}
    for request in modern_requests:
        assert request.path == "/mcp"
        assert "application/json" in request.headers["Accept"]
        assert "text/event-stream" in request.headers["Accept"]
        assert "Mcp-Session-Id" not in request.headers
        assert "method" in request.json()


@requirement("mcp-2026-07-28-§streamable-http-version-header-matches-meta")
def test_the_version_header_matches_meta(modern_requests: list[RecordedRequest]) -> None:
    for request in modern_requests:
        meta = request.json()["params"]["_meta"]
        assert request.headers["MCP-Protocol-Version"] == meta[META_VERSION]


@requirement("mcp-2026-07-28-§streamable-http-method-and-name-headers")
def test_method_and_name_are_mirrored_into_headers(
    modern_requests: list[RecordedRequest],
) -> None:
    for request in modern_requests:
        body = request.json()
        assert request.headers["Mcp-Method"] == body["method"]
        if body["method"] == "tools/call" and body["params"]["name"] == "say":
            assert request.headers["Mcp-Name"] == "say"


@requirement("mcp-2026-07-28-§streamable-http-x-mcp-header-mirrored")
@requirement("mcp-2026-07-28-§streamable-http-base64-sentinel")
def test_designated_parameters_are_mirrored_with_the_sentinel_for_non_ascii(
    modern_requests: list[RecordedRequest],
) -> None:
    """``x-mcp-header: Region`` puts the argument into ``Mcp-Param-Region``; a value that
    is not plain ASCII is sent as ``=?base64?...?=`` of its UTF-8 bytes."""
    call = next(
        r
        for r in modern_requests
        if r.json()["method"] == "tools/call" and r.json()["params"]["name"] == "weather"
    )
    value = call.headers["Mcp-Param-Region"]
    assert value.startswith("=?base64?")
    assert value.endswith("?=")
    assert base64.b64decode(value[len("=?base64?") : -2]).decode("utf-8") == "Zürich-Nord"


@requirement("mcp-2026-07-28-§streamable-http-json-and-sse-answers")
def test_json_and_sse_answers_are_both_read(modern_requests: list[RecordedRequest]) -> None:
    """Checked by the fixture: tools/list came as JSON, tools/call as SSE."""
    methods = [b["method"] for b in bodies(modern_requests)]
    assert {"tools/list", "tools/call"} <= set(methods)


@requirement("mcp-2026-07-28-§versioning-modern-error-is-no-fallback")
@pytest.mark.known_failure
def test_an_unsupported_version_error_does_not_send_the_client_to_initialize() -> None:
    """A modern server that speaks none of the client's versions answers -32022 with its
    list: that identifies a modern server, so the client retries with a mutual version or
    reports the mismatch; it never falls back to ``initialize``."""
    server = ModernHTTPServer(supported=("2099-01-01",))
    ERA_CACHE.clear()
    with server.server:
        with pytest.raises(A2ASyncError):
            MCPConnection.http(server.url, transport="streamable-http", timeout=10)
        methods = [r.json().get("method") for r in server.server.requests if r.method == "POST"]
    assert "initialize" not in methods
