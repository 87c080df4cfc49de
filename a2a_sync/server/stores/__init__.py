"""Task stores: where tasks, their event logs, idempotency claims and push configs live."""

from __future__ import annotations

from .base import ANONYMOUS, StoredPushConfig, StoredTask, TaskStore
from .memory import InMemoryTaskStore
from .sqlite import SQLiteTaskStore

__all__ = [
    "ANONYMOUS",
    "InMemoryTaskStore",
    "SQLiteTaskStore",
    "StoredPushConfig",
    "StoredTask",
    "TaskStore",
]
