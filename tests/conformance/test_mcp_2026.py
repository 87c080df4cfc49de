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
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import A2ASyncError
from a2a_sync.mcp import ElicitResult, MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from a2a_sync.testing import mcp_server_command
from a2a_sync.testing.mcp_server import recorded_messages
from tests.support.servers import RecordedRequest, ScriptedServer, respond, respond_json

requirement = pytest.mark.requirement
MODERN = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT = "io.modelcontextprotocol/clientInfo"
#: An opaque requestState with characters a client might be tempted to decode or trim.
STATE = " eyJ4IjoxfQ==.\u00e9 "
TOOLS = [
    {"name": "say", "inputSchema": {"type": "object"}},
    {"name": "ask", "inputSchema": {"type": "object"}},
    {"name": "ask-nostate", "inputSchema": {"type": "object"}},
    {"name": "bogus", "inputSchema": {"type": "object"}},
    {"name": "bare", "inputSchema": {"type": "object"}},
    {
        "name": "weather",
        "inputSchema": {
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            },
        },
    },
    {  # invalid: x-mcp-header on a number-typed parameter
        "name": "bad-header",
        "inputSchema": {
            "type": "object",
            "properties": {"ratio": {"type": "number", "x-mcp-header": "Ratio"}},
        },
    },
]


class ModernHTTPServer:
    """A modern-only server. ``supported`` are the versions it accepts; a request for any
    other is answered 400 with UnsupportedProtocolVersionError (-32022)."""

    def __init__(self, supported: tuple[str, ...] = (MODERN,)) -> None:
        self.supported = supported
        self.listed: list[str] = []
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    @staticmethod
    def call(params: dict[str, Any]) -> dict[str, Any] | None:
        """A tools/call result: ``ask`` / ``ask-nostate`` need an elicitation first (with
        and without ``requestState``); ``bogus`` has an unknown resultType; ``bare`` none."""
        name = params["name"]
        done = {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}
        if name in ("ask", "ask-nostate") and "inputResponses" not in params:
            form = {"type": "object", "properties": {"name": {"type": "string"}}}
            asked: dict[str, Any] = {
                "resultType": "input_required",
                "inputRequests": {
                    "login": {
                        "method": "elicitation/create",
                        "params": {"mode": "form", "message": "who?", "requestedSchema": form},
                    }
                },
            }
            if name == "ask":
                asked["requestState"] = STATE
            return asked
        if name == "bogus":
            return {"resultType": "bogus", "content": []}
        if name == "bare":
            return None
        return done

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
            called = self.call(message["params"])
            if called is None:  # no resultType at all: an earlier revision's server
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
                respond_json(sock, answer)
                return
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {**called, "_meta": info}}
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
    """One auto-era connection: discover, list, calls (two with an input round); the
    requests made."""
    ERA_CACHE.clear()
    before = len(modern.server.requests)
    answers = [ElicitResult.accept({"name": "octocat"})] * 2
    with MCPConnection.http(
        modern.url, transport="streamable-http", elicitation_callback=lambda _: answers.pop()
    ) as conn:
        assert conn.era == "modern"
        client = conn.client()
        modern.listed = [tool.name for tool in client.list_tools()]
        assert client.call_tool("say", {}).text == "ok"
        arguments: list[dict[str, Any]] = [
            {"region": "Zürich-Nord", "count": 42, "flag": True},
            {"region": "=?base64?literal?=", "count": None},
            {},
        ]
        for given in arguments:
            assert client.call_tool("weather", given).text == "ok"
        assert client.call_tool("ask", {"x": 1}).text == "ok"
        assert client.call_tool("ask-nostate", {}).text == "ok"
        bare = client.call_tool("bare", {})
        assert (len(bare.content), bare.is_error) == (0, False)
        with pytest.raises(A2ASyncError, match="bogus"):
            client.call_tool("bogus", {})
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


def _decoded(value: str) -> str:
    assert value.startswith("=?base64?"), value
    assert value.endswith("?=")
    return base64.b64decode(value[len("=?base64?") : -2]).decode("utf-8")


@requirement("mcp-2026-07-28-§streamable-http-x-mcp-header-mirrored")
@requirement("mcp-2026-07-28-§streamable-http-base64-sentinel")
@requirement("mcp-2026-07-28-§streamable-http-header-value-conversion")
def test_designated_parameters_are_mirrored_and_encoded(
    modern_requests: list[RecordedRequest],
) -> None:
    """``x-mcp-header`` parameters become ``Mcp-Param-<name>``: integers in decimal,
    booleans lower-case; a value that is not plain ASCII, or that looks like the sentinel,
    is sent as ``=?base64?...?=`` of its UTF-8 bytes; a null or absent value sends no
    header."""
    full, sentinel, empty = (
        r
        for r in modern_requests
        if r.json()["method"] == "tools/call" and r.json()["params"]["name"] == "weather"
    )
    assert _decoded(full.headers["Mcp-Param-Region"]) == "Zürich-Nord"
    assert (full.headers["Mcp-Param-Count"], full.headers["Mcp-Param-Flag"]) == ("42", "true")
    assert _decoded(sentinel.headers["Mcp-Param-Region"]) == "=?base64?literal?="
    assert "Mcp-Param-Count" not in sentinel.headers  # null: no header
    assert not [name for name in empty.headers if name.lower().startswith("mcp-param-")]


