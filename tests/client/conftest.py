"""Fixtures of the A2A client suite: the a2a-sdk peer, clients on both revisions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2a_sync.client import A2AClient, BearerToken
from tests.peers.fixtures import AgentProcess

#: Per-call limits for peer tests: loopback answers take milliseconds.
PEER_TIMEOUT = 10.0


@pytest.fixture(params=["1.0", "0.3"])
def revision(request: pytest.FixtureRequest) -> str:
    """Each revision the client speaks; tests using it run once per revision."""
    value: str = request.param
    return value


@pytest.fixture
def peer_client(a2a_sdk_agent: AgentProcess, revision: str) -> Iterator[A2AClient]:
    """A client of the a2a-sdk agent, discovered from its card, pinned to ``revision``."""
    with A2AClient.from_url(
        a2a_sdk_agent.url,
        revisions=(revision,),  # type: ignore[arg-type]
        credentials=BearerToken(a2a_sdk_agent.token),
        timeout=PEER_TIMEOUT,
    ) as client:
        assert client.revision == revision
        yield client
