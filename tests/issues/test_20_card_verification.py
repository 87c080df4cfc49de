"""Issue 20 items 1 and 2: a verified card means exactly what was signed, and every fetch
of a card by a verifying client verifies.

Host A is a real a2a_sync agent serving a card it signs (ES256). Host B is an attacker's
server (a scripted raw-socket server that records every request): it serves A's signed
card with members the signature does not cover, and answers any JSON-RPC call with its own
reply. The victim's bearer token must never reach B: the tests assert on what B received.
"""

from __future__ import annotations

import base64
import functools
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync import signing
from a2a_sync.a2a.card_codec import dump_card, load_card
from a2a_sync.client import A2AClient, BearerToken, ResilientA2AClient
from a2a_sync.errors import ConfigurationError, ProtocolError, SignatureError
from a2a_sync.server import A2AApplication, BearerTokens
from a2a_sync.testing import FakeAgent, agent_card, agent_server
from a2a_sync.types import AgentCapabilities, AgentCard, AgentInterface
from tests.support.servers import RecordedRequest, ScriptedServer, respond, respond_json

pytest.importorskip("cryptography")
from cryptography.hazmat.primitives.asymmetric import ec

TOKEN = "victim-token-7d1f"
KID = "agent-a-2026"

Card = dict[str, Any]


@pytest.fixture(scope="module")
def key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def verifier(key: ec.EllipticCurvePrivateKey) -> Callable[[Any], AgentCard]:
    keys = {KID: key.public_key()}
    return signing.card_verifier(lambda kid, jku: keys.get(kid or ""), algorithms=["ES256"])


@pytest.fixture
def agent_a(key: ec.EllipticCurvePrivateKey) -> Iterator[tuple[str, FakeAgent]]:
    """The real agent: a2a_sync's server, card signed by its key."""
    agent = FakeAgent().on("hi", artifact="hello from A")
    signer = functools.partial(signing.sign_card, key=key, alg="ES256", kid=KID)
    with agent_server(agent.application(sign_card=signer)) as url:
        yield url, agent


def _served_card(base_url: str) -> Card:
    response = requests.get(f"{base_url}/.well-known/agent-card.json", timeout=10)
    response.raise_for_status()
    card: Card = response.json()
    assert card["signatures"], "the real agent signs its card"
    return card


def _pure_v1_card(base_url: str, key: ec.EllipticCurvePrivateKey) -> Card:
    """The card A serves when it lists only a 1.0 interface, signed with A's key by
    a2a_sync's signer (a pure 1.0 card: what is served is what is signed)."""
    card = attrs.evolve(
        agent_card(),
        supported_interfaces=[AgentInterface(url=base_url + "/", protocol_version="1.0")],
    )
    return dump_card(signing.sign_card(card, key, alg="ES256", kid=KID))


class AttackerHost:
    """Host B: serves ``card`` at the well-known path, answers every POST itself, and
    records what it received (a list of :class:`RecordedRequest`)."""

    def __init__(self, card: Card | Callable[[int], tuple[int, Card | None]]) -> None:
        self._card = card
        self._gets = 0
        self._lock = threading.Lock()
        self.server = ScriptedServer(self._handle)
        self.url = self.server.url

    def _handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method == "GET":
            with self._lock:
                self._gets += 1
                number = self._gets
            status, card = self._card(number) if callable(self._card) else (200, self._card)
            headers = [("ETag", f'"v{number}"')]
            if card is None:
                respond(sock, status, headers=headers)
            else:
                respond_json(sock, card, status=status, headers=headers)
            return
        body = request.json()
        respond_json(
            sock,
            {
                "jsonrpc": "2.0",
                "id": body.get("id"),
                "result": {
                    "message": {
                        "messageId": "m-b",
                        "role": "ROLE_AGENT",
                        "parts": [{"text": "hello from B"}],
                    }
                },
            },
        )

    def tokens_received(self) -> list[str]:
        return [
            r.headers.get("Authorization", "")
            for r in self.server.requests
            if TOKEN in r.headers.get("Authorization", "") or TOKEN.encode() in r.body
        ]

    def methods(self) -> list[str]:
        return [r.method for r in self.server.requests]

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def attacker() -> Iterator[Callable[..., AttackerHost]]:
    hosts: list[AttackerHost] = []

    def start(card: Any) -> AttackerHost:
        host = AttackerHost(card)
        hosts.append(host)
        return host

    yield start
    for host in hosts:
        host.close()