@requirement("mcp-2026-07-28-§streamable-http-invalid-x-mcp-header-tool-excluded")
def test_a_tool_with_an_invalid_header_annotation_is_left_out(
    modern: ModernHTTPServer, modern_requests: list[RecordedRequest]
) -> None:
    """``x-mcp-header`` on a number parameter makes the tool invalid: it is not listed,
    the other tools are."""
    assert "bad-header" not in modern.listed
    assert {"say", "weather", "ask"} <= set(modern.listed)


@requirement("mcp-2026-07-28-§streamable-http-json-and-sse-answers")
def test_json_and_sse_answers_are_both_read(modern_requests: list[RecordedRequest]) -> None:
    """Checked by the fixture: tools/list came as JSON, tools/call as SSE."""
    methods = [b["method"] for b in bodies(modern_requests)]
    assert {"tools/list", "tools/call"} <= set(methods)


@requirement("mcp-2026-07-28-§versioning-modern-error-is-no-fallback")
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


def calls_of(made: list[RecordedRequest], name: str) -> list[dict[str, Any]]:
    return [b for b in bodies(made) if b["method"] == "tools/call" and b["params"]["name"] == name]


@requirement("mcp-2026-07-28-§mrtr-retry-with-inputs-and-new-id")
@requirement("mcp-2026-07-28-§mrtr-request-state-echoed-verbatim")
def test_an_input_round_is_answered_by_a_retry_with_the_inputs_and_the_state(
    modern_requests: list[RecordedRequest],
) -> None:
    """The retry repeats the original request under a new id, with the answers keyed as
    the server asked and ``requestState`` exactly as received."""
    first, retry = calls_of(modern_requests, "ask")
    assert retry["id"] != first["id"]
    assert retry["params"]["arguments"] == first["params"]["arguments"] == {"x": 1}
    login = retry["params"]["inputResponses"]["login"]
    assert (login["action"], login["content"]) == ("accept", {"name": "octocat"})
    assert retry["params"]["requestState"] == STATE
    assert "elicitation" in first["params"]["_meta"][META_CAPABILITIES]


@requirement("mcp-2026-07-28-§mrtr-no-state-invented")
def test_a_retry_carries_no_state_when_none_was_given(
    modern_requests: list[RecordedRequest],
) -> None:
    first, retry = calls_of(modern_requests, "ask-nostate")
    assert "inputResponses" in retry["params"]
    assert "requestState" not in retry["params"]
    assert "requestState" not in first["params"]


@requirement("mcp-2026-07-28-§mrtr-inputs-only-on-the-retry")
def test_other_requests_carry_no_input_responses(modern_requests: list[RecordedRequest]) -> None:
    retries = [b for b in bodies(modern_requests) if "inputResponses" in b.get("params", {})]
    assert [b["params"]["name"] for b in retries] == ["ask", "ask-nostate"]


@requirement("mcp-2026-07-28-§index-unknown-result-type-invalid")
@requirement("mcp-2026-07-28-§index-absent-result-type-is-complete")
def test_result_types(modern_requests: list[RecordedRequest]) -> None:
    """Checked by the fixture: ``bogus`` raised a protocol error naming the resultType,
    ``bare`` (no resultType) was read as a complete result."""
    assert calls_of(modern_requests, "bogus")
    assert calls_of(modern_requests, "bare")


# -- era detection (dual-era client) -----------------------------------------------------------


@requirement("mcp-2026-07-28-§versioning-stdio-probe-then-fallback")
def test_stdio_probes_with_discover_and_falls_back_on_a_legacy_error(tmp_path: Path) -> None:
    """On stdio a dual-era client probes with ``server/discover``; the handshake-era
    scripted server answers -32601 (not a modern error), so the client falls back to
    ``initialize``."""
    record = tmp_path / "received.jsonl"
    argv = mcp_server_command(tools={"greet": "hi"}, record=record)
    with MCPConnection.stdio(argv) as conn:
        assert conn.era == "legacy"
        assert conn.client().call_tool("greet", {}).text == "hi"
    methods = [m.get("method") for m in recorded_messages(record)]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]


class LegacyOnlyHTTPServer:
    """A handshake-era server that, like server-everything, answers any request outside a
    session with 400 and a non-modern error."""

    def __init__(self) -> None:
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method != "POST":
            respond(sock, 405 if request.method == "GET" else 200)
            return
        message = request.json()
        if message.get("method") == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "0"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            respond_json(sock, answer, headers=[("Mcp-Session-Id", "s-1")])
        elif "Mcp-Session-Id" not in request.headers:
            error = {"code": -32000, "message": "Bad Request: Server not initialized"}
            respond_json(sock, {"jsonrpc": "2.0", "id": None, "error": error}, status=400)
        elif "id" not in message:
            respond(sock, 202)
        else:
            result = {"tools": []} if message["method"] == "tools/list" else {}
            respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "result": result})


@requirement("mcp-2026-07-28-§versioning-era-cached-per-origin")
def test_the_era_found_for_an_origin_is_reused() -> None:
    """The first connection probes (a modern request, then ``initialize``); a second
    connection to the same endpoint goes straight to ``initialize``."""
    ERA_CACHE.clear()
    legacy = LegacyOnlyHTTPServer()
    with legacy.server:
        for _ in range(2):
            with MCPConnection.http(legacy.url, transport="streamable-http") as conn:
                assert conn.era == "legacy"
        firsts = [
            r.json().get("method")
            for r in legacy.server.requests
            if r.method == "POST" and "Mcp-Session-Id" not in r.headers
        ]
    ERA_CACHE.clear()
    assert firsts == ["server/discover", "initialize", "initialize"]
