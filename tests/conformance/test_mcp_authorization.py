"""MCP authorization, the client's side (2025-11-25 ``basic/authorization``, 2026-07-28
``basic/authorization/``): ``MCPConnection.http(url, auth=OAuth(...))`` against the
official ``mcp`` 2.3.0 server protected by its own auth settings and the authlib test
authorization server (tests/support/oauth_server.py), which records every path and
token request; the browser step is :class:`Approve` (its ``tamper`` forges redirects).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

pytest.importorskip("mcp")

from a2a_sync.auth.oauth import FileTokenStore, OAuth
from a2a_sync.errors import A2ASyncError, AuthorizationError, RedirectRefused
from a2a_sync.mcp import MCPConnection
from tests.auth.oauth.conftest import Approve, authorization_server, call, make_oauth
from tests.auth.oauth.test_mcp_peer import Verifier, protected_mcp
from tests.support.fixtures import WsgiServerFactory
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture, serve_authorization_server

pytestmark = pytest.mark.peer
__all__ = ["authorization_server", "make_oauth", "protected_mcp"]  # fixtures used here

requirement = pytest.mark.requirement
WAIT = 30.0


def query(url: str) -> dict[str, str]:
    return {name: values[0] for name, values in parse_qs(urlsplit(url).query).items()}


@requirement("mcp-2025-11-25-§authorization-protected-resource-metadata-discovery")
@requirement("mcp-2025-11-25-§authorization-pkce-s256")
@requirement("mcp-2025-11-25-§authorization-resource-parameter")
@requirement("mcp-2026-07-28-§authorization-resource-parameter")
@requirement("mcp-2026-07-28-§authorization-dcr-application-type")
@requirement("mcp-2025-11-25-§authorization-scope-selection")
def test_login_finds_the_server_through_its_metadata_with_pkce_and_resource(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    """The client learns the authorization server only from the MCP server's protected
    resource metadata (RFC 9728), authorizes with PKCE S256 and names the MCP server as
    ``resource`` (RFC 8707) on both the authorization and the token request, and the
    token it gets is for that server (its audience). Registered dynamically (the test
    server offers no client metadata documents), it names its ``application_type``."""
    url, verifier = protected_mcp
    approve = Approve(authorization_server)
    with MCPConnection.http(url, auth=make_oauth(handler=approve), timeout=WAIT) as conn:
        assert conn.client().call_tool("add", {"a": 2, "b": 3}).text == "5"
    assert verifier.seen  # the peer checked our token (validate_token_resource=True)
    (authorize,) = approve.urls
    asked = query(authorize)
    assert asked["code_challenge_method"] == "S256"
    assert len(asked["code_challenge"]) == 43  # base64url of a SHA-256 digest
    assert asked["resource"] == url
    assert asked["state"]
    assert "read" in asked["scope"].split()  # the scope the server asks for
    codes = [
        r
        for r in authorization_server.token_requests
        if r.get("grant_type") == "authorization_code"
    ]
    (token_request,) = codes
    assert token_request["resource"] == url
    assert 43 <= len(token_request["code_verifier"]) <= 128
    (registration,) = authorization_server.registrations
    assert registration["application_type"] == "native"  # a loopback redirect URI


@requirement("mcp-2025-11-25-§authorization-pkce-support-verified")
def test_no_login_with_an_authorization_server_that_does_not_offer_pkce(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    """The authorization server's metadata lists no ``code_challenge_methods_supported``:
    the client refuses to go on and never sends the user to it."""
    url, _verifier = protected_mcp
    authorization_server.pkce_methods = []
    approve = Approve(authorization_server)
    with pytest.raises(AuthorizationError):
        MCPConnection.http(url, auth=make_oauth(handler=approve), timeout=WAIT)
    assert approve.urls == []
    assert not authorization_server.token_requests


def forged(name: str, value: str) -> Callable[[str], str]:
    def tamper(location: str) -> str:
        parts = urlsplit(location)
        params = query(location) | {name: value}
        return parts._replace(query=urlencode(params)).geturl()

    return tamper


@requirement("mcp-2025-11-25-§authorization-state-verified")
def test_a_redirect_with_another_state_is_refused(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, _verifier = protected_mcp
    approve = Approve(authorization_server, tamper=forged("state", "forged"))
    with pytest.raises(AuthorizationError):
        MCPConnection.http(url, auth=make_oauth(handler=approve), timeout=WAIT)
    assert not authorization_server.token_requests  # the code was never redeemed


@requirement("mcp-2026-07-28-§authorization-iss-validated")
def test_a_redirect_naming_another_issuer_is_refused(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    """The authorization server advertises the ``iss`` response parameter (RFC 9207): a
    redirect whose ``iss`` is not that server is refused before the code is redeemed."""
    url, _verifier = protected_mcp
    approve = Approve(authorization_server, tamper=forged("iss", "https://evil.example"))
    with pytest.raises(AuthorizationError):
        MCPConnection.http(url, auth=make_oauth(handler=approve), timeout=WAIT)
    assert not authorization_server.token_requests


class Recorder:
    """A second origin: answers 401 without a challenge and records every
    ``Authorization`` header it was sent."""

    def __init__(self) -> None:
        self.authorizations: list[str | None] = []

    def __call__(self, environ: Any, start_response: Callable[..., Any]) -> Iterable[bytes]:
        self.authorizations.append(environ.get("HTTP_AUTHORIZATION"))
        start_response("401 Unauthorized", [("Content-Type", "text/plain")])
        return [b"no"]


def redirecting(inner: Any, path: str, target: str, seen: list[str | None]) -> Any:
    """``inner``, except that ``path`` answers 307 to ``target`` (noting the
    ``Authorization`` header in ``seen``)."""

    def app(environ: Any, start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == path:
            seen.append(environ.get("HTTP_AUTHORIZATION"))
            start_response("307 Temporary Redirect", [("Location", target)])
            return [b""]
        result: Iterable[bytes] = inner(environ, start_response)
        return result

    return app


@requirement("mcp-2025-11-25-§authorization-token-only-to-its-resource")
@requirement("mcp-2026-07-28-§authorization-token-only-to-its-resource")
def test_the_token_never_reaches_another_origin(
    authorization_server: AuthorizationServerFixture,
    make_oauth: Callable[..., OAuth],
    wsgi_server: WsgiServerFactory,
) -> None:
    """One ``OAuth`` holding a token for origin A: an MCP connection to origin B sends B
    no token, and A's MCP endpoint answering with a redirect to B is not followed (the
    token would ride along)."""
    other = Recorder()
    other_url = wsgi_server(other) + "/mcp"
    resource = ProtectedResource(authorization_server)
    redirected: list[str | None] = []
    resource.base = wsgi_server(redirecting(resource, "/mcp", other_url, redirected))
    oauth = make_oauth(handler=Approve(authorization_server))
    assert call(oauth, resource.url).ok  # logged in: a token for origin A
    header = oauth.authorization(resource.base + "/mcp")
    assert header is not None
    assert header.startswith("Bearer ")

    with pytest.raises(A2ASyncError):
        MCPConnection.http(other_url, auth=oauth, timeout=WAIT, era="2025-11-25")
    with pytest.raises(RedirectRefused):
        MCPConnection.http(resource.base + "/mcp", auth=oauth, timeout=WAIT, era="2025-11-25")
    assert header in redirected  # A's endpoint got A's token and redirected
    assert other.authorizations  # B was asked (directly) ...
    assert all(sent is None for sent in other.authorizations)  # ... never with a token


@requirement("mcp-2025-11-25-§authorization-client-id-metadata-document")
@requirement("mcp-2026-07-28-§authorization-client-id-metadata-document")
def test_a_client_id_metadata_document_is_preferred_to_registration(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
    wsgi_server: WsgiServerFactory,
) -> None:
    """The authorization server advertises ``client_id_metadata_document_supported``:
    the client's ``client_id`` is its metadata document URL and no dynamic registration
    happens (the test server fetches the document, served here on loopback)."""
    url, verifier = protected_mcp
    holder: dict[str, str] = {}

    def document(environ: Any, start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = {
            "client_id": holder["url"],
            "client_name": "a2a-sync conformance",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    holder["url"] = wsgi_server(document) + "/oauth/client.json"
    authorization_server.cimd = True
    approve = Approve(authorization_server)
    oauth = make_oauth(client_metadata_url=holder["url"], handler=approve)
    with MCPConnection.http(url, auth=oauth, timeout=WAIT) as conn:
        assert conn.client().call_tool("add", {"a": 1, "b": 1}).text == "2"
    assert verifier.seen
    assert [query(u)["client_id"] for u in approve.urls] == [holder["url"]]
    assert not authorization_server.registrations


@requirement("mcp-2026-07-28-§authorization-credentials-bound-to-issuer")
def test_credentials_are_kept_per_issuer_and_never_reused_at_another(
    authorization_server: AuthorizationServerFixture,
    make_oauth: Callable[..., OAuth],
    wsgi_server: WsgiServerFactory,
    tmp_path: Path,
) -> None:
    """A dynamically registered client and its token are stored under the authorization
    server's issuer: when the resource moves to another authorization server, a later run
    with the same store registers again there and never presents the first server's
    client id or token (driven with the generic protected resource, as the store is the
    same for every HTTP transport)."""
    resource = ProtectedResource(authorization_server)
    resource.base = wsgi_server(resource)
    store = FileTokenStore(tmp_path / "oauth")
    first = Approve(authorization_server)
    earlier = make_oauth(handler=first, store=store)
    assert call(earlier, resource.url).ok
    first_token = earlier.authorization(resource.url)
    assert first_token is not None
    (registered,) = authorization_server.registrations
    first_client = query(first.urls[0])["client_id"]
    before = len(resource.authorizations)

    with serve_authorization_server() as second_server:
        resource.authorization_server = second_server
        second = Approve(second_server)
        oauth = make_oauth(handler=second, store=store)
        assert oauth.authorization(resource.url) is None  # nothing held for this issuer
        assert call(oauth, resource.url).ok
        assert len(second_server.registrations) == 1  # registered again, there
        assert query(second.urls[0])["client_id"] != first_client
        assert first_client not in second_server.clients
        assert first_token not in resource.authorizations[before:]  # never presented
    assert registered["redirect_uris"]
    assert len(authorization_server.registrations) == 1
