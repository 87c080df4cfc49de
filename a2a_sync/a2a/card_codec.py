"""Agent card wire shapes: 1.0, 0.3, and the merged dual-version card a2a-sdk 1.x serves.

Loading normalizes a 0.3 (or merged) card to the 1.0 layout, then structures it with the
1.0 converter, whose security-scheme and security-requirement hooks accept both
revisions' shapes. Writing produces the 1.0 card from the converter and the 0.3 card by a
direct mapping from the model; the well-known document merges the two the way a2a-sdk's
``agent_card_to_dict`` does (0.3 keys are only added where the 1.0 card has none), so
either generation of client can read it.

Public entry points are :func:`load_card` and
:func:`dump_card`.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from ..errors import ConfigurationError, ProtocolError
from .card_hooks import SCHEME_TYPES_V03
from .card_paths import as_sent
from .codec import V1_0
from .types import (
    DEFAULT_PROTOCOL_BINDING,
    AgentCard,
    AgentInterface,
    APIKeySecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlow,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)

__all__ = ["dump_card", "load_card"]

#: Version assumed for a 0.3 card without ``protocolVersion`` (0.3 schema default).
DEFAULT_V03_CARD_VERSION: Final = "0.3.0"

_TYPE_OF_SCHEME_V03: Final = {cls: name for name, cls in SCHEME_TYPES_V03.items()}
# 1.0 allows one OAuth flow; 0.3 several. Device code and PKCE do not exist in 0.3.
_FLOWS_V03: Final = ("authorizationCode", "clientCredentials", "implicit", "password")

# --- load --------------------------------------------------------------------------------------


def load_card(obj: Any) -> AgentCard:
    """Read an agent card: pure 0.3, pure 1.0, or a2a-sdk's merged dual-version card.

    A 0.3 card's ``url``/``preferredTransport``/``additionalInterfaces`` become
    ``supported_interfaces`` carrying the card's ``protocolVersion``;
    ``supportsAuthenticatedExtendedCard``, ``security`` and ``type``-tagged security
    schemes map to their 1.0 places. 1.0 fields win where both are present.

    Raises:
        ProtocolError: ``obj`` is not a valid card; ``details`` name the paths as the peer
            sent them (a 0.3 card's errors name its own paths, not 1.0's).
    """
    try:
        return _load_card(obj)
    except ProtocolError as exc:
        told = as_sent(exc, obj)
        if told is exc:
            raise
        raise told from exc.__cause__ or exc


def _load_card(obj: Any) -> AgentCard:
    if obj.__class__ is not dict:
        raise ProtocolError("invalid agent card", details=["expected a JSON object @ $"])
    card: AgentCard = V1_0.load(_to_v1_layout(obj), AgentCard)
    empty = _empty_urls(card)
    if empty:
        # An empty URL is no URL: "" resolves to the card's own address, and signatures
        # drop empty values, so it could be added to a signed card unnoticed (issue 20).
        raise ProtocolError("invalid agent card", details=[f"empty URL @ {p}" for p in empty])
    return card


def _empty_urls(card: AgentCard) -> list[str]:
    """JSON paths of the card's URL fields holding an empty string."""
    found = [
        f"$.supportedInterfaces[{i}].url"
        for i, iface in enumerate(card.supported_interfaces)
        if not iface.url.strip()
    ]
    for key, value in (("documentationUrl", card.documentation_url), ("iconUrl", card.icon_url)):
        if value is not None and not value.strip():
            found.append(f"$.{key}")
    for name, scheme in card.security_schemes.items():
        where = f"$.securitySchemes.{name}"
        if (
            isinstance(scheme, OpenIdConnectSecurityScheme)
            and not scheme.open_id_connect_url.strip()
        ):
            found.append(f"{where}.openIdConnectUrl")
        if isinstance(scheme, OAuth2SecurityScheme):
            if scheme.oauth2_metadata_url is not None and not scheme.oauth2_metadata_url.strip():
                found.append(f"{where}.oauth2MetadataUrl")
            for flow_field in attrs.fields(OAuthFlows):
                flow = getattr(scheme.flows, flow_field.name)
                for url_field in attrs.fields(OAuthFlow) if flow is not None else ():
                    value = getattr(flow, url_field.name)
                    if url_field.name.endswith("_url") and value is not None and not value.strip():
                        found.append(
                            f"{where}.flows.{_camel(flow_field.name)}.{_camel(url_field.name)}"
                        )
    return found


def _to_v1_layout(obj: dict[str, Any]) -> dict[str, Any]:
    """Move 0.3 top-level fields to their 1.0 places (without touching ``obj``)."""
    card = dict(obj)
    if "supportedInterfaces" not in card and "url" in card:
        version = card.get("protocolVersion") or DEFAULT_V03_CARD_VERSION
        interfaces: list[Any] = [
            {
                "url": card["url"],
                "protocolBinding": card.get("preferredTransport") or DEFAULT_PROTOCOL_BINDING,
                "protocolVersion": version,
            }
        ]
        extra = card.get("additionalInterfaces")
        for item in extra if extra.__class__ is list else ():
            entry = (
                {
                    "url": item.get("url"),
                    "protocolBinding": item.get("transport") or DEFAULT_PROTOCOL_BINDING,
                    "protocolVersion": version,
                }
                if item.__class__ is dict
                else item
            )
            if entry not in interfaces:  # 0.3 cards often repeat the main url here
                interfaces.append(entry)
        card["supportedInterfaces"] = interfaces
    extended = card.get("supportsAuthenticatedExtendedCard")
    capabilities = card.get("capabilities")
    if extended is not None and capabilities.__class__ is dict:
        if "extendedAgentCard" not in capabilities:
            card["capabilities"] = {**capabilities, "extendedAgentCard": extended}
    elif extended is not None and capabilities is None:
        card["capabilities"] = {"extendedAgentCard": extended}
    if "securityRequirements" not in card and "security" in card:
        card["securityRequirements"] = card["security"]
    skills = card.get("skills")
    if skills.__class__ is list:
        card["skills"] = [
            {**skill, "securityRequirements": skill["security"]}
            if skill.__class__ is dict
            and "security" in skill
            and "securityRequirements" not in skill
            else skill
            for skill in skills
        ]
    return card


