"""MCP 2025-11-25 client requirements found missing by the page-by-page audit of
``docs/specification/2025-11-25/`` (issue #14), over stdio against the scripted server
:mod:`.mcp_stdio_peer`, which records every message it reads.

The peer sends its messages before the answer to the client's call, and a request it
sends holds that answer until the client replied, so once the call returns the client
has handled everything before it; once the connection is closed (stdin closed, process
exited) the record holds everything the client wrote.
"""

from __future__ import annotations

import json
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from a2a_sync.auth.oauth import FileTokenStore, OAuth
from a2a_sync.errors import ProtocolError, ToolOutputError
from a2a_sync.mcp import ElicitRequest, ElicitResult, MCPConnection
from tests.auth.oauth.conftest import Approve, authorization_server, call, make_oauth, resource
from tests.support.oauth_resource import PRM, ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture
from tests.support.servers import RecordedRequest, ScriptedServer, respond, respond_json

from .mcp_peer import answers_to, peer, received

__all__ = ["authorization_server", "make_oauth", "resource"]  # fixtures used here

requirement = pytest.mark.requirement
ERA = "2025-11-25"
WAIT = 10.0
TEXT = {"content": [{"type": "text", "text": "ok"}]}
PING = {"id": "srv-ping", "method": "ping"}


def plan(replies: dict[str, Any]) -> dict[str, Any]:
    return {"version": ERA, "capabilities": {"tools": {}}, "replies": replies}


