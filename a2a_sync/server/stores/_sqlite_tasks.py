"""How the SQLite store's task events reach its file and its subscribers.

Internal to :mod:`a2a_sync.server.stores.sqlite` (see its docstring for the rules): the
cache of live task records, the queued writes of a task's log and snapshot rows, the wait
for a durable write (creation, final state) before the cache takes it and subscribers see
it, and the creation nobody was told of yet (:meth:`TaskStore.create_unreported_task`),
committed before anyone looks and revealed to subscribers once it is.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

from ...a2a.types import StreamEvent, Task
from ...errors import A2ASyncError, InternalError, TaskNotFound
from ..events import EventBroker
from ._sqlite_cache import TaskCache, TaskRecord
from ._sqlite_schema import insert_events, load_task_row, save_snapshot
from ._sqlite_writer import DURABLE_WRITE_TIMEOUT, BatchWriter, WriteOp

__all__ = ["TaskWrites"]

logger = logging.getLogger(__name__)


class TaskWrites:
    """The write path of :class:`~a2a_sync.server.stores.sqlite.SQLiteTaskStore` (a
    mixin: it sets the attributes below). Methods marked "lock held" run under ``_lock``."""

    _lock: threading.Lock
    _settled: threading.Condition  # (on _lock) a record's pending write ended
    _cache: TaskCache
    _broker: EventBroker
    _writer: BatchWriter
    _reader_lock: threading.Lock
    _reader_db: sqlite3.Connection

    def _record(self, task_id: str) -> TaskRecord | None:
        """The cached record, loading it from the file on a miss (lock held)."""
        record = self._cache.get(task_id)
        if record is not None:
            return record
        with self._reader_lock:
            try:
                row = load_task_row(self._reader_db, task_id)
            except sqlite3.Error as exc:
                raise InternalError("task store read failed") from exc
        if row is None:
            return None
        task, principal, seq, saved = row
        record = TaskRecord(task, principal, seq, saved)
        self._cache.put(task_id, record)
        self._evict()
        return record

    def _looked_at(self, task_id: str) -> None:
        """Someone looks at the task: a creation nobody was told of yet is committed
        first (its events then reach subscribers)."""
        with self._lock:
            record = self._cache.peek(task_id)
            if record is None or not record.hidden:
                return
            op = record.creation or self._queue_creation(record)
        self._commit_hidden(op)

    def _queue_creation(self, record: TaskRecord) -> WriteOp:
        """Queue the write of a hidden task's creation with the entries kept since, its
        row holding the creation's snapshot (lock held). Readers wait for it."""
        creation = record.events[0]  # (a hidden record's log starts in the cache)
        assert isinstance(creation, Task)
        rows, record.unwritten = record.unwritten, []
        return self._enqueue_rows(record, creation, rows, wait=True, snapshot=True, snapshot_seq=1)

    @staticmethod
    def _commit_hidden(op: WriteOp) -> None:
        """Commit an unreported creation (and what was queued before it) on this thread.

        Raises:
            InternalError: The commit did not end in time (a failed creation is not
                raised: the task is then absent).
        """
        try:
            op.wait()
        except A2ASyncError:
            if op.timed_out:
                raise
            logger.debug("task store: an unreported creation failed", exc_info=True)

    def _reveal(self, record: TaskRecord) -> None:
        """The unreported creation is committed: publish what the task has so far, in
        log order (lock held; the pending final event, if any, follows in _settle)."""
        record.hidden = False
        record.creation = None
        task_id = record.task.id
        for i, event in enumerate(record.events):
            self._broker.publish(task_id, record.base + i + 1, event)
        if record.unwritten:  # its events since the creation (no final state yet)
            self._enqueue_rows(record, record.task, [], wait=False, snapshot=False)

    def _evict(self) -> None:
        for record in self._cache.evict():  # (lagging snapshots first: they go next time)
            self._enqueue_snapshot(record)

    def _settled_record(self, task_id: str) -> TaskRecord:
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
        record: TaskRecord,
        op: WriteOp,
        event: StreamEvent,
        seq: int,
        folded: Task | None = None,
    ) -> None:
        """Wait for a creation or final write; only once it is durable does the cache take
        it and do subscribers see it. On failure the cache stays as the file is.

        Raises:
            InternalError: The write failed or timed out (the caller was told nothing).
            ConfigurationError: A created task exists already.
        """
        try:
            op.wait()
        except A2ASyncError:
            with self._lock:
                record.pending = False
                record.snapshot_queued = record.saved  # (its snapshot was not written)
                # A failed creation never existed; a timed-out write may still land:
                # forget the record so the next read takes the file's word.
                if seq == 1 or op.timed_out:
                    self._cache.forget(record.task.id, record)
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
        self,
        record: TaskRecord,
        task: Task,
        seq: int,
        blob: bytes,
        *,
        wait: bool,
        snapshot: bool,
    ) -> WriteOp:
        """Queue the log entry ``seq`` (and, with ``snapshot``, the task's row) (lock held)."""
        return self._enqueue_rows(record, task, [(seq, blob)], wait=wait, snapshot=snapshot)

    def _enqueue_rows(
        self,
        record: TaskRecord,
        task: Task,
        rows: list[tuple[int, bytes]],
        *,
        wait: bool,
        snapshot: bool,
        snapshot_seq: int | None = None,
    ) -> WriteOp:
        """Queue the record's unwritten log entries, then ``rows`` (lock held); with
        ``snapshot``, the task's row (``task``, at ``snapshot_seq``, by default the last
        entry's seq) too. The first op queued for a hidden task commits its creation (its
        entries start with it): the task is revealed once it is committed."""
        if record.unwritten:
            rows = record.unwritten + rows
            record.unwritten = []
        seq = rows[-1][0]
        saved = seq if snapshot_seq is None else snapshot_seq
        task_id = task.id
        principal = record.principal
        writer = self._writer
        reveal = record.hidden and record.creation is None
        wire = record.wires.snapshot(task, prune=snapshot_seq is None) if snapshot else None
        if snapshot:
            record.snapshot_queued = saved

        def write(db: sqlite3.Connection) -> None:
            if record.broken is not None:  # an earlier write of the task failed
                raise InternalError(
                    f"task store: an earlier write of task {task_id!r} failed"
                ) from record.broken
            insert_events(db, task_id, rows)
            if snapshot and not writer.superseded(task_id, saved):  # (else: in this commit)
                save_snapshot(db, task, saved, principal, wire)

        def committed() -> None:
            with self._lock:
                record.committed = max(record.committed, seq)
                if snapshot:
                    record.saved = max(record.saved, saved)
                if reveal:
                    self._reveal(record)
                if len(self._cache) > self._cache.size:
                    self._evict()

        def failed(exc: BaseException) -> None:  # on the writer thread, before later ops
            if reveal and snapshot_seq is None:  # a durable event carrying the creation
                with self._lock:  # the creation and entries before it go on their own
                    record.unwritten[:0] = rows[:-1]
                    record.creation = None
                    self._queue_creation(record)
            elif not wait or reveal:  # nobody waits, or the creation failed: later
                record.broken = exc  # writes and appends of the task fail
            elif len(rows) > 1:  # the entries that rode along are written on their own
                with self._lock:
                    record.unwritten[:0] = rows[:-1]
                    if not record.hidden:  # (else once the creation is committed)
                        self._enqueue_rows(record, task, [], wait=False, snapshot=False)

        # The events of a task nobody was told of yet wait for its creation's commit.
        urgent = not wait and not record.hidden
        row = (task_id, saved) if snapshot else None
        op = WriteOp(write, wait=wait, committed=committed, failed=failed, urgent=urgent, row=row)
        if reveal:
            record.creation = op
        return writer.put(op)

    def _enqueue_snapshot(self, record: TaskRecord) -> None:
        """Queue a write of the record's current snapshot, its log being in the file
        already (lock held). A failure leaves the older snapshot: the log still has all."""
        task, seq, principal = record.task, record.seq, record.principal
        wire = record.wires.snapshot(task)
        record.snapshot_queued = seq

        writer = self._writer

        def write(db: sqlite3.Connection) -> None:
            if not writer.superseded(task.id, seq):
                save_snapshot(db, task, seq, principal, wire)

        def committed() -> None:
            with self._lock:
                record.saved = max(record.saved, seq)

        writer.put(WriteOp(write, wait=False, committed=committed, row=(task.id, seq)))