# --- dump --------------------------------------------------------------------------------------


def dump_card(card: AgentCard, revision: str | None = None) -> dict[str, Any]:
    """See :func:`a2a_sync.a2a.codec.dump_card`."""
    if revision == "1.0":
        return V1_0.dump(card)  # type: ignore[no-any-return]
    if revision == "0.3":
        legacy = _legacy_interfaces(card)
        if not legacy:
            raise ConfigurationError("the card lists no 0.3 interface to describe in 0.3 form")
        return _card_v03(card, legacy)
    if revision is not None:
        raise ConfigurationError(f"unsupported A2A revision {revision!r}")
    out: dict[str, Any] = V1_0.dump(card)
    legacy = _legacy_interfaces(card)
    return _merge(out, _card_v03(card, legacy)) if legacy else out


def _legacy_interfaces(card: AgentCard) -> list[AgentInterface]:
    return [i for i in card.supported_interfaces if i.protocol_revision == "0.3"]


def _card_v03(card: AgentCard, legacy: list[AgentInterface]) -> dict[str, Any]:
    """The pure 0.3 card (what a2a-sdk's ``to_compat_agent_card`` produces)."""
    v1: dict[str, Any] = V1_0.dump(card)
    primary = legacy[0]
    out: dict[str, Any] = {
        "name": card.name,
        "description": card.description,
        "version": card.version,
        "url": primary.url,
        "preferredTransport": primary.protocol_binding,
        "protocolVersion": primary.protocol_version,
    }
    if len(legacy) > 1:  # 0.3 types: "SHOULD include an entry matching the main url"
        out["additionalInterfaces"] = [
            {"url": i.url, "transport": i.protocol_binding} for i in legacy
        ]
    for key in ("provider", "documentationUrl", "iconUrl"):
        if key in v1:
            out[key] = v1[key]
    capabilities = {k: v for k, v in v1["capabilities"].items() if k != "extendedAgentCard"}
    if "extensions" in capabilities:
        capabilities["extensions"] = [
            {"required": False, **ext} for ext in capabilities["extensions"]
        ]
    if card.capabilities.state_transition_history is not None:
        capabilities["stateTransitionHistory"] = card.capabilities.state_transition_history
    out["capabilities"] = capabilities
    if card.capabilities.extended_agent_card:
        out["supportsAuthenticatedExtendedCard"] = True
    if card.security_schemes:
        out["securitySchemes"] = {
            name: _scheme_v03(scheme) for name, scheme in card.security_schemes.items()
        }
    if card.security_requirements:
        out["security"] = [dict(req) for req in card.security_requirements]
    out["defaultInputModes"] = list(card.default_input_modes)
    out["defaultOutputModes"] = list(card.default_output_modes)
    out["skills"] = [
        _skill_v03(skill_json, skill.security_requirements)
        for skill_json, skill in zip(v1.get("skills", []), card.skills, strict=True)
    ]
    if "signatures" in v1:
        out["signatures"] = v1["signatures"]
    return out


def _skill_v03(skill: dict[str, Any], requirements: list[dict[str, list[str]]]) -> dict[str, Any]:
    out = {k: v for k, v in skill.items() if k != "securityRequirements"}
    out.setdefault("description", "")
    out.setdefault("tags", [])
    if requirements:
        out["security"] = [dict(req) for req in requirements]
    return out


def _scheme_v03(scheme: SecurityScheme) -> dict[str, Any]:
    wrapped: dict[str, Any] = V1_0.dump(scheme)
    body = dict(next(iter(wrapped.values())))
    if isinstance(scheme, APIKeySecurityScheme):
        body["in"] = body.pop("location")
    elif isinstance(scheme, OAuth2SecurityScheme):
        flows: dict[str, Any] = {}
        for key in _FLOWS_V03:
            flow = getattr(scheme.flows, _snake(key))
            if flow is not None:
                flow_json = V1_0.dump(flow)
                flow_json.pop("pkceRequired", None)
                flow_json.pop("deviceAuthorizationUrl", None)
                flow_json.setdefault("scopes", {})
                flows[key] = flow_json
        body["flows"] = flows
    body["type"] = _TYPE_OF_SCHEME_V03[type(scheme)]
    return body


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _merge(target: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """Add ``extra``'s keys missing from ``target``, recursively (a2a-sdk's merge rule)."""
    for key, value in extra.items():
        if key not in target:
            target[key] = value
        elif isinstance(value, dict) and isinstance(target[key], dict):
            _merge(target[key], value)
        elif isinstance(value, list) and isinstance(target[key], list):
            for mine, theirs in zip(target[key], value):  # noqa: B905 - a2a-sdk pairs up to the shorter
                if isinstance(mine, dict) and isinstance(theirs, dict):
                    _merge(mine, theirs)
    return target
