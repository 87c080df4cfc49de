"""A task store in PostgreSQL, shared by every worker process (and host) of a deployment.

Install the ``postgres`` extra (psycopg 3 and psycopg_pool). Every worker opens the same
database; any worker can serve any request, so a load balancer needs no sticky sessions:

* **State** (tasks, event logs, idempotency claims, conversation owners, push configs) is
  in the database; nothing a request needs lives only in one process.
* **Events cross processes** through ``NOTIFY a2a_events, '<seq> <task id>'``, committed
  with the event; subscribers on other workers read the log from their last sequence
  number (:mod:`._pg_listen`), so a stream started on one worker and resumed on another
  sees every event once, in order.
* **Cancel requests** for an agent running on another worker travel on ``a2a_cancel``;
  the worker running the agent calls its ``cancel`` hook (see
  :meth:`~a2a_sync.server.stores.base.TaskStore.request_cancel`).
* **Leases:** a task whose agent runs names its worker; workers heartbeat, and a task left
  running by a worker that stopped beating for ``lease_timeout`` is marked ``failed`` by
  the others (:mod:`._pg_lease`). A worker shutting down cleanly fails its own leftovers
  at once.

Cost per operation: one round trip and one transaction per append (an ``UPDATE`` of the
snapshot, the ``INSERT`` of the event and the ``NOTIFY`` in one statement, guarded by the
expected sequence number; a cached snapshot makes the fold local, and a stale cache costs
one retry). Reads go to the database (another worker may have written); a snapshot
unchanged since this process last saw it is not transferred again.

The schema is created on first use and migrated by version (:mod:`._pg_schema`).
"""

from __future__ import annotations

import collections
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, Final

import attrs
import psycopg

