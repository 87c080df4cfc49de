"""``WWW-Authenticate`` challenges (RFC 9110 §11.6.1, RFC 6750 §3, RFC 9728 §5.1).

A header may hold several challenges (``Basic realm="x", Bearer scope="a b"``); we read
the ``Bearer`` one: its ``error``, ``scope`` and ``resource_metadata`` parameters.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = ["BearerChallenge", "parse_bearer_challenge"]

_TOKEN: Final = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"  # noqa: S105 - RFC 9110 token, not a secret
_QUOTED: Final = r'"(?:[^"\\]|\\.)*"'
_PARAM: Final = re.compile(rf"\s*({_TOKEN})\s*=\s*({_QUOTED}|{_TOKEN}=*)\s*(?:,|$)")
_SCHEME: Final = re.compile(rf"({_TOKEN})(?:\s+|$|(?=,))")
#: Longest header we parse; longer ones are treated as having no usable challenge.
MAX_CHALLENGE: Final = 8192


@attrs.frozen
class BearerChallenge:
    """The parameters of a ``Bearer`` challenge (all optional)."""

    error: str | None = None
    error_description: str | None = None
    scope: tuple[str, ...] = ()
    resource_metadata: str | None = None

    @property
    def insufficient_scope(self) -> bool:
        return self.error == "insufficient_scope"


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def parse_bearer_challenge(header: str | None) -> BearerChallenge | None:
    """The ``Bearer`` challenge of a ``WWW-Authenticate`` value, or ``None`` when it has
    none (or the header is oversized)."""
    if not header or len(header) > MAX_CHALLENGE:
        return None
    challenges: list[tuple[str, dict[str, str]]] = []
    pos = 0
    while pos < len(header):
        if header[pos] in " \t,":
            pos += 1
            continue
        param = _PARAM.match(header, pos)
        if param is not None and challenges:
            challenges[-1][1].setdefault(param.group(1).lower(), _unquote(param.group(2)))
            pos = param.end()
            continue
        scheme = _SCHEME.match(header, pos)
        if scheme is not None:
            challenges.append((scheme.group(1).lower(), {}))
            pos = scheme.end()
            continue
        comma = header.find(",", pos)  # a token68 or junk: skip to the next comma
        pos = len(header) if comma < 0 else comma + 1
    for name, params in challenges:
        if name == "bearer":
            return _challenge(params)
    return None


def _challenge(params: dict[str, str]) -> BearerChallenge:
    scope = params.get("scope")
    return BearerChallenge(
        error=params.get("error"),
        error_description=params.get("error_description"),
        scope=tuple(scope.split()) if scope else (),
        resource_metadata=params.get("resource_metadata"),
    )
