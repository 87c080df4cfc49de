"""OAuth on the gRPC client binding (issue 19): UNAUTHENTICATED / PERMISSION_DENIED run
the same AuthRetry as the HTTP bindings' 401 / 403 — the credential answers the server's
``www-authenticate`` trailer (log in, step up), other credentials are refreshed once —
and the call is sent again. Real pieces: the suite's authlib authorization server, JWTs
verified against its JWKS, a2a_sync's GRPCServer with JWTBearerAuth, grpcio's channel.

The protected resource is the gRPC endpoint itself (``http://127.0.0.1:<port>``): it
publishes no RFC 9728 metadata (gRPC serves no HTTP), so the client finds the
authorization server through the card's ``oauth2MetadataUrl``.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import attrs
import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.auth.oauth import OAuth  # noqa: E402
from a2a_sync.auth.verify import JWTVerifier  # noqa: E402
from a2a_sync.client import A2AClient, BearerToken  # noqa: E402
from a2a_sync.errors import ConfigurationError, HTTPStatusError, TaskNotFound  # noqa: E402
from a2a_sync.server import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from a2a_sync.server.jwt_auth import JWTBearerAuth  # noqa: E402
from a2a_sync.types import AgentCard, AgentInterface, Task  # noqa: E402
from tests.auth.oauth.conftest import (  # noqa: E402 - the OAuth suite's fixtures
    Approve,
    authorization_server,
    make_oauth,
)
from tests.server.agents import EchoAgent, card  # noqa: E402
from tests.support.oauth_server import AuthorizationServerFixture, Client  # noqa: E402

__all__ = ["authorization_server", "make_oauth"]  # used as fixtures here


@attrs.frozen
class GRPCAgent:
    address: str
    card: AgentCard
    verifier: JWTVerifier

    @property
    def origin(self) -> str:
        return f"http://{self.address}"


def _candidate_port() -> int:
    """A port that was free a moment ago. The token audience must name the server's origin
    before the server exists, so the fixture binds it and tries again if another process
    took the port in between (grpcio refuses to share it: ``so_reuseport`` is 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _agent_on(
    port: int, authorization_server: AuthorizationServerFixture
) -> tuple[A2AApplication, AgentCard, JWTVerifier]:
    origin = f"http://127.0.0.1:{port}"
    verifier = JWTVerifier(
        issuer=authorization_server.issuer,
        audience=origin,
        jwks_uri=f"{authorization_server.issuer}/jwks",
        require_at_jwt=True,
    )
    auth = JWTBearerAuth(
        verifier,
        resource=origin,
        required_scopes=["read"],
        operation_scopes={"send_message": ["write"], "send_streaming_message": ["write"]},
    )
    interface = AgentInterface(
        url=f"127.0.0.1:{port}", protocol_binding="GRPC", protocol_version="1.0"
    )
    declared = auth.declare(
        attrs.evolve(card(), supported_interfaces=[interface]),
        authorization_url=f"{authorization_server.issuer}/authorize",
        token_url=f"{authorization_server.issuer}/token",
        metadata_url=authorization_server.metadata_url,
    )
    return A2AApplication(declared, EchoAgent(), authenticate=auth), declared, verifier


@pytest.fixture
def grpc_agent(authorization_server: AuthorizationServerFixture) -> Iterator[GRPCAgent]:
    for attempt in range(5):
        port = _candidate_port()
        app, declared, verifier = _agent_on(port, authorization_server)
        server = GRPCServer(app, port=port)
        try:
            server.start()
        except ConfigurationError:  # the port was taken in between: another one
            app.close()
            verifier.close()
            if attempt == 4:
                raise
            continue
        try:
            yield GRPCAgent(server.address, declared, verifier)
        finally:
            server.stop()
            app.close()
            verifier.close()
        return


def test_the_client_logs_in_and_steps_up_over_grpc(
    authorization_server: AuthorizationServerFixture,
    grpc_agent: GRPCAgent,
    make_oauth: Callable[..., OAuth],
) -> None:
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)
    with A2AClient.from_card(grpc_agent.card, bindings=["GRPC"], auth=oauth, timeout=30) as client:
        assert client.binding == "GRPC"
        with pytest.raises(TaskNotFound):  # UNAUTHENTICATED, login with scope "read"
            client.get_task("missing")
        task = client.send_message("hello")  # PERMISSION_DENIED: one step-up to "write"
    assert isinstance(task, Task)
    assert task.text == "echo: hello"
    scopes = [u.split("scope=")[1].split("&")[0] for u in approve.urls]
    assert scopes == ["read", "read+write"]


@attrs.define
class Rotating:
    """A bearer credential whose first token is stale; ``refresh`` fetches a valid one."""

    tokens: list[str]
    refreshed: int = 0

    def headers(self, card: AgentCard | None) -> dict[str, str]:
        return BearerToken(self.tokens[0]).headers(card)  # type: ignore[return-value]

    def refresh(self) -> None:
        self.refreshed += 1
        if len(self.tokens) > 1:
            self.tokens.pop(0)


def service_token(server: AuthorizationServerFixture, oauth: Callable[..., OAuth], url: str) -> str:
    server.add_client(
        Client("svc", "pw", "client_secret_basic", grant_types=["client_credentials"])
    )
    client = oauth(client_id="svc", client_secret="pw", grant="client_credentials", scopes=["read"])
    client.hint(url, metadata_url=server.metadata_url)
    client.login(url)
    header = client.authorization(url)
    assert header is not None
    return header.removeprefix("Bearer ")


def test_other_credentials_are_refreshed_once_after_unauthenticated(
    authorization_server: AuthorizationServerFixture,
    grpc_agent: GRPCAgent,
    make_oauth: Callable[..., OAuth],
) -> None:
    token = service_token(authorization_server, make_oauth, grpc_agent.origin)
    stale = Rotating(["not-a-jwt", token])
    with A2AClient.from_card(grpc_agent.card, bindings=["GRPC"], credentials=stale) as client:
        with pytest.raises(TaskNotFound):  # refused, refreshed, sent again: authorized
            client.get_task("missing")
        assert stale.refreshed == 1
        never = Rotating(["not-a-jwt"])
        with (
            A2AClient.from_card(grpc_agent.card, bindings=["GRPC"], credentials=never) as other,
            pytest.raises(HTTPStatusError) as refused,
        ):
            other.get_task("missing")
    assert refused.value.status_code == 401
    assert never.refreshed == 1  # once, not in a loop


@pytest.mark.parametrize("threaded", [True, False])
def test_a_stream_refused_for_its_credentials_is_opened_again(
    authorization_server: AuthorizationServerFixture,
    grpc_agent: GRPCAgent,
    make_oauth: Callable[..., OAuth],
    threaded: bool,
) -> None:
    """The first call of the client is a stream: UNAUTHENTICATED (login for "read"), then
    PERMISSION_DENIED (step-up to "write"), then the stream's events."""
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)
    with (
        A2AClient.from_card(
            grpc_agent.card, bindings=["GRPC"], auth=oauth, timeout=30, threaded_streams=threaded
        ) as client,
        client.stream_message("hello") as stream,
    ):
        events = list(stream)
    assert events
    assert stream.task is not None
    assert stream.task.text == "echo: hello"
    scopes = [u.split("scope=")[1].split("&")[0] for u in approve.urls]
    assert scopes == ["read", "read+write"]
