"""``MCPConnection.http(url, auth=OAuth(...))`` against the official ``mcp`` 2.3.0 server
protected by its own auth settings (a token verifier checking the test authorization
server's JWTs, ``validate_token_resource=True``): the peer decides whether our token is
acceptable."""

from __future__ import annotations

import io
import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
import requests
import uvicorn
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from a2a_sync.auth.oauth import OAuth
from a2a_sync.cli.commands import main
from a2a_sync.errors import AuthorizationError
from a2a_sync.mcp import MCPConnection
from tests.auth.oauth.conftest import Approve
from tests.support.oauth_server import AuthorizationServerFixture, Client
from tests.support.polling import wait_until

pytestmark = pytest.mark.peer

START_TIMEOUT = 30.0


class Verifier:
    """The official server's TokenVerifier: our test AS's RS256 JWTs."""

    def __init__(self, server: AuthorizationServerFixture, resource: str) -> None:
        self.server = server
        self.resource = resource
        self.seen: list[str] = []

    async def verify_token(self, token: str) -> AccessToken | None:
        self.seen.append("token")
        try:
            decoded = jwt.decode(token, self.server.key)
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.server.issuer},
                exp={"essential": True},
            ).validate(decoded.claims)
        except (JoseError, ValueError):
            return None
        claims = decoded.claims
        return AccessToken(
            token=token,
            client_id=str(claims["client_id"]),
            scopes=str(claims.get("scope") or "").split(),
            expires_at=int(claims["exp"]),
            resource=str(claims.get("aud")),
            subject=str(claims.get("sub")),
            claims={"iss": claims["iss"]},
        )


@pytest.fixture
def protected_mcp(
    authorization_server: AuthorizationServerFixture,
) -> Iterator[tuple[str, Verifier]]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    verifier = Verifier(authorization_server, url)
    server = MCPServer(
        "protected",
        token_verifier=verifier,
        auth=AuthSettings(
            issuer_url=authorization_server.issuer,  # type: ignore[arg-type]
            resource_server_url=url,  # type: ignore[arg-type]
            required_scopes=["read"],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    app: Any = server.streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    runner = uvicorn.Server(config)
    thread = threading.Thread(
        target=runner.run, kwargs={"sockets": [sock]}, name="a2a-sync-test-mcp-oauth", daemon=True
    )
    thread.start()
    # uvicorn offers no event: poll, bounded
    wait_until(lambda: runner.started or not thread.is_alive(), "uvicorn to start", START_TIMEOUT)
    assert runner.started, "uvicorn exited"
    try:
        yield url, verifier
    finally:
        runner.should_exit = True
        thread.join(START_TIMEOUT)
        sock.close()


def test_mcp_connection_logs_in_with_pkce_against_the_official_protected_server(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, verifier = protected_mcp
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    with MCPConnection.http(url, auth=oauth) as conn:
        result = conn.client().call_tool("add", {"a": 2, "b": 3})

    assert result.text == "5"
    assert len(approve.urls) == 1  # one login for the whole connection
    assert verifier.seen  # the peer checked our token
    paths = authorization_server.paths
    assert paths.index("/.well-known/oauth-authorization-server/tenant1") < paths.index(
        "/tenant1/token"
    )


def test_client_credentials_against_the_official_protected_server(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, _ = protected_mcp
    authorization_server.add_client(
        Client("svc", "secret", "client_secret_basic", grant_types=["client_credentials"])
    )
    oauth = make_oauth(client_id="svc", client_secret="secret", grant="client_credentials")

    with MCPConnection.http(url, auth=oauth) as conn:
        assert conn.client().call_tool("add", {"a": 1, "b": 1}).text == "2"


def test_a_token_for_another_resource_is_refused_by_the_peer_and_the_loop_is_bounded(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, _ = protected_mcp
    authorization_server.audience_override = "http://127.0.0.1:1/elsewhere"
    oauth = make_oauth(handler=Approve(authorization_server))

    with pytest.raises(AuthorizationError) as caught, MCPConnection.http(url, auth=oauth):
        pass

    assert caught.value.step == "resource"
    assert "just issued" in str(caught.value)


def test_cli_mcp_tools_with_oauth_logs_in_once_and_reuses_the_stored_token(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    url, _ = protected_mcp
    opened: list[str] = []

    def open_url(target: str) -> bool:
        opened.append(target)
        assert requests.get(target, timeout=10).status_code == 200
        return True

    monkeypatch.setattr("webbrowser.open", open_url)
    argv = ["mcp", "tools", "--url", url, "--oauth", "--token-dir", str(tmp_path), "--json"]
    for _ in range(2):
        out = io.StringIO()
        assert main(argv, stdout=out) == 0
        assert [tool["name"] for tool in json.loads(out.getvalue())] == ["add"]

    assert len(opened) == 1


def test_a_token_the_server_stops_accepting_is_refreshed_mid_session(
    authorization_server: AuthorizationServerFixture,
    protected_mcp: tuple[str, Verifier],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, _ = protected_mcp
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    with MCPConnection.http(url, auth=oauth) as conn:
        client = conn.client()
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
        authorization_server.key = RSAKey.generate_key(2048, parameters={"kid": "k2"})
        assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"  # 401, refresh, again

    assert len(approve.urls) == 1  # no second login: the refresh token did it
    grants = [form["grant_type"] for form in authorization_server.token_requests]
    assert grants == ["authorization_code", "refresh_token"]
