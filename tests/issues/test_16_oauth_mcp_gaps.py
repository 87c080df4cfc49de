"""Issue 16 gaps, items 2 and 3 (MCP):

* the GET listener (server-initiated stream) and the legacy HTTP+SSE transport answer a
  401 the way the POST path does (``Endpoint.challenged``: a new token, once per
  refusal, bounded by the authorization);
* an interactive first login runs before the ``server/discover`` probe, so a person
  slower than the probe's wait does not push ``era="auto"`` into the legacy era.

The peer is the official ``mcp`` 2.3.0 server with its own auth settings; its token
verifier stops accepting the first token after a given number of uses, so a refusal
lands on exactly the request under test (the order of a handshake's requests is fixed).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("mcp")
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer

from a2a_sync.auth.oauth import OAuth
from a2a_sync.errors import DeadlineExceeded
from a2a_sync.mcp import MCPConnection
from tests.auth.oauth.conftest import Approve, authorization_server, make_oauth
from tests.auth.oauth.test_mcp_peer import START_TIMEOUT, Verifier
from tests.support.oauth_server import AuthorizationServerFixture, Client
from tests.support.polling import wait_until

pytestmark = pytest.mark.peer
__all__ = ["authorization_server", "make_oauth"]  # used as fixtures here

WAIT = 30.0


class ExpiringVerifier(Verifier):
    """Accepts the first token ``uses`` times, then refuses it (as a server does with a
    revoked or expired token); any later token is checked normally."""

    def __init__(self, server: AuthorizationServerFixture, resource: str, uses: int) -> None:
        super().__init__(server, resource)
        self.uses = uses
        self.tokens: list[str] = []
        self.new_token = threading.Event()

    async def verify_token(self, token: str) -> AccessToken | None:
        self.tokens.append(token)
        first = self.tokens[0]
        if token == first and self.tokens.count(first) > self.uses:
            return None
        if token != first:
            self.new_token.set()
        return await super().verify_token(token)


@pytest.fixture
def serve_mcp(
    authorization_server: AuthorizationServerFixture,
) -> Iterator[Callable[[str, int], tuple[str, ExpiringVerifier]]]:
    """``serve(kind, uses)``: the official server over ``"streamable"`` (``/mcp``) or
    ``"sse"`` (``/sse``), its first token accepted ``uses`` times."""
    running: list[tuple[uvicorn.Server, threading.Thread, socket.socket]] = []

    def serve(kind: str, uses: int) -> tuple[str, ExpiringVerifier]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        url = f"http://127.0.0.1:{port}/{'mcp' if kind == 'streamable' else 'sse'}"
        verifier = ExpiringVerifier(authorization_server, url, uses)
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

        app: Any = server.streamable_http_app() if kind == "streamable" else server.sse_app()
        runner = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(
            target=runner.run,
            kwargs={"sockets": [sock]},
            name="a2a-sync-test-mcp-oauth",
            daemon=True,
        )
        thread.start()
        running.append((runner, thread, sock))
        # uvicorn offers no event: poll, bounded
        wait_until(
            lambda: runner.started or not thread.is_alive(), "uvicorn to start", START_TIMEOUT
        )
        assert runner.started, "uvicorn exited"
        return url, verifier

    yield serve
    for runner, thread, sock in running:
        runner.should_exit = True
        thread.join(START_TIMEOUT)
        sock.close()


def machine_oauth(
    authorization_server: AuthorizationServerFixture, make_oauth: Callable[..., OAuth]
) -> OAuth:
    authorization_server.add_client(
        Client("svc", "secret", "client_secret_basic", grant_types=["client_credentials"])
    )
    return make_oauth(client_id="svc", client_secret="secret", grant="client_credentials")


def test_the_get_listener_answers_a_401_with_a_new_token(
    authorization_server: AuthorizationServerFixture,
    serve_mcp: Callable[[str, int], tuple[str, ExpiringVerifier]],
    make_oauth: Callable[..., OAuth],
) -> None:
    # Legacy era: initialize and notifications/initialized use the first token, then
    # the GET listener opens with it and is refused.
    url, verifier = serve_mcp("streamable", 2)
    oauth = machine_oauth(authorization_server, make_oauth)

    with MCPConnection.http(url, auth=oauth, era="legacy") as conn:
        # No request of ours runs now: only the listener can present a new token.
        assert verifier.new_token.wait(WAIT), "the GET listener gave up on its 401"
        assert conn.client().call_tool("add", {"a": 2, "b": 3}).text == "5"

    assert len(authorization_server.token_requests) == 2


def test_the_legacy_sse_transport_logs_in_on_its_get_and_renews_on_a_post(
    authorization_server: AuthorizationServerFixture,
    serve_mcp: Callable[[str, int], tuple[str, ExpiringVerifier]],
    make_oauth: Callable[..., OAuth],
) -> None:
    # GET /sse, initialize, notifications/initialized: the first token; the tool call's
    # POST is refused and sent again with a new one.
    url, verifier = serve_mcp("sse", 3)
    oauth = machine_oauth(authorization_server, make_oauth)

    with MCPConnection.http(url, auth=oauth, transport="sse") as conn:
        assert conn.client().call_tool("add", {"a": 1, "b": 1}).text == "2"

    assert verifier.new_token.is_set()
    assert len(authorization_server.token_requests) == 2


class SlowPerson(Approve):
    """The browser step of a person who takes ``think`` seconds to approve (longer
    than the probe's wait): the login must not run inside the probe."""

    def __init__(self, server: AuthorizationServerFixture, think: float) -> None:
        super().__init__(server)
        self.think = think
        self.never = threading.Event()  # nobody sets it: the person's thinking time

    def authorize(self, build: Callable[[str], str]) -> str:
        self.never.wait(self.think)
        return super().authorize(build)


def test_auto_keeps_the_modern_era_when_the_first_login_outlasts_the_probe(
    authorization_server: AuthorizationServerFixture,
    serve_mcp: Callable[[str, int], tuple[str, ExpiringVerifier]],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, _ = serve_mcp("streamable", 1000)
    person = SlowPerson(authorization_server, think=6.0)
    oauth = make_oauth(handler=person)

    with MCPConnection.http(url, auth=oauth, era="auto", discover_timeout=4.0) as conn:
        assert conn.era == "modern"
        assert conn.client().call_tool("add", {"a": 2, "b": 2}).text == "4"

    assert len(person.urls) == 1  # one login, before the probe


def test_with_a_timeout_given_the_login_counts_against_it(
    authorization_server: AuthorizationServerFixture,
    serve_mcp: Callable[[str, int], tuple[str, ExpiringVerifier]],
    make_oauth: Callable[..., OAuth],
) -> None:
    url, _ = serve_mcp("streamable", 1000)
    oauth = make_oauth(handler=SlowPerson(authorization_server, think=4.0))

    with (
        pytest.raises(DeadlineExceeded, match="OAuth login"),
        MCPConnection.http(url, auth=oauth, handshake_timeout=2.0),
    ):
        pass
