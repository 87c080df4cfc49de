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
import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, Final

import attrs

from ...a2a.types import (
    ListTasksParams,
    ListTasksResult,
    PushNotificationConfig,
    StreamEvent,
    Task,
    TaskState,
    TaskStatusUpdateEvent,
)
from ...errors import InvalidParams, UnsupportedOperation
from ..events import LogEntry, Subscription

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
    "status_time",
]

#: The principal of callers the authentication hook did not identify.
ANONYMOUS: Final = ""
#: ListTasks page size when the caller names none (what a2a-sdk uses).
DEFAULT_PAGE_SIZE: Final = 50
#: Largest ListTasks page (A2A 1.0 §3.1.4; a2a-sdk refuses more than 100 too).
MAX_PAGE_SIZE: Final = 100


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


def status_time(task: Task) -> datetime:
    """The instant a task's status was entered (its timestamp; epoch when unset)."""
    stamp = task.status.timestamp
    if stamp is None:
        return _EPOCH
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=timezone.utc)


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


#: Bytes of the HMAC-SHA256 tag that ends a page token.
_TAG_BYTES: Final = 16
#: Bounds of a token's sort key: microseconds within SQL's 64-bit integers, and task ids
#: of a sane length (a token outside them was not issued here).
_MAX_MICROS: Final = 2**62
_MAX_TASK_ID: Final = 4096
_BAD_PAGE: Final = (
    "invalid pageToken: pass the nextPageToken of an earlier ListTasks answer unchanged, "
    "or omit it to start from the first page"
)


def context_key(principal: str, context_id: str) -> str:
    """The store key of a caller's conversation: contextIds are per caller, so the same
    id sent by two callers names two conversations (unambiguous for any strings)."""
    return json.dumps([principal, context_id], separators=(",", ":"))


@attrs.frozen
class PageToken:
    """Where a ListTasks page ends: the sort key of its last task.

    Tasks are listed by status time, newest first, ties by id descending; the next page
    starts strictly after ``(micros, task_id)``. The token is opaque to clients and
    integrity-protected: an HMAC-SHA256 tag under the store's ``page_token_key`` ends it,
    so a token the store did not issue is refused with InvalidParams before any query.
    """

    micros: int
    task_id: str

    def encode(self, key: bytes) -> str:
        """The token as sent to the client, tagged with ``key``."""
        raw = json.dumps([self.micros, self.task_id], separators=(",", ":")).encode()
        tag = hmac.new(key, raw, hashlib.sha256).digest()[:_TAG_BYTES]
        return base64.urlsafe_b64encode(tag + raw).decode("ascii").rstrip("=")

    @classmethod
    def decode(cls, token: str, key: bytes) -> PageToken:
        """Read a client's token.

        Raises:
            InvalidParams: The token was not issued by this store (bad encoding, bad tag,
                or a sort key out of range).
        """
        try:
            blob = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, binascii.Error) as exc:
            raise InvalidParams(_BAD_PAGE) from exc
        tag, raw = blob[:_TAG_BYTES], blob[_TAG_BYTES:]
        if not hmac.compare_digest(tag, hmac.new(key, raw, hashlib.sha256).digest()[:_TAG_BYTES]):
            raise InvalidParams(_BAD_PAGE)
        try:
            micros, task_id = json.loads(raw)
        except (ValueError, TypeError) as exc:
            raise InvalidParams(_BAD_PAGE) from exc
        if (
            isinstance(micros, bool)
            or not isinstance(micros, int)
            or not -_MAX_MICROS <= micros <= _MAX_MICROS
            or not isinstance(task_id, str)
            or len(task_id) > _MAX_TASK_ID
        ):
            raise InvalidParams(_BAD_PAGE)
        return cls(micros, task_id)

    @classmethod
    def after(cls, task: Task) -> PageToken:
        """The token that continues after ``task``."""
        return cls(micros_of(status_time(task)), task.id)


def sql_task_filters(
    params: ListTasksParams, principal: str, placeholder: str
) -> tuple[list[str], list[Any]]:
    """The WHERE clauses and bound values of a ListTasks query on the ``a2a_tasks`` table
    (shared by the SQL stores; ``placeholder`` is ``"?"`` or ``"%s"``). Only constant
    clauses are returned; every value is a bound parameter."""
    where = [f"principal = {placeholder}"]
    args: list[Any] = [principal]
    if params.context_id:
        where.append(f"context_id = {placeholder}")
        args.append(params.context_id)
    if params.status is not None and params.status is not TaskState.unknown:
        where.append(f"state = {placeholder}")
        args.append(params.status.value)
    if params.status_timestamp_after is not None:
        where.append(f"status_micros > {placeholder}")
        args.append(micros_of(params.status_timestamp_after))
    return where, args


def micros_of(moment: datetime) -> int:
    """Microseconds since the epoch (UTC)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def page(tasks: Iterable[Task], params: ListTasksParams, key: bytes) -> ListTasksResult:
    """Filter, sort and cut one ListTasks page out of a principal's tasks (in memory);
    ``key`` signs and checks page tokens.

    ``params.page_size`` must be validated already (1 .. :data:`MAX_PAGE_SIZE` or None).
    """
    after_micros = (
        micros_of(params.status_timestamp_after)
        if params.status_timestamp_after is not None
        else None
    )
    keyed = []
    for task in tasks:
        if params.context_id and task.context_id != params.context_id:
            continue
        if (
            params.status not in (None, TaskState.unknown)
            and task.status.state is not params.status
        ):
            continue
        micros = micros_of(status_time(task))
        if after_micros is not None and micros <= after_micros:
            continue
        keyed.append(((micros, task.id), task))
    keyed.sort(key=lambda pair: pair[0], reverse=True)
    total = len(keyed)
    if params.page_token:
        token = PageToken.decode(params.page_token, key)
        bound = (token.micros, token.task_id)
        keyed = [pair for pair in keyed if pair[0] < bound]
    size = params.page_size or DEFAULT_PAGE_SIZE
    chosen = [task for _, task in keyed[:size]]
    next_token = PageToken.after(chosen[-1]).encode(key) if len(keyed) > size else ""
    return ListTasksResult(
        tasks=chosen, next_page_token=next_token, page_size=size, total_size=total
    )


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
