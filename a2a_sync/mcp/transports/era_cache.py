"""The per-process era cache: which MCP era (and which HTTP transport) a server speaks.

It sits below the transports so that both the negotiation (``eras``, ``_negotiation``) and
the transport that falls back to HTTP+SSE (``_fallback``) can use it without the transports
knowing anything else of eras. ``a2a_sync.mcp.eras`` re-exports it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Final, Literal

__all__ = ["ERA_CACHE", "Era", "EraCache"]

Era = Literal["legacy", "modern"]


class EraCache:
    """Remembers which era each server speaks, keyed by ``Transport.era_key``.

    Thread-safe. Only consulted by ``era="auto"``; a pinned era ignores it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._eras: dict[Hashable, Era] = {}

    def get(self, key: Hashable) -> Era | None:
        """The cached era for ``key``, if any."""
        with self._lock:
            return self._eras.get(key)

    def put(self, key: Hashable, era: Era) -> None:
        """Remember ``era`` for ``key``."""
        with self._lock:
            self._eras[key] = era

    def clear(self) -> None:
        """Forget every verdict (e.g. after upgrading a server)."""
        with self._lock:
            self._eras.clear()


#: The process-wide cache used by ``era="auto"``.
ERA_CACHE: Final = EraCache()
