"""A2A 1.0 Agent Card signing (§8.4), checked across implementations: a card a2a_sync's
server signs must verify with a2a-sdk 1.3.0's verifier, and a2a_sync's client must verify
a card a2a-sdk's signer signed (and refuse it once altered). Both need a2a-sdk: ``peer``.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.a2a.card_codec import dump_card
from a2a_sync.client import A2AClient
from a2a_sync.errors import SignatureError
from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.signing import card_verifier, sign_card
from a2a_sync.types import AgentCard
from tests.server.agents import card
from tests.support.servers import RecordedRequest, ScriptedServer, respond_json

from .a2a_wire import WAIT
from .agents import ConformanceAgent

pytestmark = pytest.mark.peer
requirement = pytest.mark.requirement

SECRET = b"conformance-signing-secret-of-32+bytes!"
ALG = "HS256"


def keys(kid: str | None, jku: str | None) -> bytes:
    assert kid == "k1"
    return SECRET


@pytest.fixture(scope="module")
def signed_server(agent: ConformanceAgent) -> Iterator[str]:
    def signer(unsigned: AgentCard) -> AgentCard:
        return sign_card(unsigned, SECRET, alg=ALG, kid="k1")

    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, sign_card=signer)
    with serve_in_thread(app) as url:
        yield url + "/"


def served(url: str) -> dict[str, Any]:
    response = requests.get(url + ".well-known/agent-card.json", timeout=WAIT)
    assert response.status_code == 200
    return dict(response.json())


@requirement("a2a-1.0-§8.4.1-signature-over-canonical-card")
def test_the_served_signature_verifies_with_a2a_sdk(signed_server: str) -> None:
    """a2a-sdk rebuilds the canonical form (defaults dropped, ``signatures`` left out,
    RFC 8785) from the served card on its own and checks the JWS against it."""
    from a2a.client.card_resolver import parse_agent_card
    from a2a.utils.signing import create_signature_verifier

    document = served(signed_server)
    assert document["signatures"]
    verify = create_signature_verifier(lambda kid, jku: SECRET, [ALG])
    verify(parse_agent_card(document))  # raises when the signature does not verify
    tampered = {**document, "description": document["description"] + "!"}
    with pytest.raises(Exception, match=r"(?i)signature"):
        verify(parse_agent_card(tampered))


@requirement("a2a-1.0-§8.4.2-protected-header-alg-typ-kid")
def test_the_protected_header_names_alg_typ_and_kid(signed_server: str) -> None:
    protected = served(signed_server)["signatures"][0]["protected"]
    header = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    assert (header["alg"], header["kid"]) == (ALG, "k1")
    assert header.get("typ") == "JOSE"


class CardHost:
    """Serves a card document (set by the test) at the well-known path."""

    def __init__(self) -> None:
        self.document: dict[str, Any] = {}
        self.server = ScriptedServer(self.handle)

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        respond_json(sock, self.document)


def sdk_signed_card(url: str) -> dict[str, Any]:
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.types import a2a_pb2
    from a2a.utils.signing import create_agent_card_signer
    from google.protobuf.json_format import ParseDict  # type: ignore[import-untyped]

    unsigned = dump_card(card(url), "1.0")
    proto = ParseDict(unsigned, a2a_pb2.AgentCard())
    signer = create_agent_card_signer(SECRET, {"alg": ALG, "kid": "k1", "typ": "JOSE", "jku": None})
    return dict(json.loads(json.dumps(agent_card_to_dict(signer(proto)))))


@requirement("a2a-1.0-§8.4.3-client-verifies-signature")
def test_the_client_verifies_a_card_signed_elsewhere_and_refuses_it_altered() -> None:
    host = CardHost()
    with host.server:
        host.document = sdk_signed_card(host.server.url + "/")
        verifier = card_verifier(keys, algorithms=[ALG])
        with A2AClient.from_url(host.server.url, verify_card=verifier) as client:
            assert client.card is not None
            assert client.card.name == host.document["name"]
        host.document = {**host.document, "name": "Someone else"}
        with pytest.raises(SignatureError):
            A2AClient.from_url(host.server.url, verify_card=verifier)
