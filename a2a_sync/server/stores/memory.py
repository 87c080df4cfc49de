"""A task store in process memory: fast, and gone when the process ends."""

from __future__ import annotations

import threading

from ...a2a.accumulate import accumulate
from ...a2a.types import ListTasksParams, ListTasksResult, PushNotificationConfig, StreamEvent, Task
from ...errors import ConfigurationError, TaskNotFound
from ..events import DEFAULT_SUBSCRIBER_BUFFER, EventBroker, LogEntry, Subscription
from .base import StoredPushConfig, StoredTask, TaskStore, check_open, context_key, page

__all__ = ["InMemoryTaskStore"]


class _Record:
    __slots__ = ("log", "principal", "task")

    def __init__(self, task: Task, principal: str) -> None:
        self.task = task
        self.principal = principal
        self.log: list[StreamEvent] = [task]  # log[i] has sequence number i + 1


class InMemoryTaskStore(TaskStore):
    """Keeps every task, its event log, claims and push configs in memory.

    The default store of :class:`~a2a_sync.server.A2AApplication`; use
    :class:`~a2a_sync.server.stores.sqlite.SQLiteTaskStore` when tasks must survive a
    restart. Thread-safe: one lock guards all state; events are published to subscribers
    under it, so every subscriber sees one order.

    Args:
        subscriber_buffer: Events buffered per subscriber before it re-reads the log.
    """

    def __init__(self, *, subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, _Record] = {}
        self._claims: dict[tuple[str, str], str] = {}
        self._contexts: dict[str, str] = {}
        self._push: dict[str, dict[str, StoredPushConfig]] = {}
        self._broker = EventBroker(buffer=subscriber_buffer)

    def create_task(self, task: Task, *, principal: str) -> StoredTask:
        with self._lock:
            if task.id in self._tasks:
                raise ConfigurationError(f"task {task.id!r} exists already")
            self._tasks[task.id] = _Record(task, principal)
            self._broker.publish(task.id, 1, task)
        return StoredTask(task, 1, principal)

    def append_event(self, task_id: str, event: StreamEvent) -> StoredTask:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is None:
                raise TaskNotFound()
            check_open(record.task)
            record.task = accumulate(record.task, event)
            record.log.append(event)
            seq = len(record.log)
            self._broker.publish(task_id, seq, event)
            return StoredTask(record.task, seq, record.principal)

    def get_task(self, task_id: str, *, principal: str | None) -> StoredTask | None:
        record = self._tasks.get(task_id)
        if record is None or (principal is not None and record.principal != principal):
            return None
        with self._lock:  # task and log length read together
            return StoredTask(record.task, len(record.log), record.principal)

    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is None:
                return []
            log = record.log
            return [(seq, log[seq - 1]) for seq in range(after_seq + 1, len(log) + 1)]

    def subscribe(self, task_id: str, *, after_seq: int) -> Subscription:
        return self._broker.subscribe(task_id, after_seq, self.events_after)

    def list_tasks(self, params: ListTasksParams, *, principal: str) -> ListTasksResult:
        with self._lock:
            tasks = [r.task for r in self._tasks.values() if r.principal == principal]
        return page(tasks, params, self.page_token_key)

    def claim_message(self, principal: str, message_id: str, task_id: str) -> str | None:
        key = (principal, message_id)
        with self._lock:
            existing = self._claims.get(key)
            if existing is None:
                self._claims[key] = task_id
            return existing

    def bind_context(self, context_id: str, principal: str) -> bool:
        key = context_key(principal, context_id)
        with self._lock:
            return self._contexts.setdefault(key, principal) == principal

    def set_push_config(self, config: PushNotificationConfig, *, revision: str) -> StoredPushConfig:
        if config.task_id is None or config.id is None:
            raise ConfigurationError("a stored push config needs task_id and id")
        stored = StoredPushConfig(config, revision)
        with self._lock:
            self._push.setdefault(config.task_id, {})[config.id] = stored
        return stored

    def get_push_config(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        with self._lock:
            return self._push.get(task_id, {}).get(config_id)

    def list_push_configs(self, task_id: str) -> list[StoredPushConfig]:
        configs = self._push.get(task_id)
        if not configs:  # the hot path: most tasks have none
            return []
        with self._lock:
            return list(configs.values())

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        with self._lock:
            return self._push.get(task_id, {}).pop(config_id, None) is not None

    def count_push_configs(self, principal: str) -> int:
        with self._lock:
            return sum(
                len(configs)
                for task_id, configs in self._push.items()
                if (record := self._tasks.get(task_id)) is not None
                and record.principal == principal
            )

    def close(self) -> None:
        self._broker.close()

    def __repr__(self) -> str:
        return f"<InMemoryTaskStore tasks={len(self._tasks)}>"
