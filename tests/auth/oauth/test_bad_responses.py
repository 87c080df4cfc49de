"""Tampered authorization responses, refused tokens and token endpoints that misbehave:
each a typed a2a_sync error naming the step; no token, code or secret in any message or
log line."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from a2a_sync.auth.oauth import HeadlessHandler, OAuth
from a2a_sync.errors import (
    AuthorizationError,
    AuthorizationRequired,
    TokenEndpointError,
)
from tests.auth.oauth.conftest import Approve, call
from tests.support.fixtures import WsgiServerFactory
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture


def _edit_query(url: str, **changes: str | None) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    for name, value in changes.items():
        if value is None:
            query.pop(name, None)
        else:
            query[name] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda u: _edit_query(u, state="forged"), "state that does not match"),
        (lambda u: _edit_query(u, iss="https://evil.example"), "RFC 9207"),
        (lambda u: _edit_query(u, iss=None), "promises an iss"),
        (lambda u: u.replace("127.0.0.1", "evil.example", 1), "other than the redirect URI"),
        (
            lambda u: _edit_query(u, code=None, error="access_denied"),
            "refused the authorization: access_denied",
        ),
    ],
    ids=["state", "iss-mismatch", "iss-missing", "other-host", "error"],
)
def test_a_bad_authorization_response_is_refused(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    tamper: Callable[[str], str],
    message: str,
) -> None:
    oauth = make_oauth(handler=Approve(authorization_server, tamper=tamper))

    with pytest.raises(AuthorizationError, match=message) as caught:
        call(oauth, resource.url)

    assert caught.value.step == "authorization"
    assert not [f for f in authorization_server.token_requests if "code" in f]


def test_an_error_with_a_mismatched_iss_is_not_shown(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    tamper = lambda u: _edit_query(  # noqa: E731
        u, iss="https://evil.example", error="evil_error", code=None
    )
    with pytest.raises(AuthorizationError) as caught:
        call(make_oauth(handler=Approve(authorization_server, tamper=tamper)), resource.url)
    assert "evil_error" not in str(caught.value)


def test_a_revoked_refresh_token_in_a_headless_service_asks_for_a_login(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    later = [0.0]
    oauth = make_oauth(handler=Approve(authorization_server), clock=lambda: 1e10 * later[0])
    assert call(oauth, resource.url).ok
    authorization_server.revoke_all_refresh_tokens()
    oauth.handler = HeadlessHandler()
    later[0] = 1.0  # far future: the access token expired

    with pytest.raises(AuthorizationRequired) as caught:
        call(oauth, resource.url)

    assert "code_challenge=" in caught.value.authorization_url
    refreshes = [
        f for f in authorization_server.token_requests if f["grant_type"] == "refresh_token"
    ]
    assert len(refreshes) == 1  # tried once, refused (invalid_grant), not retried


def test_a_token_endpoint_answering_html_is_a_token_endpoint_error(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    wsgi_server: WsgiServerFactory,
) -> None:
    def gateway(environ: object, start_response: Callable[..., object]) -> list[bytes]:
        start_response("502 Bad Gateway", [("Content-Type", "text/html")])
        return [b"<html>bad gateway</html>"]

    broken = wsgi_server(gateway)  # type: ignore[arg-type]
    authorization_server.metadata_extra = {"token_endpoint": f"{broken}/token"}

    with pytest.raises(TokenEndpointError, match="HTTP 502 and no JSON object") as caught:
        call(make_oauth(handler=Approve(authorization_server)), resource.url)

    assert caught.value.step == "token"
    assert caught.value.error is None


def test_a_replayed_redirect_is_refused(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    first: list[str] = []

    def replay(location: str) -> str:
        first.append(location)
        return first[0]

    oauth = make_oauth(handler=Approve(authorization_server, tamper=replay))
    assert call(oauth, resource.url).ok
    oauth.logout(resource.url)
    with pytest.raises(AuthorizationError, match="state"):  # the old redirect, replayed
        call(oauth, resource.url)
    assert len([f for f in authorization_server.token_requests if "code" in f]) == 1


def test_no_secret_reaches_a_log_line_or_a_repr(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    locations: list[str] = []

    def keep(location: str) -> str:
        locations.append(location)
        return location

    later = [0.0]
    oauth = make_oauth(
        handler=Approve(authorization_server, tamper=keep), clock=lambda: 1e10 * later[0]
    )
    assert call(oauth, resource.url).ok
    later[0] = 1.0
    assert call(oauth, resource.url).ok  # a refresh too
    resource.required = {"/api": ["write"]}
    assert call(oauth, resource.url).ok  # a step-up
    authorization_server.revoke_all_refresh_tokens()
    later[0] = 2.0
    oauth.handler = HeadlessHandler()
    with pytest.raises(AuthorizationError) as caught:
        call(oauth, resource.url)

    secrets = {r.refresh_token for r in authorization_server.refresh.values()}
    secrets |= {a.removeprefix("Bearer ") for a in resource.authorizations if a}
    secrets |= {dict(parse_qsl(urlsplit(u).query))["code"] for u in locations}
    secrets |= {c.client_secret for c in authorization_server.clients.values() if c.client_secret}
    assert len(secrets) >= 5
    # Ours and the HTTP stack's records (the test authorization server, authlib, logs
    # tokens at DEBUG itself: it is the peer, not us).
    ours = [r.getMessage() for r in caplog.records if r.name.startswith(("a2a_sync", "urllib3"))]
    assert any(r.startswith("a2a_sync") for r in (x.name for x in caplog.records))
    text = "\n".join(
        [*ours, str(caught.value), repr(oauth), repr(oauth.store)]
        + [repr(b.token) for b in oauth._bindings.values()]
    )
    leaked = [s for s in secrets if s and re.search(re.escape(s), text)]
    assert not leaked
