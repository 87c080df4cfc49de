"""Client-side response cache honouring 2026-07-28 ``ttlMs`` / ``cacheScope`` hints.

Cacheable: ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` (keyed by cursor) and ``resources/read`` (keyed by URI).
A result is kept for ``ttlMs`` milliseconds (capped at :data:`MAX_TTL`); ``ttlMs`` 0 or
absent is not cached; MRTR retries are never cached. ``cacheScope`` only matters when
several authorization contexts share a cache; one connection is one context, so both
scopes are kept. ``*/list_changed`` and ``resources/updated`` notifications evict the
affected entries at once.

:class:`Catalog` is what a connection remembers of the server between calls: this cache
and the tools of the last ``tools/list``, both kept current by notifications.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Final

from . import types as t

__all__ = ["CACHEABLE_METHODS", "MAX_TTL", "Catalog", "ResponseCache"]

#: Longest time any entry is kept (24 h, as the official SDK caps ``ttlMs``).
MAX_TTL: Final = 24 * 3600.0
#: Entries kept at most; the least recently used go first.
_MAX_ENTRIES: Final = 1024

CACHEABLE_METHODS: Final = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
_EVICTS: Final = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


class ResponseCache:
    """Thread-safe LRU of raw results with expiry. Keys are ``(method, key)``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, str], tuple[float, Any]] = OrderedDict()

    def get(self, method: str, key: str) -> Any:
        """The fresh cached result, or None."""
        with self._lock:
            entry = self._entries.get((method, key))
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[(method, key)]
                return None
            self._entries.move_to_end((method, key))
            return entry[1]

    def put(self, method: str, key: str, result: Any) -> None:
        """Store ``result`` if it carries a positive ``ttlMs``."""
        if method not in CACHEABLE_METHODS or not isinstance(result, dict):
            return
        ttl_ms = result.get("ttlMs")
        if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, (int, float)) or ttl_ms <= 0:
            return
        if result.get("cacheScope", "private") not in ("public", "private"):
            return
        expires = time.monotonic() + min(ttl_ms / 1000.0, MAX_TTL)
        with self._lock:
            self._entries[(method, key)] = (expires, result)
            self._entries.move_to_end((method, key))
            while len(self._entries) > _MAX_ENTRIES:
                self._entries.popitem(last=False)

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        """Evict what a server notification makes stale (a session listener)."""
        methods = _EVICTS.get(method)
        if methods is not None:
            with self._lock:
                for stale in [k for k in self._entries if k[0] in methods]:
                    del self._entries[stale]
        elif method == "notifications/resources/updated":
            uri = params.get("uri")
            with self._lock:
                self._entries.pop(("resources/read", str(uri)), None)

    def clear(self) -> None:
        """Drop everything."""
        with self._lock:
            self._entries.clear()


class Catalog:
    """Connection state the session's notification listener updates. Kept apart from the
    connection so the reader thread never references the connection (the finalizer must
    be able to collect it)."""

    __slots__ = ("cache", "tools", "tools_listed")

    def __init__(self, cache: bool) -> None:
        self.cache: ResponseCache | None = ResponseCache() if cache else None
        #: Tools by name from the last ``tools/list`` (output validation, header mirroring).
        self.tools: dict[str, t.Tool] = {}
        self.tools_listed = False

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/tools/list_changed":
            self.tools_listed = False
        if self.cache is not None:
            self.cache.on_notification(method, params)
