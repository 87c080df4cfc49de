"""The official a2a-sdk 1.3 client, with its gRPC transport, drives our gRPC binding.

Each test runs an asyncio a2a-sdk client (``grpc.aio`` channel) against our
:class:`~a2a_sync.server.bindings.grpc.GRPCServer` on loopback. The a2a-sdk card lists one
``GRPC`` 1.0 interface at our ``host:port``; errors must come back as the a2a-sdk error
classes of the same A2A error (a2a-sdk reads the ErrorInfo reason of
``grpc-status-details-bin``). Our app and a2a-sdk's generated code share the process:
our ``lf.a2a.v1`` lives in a private descriptor pool. The scenarios shared with the other
bindings live in :mod:`tests.server._sdk_client_scenarios`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.auth import BearerTokens  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from a2a_sync.server.serving import serve_in_thread  # noqa: E402
from tests.server._sdk_client_scenarios import *  # noqa: E402, F403 - collected here
from tests.server._sdk_client_scenarios import client_for, run, sdk_card  # noqa: E402
from tests.server.agents import WAIT, EchoAgent, card  # noqa: E402

pytestmark = pytest.mark.peer

TOKEN = "grpc-secret-token"


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture
def app(agent: EchoAgent) -> Iterator[A2AApplication]:
    ours = attrs.evolve(card(extended=True), supported_interfaces=[])
    application = A2AApplication(
        ours,
        agent,
        extended_card=attrs.evolve(ours, name="Extended agent"),
        authenticate=BearerTokens({TOKEN: "alice"}),
        allow_anonymous=True,
    )
    yield application
    agent.release.set()
    application.close(WAIT)


@pytest.fixture
def server(app: A2AApplication) -> Iterator[GRPCServer]:
    with GRPCServer(app) as running:
        yield running


@pytest.fixture
def served(server: GRPCServer) -> Any:
    from a2a.types import AgentInterface

    return sdk_card(
        AgentInterface(protocol_binding="GRPC", protocol_version="1.0", url=server.address),
        extended=True,
    )


def test_the_card_lists_the_grpc_interface(app: A2AApplication, server: GRPCServer) -> None:
    with serve_in_thread(app) as url:
        from a2a_sync.client import A2AClient

        with A2AClient.from_url(url, bindings=["GRPC"]) as client:
            assert (client.binding, client.url) == ("GRPC", server.address)
            assert client.send_message("over the card").state.value == "completed"


def test_extended_card_needs_the_bearer_token_in_metadata(served: Any) -> None:
    from a2a.client import A2AClientError, ClientCallContext
    from a2a.types import GetExtendedAgentCardRequest

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            with pytest.raises(A2AClientError):
                await client.get_extended_agent_card(GetExtendedAgentCardRequest())
            context = ClientCallContext(service_parameters={"Authorization": f"Bearer {TOKEN}"})
            extended = await client.get_extended_agent_card(
                GetExtendedAgentCardRequest(), context=context
            )
            assert extended.name == "Extended agent"
        finally:
            await client.close()

    run(scenario())
