"""A 0.3 agent card between its JSON form and the ProtoJSON of 0.3's ``AgentCard``.

Most members have the same names in both; two differ in shape: a security scheme is
``{"type": "apiKey", "in", "name"}`` (JSON) but a oneof
``{"apiKeySecurityScheme": {"location", "name"}}`` (proto), and a security requirement
``{"scheme": [scopes]}`` is ``{"schemes": {"scheme": {"list": [scopes]}}}``. Members the
proto does not have (a newer card's) are left out, as a2a-sdk's mapping does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor

__all__ = ["card_from_wire", "card_to_wire"]

#: JSON ``type`` -> the proto's oneof member.
_SCHEMES: Final = {
    "apiKey": "apiKeySecurityScheme",
    "http": "httpAuthSecurityScheme",
    "oauth2": "oauth2SecurityScheme",
    "openIdConnect": "openIdConnectSecurityScheme",
    "mutualTLS": "mtlsSecurityScheme",
}
_TYPES: Final = {member: kind for kind, member in _SCHEMES.items()}


def _requirements_out(requirements: Any) -> list[dict[str, Any]]:
    return [
        {"schemes": {name: {"list": list(scopes)} for name, scopes in r.items()}}
        for r in requirements or ()
        if isinstance(r, Mapping)
    ]


def _requirements_in(requirements: Any) -> list[dict[str, list[str]]]:
    return [
        {
            name: list(_obj(scopes).get("list", []))
            for name, scopes in _obj(r.get("schemes")).items()
        }
        for r in requirements or ()
        if isinstance(r, Mapping)
    ]


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _scheme_out(scheme: Mapping[str, Any]) -> dict[str, Any]:
    member = _SCHEMES.get(str(scheme.get("type")))
    if member is None:
        return {}
    body = {k: v for k, v in scheme.items() if k not in ("type", "in")}
    if "in" in scheme:
        body["location"] = scheme["in"]
    return {member: body}


def _scheme_in(scheme: Mapping[str, Any]) -> dict[str, Any]:
    for member, body in scheme.items():
        if member in _TYPES:
            out = {
                "type": _TYPES[member],
                **{k: v for k, v in _obj(body).items() if k != "location"},
            }
            if "location" in _obj(body):
                out["in"] = body["location"]
            return out
    return {}


def _repeated(field: FieldDescriptor) -> bool:
    # protobuf >= 5.28 has ``is_repeated``; 7 dropped ``label``.
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(getattr(field, "label", 0) == 3)  # LABEL_REPEATED


def _fit(obj: Mapping[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    """``obj`` without the members ``descriptor`` does not have (recursively)."""
    fields = {f.json_name: f for f in descriptor.fields}
    out: dict[str, Any] = {}
    for name, value in obj.items():
        field = fields.get(name)
        if field is None:
            continue
        target = field.message_type
        if (
            target is None
            or target.full_name.startswith("google.protobuf.")
            or target.GetOptions().map_entry
        ):
            out[name] = value
        elif _repeated(field):
            out[name] = [_fit(_obj(v), target) for v in value or ()]
        else:
            out[name] = _fit(_obj(value), target)
    return out


def card_to_wire(card: Mapping[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    """A 0.3 JSON card as the ProtoJSON of ``descriptor`` (0.3's ``AgentCard``)."""
    body = dict(card)
    if "securitySchemes" in body:
        schemes = {n: _scheme_out(_obj(s)) for n, s in _obj(body["securitySchemes"]).items()}
        body["securitySchemes"] = {n: s for n, s in schemes.items() if s}
    if "security" in body:
        body["security"] = _requirements_out(body["security"])
    body["skills"] = [
        {**s, "security": _requirements_out(s.get("security"))} if "security" in s else s
        for s in (_obj(x) for x in body.get("skills") or ())
    ]
    return _fit(body, descriptor)


def card_from_wire(body: Mapping[str, Any]) -> dict[str, Any]:
    """The ProtoJSON of 0.3's ``AgentCard`` as a 0.3 JSON card."""
    card = dict(body)
    if "securitySchemes" in card:
        card["securitySchemes"] = {
            n: _scheme_in(_obj(s)) for n, s in _obj(card["securitySchemes"]).items()
        }
    if "security" in card:
        card["security"] = _requirements_in(card["security"])
    card["skills"] = [
        {**s, "security": _requirements_in(s.get("security"))} if "security" in s else dict(s)
        for s in (_obj(x) for x in card.get("skills") or ())
    ]
    card.setdefault("protocolVersion", "0.3.0")
    return card
