"""MCP authorization, the client's side (2025-11-25 ``basic/authorization``, 2026-07-28
``basic/authorization/``): ``MCPConnection.http(url, auth=OAuth(...))`` against the
official ``mcp`` 2.3.0 server protected by its own auth settings and the authlib test
authorization server (tests/support/oauth_server.py), which records every path and
token request; the browser step is :class:`Approve` (its ``tamper`` forges redirects).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

pytest.importorskip("mcp")

from a2a_sync.auth.oauth import OAuth
from a2a_sync.errors import AuthorizationError
from a2a_sync.mcp import MCPConnection
from tests.auth.oauth.conftest import Approve, authorization_server, make_oauth
from tests.auth.oauth.test_mcp_peer import Verifier, protected_mcp
from tests.support.oauth_server import AuthorizationServerFixture

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
