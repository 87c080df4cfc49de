"""The SQLite store's push notification configs.

Internal to :mod:`a2a_sync.server.stores.sqlite`: writes go through the store's writer
thread (waited for), reads through its reader connection; the configs of recently used
tasks are cached (every event of a task asks for them).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from ..._net.jsonrpc import decode_json, encode
from ...a2a.codec import V1_0
from ...a2a.types import PushNotificationConfig
from ...errors import ConfigurationError
from ._sqlite_cache import Bounded
from .base import StoredPushConfig

__all__ = ["PushConfigTable"]

Write = Callable[[sqlite3.Connection], None]


class PushConfigTable:
    """CRUD of ``a2a_push_configs``; ``commit(write)`` runs a write durably, ``read(sql,
    args)`` returns rows."""

    def __init__(
        self,
        commit: Callable[[Write], None],
        read: Callable[[str, Any], list[Any]],
        cache_size: int,
    ) -> None:
        self._commit = commit
        self._read = read
        self._lock = threading.Lock()
        self._cache: Bounded[str, list[StoredPushConfig]] = Bounded(cache_size)

    def set(self, config: PushNotificationConfig, revision: str) -> StoredPushConfig:
        if config.task_id is None or config.id is None:
            raise ConfigurationError("a stored push config needs task_id and id")
        blob = encode(V1_0.dump(config))
        task_id, config_id = config.task_id, config.id

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT INTO a2a_push_configs (task_id, id, revision, config, created)"
                " VALUES (?, ?, ?, ?, (SELECT COALESCE(MAX(created), 0) + 1 FROM a2a_push_configs))"
                " ON CONFLICT (task_id, id) DO UPDATE SET revision = excluded.revision,"
                " config = excluded.config",
                (task_id, config_id, revision, blob),
            )

        self._commit(write)
        with self._lock:
            self._cache.pop(task_id)
        return StoredPushConfig(config, revision)

    def get(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        rows = self._read(
            "SELECT config, revision FROM a2a_push_configs WHERE task_id = ? AND id = ?",
            (task_id, config_id),
        )
        return _config(*rows[0]) if rows else None

    def list(self, task_id: str) -> list[StoredPushConfig]:
        with self._lock:
            cached = self._cache.get(task_id)
            if cached is not None:
                self._cache.set(task_id, cached)  # recently used
                return list(cached)
            rows = self._read(
                "SELECT config, revision FROM a2a_push_configs WHERE task_id = ? ORDER BY created",
                (task_id,),
            )
            configs = [_config(blob, revision) for blob, revision in rows]
            self._cache.set(task_id, configs)
            return list(configs)

    def delete(self, task_id: str, config_id: str) -> bool:
        deleted: list[int] = []

        def write(db: sqlite3.Connection) -> None:
            cursor = db.execute(
                "DELETE FROM a2a_push_configs WHERE task_id = ? AND id = ?", (task_id, config_id)
            )
            deleted.append(cursor.rowcount)

        self._commit(write)
        with self._lock:
            self._cache.pop(task_id)
        return bool(deleted and deleted[-1])  # (a batch may run twice)

    def count(self, principal: str) -> int:
        rows = self._read(
            "SELECT count(*) FROM a2a_push_configs p JOIN a2a_tasks t ON t.id = p.task_id"
            " WHERE t.principal = ?",
            (principal,),
        )
        return int(rows[0][0])


def _config(blob: bytes, revision: str) -> StoredPushConfig:
    return StoredPushConfig(V1_0.load_push_config(decode_json(blob)), revision)
