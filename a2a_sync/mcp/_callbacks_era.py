"""Which declared client callbacks the negotiated protocol revision can carry.

A connection declares ``sampling``, ``elicitation`` and ``roots`` by passing their
callbacks. Some revisions cannot offer some of them (elicitation arrived in 2025-06-18,
its URL mode in 2025-11-25). When the server negotiates such a revision the user is
warned once per server and callback with :class:`CallbackUnavailableWarning`: a
``warnings`` warning rather than a log line, because it reports a mismatch in the
program's own configuration (a callback that can never run), which belongs in test
output and can be turned into an error with a warnings filter.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Hashable
from typing import Final

from . import types as t
from .callbacks import Handlers

__all__ = ["CallbackUnavailableWarning", "unavailable_callbacks", "warn_unavailable"]

#: (callback, first legacy revision that has it); modern revisions have all of them.
_INTRODUCED: Final = (
    ("sampling", "2024-11-05"),
    ("roots", "2024-11-05"),
    ("elicitation", "2025-06-18"),
)


class CallbackUnavailableWarning(UserWarning):
    """A declared MCP client callback cannot be offered in the negotiated revision."""


_warned: set[Hashable] = set()
_warned_lock = threading.Lock()


def unavailable_callbacks(handlers: Handlers, info: t.ServerInfo) -> list[str]:
    """The declared callbacks the negotiated revision has no place for."""
    if info.era != "legacy":
        return []
    declared = {
        "sampling": handlers.sampling,
        "roots": handlers.roots,
        "elicitation": handlers.elicitation,
    }
    return [
        name
        for name, first in _INTRODUCED
        if declared[name] is not None and info.protocol_version < first
    ]


def warn_unavailable(handlers: Handlers, info: t.ServerInfo, server: str) -> None:
    """Warn (once per server and callback set) about callbacks that cannot run."""
    missing = unavailable_callbacks(handlers, info)
    if not missing:
        return
    key = (server, info.protocol_version, tuple(missing))
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(
        f"{server} negotiated MCP {info.protocol_version}, which has no "
        f"{', '.join(missing)}: the {', '.join(missing)} callback will never be called "
        "(the server would need MCP 2025-06-18 or later)",
        CallbackUnavailableWarning,
        stacklevel=5,
    )
