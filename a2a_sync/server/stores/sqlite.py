"""A durable task store in one SQLite file: the embedded default of ``a2a_sync.serve``.

Request threads never wait for the disk on the hot path: they fold events into an
in-memory cache of live tasks and queue the writes, which are committed in batches (one
transaction per batch, in queue order) by a caller waiting for a durable write or by the
writer thread. Every event is appended to the task's log
row by row; the task's snapshot row is rewritten only at its creation, at terminal and
interrupted states and every few dozen events (reads fold the log entries after the
snapshot onto it), so an event costs one small insert however large its task grew.
Only the moments a client may rely on are made durable before the call returns:
a task's creation, and every terminal (completed, failed, canceled, rejected) or
interrupted (input-required, auth-required) state. So a finished task survives a restart
or a crash of the process; a crash may lose intermediate ``working`` updates and
artifact chunks of tasks that were still running (their agents died with the process).

Nobody is told a creation or a final state before it is committed: the cache takes it
(and subscribers get it) only after the commit, and later appends to that task wait for
it. A creation nobody was told of yet (:meth:`create_unreported_task`, a blocking send's
run) is not even queued: it is kept with the task's record, with the events that follow,
and rides in the write of the task's final state (one op, one transaction), unless a read
(``get_task``, ``events_after``, ``list_tasks``), closing, or a long run (every
:data:`SNAPSHOT_EVERY` kept events) queues it first; subscribers hear of the task only
once it is committed. A snapshot is built from the wires its events were dumped to (see
:mod:`._sqlite_wires`), not dumped again. A write that fails fails its own caller only
(each write has its own savepoint in the shared transaction) and leaves the cache as the
file is.

The file uses WAL journaling with ``synchronous=NORMAL``: a commit survives a process
crash; only an operating-system crash or power loss may roll back the last commits. On
opening, tasks left ``submitted`` or ``working`` by a previous process are marked
``failed`` (their agent is gone), so no client polls them forever.

One process per file: several processes writing one SQLite file would each keep their
own cache. Scale out with a shared store (PostgreSQL) instead.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final

from ..._net.jsonrpc import decode_json
from ...a2a.accumulate import accumulate
from ...a2a.codec import V1_0
from ...a2a.types import (
    ListTasksParams,
    ListTasksResult,
    PushNotificationConfig,
    StreamEvent,
    Task,
    TaskState,
)
from ...errors import ConfigurationError, InternalError
from ..events import DEFAULT_SUBSCRIBER_BUFFER, EventBroker, LogEntry, Subscription
from ._encode import dumped_event
from ._sqlite_cache import TaskCache, TaskRecord
from ._sqlite_claims import Claims
from ._sqlite_push import PushConfigTable
from ._sqlite_schema import (
    MAX_SEQ,
    ORPHANS_SQL,
    SCHEMA,
    SNAPSHOT_EVERY,
    orphan_failure,
)
from ._sqlite_tasks import TaskWrites
from ._sqlite_writer import BatchWriter, WriteOp
from .base import (
    DEFAULT_PAGE_SIZE,
    PageToken,
    StoredPushConfig,
    StoredTask,
    TaskStore,
    check_open,
    is_final,
    sql_task_filters,
)

__all__ = ["SQLiteTaskStore"]

logger = logging.getLogger(__name__)

#: Live tasks kept in memory (beyond those with writes in flight, which always stay).
#: A running task is served from here; older ones are read back from the file.
DEFAULT_CACHE_SIZE: Final = 4096
#: How long close() waits for the writer thread to commit what is queued.
CLOSE_TIMEOUT: Final = 10.0

_RUNNING: Final = (TaskState.submitted, TaskState.working)


class SQLiteTaskStore(TaskWrites, TaskStore):
    """Tasks, event logs, claims and push configs in one SQLite file.

    Thread-safe. One lock guards the cache; the write connection is used by whoever
    commits the queue (one at a time); reads of tasks not in the cache use a second
    connection under its own lock.

    Args:
        path: The database file (created if missing). ``":memory:"`` is refused: use
            :class:`~a2a_sync.server.stores.memory.InMemoryTaskStore`.
        cache_size: Tasks kept in memory besides those with writes in flight.
        fail_orphans: Mark tasks left ``submitted``/``working`` by a previous process as
            ``failed`` when opening.
        subscriber_buffer: Events buffered per subscriber before it re-reads the log.

    Raises:
        ConfigurationError: The file cannot be opened as a task store.
    """

    def __init__(
        self,
        path: str,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        fail_orphans: bool = True,
        subscriber_buffer: int = DEFAULT_SUBSCRIBER_BUFFER,
    ) -> None:
        if path in ("", ":memory:"):
            raise ConfigurationError("SQLiteTaskStore needs a file; use InMemoryTaskStore")
        self.path = path
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a record's pending write ended
        self._cache = TaskCache(cache_size)
        self._broker = EventBroker(buffer=subscriber_buffer)
        self._closed = False
        try:
            writer_db = self._connect()
            writer_db.executescript(SCHEMA)
            self._reader_db = self._connect()
        except sqlite3.Error as exc:
            raise ConfigurationError(f"cannot open task store {path!r}: {exc}") from exc
        self._reader_lock = threading.Lock()
        self._writer = BatchWriter(writer_db)
        self._claims = Claims(self._writer.put, self._read)
        self._push = PushConfigTable(
            lambda write: self._submit(write, wait=True).wait(), self._read, cache_size
        )
        if fail_orphans:
            self._fail_orphans()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        return db

    # -- tasks -----------------------------------------------------------------------------

    def create_task(self, task: Task, *, principal: str) -> StoredTask:
        wire, blob = dumped_event(task)  # before anything changes: bad text fails this call
        return self._create(task, principal, wire, blob)

    def _create(self, task: Task, principal: str, wire: dict[str, Any], blob: bytes) -> StoredTask:
        with self._lock:
            self._check_open()
            if task.id in self._cache:  # (one in the file only: the write refuses it)
                raise ConfigurationError(f"task {task.id!r} exists already")
            record = TaskRecord(task, principal, 0)  # seq 0 while pending: invisible
            record.wires.note(task, wire)
            record.pending = True
            self._cache.put(task.id, record)
            op = self._enqueue_event(record, task, 1, blob, wait=True, snapshot=True)
        self._settle(record, op, task, 1)
        return StoredTask(task, 1, principal)

    def create_unreported_task(self, task: Task, *, principal: str) -> StoredTask:
        """Keep the creation in memory without writing it: it is committed with the task's
        next durable event, or first by anyone who looks (see
        :meth:`TaskStore.create_unreported_task`), or once the task has kept
        :data:`SNAPSHOT_EVERY` events."""
        wire, blob = dumped_event(task)  # before anything changes: bad text fails this call
        with self._lock:
            self._check_open()
            if task.id in self._cache:
                raise ConfigurationError(f"task {task.id!r} exists already")
            if not self._broker.subscriber_count(task.id):
                record = TaskRecord(task, principal, 0)
                record.wires.note(task, wire)
                record.events.append(task)  # seq 1, told to nobody until committed
                record.unwritten.append((1, blob))
                record.hidden = True
                self._cache.put(task.id, record)
                return StoredTask(task, 1, principal)
        return self._create(task, principal, wire, blob)  # someone follows it already

    def append_event(self, task_id: str, event: StreamEvent) -> StoredTask:
        durable = is_final(event)
        wire, blob = dumped_event(event)  # before anything changes: bad text fails this call
        with self._lock:
            self._check_open()
            record = self._settled_record(task_id)
            check_open(record.task)
            folded = accumulate(record.task, event)
            record.wires.note(event, wire)
            seq = record.seq + 1
            if record.hidden and not durable:  # rides in the task's next op
                record.unwritten.append((seq, blob))
                record.task = folded
                record.events.append(event)  # (published once the creation is durable)
                if record.creation is None and len(record.unwritten) >= SNAPSHOT_EVERY:
                    self._queue_creation(record)  # (a long run: the file gets it meanwhile)
                return StoredTask(folded, seq, record.principal)
            snapshot = durable or seq - record.snapshot_queued >= SNAPSHOT_EVERY
            op = self._enqueue_event(record, folded, seq, blob, wait=durable, snapshot=snapshot)
            if not durable:
                record.task = folded
                record.events.append(event)
                self._broker.publish(task_id, seq, event)
                return StoredTask(folded, seq, record.principal)
            record.pending = True
        self._settle(record, op, event, seq, folded)
        return StoredTask(folded, seq, record.principal)

    def get_task(self, task_id: str, *, principal: str | None) -> StoredTask | None:
        while True:
            with self._lock:
                record = self._record(task_id)
                if record is None or (principal is not None and record.principal != principal):
                    return None
                if not record.hidden:
                    if record.seq == 0:  # its creation is not durable yet
                        return None
                    return StoredTask(record.task, record.seq, record.principal)
                creation = record.creation
                if creation is None:
                    creation = self._queue_creation(record)
                elif creation.finished:  # its creation failed: the task never existed
                    self._cache.forget(task_id, record)
                    return None
            self._commit_hidden(creation)  # someone looks: commit the creation first

    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        self._looked_at(task_id)
        with self._lock:
            record = self._cache.peek(task_id)
            if record is not None and record.hidden:  # created since, or failed
                return []
            if record is not None and after_seq >= record.base:
                start = after_seq - record.base
                return [
                    (record.base + i + 1, record.events[i])
                    for i in range(start, len(record.events))
                ]
            tail = (
                [(record.base + i + 1, e) for i, e in enumerate(record.events)]
                if record is not None
                else []
            )
            upto = record.base if record is not None else None
        rows = self._read(
            "SELECT seq, event FROM a2a_events WHERE task_id = ? AND seq > ? AND seq <= ?"
            " ORDER BY seq",
            (task_id, after_seq, upto if upto is not None else MAX_SEQ),
        )
        return [(seq, V1_0.load_stream_event(decode_json(blob))) for seq, blob in rows] + tail

    def subscribe(self, task_id: str, *, after_seq: int) -> Subscription:
        return self._broker.subscribe(task_id, after_seq, self.events_after)

    def list_tasks(self, params: ListTasksParams, *, principal: str) -> ListTasksResult:
        with self._lock:  # the file's snapshots catch up with the cache, then are read
            self._check_open()
            self._enqueue_lagging()
        self._flush()
        where, args = sql_task_filters(params, principal, "?")
        # Only the constant clauses above are joined in; values are bound parameters.
        total = self._read(f"SELECT COUNT(*) FROM a2a_tasks WHERE {' AND '.join(where)}", args)  # noqa: S608
        if params.page_token:
            token = PageToken.decode(params.page_token, self.page_token_key)
            where.append("(status_micros < ? OR (status_micros = ? AND id < ?))")
            args += [token.micros, token.micros, token.task_id]
        size = params.page_size or DEFAULT_PAGE_SIZE
        rows = self._read(
            f"SELECT snapshot FROM a2a_tasks WHERE {' AND '.join(where)}"  # noqa: S608
            " ORDER BY status_micros DESC, id DESC LIMIT ?",
            [*args, size + 1],
        )
        tasks = [V1_0.load_task(decode_json(blob)) for (blob,) in rows[:size]]
        key = self.page_token_key
        next_token = PageToken.after(tasks[-1]).encode(key) if len(rows) > size else ""
        return ListTasksResult(
            tasks=tasks, next_page_token=next_token, page_size=size, total_size=total[0][0]
        )

    # -- claims ----------------------------------------------------------------------------

    def claim_message(self, principal: str, message_id: str, task_id: str) -> str | None:
        self._check_open()
        return self._claims.claim(principal, message_id, task_id)

    def bind_context(self, context_id: str, principal: str) -> bool:
        self._check_open()
        self._claims.bind(context_id, principal)
        return True

    # -- push configs ------------------------------------------------------------------------

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
        """Write lagging snapshots, commit queued writes, stop the writer thread, close
        the file. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._enqueue_lagging()
        self._broker.close()
        if self._writer.close(CLOSE_TIMEOUT):
            with self._reader_lock:
                self._reader_db.close()

    def __repr__(self) -> str:
        return f"<SQLiteTaskStore {self.path!r} cached={len(self._cache)}>"

    # -- internals ---------------------------------------------------------------------------

    def _enqueue_lagging(self) -> None:
        """Queue what the file lags behind the cache: creations kept in memory, stale
        snapshots (lock held)."""
        for record in self._cache.unqueued_creations():
            self._queue_creation(record)
        for record in self._cache.stale():
            self._enqueue_snapshot(record)

    def _check_open(self) -> None:
        if self._closed:
            raise InternalError("task store is closed")

    def _submit(self, apply: Callable[[sqlite3.Connection], None], *, wait: bool) -> WriteOp:
        with self._lock:
            self._check_open()
            return self._writer.put(WriteOp(apply, wait=wait))

    def _flush(self) -> None:
        """Wait until everything queued so far is committed."""
        self._submit(lambda db: None, wait=True).wait()

    def _read(self, sql: str, args: Any) -> list[Any]:
        with self._reader_lock:
            try:
                return self._reader_db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise InternalError("task store read failed") from exc

    def _fail_orphans(self) -> None:
        rows = self._read(ORPHANS_SQL, (TaskState.submitted.value, TaskState.working.value))
        for (task_id,) in rows:
            stored = self.get_task(task_id, principal=None)
            if stored is not None and stored.task.status.state in _RUNNING:
                logger.warning("task %s was left running by a previous process: failed", task_id)
                self.append_event(task_id, orphan_failure(stored.task))
