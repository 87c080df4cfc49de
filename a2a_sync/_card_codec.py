"""Agent card wire shapes: 1.0, 0.3, and the merged dual-version card a2a-sdk 1.x serves.

Loading normalizes a 0.3 (or merged) card to the 1.0 layout, then structures it with the
1.0 converter, whose security-scheme and security-requirement hooks accept both
revisions' shapes. Writing produces the 1.0 card from the converter and the 0.3 card by a
direct mapping from the model; the well-known document merges the two the way a2a-sdk's
``agent_card_to_dict`` does (0.3 keys are only added where the 1.0 card has none), so
either generation of client can read it.

Public entry points are :func:`a2a_sync._codec.load_card` and
:func:`a2a_sync._codec.dump_card`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ._codec import V1_0
from ._converters import WireError
from .errors import ConfigurationError, ProtocolError
from .types import (
    DEFAULT_PROTOCOL_BINDING,
    AgentCard,
    AgentInterface,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    MutualTLSSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = ["configure_card_hooks", "dump_card", "load_card"]

#: Version assumed for a 0.3 card without ``protocolVersion`` (0.3 schema default).
DEFAULT_V03_CARD_VERSION: Final = "0.3.0"

_SECURITY_REQUIREMENTS = list[dict[str, list[str]]]
_SCHEME_KEYS: Final[dict[str, type]] = {
    "apiKeySecurityScheme": APIKeySecurityScheme,
    "httpAuthSecurityScheme": HTTPAuthSecurityScheme,
    "oauth2SecurityScheme": OAuth2SecurityScheme,
    "openIdConnectSecurityScheme": OpenIdConnectSecurityScheme,
    "mtlsSecurityScheme": MutualTLSSecurityScheme,
}
_SCHEME_TYPES_V03: Final[dict[str, type]] = {
    "apiKey": APIKeySecurityScheme,
    "http": HTTPAuthSecurityScheme,
    "oauth2": OAuth2SecurityScheme,
    "openIdConnect": OpenIdConnectSecurityScheme,
    "mutualTLS": MutualTLSSecurityScheme,
}
_TYPE_OF_SCHEME_V03: Final = {cls: name for name, cls in _SCHEME_TYPES_V03.items()}
# 1.0 allows one OAuth flow; 0.3 several. Device code and PKCE do not exist in 0.3.
_FLOWS_V03: Final = ("authorizationCode", "clientCredentials", "implicit", "password")


def _scopes(value: Any) -> list[str]:
    if value.__class__ is not list or any(s.__class__ is not str for s in value):
        raise WireError("scopes must be a list of strings")
    return value


def _load_requirements(obj: Any, _: Any) -> list[dict[str, list[str]]]:
    """Security requirements, 1.0 (``{"schemes": {name: {"list": [...]}}}``) or 0.3."""
    if obj.__class__ is not list:
        raise WireError("security requirements must be a list")
    out = []
    for entry in obj:
        if entry.__class__ is not dict:
            raise WireError("a security requirement must be a JSON object")
        schemes = entry.get("schemes")
        if schemes.__class__ is dict and all(v.__class__ is dict for v in schemes.values()):
            out.append({name: _scopes(v.get("list", [])) for name, v in schemes.items()})
        else:
            out.append({name: _scopes(v) for name, v in entry.items()})
    return out


def _dump_requirements(requirements: list[dict[str, list[str]]]) -> list[dict[str, Any]]:
    # ProtoJSON writes an empty StringList as {} (no "list" member).
    return [
        {
            "schemes": {
                name: {"list": list(scopes)} if scopes else {} for name, scopes in req.items()
            }
        }
        for req in requirements
    ]


def configure_card_hooks(
    conv: Converter,
    structure_fn: Callable[..., Any],
    unstructure_fn: Callable[..., Any],
) -> None:
    """Register the card hooks on the 1.0 converter (schemes, requirements, OAuth flows)."""
    # Generated hooks capture nested hooks when generated: register the inner ones first.
    dump_flows = unstructure_fn(OAuthFlows)

    def dump_first_flow(flows: OAuthFlows) -> dict[str, Any]:
        out: dict[str, Any] = dump_flows(flows)
        return dict(list(out.items())[:1])

    conv.register_unstructure_hook(OAuthFlows, dump_first_flow)

    def load_scheme(obj: Any, _: Any) -> SecurityScheme:
        if obj.__class__ is not dict:
            raise WireError("a security scheme must be a JSON object")
        for key, cls in _SCHEME_KEYS.items():  # 1.0 wrapper (also in merged cards)
            if key in obj:
                return conv.structure(obj[key], cls)
        kind = obj.get("type")
        legacy = _SCHEME_TYPES_V03.get(kind) if isinstance(kind, str) else None
        if legacy is None:
            raise WireError("unknown security scheme")
        body = dict(obj)
        if legacy is APIKeySecurityScheme and "in" in body:
            body["location"] = body.pop("in")
        return conv.structure(body, legacy)

    conv.register_structure_hook_func(lambda t: t == SecurityScheme, load_scheme)
    for key, cls in _SCHEME_KEYS.items():
        conv.register_unstructure_hook(cls, _wrapped(key, unstructure_fn(cls)))

    conv.register_structure_hook_func(lambda t: t == _SECURITY_REQUIREMENTS, _load_requirements)
    conv.register_unstructure_hook_func(lambda t: t == _SECURITY_REQUIREMENTS, _dump_requirements)


def _wrapped(key: str, dump: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    def dump_wrapped(value: Any) -> dict[str, Any]:
        return {key: dump(value)}

    return dump_wrapped


# --- load --------------------------------------------------------------------------------------


def load_card(obj: Any) -> AgentCard:
    """See :func:`a2a_sync._codec.load_card`."""
    if obj.__class__ is not dict:
        raise ProtocolError("invalid agent card", details=["expected a JSON object @ $"])
    return V1_0.load(_to_v1_layout(obj), AgentCard)


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
    """See :func:`a2a_sync._codec.dump_card`."""
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
    if len(legacy) > 1:
        out["additionalInterfaces"] = [
            {"url": i.url, "transport": i.protocol_binding} for i in legacy[1:]
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
