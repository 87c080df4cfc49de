"""The task store interface: tasks, their ordered event logs, idempotency claims, push configs.

A store keeps, per task, the current snapshot and the ordered **event log** that built it:
sequence number 1 is the :class:`~a2a_sync.types.Task` the agent created, every later
number is a status update, artifact update or task-bound message. Snapshots are never
written directly: :meth:`TaskStore.append_event` folds the event into the snapshot with
:func:`a2a_sync.a2a.accumulate.accumulate` (the same fold a client applies to a stream), so
``GetTask`` always equals a folded stream.

Everything a server needs to scale out is in the interface, so a store shared by several
processes (PostgreSQL with ``LISTEN``/``NOTIFY``) drops in without changes elsewhere:

* reads are scoped by principal (another caller's task does not exist for you);
* :meth:`TaskStore.subscribe` gives a :class:`~a2a_sync.server.events.Subscription`
  that follows a task's log from a sequence number, wherever the events are appended;
* :meth:`TaskStore.claim_message` is the atomic idempotency key
  ``(principal, message_id) -> task id``, :meth:`TaskStore.bind_context` the atomic
  owner of a conversation id;
* :meth:`TaskStore.events_after` reads the log (the subscription's catch-up path).

Stores are shared by every request thread and must be thread-safe.
"""

from __future__ import annotations

import abc
import json
import secrets
from collections.abc import Callable
from typing import Final

import attrs

from ...a2a.types import (
    ListTasksParams,
    ListTasksResult,
    PushNotificationConfig,
    StreamEvent,
    Task,
    TaskStatusUpdateEvent,
)
from ...errors import UnsupportedOperation
from ..events import LogEntry, Subscription
from ._listing import (
    DEFAULT_PAGE_SIZE,
    MAX_PAGE_SIZE,
    PageToken,
    micros_of,
    page,
    sql_task_filters,
    status_time,
)

# (The ListTasks helpers live in ._listing; they are re-exported here for the stores.)
__all__ = [
    "ANONYMOUS",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "PageToken",
    "StoredPushConfig",
    "StoredTask",
    "TaskStore",
    "check_open",
    "context_key",
    "is_final",
    "micros_of",
    "page",
    "sql_task_filters",
    "status_time",
]

#: The principal of callers the authentication hook did not identify.
ANONYMOUS: Final = ""


@attrs.frozen
class StoredTask:
    """A task snapshot as stored.

    Attributes:
        task: The snapshot (all history and artifacts).
        seq: Sequence number of the last event folded into it.
        principal: Who owns the task.
    """

    task: Task
    seq: int
    principal: str


@attrs.frozen
class StoredPushConfig:
    """A webhook registration and the wire revision its notifications use.

    Attributes:
        config: The config (``task_id`` and ``id`` set).
        revision: ``"1.0"`` (body: a StreamResponse per event) or ``"0.3"`` (body: the
            Task) — the revision of the call that registered it.
    """

    config: PushNotificationConfig
    revision: str


def is_final(event: StreamEvent) -> bool:
    """True for events after which the task waits: terminal or interrupted states."""
    if isinstance(event, (Task, TaskStatusUpdateEvent)):
        state = event.status.state
        return state.is_terminal or state.is_interrupted
    return False


def check_open(task: Task) -> None:
    """Refuse events for a task that reached a terminal state (stores call it atomically
    with the append, so no event slips in after ``completed`` or ``canceled``).

    Raises:
        UnsupportedOperation: The task is terminal.
    """
    if task.status.state.is_terminal:
        raise UnsupportedOperation(f"task is already {task.status.state.value}")


def context_key(principal: str, context_id: str) -> str:
    """The store key of a caller's conversation: contextIds are per caller, so the same
    id sent by two callers names two conversations (unambiguous for any strings)."""
    return json.dumps([principal, context_id], separators=(",", ":"))