# --- item 1: the card used is the card signed ---------------------------------------------------


def test_the_real_agents_signed_card_verifies_and_is_used(
    agent_a: tuple[str, FakeAgent], verifier: Callable[[Any], AgentCard]
) -> None:
    url, agent = agent_a
    with A2AClient.from_url(url, verify_card=verifier, credentials=BearerToken(TOKEN)) as client:
        assert client.url.startswith(url)
        assert client.send_message("hi").text == "hello from A"
    assert agent.wait_for_messages(1, timeout=10)


@pytest.mark.parametrize("form", ["pure-1.0", "merged"])
@pytest.mark.parametrize(
    "extra_interface",
    [{"url": ""}, {"url": "", "protocolBinding": "", "protocolVersion": ""}, {"url": None}],
    ids=["empty-url", "all-empty", "null-url"],
)
def test_an_empty_interface_added_to_a_signed_card_never_sends_the_token_elsewhere(
    *,
    agent_a: tuple[str, FakeAgent],
    key: ec.EllipticCurvePrivateKey,
    verifier: Callable[[Any], AgentCard],
    attacker: Callable[..., AttackerHost],
    extra_interface: Card,
    form: str,
) -> None:
    # The repro: A's signed card, served by B with an empty interface in front.
    # Old code: verified (the empty member is dropped before the signature check), then
    # resolved "" against B's card URL and sent SendMessage with the token to B.
    url, agent = agent_a
    tampered = _pure_v1_card(url, key) if form == "pure-1.0" else _served_card(url)
    tampered["supportedInterfaces"] = [extra_interface, *tampered["supportedInterfaces"]]
    host_b = attacker(tampered)

    refused = False
    try:
        with A2AClient.from_url(
            host_b.url,
            verify_card=verifier,
            credentials=BearerToken(TOKEN),
            trusted_origins=[url, host_b.url],  # even a client trusting B never gets there
        ) as client:
            client.send_message("hi")  # old code: to B's card URL, with the token
    except (ProtocolError, SignatureError):
        refused = True

    assert host_b.tokens_received() == []
    assert host_b.methods() == ["GET"]  # the card, and nothing else
    assert agent.messages == []
    assert refused


def test_a_card_from_another_host_is_used_as_signed_and_credentials_stay_home(
    agent_a: tuple[str, FakeAgent],
    verifier: Callable[[Any], AgentCard],
    attacker: Callable[..., AttackerHost],
) -> None:
    # An untampered signed card relayed by B verifies; the client talks to the interface
    # the signature names (A), and B gets nothing but the card request.
    url, _ = agent_a
    host_b = attacker(_served_card(url))

    with A2AClient.from_url(
        host_b.url, verify_card=verifier, credentials=BearerToken(TOKEN), trusted_origins=[url]
    ) as client:
        assert client.url.startswith(url)
        assert client.send_message("hi").text == "hello from A"

    assert host_b.methods() == ["GET"]
    assert host_b.tokens_received() == []


def _sign_as_served(card: Card, key: ec.EllipticCurvePrivateKey) -> Card:
    """A signer of the 0.3 era: signs the JSON it serves (canonical, empty values dropped)."""
    protected = _b64url(json.dumps({"alg": "ES256", "kid": KID, "typ": "JOSE"}).encode())
    payload = signing.canonicalize(_drop_empty(card))
    signature = _jws_es256(key, f"{protected}.{_b64url(payload)}".encode())
    return {**card, "signatures": [{"protected": protected, "signature": signature}]}


def _jws_es256(key: ec.EllipticCurvePrivateKey, data: bytes) -> str:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return _b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def _drop_empty(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {k: c for k, v in value.items() if (c := _drop_empty(v)) is not None}
        return kept or None
    if isinstance(value, list):
        items = [c for v in value if (c := _drop_empty(v)) is not None]
        return items or None
    return None if value in (None, "") else value


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _card_v03(rpc_url: str) -> Card:
    return {
        "name": "Legacy agent",
        "description": "0.3",
        "version": "1",
        "url": rpc_url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {
                "id": "s",
                "name": "S",
                "description": "d",
                "tags": ["t"],
                "security": [{"oauth": ["admin"]}],
            }
        ],
        "securitySchemes": {
            "oauth": {
                "type": "oauth2",
                "flows": {
                    "clientCredentials": {
                        "tokenUrl": "https://auth.example/token",
                        "scopes": {"read": "r", "admin": "a"},
                    }
                },
            }
        },
        "security": [{"oauth": ["read"]}],
    }


