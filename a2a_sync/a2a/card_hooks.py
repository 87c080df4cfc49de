"""The agent card's hooks on the 1.0 converter: security schemes (1.0 wrappers and 0.3
``type`` tags), security requirements and OAuth flows.

A link of the codec chain (primitives -> part, card and 0.3 hooks -> converters -> codec ->
card codec): :func:`a2a_sync.a2a.converters.build_converter` calls
:func:`configure_card_hooks` while it builds the 1.0 converter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from .primitives import WireError
from .types import (
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

__all__ = ["SCHEME_TYPES_V03", "configure_card_hooks"]

_SECURITY_REQUIREMENTS = list[dict[str, list[str]]]
_SCHEME_KEYS: Final[dict[str, type]] = {
    "apiKeySecurityScheme": APIKeySecurityScheme,
    "httpAuthSecurityScheme": HTTPAuthSecurityScheme,
    "oauth2SecurityScheme": OAuth2SecurityScheme,
    "openIdConnectSecurityScheme": OpenIdConnectSecurityScheme,
    "mtlsSecurityScheme": MutualTLSSecurityScheme,
}
SCHEME_TYPES_V03: Final[dict[str, type]] = {
    "apiKey": APIKeySecurityScheme,
    "http": HTTPAuthSecurityScheme,
    "oauth2": OAuth2SecurityScheme,
    "openIdConnect": OpenIdConnectSecurityScheme,
    "mutualTLS": MutualTLSSecurityScheme,
}


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
        legacy = SCHEME_TYPES_V03.get(kind) if isinstance(kind, str) else None
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
