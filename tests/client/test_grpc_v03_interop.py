"""a2a_sync's client over A2A 0.3 gRPC (``a2a.v1.A2AService``) against a2a-sdk 1.3's
``CompatGrpcHandler``.

The scripted agent (tests/peers) serves a2a-sdk's 1.0 ``GrpcHandler`` and its 0.3
``CompatGrpcHandler`` on one gRPC port and lists ``GRPC`` 0.3 in its card (a2a-sdk's 0.3
view of the card names it in ``additionalInterfaces``). A client asked for 0.3 picks that
interface and speaks 0.3's service; errors are the same a2a_sync exception types as over
0.3 JSON-RPC (a2a-sdk's 0.3 server sends the error name in the status message, no
ErrorInfo). The scenarios shared with the other bindings live in
:mod:`tests.client._sdk_grpc_server_scenarios`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.a2a.card_codec import load_card  # noqa: E402
from a2a_sync.client import A2AClient  # noqa: E402
from tests.peers.fixtures import AgentProcess  # noqa: E402

from ._sdk_grpc_server_scenarios import *  # noqa: E402, F403 - collected here
from .conftest import PEER_TIMEOUT  # noqa: E402

pytestmark = pytest.mark.peer


@pytest.fixture
def client(a2a_sdk_grpc_agent: AgentProcess) -> Iterator[A2AClient]:
    with A2AClient.from_url(
        a2a_sdk_grpc_agent.url, bindings=["GRPC"], revisions=["0.3"], timeout=PEER_TIMEOUT
    ) as opened:
        yield opened


def test_the_card_selects_the_0_3_grpc_interface(client: A2AClient) -> None:
    assert (client.binding, client.revision) == ("GRPC", "0.3")
    assert client.url.startswith("127.0.0.1:")


def test_a_0_3_card_preferring_grpc_selects_it() -> None:
    """A card in 0.3's own layout: ``url`` + ``preferredTransport: GRPC``."""
    card = load_card(
        {
            "protocolVersion": "0.3.0",
            "name": "Legacy",
            "description": "a 0.3 agent",
            "version": "1",
            "url": "127.0.0.1:50051",
            "preferredTransport": "GRPC",
            "additionalInterfaces": [
                {"url": "127.0.0.1:50051", "transport": "GRPC"},
                {"url": "http://127.0.0.1:8000/", "transport": "JSONRPC"},
            ],
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    )
    with A2AClient.from_card(card) as chosen:
        assert (chosen.binding, chosen.revision, chosen.url) == ("GRPC", "0.3", "127.0.0.1:50051")
