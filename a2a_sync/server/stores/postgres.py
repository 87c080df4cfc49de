"""A task store in PostgreSQL, shared by every worker process (and host) of a deployment.

Install the ``postgres`` extra (psycopg 3 and psycopg_pool). Every worker opens the same
database; any worker can serve any request, so a load balancer needs no sticky sessions:

* **State** (tasks, event logs, idempotency claims, conversation owners, push configs) is
  in the database; nothing a request needs lives only in one process.
* **Events cross processes** through a ``NOTIFY`` on the task's channel, committed with
  the event and carrying only its sequence number; a worker listens to the tasks it has
  subscribers for and reads their log from where they are (:mod:`._pg_listen`), so a
  stream started on one worker and resumed on another sees every event once, in order.
* **Cancel requests** for an agent running on another worker travel on ``a2a_cancel``;
  the worker running the agent calls its ``cancel`` hook (see
  :meth:`~a2a_sync.server.stores.base.TaskStore.request_cancel`).
* **Leases:** a task whose agent runs names its worker; workers heartbeat, and a task left
  running by a worker that stopped beating for ``lease_timeout`` is marked ``failed`` by
  the others (:mod:`._pg_lease`). A worker shutting down cleanly fails its own leftovers
  at once.

Cost per operation: one round trip and one transaction per append (the task's row, the
event and the notification in one prepared statement, guarded by the expected sequence
number: a cached snapshot makes the fold local, and a stale cache costs one retry). The
stored snapshot is rewritten with final events and every ``SNAPSHOT_INTERVAL`` (32)
events; reads fold the events since. Final states (and creations) are committed durably
before the call returns; intermediate events commit without waiting for the WAL flush
(:mod:`._pg_tasks`). Reads go to the database (another worker may have written); what
this process has cached already is not transferred again, and a terminal task cached
here (it never changes again) is answered without a read. A blocking send's task,
created unreported (nobody can name it yet), stays in this worker until its final state
or a read here, then its row and log are one statement: a blocking SendMessage costs
two statements (claim, then creation + events + final state, one durable commit), three
with a new ``contextId``. Claims and those creations arriving while one is in flight are
grouped: the next statement writes all of them, one transaction (one WAL flush) for
several messages (:mod:`._pg_group`).

See ``docs/scale-out.md`` for deployment, pool sizing and lease settings.

The schema is created on first use and migrated by version (:mod:`._pg_schema`).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Final

import psycopg

from ...a2a.types import (
    ListTasksParams,
    ListTasksResult,
    PushNotificationConfig,
    StreamEvent,
    Task,
)
from ...errors import ConfigurationError, InternalError
from ..events import DEFAULT_SUBSCRIBER_BUFFER, LogEntry, Subscription
from ._pg_cache import TaskCache
from ._pg_claims import Claims
from ._pg_db import Database
from ._pg_lease import Lease
from ._pg_listen import CANCEL_CHANNEL, Listener, Router
from ._pg_push import PushConfigs
from ._pg_schema import migrate
from ._pg_tasks import PENDING, STATEMENTS, Row, TaskRows, fold, load_event, load_task
from .base import (
    DEFAULT_PAGE_SIZE,
    PageToken,
    StoredPushConfig,
    StoredTask,
    TaskStore,
    is_final,
    sql_task_filters,
)

__all__ = [
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_LEASE_TIMEOUT",
    "DEFAULT_POOL_SIZE",
    "PostgresTaskStore",
]

logger = logging.getLogger(__name__)

#: Connections per process at most. A store call holds one for a single round trip, so a
#: few serve many threads; raise it when ``pool_timeout`` errors appear under load.
DEFAULT_POOL_SIZE: Final = 10
#: Connections kept open when idle.
DEFAULT_POOL_MIN: Final = 2
#: Longest wait for a free pooled connection before the call fails (InternalError).
DEFAULT_POOL_TIMEOUT: Final = 10.0
#: Longest wait to connect (and migrate) when the store opens.
DEFAULT_CONNECT_TIMEOUT: Final = 10.0
#: Seconds between a worker's heartbeats (one UPDATE, plus the orphan check).
DEFAULT_HEARTBEAT_INTERVAL: Final = 5.0
#: A worker silent this long is dead and its running tasks are failed. Six beats: a GC
#: pause or a slow database does not kill live work; a crash is reported within ~35 s.
DEFAULT_LEASE_TIMEOUT: Final = 30.0
#: How long a resent message waits for its first delivery, running on another worker, to
#: create its task (matches the handler's blocking timeout).
DEFAULT_CLAIM_WAIT: Final = 50.0
#: Task snapshots cached per process (the fold of an append needs the latest one).
DEFAULT_CACHE_SIZE: Final = 4096
#: How long close() waits for the listener and heartbeat threads.
CLOSE_TIMEOUT: Final = 5.0

_ORPHAN_NOTE: Final = "The worker running this task stopped; its agent is gone."
_SHUTDOWN_NOTE: Final = "The server shut down while this task was running."

_RUN_ELSEWHERE: Final = (
    "SELECT 1 FROM a2a_tasks t JOIN a2a_workers w ON w.id = t.worker"
    " WHERE t.id = %s AND t.worker <> %s AND w.heartbeat >= now() - make_interval(secs => %s)"
)


class PostgresTaskStore(TaskStore):
    """Tasks, event logs, claims and push configs in PostgreSQL, for several workers.

    Thread-safe. Opens a connection pool (``pool_size`` at most), one LISTEN connection
    and one log-reading connection, and two daemon threads (listener, heartbeat). Close
    it when the worker stops: its running tasks are failed and its lease released.

    Args:
        dsn: libpq connection string or ``postgresql://`` URL (credentials in it never
            reach logs or reprs).
        pool_size: Pooled connections at most.
        pool_min: Pooled connections kept open.
        pool_timeout: Longest wait for a pooled connection.
        connect_timeout: Longest wait to connect and migrate when opening.
        heartbeat_interval: Seconds between this worker's heartbeats.
        lease_timeout: Silence after which another worker's running tasks are failed.
        claim_wait: How long a resent message waits for its first delivery, running on
            another worker, to create its task.
        cache_size: Task snapshots cached in this process.
        subscriber_buffer: Events buffered per subscriber before it re-reads the log.

    Raises:
        ConfigurationError: The database cannot be reached, or its schema is newer than
            this code.
    """

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        pool_min: int = DEFAULT_POOL_MIN,
        pool_timeout: float = DEFAULT_POOL_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
        lease_timeout: float = DEFAULT_LEASE_TIMEOUT,
        claim_wait: float = DEFAULT_CLAIM_WAIT,
        cache_size: int = DEFAULT_CACHE_SIZE,
        subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
    ) -> None:
        if lease_timeout <= heartbeat_interval:
            raise ConfigurationError("lease_timeout must exceed heartbeat_interval")
        self.worker_id = uuid.uuid4().hex
        # Every worker given this DSN signs page tokens alike (set it for a secret key).
        self.page_token_key = hashlib.sha256(b"a2a-sync page tokens\0" + dsn.encode()).digest()
        self._lease_timeout = lease_timeout
        self._lock = threading.Lock()
        self._closed = False
        self._cancel_listeners: list[Callable[[str], None]] = []
        self._listener: Listener | None = None
        self._router = Router(buffer=subscriber_buffer, on_change=self._followed_changed)
        self._db = Database(
            dsn,
            pool_size=pool_size,
            pool_min=pool_min,
            pool_timeout=pool_timeout,
            connect_timeout=connect_timeout,
            setup=migrate,
            prepared=STATEMENTS,
        )
        self._query = self._db.query
        self._rows = TaskRows(self._db, self.worker_id)
        self._cache = TaskCache(self._rows, self._router, self.worker_id, cache_size)
        self._push = PushConfigs(self._query, cache_size=cache_size)
        self._claims = Claims(
            self._db,
            lambda task_id, after: self.subscribe(task_id, after_seq=after),
            worker_id=self.worker_id,
            lease_timeout=lease_timeout,
            claim_wait=claim_wait,
        )
        try:
            self._listener = Listener(
                self._db.connect,
                self._router,
                load_event,
                worker_id=self.worker_id,
                on_cancel=self._on_cancel_request,
                on_push_change=self._push.forget,
                on_reconnect=lambda: self._push.forget(None),  # changes may have been missed
                name="a2a-sync-pg-listener",
            )
        except (psycopg.Error, ConfigurationError) as exc:
            self._db.close(CLOSE_TIMEOUT)
            if isinstance(exc, ConfigurationError):
                raise
            raise ConfigurationError(
                f"cannot open the PostgreSQL task store: {type(exc).__name__}"
            ) from exc
        try:
            self._lease = Lease(
                self._query,
                self.worker_id,
                heartbeat_interval=heartbeat_interval,
                lease_timeout=lease_timeout,
                fail_task=self._fail_orphan,
                name="a2a-sync-pg-heartbeat",
            )
        except InternalError as exc:
            self._listener.close(CLOSE_TIMEOUT)
            self._db.close(CLOSE_TIMEOUT)
            raise ConfigurationError("cannot register the worker in the task store") from exc

    # -- tasks -----------------------------------------------------------------------------

    def create_task(self, task: Task, *, principal: str) -> StoredTask:
        self._check_open()
        created = self._rows.create(task, principal, None if is_final(task) else self.worker_id)
        if not created:
            raise ConfigurationError(f"task {task.id!r} exists already")
        self._cache.remember(task.id, Row(task, 1, principal, None, 1))
        self._router.publish(task.id, 1, task)
        return StoredTask(task, 1, principal)

    def create_unreported_task(self, task: Task, *, principal: str) -> StoredTask:
        """Keep the task in this worker until its final state, or until anyone reads it:
        then its creation and events are written in one statement (one durable commit).
        Another worker does not see it before (nobody can name it: the caller learns the
        id only from an answer read after the write)."""
        self._check_open()
        if is_final(task):
            return self.create_task(task, principal=principal)
        return self._cache.create_unreported(task, principal)

    def append_event(self, task_id: str, event: StreamEvent) -> StoredTask:
        self._check_open()
        return self._cache.append(task_id, event)

    def get_task(self, task_id: str, *, principal: str | None) -> StoredTask | None:
        self._cache.reveal(task_id)
        record = self._cache.cached(task_id)
        if record is not None and record.state[0].status.state.is_terminal:
            # A terminal task never changes again: what this worker cached is what is stored.
            task, seq = record.state
            if principal is not None and record.principal != principal:
                return None
            return StoredTask(task, seq, record.principal)
        row = self._rows.fetch(task_id, record.state if record is not None else None)
        if row is None or (principal is not None and row.principal != principal):
            return None
        self._cache.remember(task_id, row)
        return StoredTask(row.task, row.seq, row.principal)

    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        self._cache.reveal(task_id)
        return self._rows.events_after(task_id, after_seq)

    def subscribe(self, task_id: str, *, after_seq: int) -> Subscription:
        return self._router.subscribe(task_id, after_seq, self.events_after)

    def list_tasks(self, params: ListTasksParams, *, principal: str) -> ListTasksResult:
        self._cache.reveal(None)
        where, args = sql_task_filters(params, principal, "%s")
        # Only the constant clauses above are joined in; values are bound parameters.
        total = self._query(f"SELECT count(*) FROM a2a_tasks WHERE {' AND '.join(where)}", args)  # noqa: S608
        if params.page_token:
            token = PageToken.decode(params.page_token, self.page_token_key)
            where.append("(status_micros, id) < (%s, %s)")
            args += [token.micros, token.task_id]
        size = params.page_size or DEFAULT_PAGE_SIZE
        rows = self._query(
            f"SELECT snapshot, {PENDING} FROM a2a_tasks WHERE {' AND '.join(where)}"  # noqa: S608
            " ORDER BY status_micros DESC, id DESC LIMIT %s",
            [*args, size + 1],
            binary=True,
        )
        tasks = [fold(load_task(blob), pending) for blob, pending in rows[:size]]
        key = self.page_token_key
        next_token = PageToken.after(tasks[-1]).encode(key) if len(rows) > size else ""
        return ListTasksResult(
            tasks=tasks, next_page_token=next_token, page_size=size, total_size=total[0][0]
        )

    # -- claims and conversations ------------------------------------------------------------

    def claim_message(self, principal: str, message_id: str, task_id: str) -> str | None:
        self._check_open()
        return self._claims.claim(principal, message_id, task_id)

    def release_claim(self, principal: str, message_id: str) -> None:
        self._claims.release(principal, message_id)

    def bind_context(self, context_id: str, principal: str) -> bool:
        self._check_open()
        return self._claims.bind_context(context_id, principal)

    # -- several workers ---------------------------------------------------------------------

    def running_elsewhere(self, task_id: str) -> bool:
        return bool(self._query(_RUN_ELSEWHERE, (task_id, self.worker_id, self._lease_timeout)))

    def request_cancel(self, task_id: str) -> bool:
        if not self.running_elsewhere(task_id):
            return False
        self._db.notify(CANCEL_CHANNEL, task_id)
        return True

    def add_cancel_listener(self, listener: Callable[[str], None]) -> None:
        with self._lock:
            self._cancel_listeners.append(listener)

    def remove_cancel_listener(self, listener: Callable[[str], None]) -> None:
        with self._lock:
            if listener in self._cancel_listeners:
                self._cancel_listeners.remove(listener)

    def _on_cancel_request(self, task_id: str) -> None:
        with self._lock:
            listeners = list(self._cancel_listeners)
        for listener in listeners:
            try:
                listener(task_id)
            except Exception:  # one failing listener must not stop the others or the thread
                logger.exception("cancel listener failed for task %s", task_id)

    # -- push configs (cached per process, invalidated everywhere by NOTIFY) ----------------

    def set_push_config(self, config: PushNotificationConfig, *, revision: str) -> StoredPushConfig:
        return self._push.set(config, revision)

    def get_push_config(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        return self._push.get(task_id, config_id)

    def list_push_configs(self, task_id: str) -> list[StoredPushConfig]:
        return self._push.list(task_id)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return self._push.delete(task_id, config_id)

    def count_push_configs(self, principal: str) -> int:
        return self._push.count(principal)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Fail this worker's unfinished tasks, release its lease, stop the threads and
        close the connections. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._lease.close(CLOSE_TIMEOUT)
        try:
            self._fail_own_tasks()
            self._lease.retire()
        except InternalError:
            logger.warning("could not settle this worker's tasks; its lease will expire")
        self._router.close()
        if self._listener is not None:
            self._listener.close(CLOSE_TIMEOUT)
        self._db.close(CLOSE_TIMEOUT)

    def __repr__(self) -> str:
        return f"<PostgresTaskStore worker={self.worker_id} cached={len(self._cache)}>"

    # -- internals ---------------------------------------------------------------------------

    def _followed_changed(self) -> None:
        listener = self._listener
        if listener is not None:  # else the listener reads the router when it starts
            listener.poke()

    def _check_open(self) -> None:
        if self._closed:
            raise InternalError("task store is closed")

    def _fail_orphan(self, task_id: str, dead_worker: str) -> None:
        """Fail a task whose worker is dead, unless it moved on meanwhile."""
        self._cache.settle(task_id, dead_worker, _ORPHAN_NOTE)

    def _fail_own_tasks(self) -> None:
        rows = self._query("SELECT id FROM a2a_tasks WHERE worker = %s", (self.worker_id,))
        for (task_id,) in rows:
            logger.warning("task %s was still running at shutdown: failed", task_id)
            self._cache.settle(task_id, self.worker_id, _SHUTDOWN_NOTE)
