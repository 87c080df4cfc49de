"""The official a2a-sdk 1.3 client drives our server, on A2A 1.0 and on 0.3.

Each test runs an asyncio client (a2a-sdk has no synchronous one) against our WSGI app
on waitress over loopback. The card handed to the client lists one interface, so the
client speaks exactly the revision under test. The scenarios shared with the REST and
gRPC bindings live in :mod:`tests.server._sdk_client_scenarios`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from tests.server._sdk_client_scenarios import *  # noqa: F403 - collected here
from tests.server._sdk_client_scenarios import collect, run, sdk_card, user
from tests.server.agents import EchoAgent, card

pytestmark = pytest.mark.peer

REVISIONS = ["1.0", "0.3"]


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture(params=REVISIONS)
def served(request: pytest.FixtureRequest, agent: EchoAgent) -> Iterator[Any]:
    from a2a.types import AgentInterface

    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent)
    with serve_in_thread(app) as url:
        yield sdk_card(
            AgentInterface(
                protocol_binding="JSONRPC", protocol_version=request.param, url=url + "/"
            )
        )
        agent.release.set()


def test_card_resolution_by_url(served: Any) -> None:
    """The a2a-sdk client reads our card from the well-known path and picks 1.0."""
    from a2a.client import ClientConfig, create_client

    url = served.supported_interfaces[0].url.rstrip("/")

    async def scenario() -> None:
        client = await create_client(url, client_config=ClientConfig(streaming=False))
        try:
            events = await collect(client, user("hello"))
            assert events[0].task.artifacts[0].parts[0].text == "echo: hello"
        finally:
            await client.close()

    run(scenario())
