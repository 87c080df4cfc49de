"""Task stores: where tasks, their event logs, idempotency claims and push configs live.

``PostgresTaskStore`` (several worker processes sharing one database) needs the
``postgres`` extra and is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import ANONYMOUS, StoredPushConfig, StoredTask, TaskStore
from .memory import InMemoryTaskStore
from .sqlite import SQLiteTaskStore

if TYPE_CHECKING:
    from .postgres import PostgresTaskStore

__all__ = [
    "ANONYMOUS",
    "InMemoryTaskStore",
    "PostgresTaskStore",
    "SQLiteTaskStore",
    "StoredPushConfig",
    "StoredTask",
    "TaskStore",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresTaskStore":  # psycopg is optional: import it only when asked for
        from .postgres import PostgresTaskStore  # noqa: PLC0415

        return PostgresTaskStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
