"""Validation errors of a 0.3 agent card, told as the peer sent the card.

A 0.3 card is moved into the 1.0 layout before it is structured (``_card_codec``), so the
converter's findings name 1.0 paths (``$.supportedInterfaces[0].url``) and the 1.0 model.
:func:`as_sent` rewrites such an error for a card that came in the 0.3 layout: "invalid
A2A 0.3 agent card", with the paths the peer's JSON has (``$.url``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from ..errors import ProtocolError

__all__ = ["as_sent"]

#: 1.0 paths of fields a 0.3 card holds elsewhere: pattern, the path in the 0.3 card, and
#: the 0.3 key that must be present for the move to have happened. First match wins.
_V03_PATHS: Final = (
    (r"supportedInterfaces\[0\]\.url\b", "url", None),
    (r"supportedInterfaces\[0\]\.protocolBinding\b", "preferredTransport", None),
    (r"supportedInterfaces\[0\]\.protocolVersion\b", "protocolVersion", None),
    (r"supportedInterfaces\[\d+\]\.protocolBinding\b", "additionalInterfaces[].transport", None),
    (r"supportedInterfaces\[\d+\]", "additionalInterfaces[]", None),
    (
        r"capabilities\.extendedAgentCard\b",
        "supportsAuthenticatedExtendedCard",
        "supportsAuthenticatedExtendedCard",
    ),
    (r"securityRequirements\b", "security", "security"),
    (r"(skills\[\d+\])\.securityRequirements\b", r"\1.security", None),
)


def as_sent(error: ProtocolError, obj: Any) -> ProtocolError:
    """``error`` about the card ``obj`` as the peer sent it: a new error for a card in
    the 0.3 layout (the caller chains it), ``error`` itself for any other card."""
    if not isinstance(obj, Mapping) or "supportedInterfaces" in obj or "url" not in obj:
        return error
    return ProtocolError(
        "invalid A2A 0.3 agent card", details=[_v03_path(d, obj) for d in error.details]
    )


def _v03_path(detail: str, obj: Mapping[str, Any]) -> str:
    """``detail`` with its path as the 0.3 card ``obj`` has it."""
    for pattern, replacement, key in _V03_PATHS:
        if key is not None and key not in obj:
            continue
        new, count = re.subn(r"@ \$\." + pattern, "@ $." + replacement, detail)
        if count:
            return new
    return detail