@pytest.mark.parametrize(
    ("tamper", "path"),
    [
        (lambda c: {**c, "securityRequirements": []}, "card"),
        (
            lambda c: {**c, "skills": [{**c["skills"][0], "securityRequirements": []}]},
            "skill",
        ),
    ],
    ids=["card-security", "skill-security"],
)
def test_an_empty_member_cannot_hide_a_0_3_cards_security_requirement(
    key: ec.EllipticCurvePrivateKey,
    verifier: Callable[[Any], AgentCard],
    attacker: Callable[..., AttackerHost],
    tamper: Callable[[Card], Card],
    path: str,
) -> None:
    # Old code: "securityRequirements": [] is dropped before the signature check, but the
    # card built from the JSON took it over the signed "security": the requirement was gone.
    holder: list[AttackerHost] = []
    signed_by_agent: list[Card] = []

    def card_for(_: int) -> tuple[int, Card]:
        if not signed_by_agent:
            signed_by_agent.append(_sign_as_served(_card_v03(holder[0].url + "/rpc"), key))
        return 200, tamper(signed_by_agent[0])

    host = attacker(card_for)
    holder.append(host)

    with A2AClient.from_url(host.url, verify_card=verifier) as client:
        assert client.card is not None
        if path == "card":
            assert client.card.security_requirements == [{"oauth": ["read"]}]
        else:
            assert client.card.skills[0].security_requirements == [{"oauth": ["admin"]}]


def test_a_verifier_must_return_the_card_it_verified(
    agent_a: tuple[str, FakeAgent], verifier: Callable[[Any], AgentCard]
) -> None:
    url, _ = agent_a

    def checks_but_returns_nothing(raw: Any) -> None:
        verifier(raw)

    with pytest.raises(ConfigurationError, match="must return the AgentCard"):
        A2AClient.from_url(url, verify_card=checks_but_returns_nothing)  # type: ignore[arg-type]


# --- item 2: every later fetch verifies --------------------------------------------------------


