"""Fixtures for the OAuth tests: the authlib test authorization server, a protected
resource checking its tokens, a browser step that approves by following the redirect
with requests, and ``call`` — what an HTTP transport does with a ChallengeAuth."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.auth.oauth import OAuth
from a2a_sync.auth.verify import JWTVerifier
from a2a_sync.server import A2AApplication
from a2a_sync.server.jwt_auth import JWTBearerAuth
from tests.server.agents import EchoAgent, card
from tests.support.fixtures import WsgiServerFactory
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture, serve_authorization_server


class Approve:
    """The browser step of a test: build the URL for a loopback redirect URI, follow it
    with requests (the server approves at once) and return where it redirects."""

    def __init__(
        self,
        server: AuthorizationServerFixture,
        tamper: Callable[[str], str] | None = None,
        redirect_uri: str = "http://127.0.0.1:8765/callback",
    ) -> None:
        self.server = server
        self.tamper = tamper
        self.redirect_uri = redirect_uri
        self.urls: list[str] = []

    def authorize(self, build: Callable[[str], str]) -> str:
        url = build(self.redirect_uri)
        self.urls.append(url)
        location = self.server.approve(url)
        return self.tamper(location) if self.tamper else location


def call(oauth: OAuth, url: str, method: str = "GET") -> requests.Response:
    """Send a request the way the transports do: header from ``authorization``, and on
    401/403 ask ``challenged`` whether to send it again."""
    attempt = 0
    while True:
        header = oauth.authorization(url)
        headers = {"Authorization": header} if header else {}
        response = requests.request(method, url, headers=headers, timeout=10)
        if response.status_code in (401, 403):
            attempt += 1
            challenge = response.headers.get("WWW-Authenticate")
            if oauth.challenged(url, response.status_code, challenge, header, attempt):
                continue
        return response


@pytest.fixture
def authorization_server() -> Iterator[AuthorizationServerFixture]:
    with serve_authorization_server() as server:
        yield server


@pytest.fixture
def resource(
    authorization_server: AuthorizationServerFixture, wsgi_server: WsgiServerFactory
) -> ProtectedResource:
    protected = ProtectedResource(authorization_server)
    protected.base = wsgi_server(protected)
    return protected


@pytest.fixture
def make_oauth() -> Iterator[Callable[..., OAuth]]:
    made: list[OAuth] = []

    def make(**kwargs: object) -> OAuth:
        oauth = OAuth(**kwargs)  # type: ignore[arg-type]
        made.append(oauth)
        return oauth

    yield make
    for oauth in made:
        oauth.close()


@attrs.define
class Agent:
    base: str
    auth: JWTBearerAuth
    app: A2AApplication

    @property
    def rpc(self) -> str:
        return f"{self.base}/a2a"


@pytest.fixture
def agent(
    authorization_server: AuthorizationServerFixture, wsgi_server: WsgiServerFactory
) -> Iterator[Agent]:
    holder: dict[str, Any] = {}

    def late(environ: Any, start_response: Callable[..., Any]) -> Iterable[bytes]:
        return holder["app"](environ, start_response)  # type: ignore[no-any-return]

    base = wsgi_server(late)
    verifier = JWTVerifier(
        issuer=authorization_server.issuer,
        audience=f"{base}/a2a",
        jwks_uri=f"{authorization_server.issuer}/jwks",
        require_at_jwt=True,
    )
    auth = JWTBearerAuth(
        verifier,
        resource=f"{base}/a2a",
        required_scopes=["read"],
        operation_scopes={"send_message": ["write"]},
    )
    declared = auth.declare(
        attrs.evolve(card(), supported_interfaces=[]),
        authorization_url=f"{authorization_server.issuer}/authorize",
        token_url=f"{authorization_server.issuer}/token",
        metadata_url=authorization_server.metadata_url,
    )
    app = A2AApplication(declared, EchoAgent(), authenticate=auth, rpc_path="/a2a")
    holder["app"] = app
    try:
        yield Agent(base, auth, app)
    finally:
        app.close()
        verifier.close()
