"""Push-notification configs for the PostgreSQL task store, with a per-process cache.

Internal to :mod:`a2a_sync.server.stores.postgres`. The handler asks for a task's configs
after every event when push notifications are enabled, so they are cached per process.
Every change commits a ``NOTIFY a2a_push, '<task id>'``; each worker's listener drops its
cached entry (:meth:`PushConfigs.forget`). A read that overlapped an invalidation is not
cached (a generation counter), so a stale list never outlives the notification.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any, Final

from ..._net.jsonrpc import decode_json, encode
from ...a2a.codec import V1_0
from ...a2a.types import PushNotificationConfig
from ...errors import ConfigurationError
from ._pg_listen import PUSH_CHANNEL
from .base import StoredPushConfig

__all__ = ["PushConfigs"]

Query = Callable[..., list[tuple[Any, ...]]]

_SET: Final = (
    "WITH s AS (INSERT INTO a2a_push_configs (task_id, id, revision, config)"
    " VALUES (%s, %s, %s, %s) ON CONFLICT (task_id, id) DO UPDATE"
    " SET revision = excluded.revision, config = excluded.config RETURNING task_id)"
    " SELECT pg_notify(%s, task_id) FROM s"
)
_DELETE: Final = (
    "WITH d AS (DELETE FROM a2a_push_configs WHERE task_id = %s AND id = %s RETURNING task_id)"
    " SELECT pg_notify(%s, task_id) FROM d"
)
_GET: Final = "SELECT config, revision FROM a2a_push_configs WHERE task_id = %s AND id = %s"
_COUNT: Final = (
    "SELECT count(*) FROM a2a_push_configs p JOIN a2a_tasks t ON t.id = p.task_id"
    " WHERE t.principal = %s"
)
_LIST: Final = "SELECT config, revision FROM a2a_push_configs WHERE task_id = %s ORDER BY created"


class PushConfigs:
    """The push-config half of the store. Thread-safe.

    Args:
        query: Runs one statement, returns its rows (``binary=`` keyword accepted).
        cache_size: Tasks whose config lists are cached.
    """

    def __init__(self, query: Query, *, cache_size: int) -> None:
        self._query = query
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[str, list[StoredPushConfig]] = (
            collections.OrderedDict()
        )
        self._generation = 0  # bumped on every invalidation

    def set(self, config: PushNotificationConfig, revision: str) -> StoredPushConfig:
        """Create or replace a config (announced to every worker)."""
        if config.task_id is None or config.id is None:
            raise ConfigurationError("a stored push config needs task_id and id")
        blob = encode(V1_0.dump(config))
        self._query(_SET, (config.task_id, config.id, revision, blob, PUSH_CHANNEL))
        self.forget(config.task_id)
        return StoredPushConfig(config, revision)

    def get(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        """One config, or ``None``."""
        rows = self._query(_GET, (task_id, config_id), binary=True)
        return _load(*rows[0]) if rows else None

    def list(self, task_id: str) -> list[StoredPushConfig]:
        """A task's configs in creation order (cached)."""
        with self._lock:
            cached = self._cache.get(task_id)
            if cached is not None:
                self._cache.move_to_end(task_id)
                return list(cached)
            generation = self._generation
        configs = [_load(blob, rev) for blob, rev in self._query(_LIST, (task_id,), binary=True)]
        with self._lock:
            if generation == self._generation:  # no change was announced meanwhile
                self._cache[task_id] = configs
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return list(configs)

    def delete(self, task_id: str, config_id: str) -> bool:
        """Remove a config; ``False`` when there was none."""
        deleted = self._query(_DELETE, (task_id, config_id, PUSH_CHANNEL))
        self.forget(task_id)
        return bool(deleted)

    def count(self, principal: str) -> int:
        """How many configs the principal's tasks have together."""
        return int(self._query(_COUNT, (principal,))[0][0])

    def forget(self, task_id: str | None) -> None:
        """Drop the cached list of ``task_id`` (``None``: of every task)."""
        with self._lock:
            self._generation += 1
            if task_id is None:
                self._cache.clear()
            else:
                self._cache.pop(task_id, None)


def _load(blob: bytes, revision: str) -> StoredPushConfig:
    return StoredPushConfig(V1_0.load_push_config(decode_json(blob)), revision)