class TaskStore(abc.ABC):
    """Where tasks, their event logs, idempotency claims and push configs live.

    Implementations: :class:`~a2a_sync.server.stores.memory.InMemoryTaskStore`,
    :class:`~a2a_sync.server.stores.sqlite.SQLiteTaskStore` (one process each), and
    :class:`~a2a_sync.server.stores.postgres.PostgresTaskStore` (shared by several worker
    processes). All methods are thread-safe.
    ``principal`` arguments scope reads: a task owned by another principal is reported
    as absent (``None``), never as "forbidden", so ids cannot be probed.
    """

    # -- tasks and their event logs ----------------------------------------------------------

    @abc.abstractmethod
    def create_task(self, task: Task, *, principal: str) -> StoredTask:
        """Store a new task; the task itself becomes event 1 of its log.

        Raises:
            ConfigurationError: A task with this id exists already.
        """

    def create_unreported_task(self, task: Task, *, principal: str) -> StoredTask:
        """Store a new task that nobody has been told of yet (a blocking send's run, whose
        caller waits for the final state).

        The store may postpone making it durable until the task's next durable event
        (committed together), or until anyone looks: :meth:`get_task`,
        :meth:`events_after` and :meth:`list_tasks` make it durable before they show it,
        and subscribers get its events only once it is. The caller itself must learn of
        the task through those reads too. The default creates it at once.

        Raises:
            ConfigurationError: A task with this id exists already (a store that postpones
                the write may report it on the task's next write instead).
        """
        return self.create_task(task, principal=principal)

    @abc.abstractmethod
    def append_event(self, task_id: str, event: StreamEvent) -> StoredTask:
        """Fold ``event`` into the task, append it to the log and notify subscribers.

        Durable stores make terminal and interrupted states (and the task's creation)
        durable before returning: a client told "completed" can rely on it after a
        restart.

        Returns:
            The new snapshot and the event's sequence number.

        Raises:
            TaskNotFound: No such task.
            UnsupportedOperation: The task is in a terminal state already.
            ProtocolError: The event cannot follow the snapshot (an append to an unknown
                artifact, an update for another task).
        """

    @abc.abstractmethod
    def get_task(self, task_id: str, *, principal: str | None) -> StoredTask | None:
        """The current snapshot, or ``None`` (absent, or owned by another principal).

        ``principal=None`` reads without scoping (the server's own bookkeeping).
        """

    @abc.abstractmethod
    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        """The task's log entries after ``after_seq``, in order (empty: none, or no task)."""

    @abc.abstractmethod
    def subscribe(self, task_id: str, *, after_seq: int) -> Subscription:
        """Follow the task's log: every event after ``after_seq``, in order.

        The task need not exist yet (a stream may subscribe before the agent creates
        it). Close the subscription when done.
        """

    @abc.abstractmethod
    def list_tasks(self, params: ListTasksParams, *, principal: str) -> ListTasksResult:
        """One page of the principal's tasks, newest status first.

        ``params.page_size`` is validated by the caller. History and artifacts are
        returned in full (the handler trims them).

        Raises:
            InvalidParams: The page token is not one this store issued.
        """

    # -- idempotent sends ------------------------------------------------------------------

    @abc.abstractmethod
    def claim_message(self, principal: str, message_id: str, task_id: str) -> str | None:
        """Atomically bind ``(principal, message_id)`` to ``task_id`` unless already bound.

        Returns:
            ``None`` when the claim is new (the caller runs the agent), else the task id
            the message was bound to before (the caller answers with that task).
        """

    @abc.abstractmethod
    def bind_context(self, context_id: str, principal: str) -> bool:
        """Record that ``principal`` uses ``context_id``.

        Conversation ids are per caller (keyed by :func:`context_key`): the same id sent
        by two callers names two conversations, so neither can find out, or take, the
        other's. An agent keeping state per conversation keys it by
        ``(context.principal.name, context.context_id)``.

        Returns:
            True (the caller's own conversation, new or known); the server no longer
            asks, and kept for stores written against the earlier contract.
        """

    # -- page tokens -----------------------------------------------------------------------

    @property
    def page_token_key(self) -> bytes:
        """The HMAC key of this store's ListTasks page tokens (random per store unless
        set; stores shared by several processes set one all of them agree on)."""
        key: bytes | None = self.__dict__.get("_page_token_key")
        if key is None:
            key = self.__dict__.setdefault("_page_token_key", secrets.token_bytes(32))
        return key

    @page_token_key.setter
    def page_token_key(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("page_token_key needs at least 16 bytes")
        self.__dict__["_page_token_key"] = key

    # -- push notification configs ---------------------------------------------------------

    @abc.abstractmethod
    def set_push_config(self, config: PushNotificationConfig, *, revision: str) -> StoredPushConfig:
        """Create or replace a task's webhook config (``config.task_id`` and ``config.id``
        must be set; the caller checked the task's owner)."""

    @abc.abstractmethod
    def get_push_config(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        """One config of a task, or ``None``."""

    @abc.abstractmethod
    def list_push_configs(self, task_id: str) -> list[StoredPushConfig]:
        """Every config of a task, in creation order."""

    @abc.abstractmethod
    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config; ``False`` when there was none."""

    def count_push_configs(self, principal: str) -> int:
        """How many push configs the tasks of ``principal`` have together (the per-caller
        limit of :class:`~a2a_sync.server.push_policy.PushSettings`). The default is 0:
        a store that does not override it has no per-caller limit."""
        return 0

    # -- several processes ------------------------------------------------------------------
    #
    # A store shared by several worker processes (PostgreSQL) overrides these; the defaults
    # describe a store used by one process, where nothing runs elsewhere.

    def release_claim(self, principal: str, message_id: str) -> None:  # noqa: B027 - optional
        """Forget a claim whose run ended without creating a task (a direct reply, or a
        failure before the task), so that resending the message runs the agent again.

        A shared store needs it: there, a claim without its task means "the first delivery
        is still running on another worker". The default keeps the claim (one process
        knows its own runs).
        """

    def running_elsewhere(self, task_id: str) -> bool:
        """True when an agent for the task is running in another live worker process."""
        return False

    def request_cancel(self, task_id: str) -> bool:
        """Ask the worker process running the task's agent to cancel it: the cancel
        listeners registered there are called with the task id.

        Returns:
            True when another live worker runs the task and was asked; False when none
            does (cancel it here).
        """
        return False

    def add_cancel_listener(self, listener: Callable[[str], None]) -> None:  # noqa: B027
        """Call ``listener(task_id)`` when another process asks to cancel a task (on a store
        thread: the listener must not block). The default never calls it."""

    def remove_cancel_listener(self, listener: Callable[[str], None]) -> None:  # noqa: B027
        """Stop calling a listener given to :meth:`add_cancel_listener`."""

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:  # noqa: B027 - optional hook, nothing to release by default
        """Release resources and interrupt subscriptions. Idempotent."""

    def __enter__(self) -> TaskStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
