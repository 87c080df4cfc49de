"""The extended card is signed like the public card (issue 20's verification, server side).

With ``sign_card`` configured, an a2a_sync server signed the public card but served the
extended card unsigned, so ``A2AClient.from_url(..., verify_card=...)`` could read the
public card and then failed ``get_extended_card()`` with a SignatureError. Real client,
real server, over each binding that answers GetExtendedAgentCard.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import attrs
import pytest

from a2a_sync import signing
from a2a_sync.client import A2AClient, BearerToken
from a2a_sync.server import A2AApplication, BearerTokens
from a2a_sync.server.serving import grpc_server, serve_in_thread
from a2a_sync.testing import FakeAgent, agent_card
from a2a_sync.types import AgentCapabilities, AgentCard

TOKEN = "extended-card-token"
KEY = b"s" * 32
KID = "card-key"


@pytest.fixture
def verifier() -> Callable[[Any], AgentCard]:
    return signing.card_verifier(lambda kid, jku: KEY if kid == KID else None, algorithms=["HS256"])


def _application() -> A2AApplication:
    public = attrs.evolve(
        agent_card(),
        supported_interfaces=[],  # derived per request, as serve_in_thread users do
        capabilities=AgentCapabilities(streaming=True, extended_agent_card=True),
    )
    extended = attrs.evolve(public, description="for authenticated callers")  # unsigned
    return A2AApplication(
        public,
        FakeAgent(),
        authenticate=BearerTokens({TOKEN: "alice"}),
        extended_card=extended,
        sign_card=functools.partial(signing.sign_card, key=KEY, alg="HS256", kid=KID),
        rest_path="/rest",
    )


@pytest.fixture(params=["JSONRPC", "HTTP+JSON", "GRPC"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, list[str]]]:
    """The base URL, the binding, and the origins the client may send the token to."""
    binding: str = request.param
    if binding == "GRPC":
        pytest.importorskip("grpc")
    app = _application()
    with ExitStack() as stack:
        stack.callback(app.close, 1.0)
        trusted = []
        if binding == "GRPC":
            grpc = stack.enter_context(grpc_server(app))
            trusted.append(f"http://127.0.0.1:{grpc.port}")
        url = stack.enter_context(serve_in_thread(app))
        yield url, binding, trusted


def test_a_verifying_client_reads_the_extended_card(
    served: tuple[str, str, list[str]], verifier: Callable[[Any], AgentCard]
) -> None:
    url, binding, trusted = served
    with A2AClient.from_url(
        url,
        verify_card=verifier,
        credentials=BearerToken(TOKEN),
        bindings=[binding],
        trusted_origins=trusted or None,
    ) as client:
        extended = client.get_extended_card()
    assert extended.description == "for authenticated callers"
    # The card is completed with the server's interfaces before it is signed (what the
    # verifier returns is exactly what the signature covers).
    assert extended.supported_interfaces
    assert any(i.protocol_binding == binding for i in extended.supported_interfaces)


def test_without_a_signer_the_extended_card_is_served_as_given() -> None:
    app = _application()
    unsigned = A2AApplication(
        app.card,
        FakeAgent(),
        authenticate=BearerTokens({TOKEN: "alice"}),
        extended_card=attrs.evolve(app.card, description="plain"),
    )
    app.close(1.0)
    with serve_in_thread(unsigned) as url:
        with A2AClient.from_url(url, credentials=BearerToken(TOKEN)) as client:
            extended = client.get_extended_card()
        unsigned.close(1.0)
    assert extended.description == "plain"
    assert not extended.signatures