def _unsigned_altered(card: Card, rpc_url: str) -> Card:
    altered = {k: v for k, v in card.items() if k != "signatures"}
    altered["supportedInterfaces"] = [
        {"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    altered["description"] = "altered"
    return altered


@pytest.mark.parametrize("revalidate", ["etag-200", "plain-200"])
def test_refresh_card_verifies_the_new_card_and_keeps_the_old_one(
    agent_a: tuple[str, FakeAgent],
    verifier: Callable[[Any], AgentCard],
    attacker: Callable[..., AttackerHost],
    revalidate: str,
) -> None:
    # The card server (B here, e.g. a compromised CDN in front of A) first serves A's signed
    # card, then an unsigned altered one. Old code adopted the second silently.
    url, _ = agent_a
    signed = _served_card(url)
    holder: list[AttackerHost] = []

    def card_for(number: int) -> tuple[int, Card]:
        if number == 1:
            return 200, signed
        return 200, _unsigned_altered(signed, holder[0].url + "/rpc")

    host = attacker(card_for)
    holder.append(host)
    with A2AClient.from_url(
        host.url, verify_card=verifier, credentials=BearerToken(TOKEN), trusted_origins=[url]
    ) as client:
        before = client.card
        with pytest.raises(SignatureError):
            client.refresh_card()
        assert client.card is before  # the verified card stays
        assert client.card is not None
        assert client.card.description != "altered"
        if revalidate == "etag-200":
            assert host.server.requests[1].headers["If-None-Match"] == '"v1"'
    assert host.tokens_received() == []


def test_a_304_keeps_the_verified_card(
    agent_a: tuple[str, FakeAgent],
    verifier: Callable[[Any], AgentCard],
    attacker: Callable[..., AttackerHost],
) -> None:
    url, _ = agent_a
    signed = _served_card(url)

    def card_for(number: int) -> tuple[int, Card | None]:
        return (200, signed) if number == 1 else (304, None)

    host = attacker(card_for)
    with A2AClient.from_url(host.url, verify_card=verifier, trusted_origins=[url]) as client:
        before = client.card
        assert client.refresh_card() is before


def test_the_resilient_clients_get_agent_card_verifies_too(
    agent_a: tuple[str, FakeAgent],
    verifier: Callable[[Any], AgentCard],
    attacker: Callable[..., AttackerHost],
) -> None:
    url, _ = agent_a
    signed = _served_card(url)
    holder: list[AttackerHost] = []

    def card_for(number: int) -> tuple[int, Card]:
        if number == 1:
            return 200, signed
        return 200, _unsigned_altered(signed, holder[0].url + "/rpc")

    host = attacker(card_for)
    holder.append(host)
    primary = A2AClient.from_url(host.url, verify_card=verifier, trusted_origins=[url])
    with ResilientA2AClient(primary) as resilient, pytest.raises(SignatureError):
        resilient.get_agent_card()
    primary.close()


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_the_extended_card_is_verified_like_the_public_one(
    key: ec.EllipticCurvePrivateKey, verifier: Callable[[Any], AgentCard], signed: bool
) -> None:
    """A verifying client refuses an unsigned extended card. The a2a_sync server signs
    the extended card with its ``sign_card`` (so "unsigned" is a server without one,
    serving a public card signed beforehand)."""
    public = attrs.evolve(
        agent_card(), capabilities=AgentCapabilities(streaming=True, extended_agent_card=True)
    )
    signer = functools.partial(signing.sign_card, key=key, alg="ES256", kid=KID)
    served: list[AgentCard] = []  # [public, extended], made once the server's URL is known
    app = A2AApplication(
        public,
        FakeAgent(),
        authenticate=BearerTokens({TOKEN: "alice"}),
        extended_card=lambda call: served[1],
        **({"sign_card": signer} if signed else {"card_for_request": lambda env: served[0]}),
    )
    with agent_server(app) as url:
        interfaces = [AgentInterface(url=url + "/", protocol_version="1.0")]
        extended = attrs.evolve(
            public, description="for authenticated callers", supported_interfaces=interfaces
        )
        served += [signer(attrs.evolve(public, supported_interfaces=interfaces)), extended]
        with A2AClient.from_url(
            url, verify_card=verifier, credentials=BearerToken(TOKEN)
        ) as client:
            if signed:
                assert client.get_extended_card().description == "for authenticated callers"
            else:
                with pytest.raises(SignatureError):
                    client.get_extended_card()
                assert client.extended_card is None


# --- the class: every URL field of a card refuses "" ---------------------------------------------


_V1_BASE: Card = {
    "name": "x",
    "supportedInterfaces": [
        {"url": "https://a.example/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ],
}


@pytest.mark.parametrize(
    ("card", "path"),
    [
        ({**_V1_BASE, "supportedInterfaces": [{"url": " "}]}, "$.supportedInterfaces[0].url"),
        ({**_V1_BASE, "documentationUrl": ""}, "$.documentationUrl"),
        ({**_V1_BASE, "iconUrl": ""}, "$.iconUrl"),
        (
            {
                **_V1_BASE,
                "securitySchemes": {"o": {"openIdConnectSecurityScheme": {"openIdConnectUrl": ""}}},
            },
            "$.securitySchemes.o.openIdConnectUrl",
        ),
        (
            {
                **_V1_BASE,
                "securitySchemes": {
                    "o": {
                        "oauth2SecurityScheme": {
                            "flows": {"clientCredentials": {"tokenUrl": "", "scopes": {}}}
                        }
                    }
                },
            },
            "$.securitySchemes.o.flows.clientCredentials.tokenUrl",
        ),
        (
            {"name": "x", "url": "", "protocolVersion": "0.3.0"},
            "$.url",  # a 0.3 card's errors name the paths the peer sent (issue 22)
        ),
        (
            {
                "name": "x",
                "url": "https://a.example/",
                "additionalInterfaces": [{"url": "", "transport": "JSONRPC"}],
            },
            "$.additionalInterfaces[].url",
        ),
    ],
    ids=["interface", "documentation", "icon", "oidc", "oauth-token", "v03-url", "v03-extra"],
)
def test_an_empty_url_anywhere_in_a_card_is_invalid_input(card: Card, path: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        load_card(card)
    assert caught.value.details == [f"empty URL @ {path}"]
