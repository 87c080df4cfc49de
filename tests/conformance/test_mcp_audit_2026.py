"""MCP 2026-07-28 client requirements found missing by the page-by-page audit of
``docs/specification/2026-07-28/`` (issue #14), over stdio against the scripted server
:mod:`.mcp_stdio_peer` (``version`` 2026-07-28: ``server/discover``, ``resultType``),
which records every message it reads; once the connection is closed the record holds
everything the client wrote.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from a2a_sync.auth.oauth import OAuth
from a2a_sync.errors import AuthorizationError, InsufficientScope, MCPError, RPCError
from a2a_sync.mcp import ElicitRequest, ElicitResult, MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from tests.auth.oauth.conftest import Approve, authorization_server, call, make_oauth, resource
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture

from .mcp_peer import peer, received
from .test_mcp_2026 import ModernHTTPServer

__all__ = ["authorization_server", "make_oauth", "resource"]  # fixtures used here

requirement = pytest.mark.requirement
MODERN = "2026-07-28"
WAIT = 10.0
TEXT = {"content": [{"type": "text", "text": "ok"}]}


def plan(capabilities: dict[str, Any], replies: dict[str, Any]) -> dict[str, Any]:
    return {"version": MODERN, "capabilities": capabilities, "replies": replies}


def _tool(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **extra}


@requirement("mcp-2026-07-28-§index-request-ids")
def test_request_ids_are_strings_or_integers_and_never_repeat(tmp_path: Path) -> None:
    """Every request (discover, paged listings, calls, a retried prompt) carries a string
    or integer id, never null, none equal to another the client sent."""
    record = tmp_path / "received.jsonl"
    replies = {
        "tools/list": [
            {"result": {"tools": [_tool("a")], "nextCursor": "2"}},
            {"result": {"tools": [_tool("b")]}},
        ],
        "tools/call": [{"result": TEXT}],
        "prompts/get": [{"result": {"messages": []}}],
    }
    argv = peer(record, plan({"tools": {}, "prompts": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        assert [t.name for t in client.list_tools()] == ["a", "b"]
        for _ in range(3):
            client.call_tool("a", {})
        client.get_prompt("p")
    ids = [m["id"] for m in received(record) if "method" in m and "id" in m]
    assert len(ids) >= 7
    assert all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids)
    assert len(set(map(repr, ids))) == len(ids)


@requirement("mcp-2026-07-28-§index-no-response-to-notifications")
def test_server_notifications_get_no_response(tmp_path: Path) -> None:
    """Notifications the server sends before its answer (log, progress for an unknown
    token, an unknown method) are never answered: in this revision the client writes no
    JSON-RPC response at all."""
    record = tmp_path / "received.jsonl"
    notes = [
        {"method": "notifications/message", "params": {"level": "info", "data": "x"}},
        {"method": "notifications/progress", "params": {"progressToken": "no", "progress": 1}},
        {"method": "notifications/vendor/unknown", "params": {}},
    ]
    replies = {"tools/call": [{"send": notes, "result": TEXT}]}
    with MCPConnection.stdio(
        peer(record, plan({"tools": {}}, replies)), era=MODERN, timeout=WAIT
    ) as conn:
        assert conn.client().call_tool("t", {}).text == "ok"
    messages = received(record)
    assert "tools/call" in [m.get("method") for m in messages]
    assert [m for m in messages if "method" not in m and "event" not in m] == []


@requirement("mcp-2026-07-28-§index-legacy-error-codes-have-no-meaning")
def test_a_legacy_range_error_code_is_not_given_a_meaning(tmp_path: Path) -> None:
    """-32001 (the legacy -32000..-32019 range; A2A's TaskNotFound in a neighbouring
    protocol) comes back as a plain MCP error with its code and message, not as any
    specific error class."""
    record = tmp_path / "received.jsonl"
    error = {"code": -32001, "message": "vendor says no"}
    replies = {"tools/call": [{"error": error}]}
    with (
        MCPConnection.stdio(
            peer(record, plan({"tools": {}}, replies)), era=MODERN, timeout=WAIT
        ) as conn,
        pytest.raises(RPCError) as caught,
    ):
        conn.client().call_tool("t", {})
    assert type(caught.value) is MCPError
    assert caught.value.code == -32001
    assert "vendor says no" in str(caught.value)


@requirement("mcp-2026-07-28-§index-network-ref-not-dereferenced")
def test_a_network_ref_in_a_tool_schema_is_never_fetched(tmp_path: Path) -> None:
    """A tool whose ``outputSchema`` points ``$ref`` at a network URI: listing the tool
    and checking a call's structured content never connect to that URI (a listening
    socket nobody may touch has no pending connection afterwards)."""
    record = tmp_path / "received.jsonl"
    with socket.create_server(("127.0.0.1", 0)) as trap:
        ref = f"http://127.0.0.1:{trap.getsockname()[1]}/schema.json"
        tool = _tool("remote", outputSchema={"$ref": ref})
        replies = {
            "tools/list": [{"result": {"tools": [tool]}}],
            "tools/call": [{"result": {**TEXT, "structuredContent": {"x": 1}}}],
        }
        argv = peer(record, plan({"tools": {}}, replies))
        with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
            client = conn.client()
            client.list_tools()
            result = client.call_tool("remote", {})
        # Not fetched, so not resolved: the check accepts it (see §index-unresolved-ref).
        assert result.structured_content == {"x": 1}
        trap.setblocking(False)
        with pytest.raises(BlockingIOError):
            trap.accept()


@requirement("mcp-2026-07-28-§streamable-http-rejected-tool-warning")
def test_a_rejected_tool_is_logged_with_its_name_and_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Leaving out a tool whose ``x-mcp-header`` annotation is invalid logs a warning that
    names the tool and the reason."""
    server = ModernHTTPServer()
    ERA_CACHE.clear()
    with (
        caplog.at_level(logging.WARNING, logger="a2a_sync.mcp"),
        server.server,
        MCPConnection.http(server.url, transport="streamable-http", timeout=WAIT) as conn,
    ):
        names = [tool.name for tool in conn.client().list_tools()]
    assert "bad-header" not in names
    assert "say" in names
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert [w for w in warnings if "bad-header" in w and "x-mcp-header" in w]


