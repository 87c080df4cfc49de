"""A durable task store in one SQLite file: the embedded default of ``a2a_sync.serve``.

Request threads never wait for the disk on the hot path: they fold events into an
in-memory cache of live tasks and hand the writes to one writer thread, which commits
them in batches (one transaction per batch, the latest snapshot of each task written
once). Only the moments a client may rely on are made durable before the call returns:
a task's creation, and every terminal (completed, failed, canceled, rejected) or
interrupted (input-required, auth-required) state. So a finished task survives a restart
or a crash of the process; a crash may lose intermediate ``working`` updates and
artifact chunks of tasks that were still running (their agents died with the process).

Nobody is told a creation or a final state before it is committed: the cache takes it
(and subscribers get it) only after the commit, and later appends to that task wait for
it. A write that fails fails its own caller only (each write has its own savepoint in
the shared transaction) and leaves the cache as the file is.

The file uses WAL journaling with ``synchronous=NORMAL``: a commit survives a process
crash; only an operating-system crash or power loss may roll back the last commits. On
opening, tasks left ``submitted`` or ``working`` by a previous process are marked
``failed`` (their agent is gone), so no client polls them forever.

One process per file: several processes writing one SQLite file would each keep their
own cache. Scale out with a shared store (PostgreSQL) instead.
"""

from __future__ import annotations

import collections
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Final

