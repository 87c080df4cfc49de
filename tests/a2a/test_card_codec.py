"""Agent cards: 0.3, 1.0 and a2a-sdk's merged dual-version card read into one model, and
written back the way a2a-sdk 1.3 writes them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from a2a_sync.a2a.card_codec import dump_card, load_card
from a2a_sync.errors import ConfigurationError, ProtocolError
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    MutualTLSSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlow,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
)

CARD = AgentCard(
    name="Recipe Agent",
    description="Finds recipes",
    version="1.2.3",
    supported_interfaces=[
        AgentInterface(url="https://agent.example/a2a", protocol_version="0.3"),
        AgentInterface(
            url="https://agent.example/rest", protocol_binding="HTTP+JSON", protocol_version="0.3"
        ),
    ],
    provider=AgentProvider(organization="Example", url="https://example.com"),
    capabilities=AgentCapabilities(
        streaming=True,
        push_notifications=False,
        extended_agent_card=True,
        extensions=[AgentExtension(uri="urn:ext", description="d", params={"a": "b"})],
    ),
    skills=[
        AgentSkill(
            id="find",
            name="Find",
            description="find recipes",
            tags=["cooking"],
            examples=["pasta?"],
            input_modes=["text/plain"],
            security_requirements=[{"bearer": []}],
        )
    ],
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain", "application/json"],
    security_schemes={
        "key": APIKeySecurityScheme(name="X-Key", location="query"),
        "bearer": HTTPAuthSecurityScheme(scheme="Bearer", bearer_format="JWT"),
        "oauth": OAuth2SecurityScheme(
            flows=OAuthFlows(
                client_credentials=OAuthFlow(token_url="https://t", scopes={"read": "Read"})
            ),
            oauth2_metadata_url="https://meta",
        ),
        "oidc": OpenIdConnectSecurityScheme(open_id_connect_url="https://oidc"),
        "mtls": MutualTLSSecurityScheme(description="client certs"),
    },
    security_requirements=[{"oauth": ["read"]}, {"key": []}],
    signatures=[AgentCardSignature(protected="eyJ", signature="c2ln", header={"kid": "k"})],
    documentation_url="https://docs.example",
    icon_url="https://icon.example",
)

# The same card as a 0.3 agent publishes it (0.3 spec, types.ts@v0.3.0).
CARD_V03: dict[str, Any] = {
    "protocolVersion": "0.3",
    "name": "Recipe Agent",
    "description": "Finds recipes",
    "version": "1.2.3",
    "url": "https://agent.example/a2a",
    "preferredTransport": "JSONRPC",
    "additionalInterfaces": [
        {"url": "https://agent.example/a2a", "transport": "JSONRPC"},
        {"url": "https://agent.example/rest", "transport": "HTTP+JSON"},
    ],
    "provider": {"organization": "Example", "url": "https://example.com"},
    "capabilities": {
        "streaming": True,
        "pushNotifications": False,
        "extensions": [{"uri": "urn:ext", "description": "d", "params": {"a": "b"}}],
    },
    "supportsAuthenticatedExtendedCard": True,
    "securitySchemes": {
        "key": {"type": "apiKey", "in": "query", "name": "X-Key"},
        "bearer": {"type": "http", "scheme": "Bearer", "bearerFormat": "JWT"},
        "oauth": {
            "type": "oauth2",
            "flows": {"clientCredentials": {"tokenUrl": "https://t", "scopes": {"read": "Read"}}},
            "oauth2MetadataUrl": "https://meta",
        },
        "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://oidc"},
        "mtls": {"type": "mutualTLS", "description": "client certs"},
    },
    "security": [{"oauth": ["read"]}, {"key": []}],
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain", "application/json"],
    "skills": [
        {
            "id": "find",
            "name": "Find",
            "description": "find recipes",
            "tags": ["cooking"],
            "examples": ["pasta?"],
            "inputModes": ["text/plain"],
            "security": [{"bearer": []}],
        }
    ],
    "signatures": [{"protected": "eyJ", "signature": "c2ln", "header": {"kid": "k"}}],
    "documentationUrl": "https://docs.example",
    "iconUrl": "https://icon.example",
}


def test_pure_0_3_pure_1_0_and_merged_cards_read_into_the_same_model() -> None:
    pure_v1 = dump_card(CARD, "1.0")
    merged = dump_card(CARD)

    assert load_card(CARD_V03) == CARD
    assert load_card(pure_v1) == CARD
    assert load_card(merged) == CARD


def test_loading_never_modifies_the_input() -> None:
    original = copy.deepcopy(CARD_V03)

    load_card(CARD_V03)

    assert original == CARD_V03


def test_a_0_3_card_without_protocol_version_or_transport_gets_the_0_3_defaults() -> None:
    card = load_card({"name": "n", "description": "d", "version": "1", "url": "https://a"})

    assert card.supported_interfaces == [
        AgentInterface(url="https://a", protocol_binding="JSONRPC", protocol_version="0.3.0")
    ]


def test_1_0_fields_win_over_the_0_3_ones_in_a_merged_card() -> None:
    merged = dump_card(CARD)
    merged["security"] = [{"other": []}]
    merged["supportsAuthenticatedExtendedCard"] = False

    card = load_card(merged)

    assert card.security_requirements == CARD.security_requirements
    assert card.capabilities.extended_agent_card is True


def test_pure_1_0_card_uses_the_1_0_layout() -> None:
    wire = dump_card(CARD, "1.0")

    assert "url" not in wire
    assert wire["securityRequirements"][0] == {"schemes": {"oauth": {"list": ["read"]}}}
    assert wire["securityRequirements"][1] == {"schemes": {"key": {}}}
    assert wire["securitySchemes"]["key"] == {
        "apiKeySecurityScheme": {"name": "X-Key", "location": "query"}
    }
    assert wire["capabilities"]["extendedAgentCard"] is True
    assert wire["supportedInterfaces"][0]["protocolBinding"] == "JSONRPC"


def test_well_known_card_adds_0_3_fields_only_when_a_0_3_interface_is_listed() -> None:
    v1_only = AgentCard(
        name="n", supported_interfaces=[AgentInterface(url="https://a", protocol_version="1.0")]
    )

    assert dump_card(v1_only) == dump_card(v1_only, "1.0")
    assert dump_card(v1_only)["capabilities"] == {}
    assert dump_card(CARD)["url"] == "https://agent.example/a2a"
    with pytest.raises(ConfigurationError):
        dump_card(v1_only, "0.3")
    with pytest.raises(ConfigurationError):
        dump_card(CARD, "2.0")


def test_pure_0_3_card_is_the_0_3_layout() -> None:
    wire = dump_card(CARD, "0.3")

    assert wire["protocolVersion"] == "0.3"
    assert wire["additionalInterfaces"] == [  # the main url too (0.3 SHOULD)
        {"url": wire["url"], "transport": wire["preferredTransport"]},
        {"url": "https://agent.example/rest", "transport": "HTTP+JSON"},
    ]
    assert wire["securitySchemes"]["key"] == {"type": "apiKey", "in": "query", "name": "X-Key"}
    assert wire["security"] == [{"oauth": ["read"]}, {"key": []}]
    assert wire["supportsAuthenticatedExtendedCard"] is True
    assert "supportedInterfaces" not in wire
    assert load_card(wire) == load_card(CARD_V03)


def test_1_0_card_carries_only_the_first_oauth_flow_and_0_3_carries_all() -> None:
    flows = OAuthFlows(
        authorization_code=OAuthFlow(
            authorization_url="https://a", token_url="https://t", pkce_required=True
        ),
        client_credentials=OAuthFlow(token_url="https://t"),
    )
    card = AgentCard(
        name="n",
        supported_interfaces=[AgentInterface(url="https://a", protocol_version="0.3")],
        security_schemes={"o": OAuth2SecurityScheme(flows=flows)},
    )

    v1_flows = dump_card(card, "1.0")["securitySchemes"]["o"]["oauth2SecurityScheme"]["flows"]
    v03_flows = dump_card(card, "0.3")["securitySchemes"]["o"]["flows"]

    assert list(v1_flows) == ["authorizationCode"]
    assert v1_flows["authorizationCode"]["pkceRequired"] is True
    assert set(v03_flows) == {"authorizationCode", "clientCredentials"}
    assert "pkceRequired" not in v03_flows["authorizationCode"]


@pytest.mark.parametrize(
    ("card", "detail"),
    [
        ({"description": "d"}, "required field missing @ $.name"),
        (
            {"name": "n", "securitySchemes": {"x": {"type": "magic"}}},
            "unknown security scheme @ $.securitySchemes['x']",
        ),
        (
            {"name": "n", "supportedInterfaces": [{"protocolBinding": "JSONRPC"}]},
            "required field missing @ $.supportedInterfaces[0].url",
        ),
        (
            {"name": "n", "capabilities": {"streaming": "yes"}},
            "invalid value for type, expected bool @ $.capabilities.streaming",
        ),
    ],
)
def test_invalid_cards_are_protocol_errors_naming_the_path(card: Any, detail: str) -> None:
    with pytest.raises(ProtocolError) as caught:
        load_card(card)

    assert detail in caught.value.details


@pytest.mark.parametrize("card", [[], "card", None])
def test_a_card_that_is_not_an_object_is_a_protocol_error(card: Any) -> None:
    with pytest.raises(ProtocolError):
        load_card(card)


@pytest.mark.peer
def test_card_output_is_exactly_what_a2a_sdk_serves_and_its_0_3_form() -> None:
    from a2a.compat.v0_3.conversions import to_compat_agent_card
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.types import a2a_pb2
    from google.protobuf.json_format import MessageToDict, ParseDict

    proto = ParseDict(dump_card(CARD, "1.0"), a2a_pb2.AgentCard())
    theirs_v03 = to_compat_agent_card(proto).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )

    assert dump_card(CARD, "1.0") == MessageToDict(proto)
    # One deliberate difference: our 0.3 additionalInterfaces also lists the main url
    # (0.3 AgentCard: "SHOULD include an entry matching the main 'url' and
    # 'preferredTransport'"); a2a-sdk lists only the others.
    main = {"url": "https://agent.example/a2a", "transport": "JSONRPC"}
    for ours, theirs in (
        (dump_card(CARD), agent_card_to_dict(proto)),
        (dump_card(CARD, "0.3"), theirs_v03),
    ):
        assert ours["additionalInterfaces"] == [main, *theirs["additionalInterfaces"]]
        assert {**ours, "additionalInterfaces": None} == {**theirs, "additionalInterfaces": None}


@pytest.mark.peer
def test_a2a_sdk_reads_our_0_3_and_merged_cards_as_the_same_card() -> None:
    from a2a.client.card_resolver import parse_agent_card
    from google.protobuf.json_format import MessageToDict

    from_merged = parse_agent_card(dump_card(CARD))
    from_v03 = parse_agent_card(dump_card(CARD, "0.3"))

    assert MessageToDict(from_merged) == dump_card(CARD, "1.0")
    # a2a-sdk adds the main url once more from additionalInterfaces (it does not
    # de-duplicate); apart from that repeat it reads the card we wrote.
    read = load_card(MessageToDict(from_v03))
    assert read.supported_interfaces[0] == read.supported_interfaces[1]
    assert attrs.evolve(read, supported_interfaces=read.supported_interfaces[1:]) == CARD


def test_captured_a2a_sdk_card_loads_and_dumps_back_identically() -> None:
    # Served by tests/data/a2a/echo_agent.py (a2a-sdk 1.3.0): a 1.0 card with merged 0.3 fields.
    path = Path(__file__).parent.parent / "data" / "a2a" / "echo_card.json"
    wire = json.loads(path.read_text(encoding="utf-8"))

    card = load_card(wire)

    assert [i.protocol_revision for i in card.supported_interfaces] == ["1.0", "0.3"]
    assert card.capabilities.streaming is True
    assert dump_card(card) == wire