@requirement("mcp-2026-07-28-§tools-structured-content-any-json-value")
def test_structured_content_may_be_any_json_value(tmp_path: Path) -> None:
    """``structuredContent`` that is an array, a string or a number (this revision allows
    any JSON value) reaches the caller as sent."""
    record = tmp_path / "received.jsonl"
    values: list[Any] = [[1, "two"], "plain", 4.5]
    replies = {"tools/call": [{"result": {**TEXT, "structuredContent": v}} for v in values]}
    with MCPConnection.stdio(
        peer(record, plan({"tools": {}}, replies)), era=MODERN, timeout=WAIT
    ) as conn:
        client = conn.client()
        got = [client.call_tool("t", {}).structured_content for _ in values]
    assert got == values


@requirement("mcp-2026-07-28-§elicitation-missing-mode-is-form")
def test_an_input_request_elicitation_without_mode_is_form_mode(tmp_path: Path) -> None:
    """An ``elicitation/create`` input request without ``mode`` reaches the callback as a
    form-mode request with its schema; its answer rides in ``inputResponses`` on the
    retry."""
    record = tmp_path / "received.jsonl"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    asking = {
        "resultType": "input_required",
        "inputRequests": {
            "who": {
                "method": "elicitation/create",
                "params": {"message": "Your name?", "requestedSchema": schema},
            }
        },
    }
    asked: list[ElicitRequest] = []

    def elicit(request: ElicitRequest) -> ElicitResult:
        asked.append(request)
        return ElicitResult.accept({"name": "Ada"})

    replies = {"tools/call": [{"result": asking}, {"result": TEXT}]}
    argv = peer(record, plan({"tools": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT, elicitation_callback=elicit) as conn:
        assert conn.client().call_tool("t", {}).text == "ok"
    (request,) = asked
    assert (request.mode, request.requested_schema) == ("form", schema)
    calls = [m for m in received(record) if m.get("method") == "tools/call"]
    assert calls[1]["params"]["inputResponses"] == {
        "who": {"action": "accept", "content": {"name": "Ada"}}
    }


def _redirect_params(change: Callable[[dict[str, str]], object]) -> Callable[[str], str]:
    """A tamper for :class:`Approve`: edit the redirect's query parameters."""

    def tamper(location: str) -> str:
        parts = urlsplit(location)
        params = {k: v[0] for k, v in parse_qs(parts.query).items()}
        change(params)
        return parts._replace(query=urlencode(params)).geturl()

    return tamper


@requirement("mcp-2026-07-28-§authorization-iss-validation-table")
def test_the_iss_response_parameter_is_checked_as_rfc9207_says(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """RFC 9207 §2.4 as the spec tabulates it, checked before any code is redeemed: an
    advertising server's redirect without ``iss`` is refused; a non-advertising server's
    redirect whose ``iss`` names another issuer is refused; without ``iss`` from a
    non-advertising server the login proceeds."""
    drop = _redirect_params(lambda params: params.pop("iss", None))
    with pytest.raises(AuthorizationError):
        call(make_oauth(handler=Approve(authorization_server, tamper=drop)), resource.url)
    assert not authorization_server.token_requests

    authorization_server.iss_parameter = False
    evil = _redirect_params(lambda params: params.update(iss="https://evil.example"))
    with pytest.raises(AuthorizationError):
        call(make_oauth(handler=Approve(authorization_server, tamper=evil)), resource.url)
    assert not authorization_server.token_requests

    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok
    assert authorization_server.token_requests


@requirement("mcp-2026-07-28-§authorization-bearer-header-on-every-request")
def test_the_token_rides_in_the_authorization_header_of_every_request() -> None:
    """Every POST of a modern session (discover, listing, calls) carries
    ``Authorization: Bearer <token>``, and the token is never in a URL."""
    server = ModernHTTPServer()
    token = "tok-5ecret"
    ERA_CACHE.clear()
    with server.server:
        with MCPConnection.http(
            server.url, transport="streamable-http", timeout=WAIT, auth=token
        ) as conn:
            client = conn.client()
            client.list_tools()
            assert client.call_tool("say", {"text": "hi"}).text
        requests = list(server.server.requests)
    assert len(requests) >= 3
    assert all(r.headers.get("Authorization") == f"Bearer {token}" for r in requests)
    assert not [r.path for r in requests if token in r.path]


@requirement("mcp-2026-07-28-§authorization-pkce-s256")
def test_the_authorization_code_flow_uses_pkce_s256(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """The authorization request carries an S256 code challenge and the token request
    the verifier that hashes to it."""
    approve = Approve(authorization_server)
    assert call(make_oauth(handler=approve), resource.url).ok
    (authorize,) = approve.urls
    asked = {k: v[0] for k, v in parse_qs(urlsplit(authorize).query).items()}
    assert asked["code_challenge_method"] == "S256"
    (redeem,) = [
        r
        for r in authorization_server.token_requests
        if r.get("grant_type") == "authorization_code"
    ]
    digest = hashlib.sha256(redeem["code_verifier"].encode("ascii")).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == asked["code_challenge"]


@requirement("mcp-2026-07-28-§authorization-pkce-support-verified")
def test_no_authorization_without_pkce_in_the_server_metadata(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """An authorization server whose metadata offers no PKCE method: the client refuses
    before sending the user anywhere."""
    authorization_server.pkce_methods = []
    approve = Approve(authorization_server)
    with pytest.raises(AuthorizationError):
        call(make_oauth(handler=approve), resource.url)
    assert approve.urls == []
    assert not authorization_server.token_requests


@requirement("mcp-2025-11-25-§authorization-cimd-url-https-with-path")
@requirement("mcp-2026-07-28-§authorization-cimd-url-https-with-path")
@pytest.mark.parametrize(
    "document_url",
    ["https://app.example", "https://app.example/", "http://app.example/oauth/client.json"],
)
def test_a_client_id_metadata_url_must_be_https_with_a_path(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    document_url: str,
) -> None:
    """A Client ID Metadata Document URL without a path, or on plain http to a
    non-loopback host, is never used as ``client_id``: the login is refused before the
    user is sent anywhere and nothing is registered."""
    authorization_server.cimd = True
    approve = Approve(authorization_server)
    with pytest.raises(AuthorizationError, match="client_metadata_url"):
        call(make_oauth(client_metadata_url=document_url, handler=approve), resource.url)
    assert approve.urls == []
    assert not authorization_server.registrations


@requirement("mcp-2025-11-25-§authorization-step-up-on-insufficient-scope")
@requirement("mcp-2026-07-28-§authorization-step-up-on-insufficient-scope")
def test_insufficient_scope_steps_up_with_the_union_and_gives_up_after_one_try(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    """A 403 ``insufficient_scope`` challenge makes the client re-authorize with the
    union of the scopes it asked before and the challenged ones, then retry; a scope the
    server never grants ends after one re-authorization with a clear error."""
    resource.required = {"/api": ["read", "write"]}
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)
    assert call(oauth, resource.url).ok
    scopes = [parse_qs(urlsplit(u).query)["scope"][0].split() for u in approve.urls]
    assert scopes == [["read"], ["read", "write"]]

    authorization_server.grantable = {"read", "write"}
    resource.required = {"/api": ["admin"]}
    with pytest.raises(InsufficientScope, match="did not grant"):
        call(oauth, resource.url)
    assert len(approve.urls) == 3