from ..._net.jsonrpc import decode_json, encode
from ...a2a.accumulate import accumulate
from ...a2a.codec import V1_0
from ...a2a.types import (
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
from ...errors import ConfigurationError, InternalError, TaskNotFound
from ..events import DEFAULT_SUBSCRIBER_BUFFER, EventBroker, LogEntry, Subscription
from ._encode import event_blob
from ._sqlite_writer import DURABLE_WRITE_TIMEOUT, BatchWriter, WriteOp
from .base import (
    DEFAULT_PAGE_SIZE,
    PageToken,
    StoredPushConfig,
    StoredTask,
    TaskStore,
    check_open,
    context_key,
    is_final,
    micros_of,
    sql_task_filters,
    status_time,
)

__all__ = ["SQLiteTaskStore"]

logger = logging.getLogger(__name__)

#: Live tasks kept in memory (beyond those with writes in flight, which always stay).
#: A running task is served from here; older ones are read back from the file.
DEFAULT_CACHE_SIZE: Final = 4096
#: Idempotency claims remembered in memory; older ones are looked up in the file.
CLAIM_CACHE_SIZE: Final = 65536
#: How long close() waits for the writer thread to commit what is queued.
CLOSE_TIMEOUT: Final = 10.0

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS a2a_tasks (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    context_id TEXT,
    state TEXT NOT NULL,
    status_micros INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    snapshot BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_principal
    ON a2a_tasks (principal, status_micros DESC, id DESC);
CREATE TABLE IF NOT EXISTS a2a_events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_claims (
    principal TEXT NOT NULL,
    message_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (principal, message_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_contexts (
    context_id TEXT PRIMARY KEY,
    principal TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_push_configs (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    revision TEXT NOT NULL,
    config BLOB NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (task_id, id)
);
"""

_MAX_SEQ: Final = 2**62
_ORPHAN_MESSAGE: Final = "The server restarted while this task was running."


class _Record:
    """A cached task: snapshot plus the log entries appended since it was loaded."""

    __slots__ = ("base", "broken", "committed", "events", "pending", "principal", "task")

    def __init__(self, task: Task, principal: str, base: int) -> None:
        self.task = task
        self.principal = principal
        self.base = base  # entries up to this seq are in the file
        self.events: list[StreamEvent] = []  # seq base+1, base+2, ...
        self.committed = base  # highest seq known to be committed
        # A creation or final event is being committed; it is not in task/events yet
        # (nobody may see it before it is durable) and other appends wait for it.
        self.pending = False
        # An intermediate write failed: the file's log lacks an event the cache has, so
        # later writes of the task fail (the writer checks, in order) and appends are
        # refused; the task is settled by the next start's orphan check.
        self.broken: BaseException | None = None

    @property
    def seq(self) -> int:
        return self.base + len(self.events)


class SQLiteTaskStore(TaskStore):
    """Tasks, event logs, claims and push configs in one SQLite file.

    Thread-safe. One lock guards the cache; one writer thread owns the write connection;
    reads of tasks not in the cache use a second connection under its own lock.

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
        self._cache_size = cache_size
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a record's pending write ended
        self._cache: collections.OrderedDict[str, _Record] = collections.OrderedDict()
        self._claims: collections.OrderedDict[tuple[str, str], str] = collections.OrderedDict()
        self._contexts: collections.OrderedDict[str, str] = collections.OrderedDict()
        # task id -> its push configs, read once (every event of a task asks for them).
        self._push_cache: collections.OrderedDict[str, list[StoredPushConfig]] = (
            collections.OrderedDict()
        )
        self._broker = EventBroker(buffer=subscriber_buffer)
        self._closed = False
        try:
            writer_db = self._connect()
            writer_db.executescript(_SCHEMA)
            self._reader_db = self._connect()
        except sqlite3.Error as exc:
            raise ConfigurationError(f"cannot open task store {path!r}: {exc}") from exc
        self._reader_lock = threading.Lock()
        self._writer = BatchWriter(writer_db)
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
        blob = event_blob(task)  # before anything changes: bad text fails this call only
        with self._lock:
            self._check_open()
            if task.id in self._cache or self._read_record(task.id) is not None:
                raise ConfigurationError(f"task {task.id!r} exists already")
            record = _Record(task, principal, 0)  # seq 0 while pending: invisible
            record.pending = True
            self._cache[task.id] = record
            op = self._enqueue_event(record, task, 1, blob, wait=True)
        self._settle(record, op, task, 1)
        return StoredTask(task, 1, principal)

    def append_event(self, task_id: str, event: StreamEvent) -> StoredTask:
        durable = is_final(event)
        blob = event_blob(event)  # before anything changes: bad text fails this call only
        with self._lock:
            self._check_open()
            record = self._settled_record(task_id)
            check_open(record.task)
            folded = accumulate(record.task, event)
            seq = record.seq + 1
            op = self._enqueue_event(record, folded, seq, blob, wait=durable)
            if not durable:
                record.task = folded
                record.events.append(event)
                self._broker.publish(task_id, seq, event)
                return StoredTask(folded, seq, record.principal)
            record.pending = True
        self._settle(record, op, event, seq, folded)
        return StoredTask(folded, seq, record.principal)

    def get_task(self, task_id: str, *, principal: str | None) -> StoredTask | None:
        with self._lock:
            record = self._record(task_id)
            if record is None or (principal is not None and record.principal != principal):
                return None
            if record.seq == 0:  # its creation is not durable yet
                return None
            return StoredTask(record.task, record.seq, record.principal)

    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        with self._lock:
            record = self._cache.get(task_id)
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
            (task_id, after_seq, upto if upto is not None else _MAX_SEQ),
        )
        return [(seq, V1_0.load_stream_event(decode_json(blob))) for seq, blob in rows] + tail

    def subscribe(self, task_id: str, *, after_seq: int) -> Subscription:
        return self._broker.subscribe(task_id, after_seq, self.events_after)

    def list_tasks(self, params: ListTasksParams, *, principal: str) -> ListTasksResult:
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
        key = (principal, message_id)
        with self._lock:
            self._check_open()
            existing = self._claims.get(key)
            if existing is None:
                rows = self._read(
                    "SELECT task_id FROM a2a_claims WHERE principal = ? AND message_id = ?", key
                )
                existing = rows[0][0] if rows else None
            if existing is not None:
                return str(existing)
            self._claims[key] = task_id
            if len(self._claims) > CLAIM_CACHE_SIZE:
                self._claims.popitem(last=False)

            def write(db: sqlite3.Connection) -> None:
                db.execute(
                    "INSERT OR IGNORE INTO a2a_claims (principal, message_id, task_id)"
                    " VALUES (?, ?, ?)",
                    (principal, message_id, task_id),
                )

            self._writer.put(WriteOp(write, wait=False))
        return None

    def bind_context(self, context_id: str, principal: str) -> bool:
        context_id = context_key(principal, context_id)  # conversations are per caller
        with self._lock:
            self._check_open()
            owner = self._contexts.get(context_id)
            if owner is None:
                rows = self._read(
                    "SELECT principal FROM a2a_contexts WHERE context_id = ?", (context_id,)
                )
                owner = str(rows[0][0]) if rows else None
            if owner is None:
                owner = principal

                def write(db: sqlite3.Connection) -> None:
                    db.execute(
                        "INSERT OR IGNORE INTO a2a_contexts (context_id, principal) VALUES (?, ?)",
                        (context_id, principal),
                    )

                self._writer.put(WriteOp(write, wait=False))
            self._contexts[context_id] = owner
            self._contexts.move_to_end(context_id)
            if len(self._contexts) > CLAIM_CACHE_SIZE:
                self._contexts.popitem(last=False)
            return owner == principal

    # -- push configs ------------------------------------------------------------------------

    def set_push_config(self, config: PushNotificationConfig, *, revision: str) -> StoredPushConfig:
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

        self._submit(write, wait=True).wait()
        with self._lock:
            self._push_cache.pop(task_id, None)
        return StoredPushConfig(config, revision)

    def get_push_config(self, task_id: str, config_id: str) -> StoredPushConfig | None:
        rows = self._read(
            "SELECT config, revision FROM a2a_push_configs WHERE task_id = ? AND id = ?",
            (task_id, config_id),
        )
        return self._push_config(*rows[0]) if rows else None

    def list_push_configs(self, task_id: str) -> list[StoredPushConfig]:
        with self._lock:
            cached = self._push_cache.get(task_id)
            if cached is not None:
                self._push_cache.move_to_end(task_id)
                return list(cached)
            rows = self._read(
                "SELECT config, revision FROM a2a_push_configs WHERE task_id = ? ORDER BY created",
                (task_id,),
            )
            configs = [self._push_config(blob, revision) for blob, revision in rows]
            self._push_cache[task_id] = configs
            if len(self._push_cache) > self._cache_size:
                self._push_cache.popitem(last=False)
            return list(configs)

    def delete_push_config(self, task_id: str, config_id: str) -> bool:
        deleted: list[int] = []

        def write(db: sqlite3.Connection) -> None:
            cursor = db.execute(
                "DELETE FROM a2a_push_configs WHERE task_id = ? AND id = ?", (task_id, config_id)
            )
            deleted.append(cursor.rowcount)

        self._submit(write, wait=True).wait()
        with self._lock:
            self._push_cache.pop(task_id, None)
        return bool(deleted and deleted[0])

    def count_push_configs(self, principal: str) -> int:
        rows = self._read(
            "SELECT count(*) FROM a2a_push_configs p JOIN a2a_tasks t ON t.id = p.task_id"
            " WHERE t.principal = ?",
            (principal,),
        )
        return int(rows[0][0])

    @staticmethod
    def _push_config(blob: bytes, revision: str) -> StoredPushConfig:
        return StoredPushConfig(V1_0.load_push_config(decode_json(blob)), revision)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Commit queued writes, stop the writer thread, close the file. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._broker.close()
        if self._writer.close(CLOSE_TIMEOUT):
            with self._reader_lock:
                self._reader_db.close()

    def __repr__(self) -> str:
        return f"<SQLiteTaskStore {self.path!r} cached={len(self._cache)}>"

    # -- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise InternalError("task store is closed")

    def _record(self, task_id: str) -> _Record | None:
        """The cached record, loading it from the file on a miss (lock held)."""
        record = self._cache.get(task_id)
        if record is not None:
            self._cache.move_to_end(task_id)
            return record
        record = self._read_record(task_id)
        if record is not None:
            self._cache[task_id] = record
            self._evict()
        return record

    def _read_record(self, task_id: str) -> _Record | None:
        rows = self._read("SELECT snapshot, principal, seq FROM a2a_tasks WHERE id = ?", (task_id,))
        if not rows:
            return None
        blob, principal, seq = rows[0]
        return _Record(V1_0.load_task(decode_json(blob)), principal, seq)

    def _evict(self) -> None:
        excess = len(self._cache) - self._cache_size
        if excess <= 0:
            return
        for task_id in list(self._cache)[: excess * 2]:
            record = self._cache[task_id]
            nothing_in_flight = record.committed == record.seq and not record.pending
            if nothing_in_flight and record.broken is None:  # the file has it all
                del self._cache[task_id]
                excess -= 1
                if not excess:
                    return

    def _settled_record(self, task_id: str) -> _Record:
        """The task's record once no creation or final write of it is in flight (lock held).

        Raises:
            TaskNotFound: No such task (or its creation failed).
            InternalError: A write in flight did not end in time.
        """
        while True:
            record = self._record(task_id)
            if record is None:
                raise TaskNotFound()
            if record.broken is not None:
                raise InternalError(
                    f"task store: an earlier write of task {task_id!r} failed"
                ) from record.broken
            if not record.pending:
                return record
            if not self._settled.wait(DURABLE_WRITE_TIMEOUT):
                raise InternalError(f"task store: a write of task {task_id!r} did not end")

    def _settle(
        self,
        record: _Record,
        op: WriteOp,
        event: StreamEvent,
        seq: int,
        folded: Task | None = None,
    ) -> None:
        """Wait for a creation or final write; only once it is durable does the cache take
        it and do subscribers see it. On failure the cache stays as the file is.

        Raises:
            InternalError: The write failed or timed out (the caller was told nothing).
        """
        try:
            op.wait()
        except InternalError:
            with self._lock:
                record.pending = False
                # A failed creation never existed; a timed-out write may still land:
                # forget the record so the next read takes the file's word.
                if (seq == 1 or op.timed_out) and self._cache.get(record.task.id) is record:
                    del self._cache[record.task.id]
                self._settled.notify_all()
            raise
        with self._lock:
            record.pending = False
            if folded is not None:
                record.task = folded
            record.events.append(event)
            self._settled.notify_all()
            self._broker.publish(record.task.id, seq, event)  # in log order, under the lock

    def _enqueue_event(
        self, record: _Record, task: Task, seq: int, blob: bytes, *, wait: bool
    ) -> WriteOp:
        task_id = task.id
        principal = record.principal

        def write(db: sqlite3.Connection) -> None:
            if record.broken is not None:  # an earlier write of the task failed
                raise InternalError(
                    f"task store: an earlier write of task {task_id!r} failed"
                ) from record.broken
            db.execute(
                "INSERT INTO a2a_events (task_id, seq, event) VALUES (?, ?, ?)",
                (task_id, seq, blob),
            )
            db.execute(
                "INSERT INTO a2a_tasks"
                " (id, principal, context_id, state, status_micros, seq, snapshot)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (id) DO UPDATE SET state = excluded.state,"
                " status_micros = excluded.status_micros, seq = excluded.seq,"
                " snapshot = excluded.snapshot WHERE excluded.seq > a2a_tasks.seq",
                (
                    task_id,
                    principal,
                    task.context_id,
                    task.status.state.value,
                    micros_of(status_time(task)),
                    seq,
                    encode(V1_0.dump_task(task)),
                ),
            )

        def committed() -> None:
            with self._lock:
                record.committed = max(record.committed, seq)
                if len(self._cache) > self._cache_size:
                    self._evict()

        def failed(exc: BaseException) -> None:  # on the writer thread, before later ops
            if not wait:  # nobody waits for it: later writes and appends of the task fail
                record.broken = exc

        return self._writer.put(WriteOp(write, wait=wait, committed=committed, failed=failed))

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
        rows = self._read(
            "SELECT id FROM a2a_tasks WHERE state IN (?, ?)",
            (TaskState.submitted.value, TaskState.working.value),
        )
        for (task_id,) in rows:
            stored = self.get_task(task_id, principal=None)
            if stored is None:
                continue
            task = stored.task
            note = Message.agent(_ORPHAN_MESSAGE, task_id=task.id, context_id=task.context_id)
            event = TaskStatusUpdateEvent(
                task_id=task.id,
                context_id=task.context_id or "",
                status=TaskStatus.now(TaskState.failed, note),
            )
            logger.warning("task %s was left running by a previous process: failed", task_id)
            self.append_event(task_id, event)