from ..._accumulate import accumulate
from ..._codec import V1_0
from ..._jsonrpc import decode_json, encode
from ...errors import (
    ConfigurationError,
    InternalError,
    ProtocolError,
    TaskNotFound,
    UnsupportedOperation,
)
from ...types import (
    ListTasksParams,
    ListTasksResult,
    Message,
    PushNotificationConfig,
    StreamEvent,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ..events import DEFAULT_SUBSCRIBER_BUFFER, LogEntry, Subscription
from ._pg_claims import CLAIM_STATEMENTS, Claims
from ._pg_db import Database, Param
from ._pg_lease import Lease
from ._pg_listen import CANCEL_CHANNEL, Listener, Router, event_payload, task_channel
from ._pg_push import PushConfigs
from ._pg_schema import migrate
from .base import (
    DEFAULT_PAGE_SIZE,
    PageToken,
    StoredPushConfig,
    StoredTask,
    TaskStore,
    check_open,
    is_final,
    micros_of,
    status_time,
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

#: ``synchronous_commit`` of appends that are not final (and of claims): they return
#: before their WAL is flushed to disk. The next durable commit (a task's creation, a
#: final state) flushes them too, WAL being written in order, so a crash can only lose a
#: suffix of a running task's events (its agent died with the crash anyway), never leave
#: a gap, and never lose what a client was told is done. The SQLite store makes the same
#: promise.
ASYNC_COMMIT: Final = "off"
#: The stored snapshot is rewritten with every final event and at least every this many
#: events; between, appends only insert the event. Streaming a long artifact then costs an
#: insert per chunk, not a rewrite of the ever larger task; reads fold at most this many.
SNAPSHOT_INTERVAL: Final = 32

_APPEND_ATTEMPTS: Final = 64  # races lost in a row before giving up (each one means progress)
_ORPHAN_NOTE: Final = "The worker running this task stopped; its agent is gone."
_SHUTDOWN_NOTE: Final = "The server shut down while this task was running."

# Prepared on every pooled connection (see _pg_db): the statements of every request.
_CREATE: Final = "a2a_create"
_APPEND: Final = "a2a_append"
_APPEND_SNAPSHOT: Final = "a2a_append_snapshot"
_APPEND_SNAPSHOT_IF_WORKER: Final = "a2a_append_snapshot_if_worker"
# An append: the task's row, the event and the notification in one statement (one round
# trip, one transaction), applied only if the task is still at the sequence number the
# event was folded onto ($3 - 1). Three forms: without the snapshot (the log has the
# event), with it, and with it while the task is still run by a given worker (orphans).
# $9 'off' commits without waiting for the WAL flush (intermediate events: see
# ASYNC_COMMIT); NULL keeps the server's synchronous_commit.
_APPEND_SQL: Final = (
    "WITH t AS (UPDATE a2a_tasks SET state = $1::text, status_micros = $2::bigint,"
    " seq = $3::integer, worker = $4::text{snapshot}"
    " WHERE id = $5::text AND seq = $3::integer - 1{condition} RETURNING id),"
    " e AS (INSERT INTO a2a_events (task_id, seq, event) SELECT id, $3::integer, $6::bytea"
    " FROM t RETURNING task_id)"
    " SELECT pg_notify($7::text, $8::text), set_config('synchronous_commit',"
    " coalesce($9::text, current_setting('synchronous_commit')), true) FROM e"
)
_SNAPSHOT: Final = ", snapshot = $10::bytea, snapshot_seq = $3::integer"
STATEMENTS: Final = {
    _CREATE: (
        "WITH t AS (INSERT INTO a2a_tasks (id, principal, context_id, state, status_micros,"
        " seq, worker, snapshot, snapshot_seq) VALUES ($1::text, $2::text, $3::text,"
        " $4::text, $5::bigint, 1, $6::text, $7::bytea, 1) ON CONFLICT (id) DO NOTHING"
        " RETURNING id),"
        " e AS (INSERT INTO a2a_events (task_id, seq, event) SELECT id, 1, $8::bytea FROM t"
        " RETURNING task_id)"
        " SELECT pg_notify($9::text, $10::text) FROM e"
    ),
    _APPEND: _APPEND_SQL.format(snapshot="", condition=""),
    _APPEND_SNAPSHOT: _APPEND_SQL.format(snapshot=_SNAPSHOT, condition=""),
    _APPEND_SNAPSHOT_IF_WORKER: _APPEND_SQL.format(
        snapshot=_SNAPSHOT, condition=" AND worker = $11::text"
    ),
    **CLAIM_STATEMENTS,
}
# A task as of now, given the seq of the copy cached here (-1: none): the stored snapshot
# only if the cached copy is older, then the events to fold onto whichever is newer.
_FETCH: Final = (
    "SELECT t.seq, t.principal, t.worker, t.snapshot_seq,"
    " CASE WHEN t.snapshot_seq <= %(have)s THEN NULL ELSE t.snapshot END,"
    " CASE WHEN t.seq <= %(have)s THEN NULL ELSE (SELECT array_agg(e.event ORDER BY e.seq)"
    " FROM a2a_events e WHERE e.task_id = t.id AND e.seq > greatest(t.snapshot_seq, %(have)s))"
    " END FROM a2a_tasks t WHERE t.id = %(id)s"
)
# ListTasks: snapshots and the events not folded into them yet.
_PENDING: Final = (
    "CASE WHEN seq = snapshot_seq THEN NULL ELSE (SELECT array_agg(e.event ORDER BY e.seq)"
    " FROM a2a_events e WHERE e.task_id = a2a_tasks.id AND e.seq > a2a_tasks.snapshot_seq) END"
)
_EVENTS: Final = "SELECT seq, event FROM a2a_events WHERE task_id = %s AND seq > %s ORDER BY seq"
_RUN_ELSEWHERE: Final = (
    "SELECT 1 FROM a2a_tasks t JOIN a2a_workers w ON w.id = t.worker"
    " WHERE t.id = %s AND t.worker <> %s AND w.heartbeat >= now() - make_interval(secs => %s)"
)


class _Record:
    """A cached task: ``state`` is ``(task, seq)``, replaced as one tuple; ``lock`` orders
    this process's appends to the task; ``stored_seq`` is where the stored snapshot was
    known to be (never ahead of it)."""

    __slots__ = ("lock", "principal", "state", "stored_seq")

    def __init__(self, task: Task, seq: int, principal: str, stored_seq: int) -> None:
        self.state = (task, seq)
        self.principal = principal
        self.stored_seq = stored_seq
        self.lock = threading.Lock()


@attrs.frozen
class _Row:
    """A task read from the database (folded up to ``seq``)."""

    task: Task
    seq: int
    principal: str
    worker: str | None
    stored_seq: int


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
        self._lease_timeout = lease_timeout
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._closed = False
        self._cache: collections.OrderedDict[str, _Record] = collections.OrderedDict()
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
                _load_event,
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
        snapshot = encode(V1_0.dump_task(task))
        created = self._db.execute_prepared(
            _CREATE,
            (
                task.id,
                principal,
                task.context_id,
                task.status.state.value,
                micros_of(status_time(task)),
                None if is_final(task) else self.worker_id,
                snapshot,
                b'{"task":' + snapshot + b"}",  # the StreamResponse form of the Task
                task_channel(task.id),
                event_payload(1, self.worker_id, task.id),
            ),
        )
        if not created:
            raise ConfigurationError(f"task {task.id!r} exists already")
        self._remember(task.id, _Row(task, 1, principal, None, 1))
        self._router.publish(task.id, 1, task)
        return StoredTask(task, 1, principal)

    def append_event(self, task_id: str, event: StreamEvent) -> StoredTask:
        self._check_open()
        record = self._record(task_id)
        if record is None:
            raise TaskNotFound()
        with record.lock:
            checked = False  # the cached snapshot was re-read after refusing the event
            for _ in range(_APPEND_ATTEMPTS):
                task, seq = record.state
                try:
                    check_open(task)
                    folded = accumulate(task, event)
                except (UnsupportedOperation, ProtocolError):
                    # Refused by a cached snapshot: refuse only if it is the latest one.
                    if checked or not self._refresh(record, task_id):
                        raise
                    checked = True
                    continue
                new_seq = seq + 1
                final = is_final(event)
                snapshot = final or new_seq - record.stored_seq >= SNAPSHOT_INTERVAL
                worker = None if final else self.worker_id
                if self._write(folded, event, seq=new_seq, worker=worker, snapshot=snapshot):
                    record.state = (folded, new_seq)
                    if snapshot:
                        record.stored_seq = new_seq
                    self._router.publish(task_id, new_seq, event)
                    return StoredTask(folded, new_seq, record.principal)
                # Another worker appended first (or the task vanished): re-read and fold again.
                if not self._refresh(record, task_id) and record.state[1] == seq:
                    raise TaskNotFound()
        raise InternalError("task store: the task changed too often to append to it")

    def _write(
        self,
        folded: Task,
        event: StreamEvent,
        *,
        seq: int,
        worker: str | None,
        snapshot: bool,
        only_if_worker: str | None = None,
    ) -> bool:
        """Run one conditional append statement; True when it appended."""
        params: list[Param] = [
            folded.status.state.value,
            micros_of(status_time(folded)),
            seq,
            worker,
            folded.id,
            encode(V1_0.dump_stream_event(event)),
            task_channel(folded.id),
            event_payload(seq, self.worker_id, folded.id),
            None if worker is None else ASYNC_COMMIT,  # final events wait for durability
        ]
        name = _APPEND
        if snapshot or only_if_worker is not None:
            params.append(encode(V1_0.dump_task(folded)))
            name = _APPEND_SNAPSHOT
            if only_if_worker is not None:
                params.append(only_if_worker)
                name = _APPEND_SNAPSHOT_IF_WORKER
        return bool(self._db.execute_prepared(name, params))

    def get_task(self, task_id: str, *, principal: str | None) -> StoredTask | None:
        with self._lock:
            record = self._cache.get(task_id)
        row = self._fetch(task_id, record.state if record is not None else None)
        if row is None or (principal is not None and row.principal != principal):
            return None
        self._remember(task_id, row)
        return StoredTask(row.task, row.seq, row.principal)

    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        rows = self._query(_EVENTS, (task_id, after_seq), binary=True)
        return [(seq, _load_event(blob)) for seq, blob in rows]

    def subscribe(self, task_id: str, *, after_seq: int) -> Subscription:
        return self._router.subscribe(task_id, after_seq, self.events_after)

    def list_tasks(self, params: ListTasksParams, *, principal: str) -> ListTasksResult:
        where = ["principal = %s"]
        args: list[Any] = [principal]
        if params.context_id:
            where.append("context_id = %s")
            args.append(params.context_id)
        if params.status is not None and params.status is not TaskState.unknown:
            where.append("state = %s")
            args.append(params.status.value)
        if params.status_timestamp_after is not None:
            where.append("status_micros > %s")
            args.append(micros_of(params.status_timestamp_after))
        # Only the constant clauses above are joined in; values are bound parameters.
        total = self._query(f"SELECT count(*) FROM a2a_tasks WHERE {' AND '.join(where)}", args)  # noqa: S608
        if params.page_token:
            token = PageToken.decode(params.page_token)
            where.append("(status_micros, id) < (%s, %s)")
            args += [token.micros, token.task_id]
        size = params.page_size or DEFAULT_PAGE_SIZE
        rows = self._query(
            f"SELECT snapshot, {_PENDING} FROM a2a_tasks WHERE {' AND '.join(where)}"  # noqa: S608
            " ORDER BY status_micros DESC, id DESC LIMIT %s",
            [*args, size + 1],
            binary=True,
        )
        tasks = [_fold(_load_task(blob), pending) for blob, pending in rows[:size]]
        next_token = PageToken.after(tasks[-1]).encode() if len(rows) > size else ""
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
            listener(task_id)

    # -- push configs (cached per process, invalidated everywhere by NOTIFY) ----------------

    def set_push_config(self, config: PushNotificationConfig, *, revision: str) -> StoredPushConfig:
        return self._push.set(config, revision)

    def get_push_config(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        return self._push.get(task_id, config_id)

    def list_push_configs(self, task_id: str) -> list[StoredPushConfig]:
        return self._push.list(task_id)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        return self._push.delete(task_id, config_id)

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

    def _record(self, task_id: str) -> _Record | None:
        """The cached record, loaded on a miss."""
        with self._lock:
            record = self._cache.get(task_id)
            if record is not None:
                self._cache.move_to_end(task_id)
                return record
        row = self._fetch(task_id, None)
        return self._remember(task_id, row) if row is not None else None

    def _fetch(self, task_id: str, cached: tuple[Task, int] | None) -> _Row | None:
        """The task as stored now (one query); what is cached here is not sent again."""
        have = cached[1] if cached is not None else -1
        rows = self._query(_FETCH, {"have": have, "id": task_id}, binary=True)
        if not rows:
            return None
        seq, principal, worker, stored_seq, blob, pending = rows[0]
        if blob is not None:
            task = _load_task(blob)
        elif cached is not None and seq >= have:
            task = cached[0]
        else:  # the cached copy is ahead of the database (never expected): read it all
            return self._fetch(task_id, None)
        return _Row(_fold(task, pending), seq, principal, worker, stored_seq)

    def _remember(self, task_id: str, row: _Row) -> _Record:
        with self._lock:
            record = self._cache.get(task_id)
            if record is None:
                record = _Record(row.task, row.seq, row.principal, row.stored_seq)
                self._cache[task_id] = record
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
            elif record.state[1] < row.seq:
                record.state = (row.task, row.seq)
                record.stored_seq = max(record.stored_seq, row.stored_seq)
            return record

    def _refresh(self, record: _Record, task_id: str) -> bool:
        """Re-read the task; True when it changed since cached."""
        cached = record.state
        row = self._fetch(task_id, cached)
        if row is None or row.seq == cached[1]:
            return False
        record.state = (row.task, row.seq)
        record.stored_seq = max(record.stored_seq, row.stored_seq)
        return True

    def _fail_orphan(self, task_id: str, dead_worker: str) -> None:
        """Fail a task whose worker is dead, unless it moved on meanwhile."""
        self._settle_owned(task_id, dead_worker, _ORPHAN_NOTE)

    def _fail_own_tasks(self) -> None:
        rows = self._query("SELECT id FROM a2a_tasks WHERE worker = %s", (self.worker_id,))
        for (task_id,) in rows:
            logger.warning("task %s was still running at shutdown: failed", task_id)
            self._settle_owned(task_id, self.worker_id, _SHUTDOWN_NOTE)

    def _settle_owned(self, task_id: str, worker: str, note: str) -> None:
        for _ in range(_APPEND_ATTEMPTS):
            row = self._fetch(task_id, None)
            if row is None or row.worker != worker:
                return  # gone, or no longer run by that worker
            task = row.task
            event = TaskStatusUpdateEvent(
                task_id=task.id,
                context_id=task.context_id or "",
                status=TaskStatus.now(
                    TaskState.failed,
                    Message.agent(note, task_id=task.id, context_id=task.context_id),
                ),
            )
            folded = accumulate(task, event)
            seq = row.seq + 1
            if self._write(
                folded, event, seq=seq, worker=None, snapshot=True, only_if_worker=worker
            ):
                self._remember(task_id, _Row(folded, seq, row.principal, None, seq))
                self._router.publish(task_id, seq, event)
                return


def _load_task(blob: bytes) -> Task:
    return V1_0.load_task(decode_json(blob))


def _load_event(blob: bytes) -> StreamEvent:
    return V1_0.load_stream_event(decode_json(blob))


def _fold(task: Task, pending: list[bytes] | None) -> Task:
    """``task`` with the stored events not folded into its snapshot yet."""
    for blob in pending or ():
        task = accumulate(task, _load_event(blob))
    return task
