"""The SQLite store's idempotency claims and conversation owners.

Internal to :mod:`a2a_sync.server.stores.sqlite`. Both are written without waiting (they
ride with the request's task creation); recent ones are remembered in memory. While every
claim of the file fits in memory (loaded on opening, none forgotten since), a new message
id is known to be new without a lookup in the file.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final

from ._sqlite_cache import Bounded
from ._sqlite_writer import WriteOp
from .base import context_key

__all__ = ["CLAIM_CACHE_SIZE", "Claims"]

#: Idempotency claims (and conversation keys) remembered in memory; older claims are
#: looked up in the file.
CLAIM_CACHE_SIZE: Final = 65536


_CLAIM: Final = "INSERT OR IGNORE INTO a2a_claims (principal, message_id, task_id) VALUES (?, ?, ?)"
_CONTEXT: Final = "INSERT OR IGNORE INTO a2a_contexts (context_id, principal) VALUES (?, ?)"


class Claims:
    """``put(op)`` queues a write; ``read(sql, args)`` returns rows."""

    def __init__(
        self, put: Callable[[WriteOp], WriteOp], read: Callable[[str, Any], list[Any]]
    ) -> None:
        self._put = put
        self._read = read
        self._lock = threading.Lock()
        self._claims: Bounded[tuple[str, str], str] = Bounded(CLAIM_CACHE_SIZE)
        self._contexts: Bounded[str, str] = Bounded(CLAIM_CACHE_SIZE)
        self._rows: list[tuple[str, tuple[str, ...]]] | None = None  # of the op queued
        rows = read(
            "SELECT principal, message_id, task_id FROM a2a_claims LIMIT ?",
            (CLAIM_CACHE_SIZE + 1,),
        )
        # The cache holds every claim of the file (until it forgets one).
        self._all_claims = len(rows) <= CLAIM_CACHE_SIZE
        if self._all_claims:
            for principal, message_id, task_id in rows:
                self._claims.set((principal, message_id), task_id)

    def claim(self, principal: str, message_id: str, task_id: str) -> str | None:
        """Bind the message to ``task_id`` unless bound already (then: that task id)."""
        key = (principal, message_id)
        with self._lock:
            existing = self._claims.get(key)
            if existing is None and not (self._all_claims and not self._claims.dropped):
                rows = self._read(
                    "SELECT task_id FROM a2a_claims WHERE principal = ? AND message_id = ?", key
                )
                existing = rows[0][0] if rows else None
            if existing is not None:
                return str(existing)
            self._claims.set(key, task_id)
            self._queue(_CLAIM, (principal, message_id, task_id))
        return None

    def bind(self, context_id: str, principal: str) -> None:
        """Record the caller's conversation. The key holds the principal, so its owner is
        the caller whether the file knows it or not: only new keys are written."""
        key = context_key(principal, context_id)
        with self._lock:
            if self._contexts.get(key) is None:
                self._queue(_CONTEXT, (key, principal))
            self._contexts.set(key, principal)

    def _queue(self, sql: str, args: tuple[str, ...]) -> None:
        """Queue one row's insert (lock held): rows queued until the op runs share it
        (a request's claim and context, usually), which rides with the task's creation."""
        if self._rows is None:
            rows: list[tuple[str, tuple[str, ...]]] = []
            self._rows = rows

            def write(db: sqlite3.Connection) -> None:  # (may run twice: see BatchWriter)
                with self._lock:
                    if self._rows is rows:  # later rows go to the next op
                        self._rows = None
                for statement, values in rows:
                    db.execute(statement, values)

            self._put(WriteOp(write, wait=False, urgent=False))
        self._rows.append((sql, args))
