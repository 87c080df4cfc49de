"""The official a2a-sdk 1.3 client, with its REST transport, drives our HTTP+JSON binding.

Each test runs an asyncio a2a-sdk client against our WSGI app on waitress over loopback.
The card handed to the client lists one ``HTTP+JSON`` interface (1.0, optionally with a
tenant, or 0.3), so every call goes through our REST routes; errors must come back as the
a2a-sdk error classes of the same A2A error. The scenarios shared with the other bindings
live in :mod:`tests.server._sdk_client_scenarios`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.types import AgentInterface
from tests.server._sdk_client_scenarios import *  # noqa: F403 - collected here
from tests.server._sdk_client_scenarios import client_for, run, sdk_card
from tests.server.agents import EchoAgent, card

pytestmark = pytest.mark.peer

TENANT = "acme"


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture(params=[("1.0", ""), ("1.0", TENANT), ("0.3", "")])
def served(request: pytest.FixtureRequest, agent: EchoAgent) -> Iterator[Any]:
    """Our app serving REST under /rest; the a2a-sdk card of it (1.0 with or without
    tenant; 0.3, which the a2a-sdk client speaks at ``/rest/v1/...``)."""
    from a2a.types import AgentInterface as SdkInterface

    revision, tenant = request.param
    ours = attrs.evolve(
        card(extended=True),
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1:1/rest",
                protocol_binding="HTTP+JSON",
                protocol_version="1.0",
                tenant=TENANT,
            )
        ],
    )
    app = A2AApplication(ours, agent, rest_path="/rest", extended_card=ours)
    with serve_in_thread(app) as url:
        yield sdk_card(
            SdkInterface(
                protocol_binding="HTTP+JSON",
                protocol_version=revision,
                url=url + "/rest",
                tenant=tenant,
            ),
            extended=True,
        )
        agent.release.set()


def test_extended_card_is_refused_to_anonymous_callers(served: Any) -> None:
    """The app has no authenticator: every caller is anonymous, so GET /extendedAgentCard
    answers 401 (as the JSON-RPC path does)."""
    from a2a.client import A2AClientError
    from a2a.types import GetExtendedAgentCardRequest

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            with pytest.raises(A2AClientError, match="401"):
                await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        finally:
            await client.close()

    run(scenario())