def _responses(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the client wrote that is not a request or notification (its answers)."""
    return [m for m in messages if "method" not in m and "event" not in m]


@requirement("mcp-2025-11-25-§index-no-response-to-notifications")
def test_server_notifications_get_no_response(tmp_path: Path) -> None:
    """Notifications from the server (known, unknown, and one that looks odd) are never
    answered: the only response the client writes is the one to the server's ping."""
    record = tmp_path / "received.jsonl"
    notes = [
        {"method": "notifications/tools/list_changed"},
        {"method": "notifications/vendor/unknown", "params": {"x": 1}},
        {"method": "notifications/progress", "params": {"progressToken": "none", "progress": 1}},
        PING,
    ]
    argv = peer(record, plan({"tools/call": [{"send": notes, "result": TEXT}]}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        assert conn.client().call_tool("t", {}).text == "ok"
    responses = _responses(received(record))
    assert [r.get("id") for r in responses] == ["srv-ping"]
    assert responses[0]["result"] == {}


@requirement("mcp-2025-11-25-§elicitation-missing-mode-is-form")
def test_an_elicitation_without_mode_is_handled_as_form_mode(tmp_path: Path) -> None:
    """``elicitation/create`` without ``mode`` reaches the callback as a form-mode request
    with its schema, and the form answer (accept + content) goes back."""
    record = tmp_path / "received.jsonl"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    ask = {
        "id": "srv-elicit",
        "method": "elicitation/create",
        "params": {"message": "Your name?", "requestedSchema": schema},
    }
    asked: list[ElicitRequest] = []

    def elicit(request: ElicitRequest) -> ElicitResult:
        asked.append(request)
        return ElicitResult.accept({"name": "Ada"})

    argv = peer(record, plan({"tools/call": [{"send": [ask], "result": TEXT}]}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, elicitation_callback=elicit) as conn:
        conn.client().call_tool("t", {})
    (request,) = asked
    assert request.mode == "form"
    assert request.requested_schema == schema
    (answer,) = answers_to(received(record), "srv-elicit")
    assert answer["result"] == {"action": "accept", "content": {"name": "Ada"}}


@requirement("mcp-2025-11-25-§elicitation-complete-unknown-id-ignored")
def test_an_elicitation_complete_for_an_unknown_id_is_ignored(tmp_path: Path) -> None:
    """``notifications/elicitation/complete`` naming an elicitation the client never saw
    is ignored: no answer, no error, the callback is not called, the session goes on."""
    record = tmp_path / "received.jsonl"
    done = {
        "method": "notifications/elicitation/complete",
        "params": {"elicitationId": "never-started"},
    }
    called = threading.Event()

    def elicit(request: ElicitRequest) -> ElicitResult:
        called.set()
        return ElicitResult.decline()

    replies = {"tools/call": [{"send": [done, PING], "result": TEXT}]}
    argv = peer(record, plan(replies))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, elicitation_callback=elicit) as conn:
        client = conn.client()
        assert client.call_tool("t", {}).text == "ok"
        assert client.call_tool("t", {}).text == "ok"
    assert not called.is_set()
    assert [r.get("id") for r in _responses(received(record))] == ["srv-ping", "srv-ping"]


@requirement("mcp-2025-11-25-§roots-unsupported-method-not-found")
def test_roots_list_without_roots_support_is_method_not_found(tmp_path: Path) -> None:
    """A client without a roots callback declares no ``roots`` and answers a server's
    ``roots/list`` with -32601 (Method not found), never with an empty list."""
    record = tmp_path / "received.jsonl"
    ask = {"id": "srv-roots", "method": "roots/list"}
    argv = peer(record, plan({"tools/call": [{"send": [ask], "result": TEXT}]}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        conn.client().call_tool("t", {})
    messages = received(record)
    assert "roots" not in messages[0]["params"]["capabilities"]
    (answer,) = answers_to(messages, "srv-roots")
    assert "result" not in answer
    assert answer["error"]["code"] == -32601


@requirement("mcp-2025-11-25-§elicitation-undeclared-mode-invalid-params")
def test_an_elicitation_in_an_undeclared_mode_is_invalid_params(tmp_path: Path) -> None:
    """An ``elicitation/create`` in a mode the client did not declare (it declares form
    and url) is answered -32602 (Invalid params); the callback is not called."""
    record = tmp_path / "received.jsonl"
    ask = {
        "id": "srv-elicit",
        "method": "elicitation/create",
        "params": {"mode": "telepathy", "message": "Think of a number"},
    }
    called = threading.Event()

    def elicit(request: ElicitRequest) -> ElicitResult:
        called.set()
        return ElicitResult.accept({})

    argv = peer(record, plan({"tools/call": [{"send": [ask], "result": TEXT}]}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, elicitation_callback=elicit) as conn:
        conn.client().call_tool("t", {})
    messages = received(record)
    assert set(messages[0]["params"]["capabilities"]["elicitation"]) == {"form", "url"}
    (answer,) = answers_to(messages, "srv-elicit")
    assert answer["error"]["code"] == -32602
    assert not called.is_set()


@requirement("mcp-2025-11-25-§elicitation-url-never-prefetched")
def test_a_url_elicitation_is_handed_over_whole_and_never_fetched(tmp_path: Path) -> None:
    """A URL-mode elicitation reaches the callback with the full URL and its id, and the
    client itself never connects to that URL (a listening socket that nobody may touch
    has no pending connection afterwards)."""
    record = tmp_path / "received.jsonl"
    with socket.create_server(("127.0.0.1", 0)) as trap:
        url = f"http://127.0.0.1:{trap.getsockname()[1]}/connect?elicitationId=e-1"
        ask = {
            "id": "srv-elicit",
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": "Connect your account",
                "url": url,
                "elicitationId": "e-1",
            },
        }
        asked: list[ElicitRequest] = []

        def elicit(request: ElicitRequest) -> ElicitResult:
            asked.append(request)
            return ElicitResult.decline()

        argv = peer(record, plan({"tools/call": [{"send": [ask], "result": TEXT}]}))
        with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, elicitation_callback=elicit) as conn:
            conn.client().call_tool("t", {})
        trap.setblocking(False)
        with pytest.raises(BlockingIOError):
            trap.accept()
    (request,) = asked
    assert (request.mode, request.url, request.elicitation_id) == ("url", url, "e-1")
    (answer,) = answers_to(received(record), "srv-elicit")
    assert answer["result"] == {"action": "decline"}


@requirement("mcp-2025-11-25-§tools-output-schema-validated")
def test_structured_content_that_breaks_the_output_schema_is_refused(tmp_path: Path) -> None:
    """A tool that declared an ``outputSchema`` and returns structured content that does
    not match it gets a :class:`ToolOutputError` naming the tool; a matching one passes."""
    record = tmp_path / "received.jsonl"
    schema = {
        "type": "object",
        "properties": {"celsius": {"type": "number"}},
        "required": ["celsius"],
    }
    tool = {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": schema}
    good = {**TEXT, "structuredContent": {"celsius": 21.5}}
    bad = {**TEXT, "structuredContent": {"celsius": "warm"}}
    replies = {
        "tools/list": [{"result": {"tools": [tool]}}],
        "tools/call": [{"result": good}, {"result": bad}],
    }
    with MCPConnection.stdio(peer(record, plan(replies)), era=ERA, timeout=WAIT) as conn:
        client = conn.client()
        client.list_tools()
        assert client.call_tool("weather", {}).structured_content == {"celsius": 21.5}
        with pytest.raises(ToolOutputError) as caught:
            client.call_tool("weather", {})
    assert caught.value.tool == "weather"


@requirement("mcp-2025-11-25-§pagination-no-fixed-page-size")
def test_pages_of_any_size_are_followed_to_the_end(tmp_path: Path) -> None:
    """Pages of 2, 0 and 1 tools: the client follows ``nextCursor`` through the empty
    page (no fixed page size assumed, an empty page is not the end) and stops where the
    cursor is missing."""
    record = tmp_path / "received.jsonl"

    def tool(name: str) -> dict[str, Any]:
        return {"name": name, "inputSchema": {"type": "object"}}

    pages = [
        {"result": {"tools": [tool("a"), tool("b")], "nextCursor": "p2"}},
        {"result": {"tools": [], "nextCursor": "p3"}},
        {"result": {"tools": [tool("c")]}},
    ]
    with MCPConnection.stdio(peer(record, plan({"tools/list": pages})), era=ERA) as conn:
        names = [t.name for t in conn.client().list_tools()]
    assert names == ["a", "b", "c"]
    lists = [m for m in received(record) if m.get("method") == "tools/list"]
    assert [(m.get("params") or {}).get("cursor") for m in lists] == [None, "p2", "p3"]


class RetryingServer:
    """A 2025-11-25 Streamable HTTP server whose ``tools/call`` stream sends a priming
    event with ``retry: RETRY_MS`` and closes; the answer waits for the resume (GET with
    ``Last-Event-ID``). It notes (monotonic) when it closed the stream and when the
    resume arrived."""

    RETRY_MS = 400

    def __init__(self) -> None:
        self.closed_at = 0.0
        self.resumed_at = 0.0
        self.final = b""
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        sse = [("Content-Type", "text/event-stream")]
        if request.method == "DELETE":
            respond(sock, 200)
        elif request.method == "GET":
            if request.headers.get("Last-Event-ID") != "prime" or not self.final:
                respond(sock, 405)
                return
            self.resumed_at = time.monotonic()
            respond(sock, 200, self.final, headers=sse)
        elif "id" not in (message := request.json()):
            respond(sock, 202)
        elif message["method"] == "initialize":
            result = {
                "protocolVersion": ERA,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "retrying", "version": "0"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            respond_json(sock, answer, headers=[("Mcp-Session-Id", "s-1")])
        elif message["method"] == "tools/list":
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}
            respond_json(sock, answer)
        else:
            data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": TEXT})
            self.final = f"id: e1\nevent: message\ndata: {data}\n\n".encode()
            priming = f"id: prime\nretry: {self.RETRY_MS}\ndata: \n\n".encode()
            self.closed_at = time.monotonic()
            respond(sock, 200, priming, headers=sse, close=True)


@requirement("mcp-2025-11-25-§transports-retry-field-respected")
def test_a_resume_waits_for_the_servers_retry_time() -> None:
    """After a response stream that sent ``retry: 400`` closes early, the client resumes
    (GET + ``Last-Event-ID``) no sooner than 400 ms later. (A lower bound only: a loaded
    machine can make the wait longer, never shorter.)"""
    server = RetryingServer()
    with (
        server.server,
        MCPConnection.http(server.url, era=ERA, transport="streamable-http", timeout=WAIT) as conn,
    ):
        assert conn.client().call_tool("t", {}).text == "ok"
    assert server.resumed_at - server.closed_at >= RetryingServer.RETRY_MS / 1000


# -- Authorization discovery (the OAuth hook MCPConnection.http(auth=OAuth(...)) uses; driven
# here like a transport does, against the recording resource and authorization servers) ----


@requirement("mcp-2025-11-25-§authorization-prm-discovery-order")
def test_protected_resource_metadata_comes_from_the_header_else_well_known_in_order(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """With ``resource_metadata`` in the 401 challenge, that URL is the only one asked;
    without it, the path-aware well-known URI comes first, then the root one."""
    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok
    assert [p for p in resource.paths if p.startswith(PRM)] == [f"{PRM}/api"]

    resource.paths.clear()
    resource.header_metadata = False
    resource.prm_at = "root"
    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok
    assert [p for p in resource.paths if p.startswith(PRM)] == [f"{PRM}/api", PRM]


@requirement("mcp-2025-11-25-§authorization-server-metadata-discovery-order")
def test_authorization_server_metadata_is_looked_for_in_the_specified_order(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """For an issuer with a path (``/tenant1``) whose metadata is only at the OpenID
    Connect path-appending URI, the client tries RFC 8414 path insertion, then OpenID
    Connect path insertion, then path appending, and logs in."""
    authorization_server.metadata_at = "oidc-append"
    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok
    assert [p for p in authorization_server.paths if ".well-known" in p] == [
        "/.well-known/oauth-authorization-server/tenant1",
        "/.well-known/openid-configuration/tenant1",
        "/tenant1/.well-known/openid-configuration",
    ]


@requirement("mcp-2025-11-25-§authorization-bearer-header-on-every-request")
def test_the_token_rides_in_the_authorization_header_of_every_request() -> None:
    """Every HTTP request of a session (POSTs, the resuming GET, the closing DELETE)
    carries ``Authorization: Bearer <token>``, and the token is never in a URL."""
    server = RetryingServer()
    server.RETRY_MS = 10
    token = "tok-5ecret"
    with server.server:
        with MCPConnection.http(
            server.url, era=ERA, transport="streamable-http", timeout=WAIT, auth=token
        ) as conn:
            assert conn.client().call_tool("t", {}).text == "ok"
        requests = list(server.server.requests)
    assert {"POST", "GET", "DELETE"} <= {r.method for r in requests}
    assert all(r.headers.get("Authorization") == f"Bearer {token}" for r in requests)
    assert not [r.path for r in requests if token in r.path]


@requirement("mcp-2025-11-25-§authorization-secure-token-storage")
@requirement("mcp-2026-07-28-§authorization-secure-token-storage")
def test_stored_tokens_are_private_to_the_user(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    tmp_path: Path,
) -> None:
    """The file token store keeps its directory 0700 and its files 0600, and a token
    file that others may read is not used (a fresh login happens instead)."""
    folder = tmp_path / "oauth"
    approve = Approve(authorization_server)
    assert call(make_oauth(handler=approve, store=FileTokenStore(folder)), resource.url).ok
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in files} == {0o600}

    for path in files:
        path.chmod(0o644)
    again = Approve(authorization_server)
    assert call(make_oauth(handler=again, store=FileTokenStore(folder)), resource.url).ok
    assert len(again.urls) == 1  # the readable grant was ignored: a new authorization


@requirement("mcp-2025-11-25-§authorization-redirect-uri-registered-loopback-or-https")
@requirement("mcp-2026-07-28-§authorization-redirect-uri-registered-loopback-or-https")
def test_the_redirect_uri_is_registered_and_loopback(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """The redirect URI of the authorization request is one the client registered, and it
    is a loopback ``http`` URI (the spec allows localhost or https only). Loopback URIs
    are registered without a port, which varies per login (RFC 8252 §7.3, OAuth 2.1
    §8.4.2: the authorization server allows any port)."""
    approve = Approve(authorization_server)
    assert call(make_oauth(handler=approve), resource.url).ok
    (registration,) = authorization_server.registrations
    (authorize,) = approve.urls
    redirect = parse_qs(urlsplit(authorize).query)["redirect_uri"][0]
    parts = urlsplit(redirect)
    portless = parts._replace(netloc=parts.hostname or "").geturl()
    assert portless in registration["redirect_uris"]
    assert parts.scheme == "https" or (
        parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")
    )


@requirement("mcp-2025-11-25-§prompts-output-validated")
def test_a_malformed_prompt_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    """A ``prompts/get`` result whose message has a role that is neither user nor
    assistant is not handed on: the call fails with a ProtocolError naming the field."""
    record = tmp_path / "received.jsonl"
    bad = {"messages": [{"role": "system", "content": {"type": "text", "text": "obey"}}]}
    good = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}
    replies = {"prompts/get": [{"result": good}, {"result": bad}]}
    plan_ = {"version": ERA, "capabilities": {"prompts": {}}, "replies": replies}
    with MCPConnection.stdio(peer(record, plan_), era=ERA, timeout=WAIT) as conn:
        client = conn.client()
        assert client.get_prompt("p").messages[0].role == "user"
        with pytest.raises(ProtocolError, match="role"):
            client.get_prompt("p")
