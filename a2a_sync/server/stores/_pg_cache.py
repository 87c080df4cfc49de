"""The PostgreSQL task store's per-process snapshot cache and its fold-and-append loop.

Internal to :mod:`a2a_sync.server.stores.postgres`. An append folds the event onto the
cached snapshot here and writes it with one conditional statement (:mod:`._pg_tasks`),
guarded by the expected sequence number: a stale cache (another worker appended first)
costs a re-read and one more attempt. Only a committed append reaches this process's
subscribers (:class:`~._pg_listen.Router`), so nobody is told a state before it is
stored.

A task created unreported (:meth:`TaskCache.create_unreported`) stays in this process
until its final state or until anyone reads it (:meth:`TaskCache.reveal`): then its row
and its whole log are written in one statement, one durable commit. It is never evicted
meanwhile, and its events reach subscribers only once written.
"""

from __future__ import annotations

import collections
import threading
from typing import Final

from ...a2a.accumulate import accumulate
from ...a2a.types import (
    Message,
    StreamEvent,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ...errors import (
    ConfigurationError,
    InternalError,
    ProtocolError,
    TaskNotFound,
    UnsupportedOperation,
)
from ._encode import event_blob, task_blob
from ._pg_listen import Router
from ._pg_tasks import SNAPSHOT_INTERVAL, Record, Row, TaskRows, Unsaved
from .base import StoredTask, check_open, is_final

__all__ = ["APPEND_ATTEMPTS", "TaskCache"]

#: Races lost in a row before giving up (each one means another worker made progress).
APPEND_ATTEMPTS: Final = 64


class TaskCache:
    """Task snapshots cached by this process (least recently used dropped first), and the
    appends that fold onto them. Thread-safe.

    Args:
        rows: The task statements.
        router: This process's subscribers (told of every committed append).
        worker_id: This worker (named as the runner of unfinished tasks).
        size: Snapshots kept at most.
    """

    def __init__(self, rows: TaskRows, router: Router, worker_id: str, size: int) -> None:
        self._rows = rows
        self._router = router
        self._worker_id = worker_id
        self._size = size
        self._lock = threading.Lock()
        self._records: collections.OrderedDict[str, Record] = collections.OrderedDict()
        # Tasks created unreported, not written yet (never evicted; not in _records).
        self._unsaved: dict[str, Record] = {}

    def __len__(self) -> int:
        return len(self._records) + len(self._unsaved)

    def cached(self, task_id: str) -> Record | None:
        """The cached record, if any (no database access)."""
        with self._lock:
            return self._unsaved.get(task_id) or self._records.get(task_id)

    def create_unreported(self, task: Task, principal: str) -> StoredTask:
        """Keep a new task, nobody told of it yet, in this process only (see
        :meth:`~a2a_sync.server.stores.base.TaskStore.create_unreported_task`).

        Raises:
            ConfigurationError: This process holds a task with this id already.
            InternalError: The task holds text that is not Unicode.
        """
        blob = b'{"task":' + task_blob(task) + b"}"  # the StreamResponse form of the Task
        record = Record(task, 1, principal, 0)
        record.unsaved = [(1, task, blob)]
        with self._lock:
            if task.id in self._unsaved or task.id in self._records:
                raise ConfigurationError(f"task {task.id!r} exists already")
            self._unsaved[task.id] = record
        return StoredTask(task, 1, principal)

    def reveal(self, task_id: str | None) -> None:
        """Write the unreported creation of ``task_id`` (None: of every task) before
        anyone is shown it; no-op for tasks written already.

        Raises:
            InternalError: The write failed (the task is forgotten here: it exists only
                if the database says so).
        """
        with self._lock:
            if not self._unsaved:
                return
            records = list(self._unsaved.items()) if task_id is None else []
            if task_id is not None and task_id in self._unsaved:
                records = [(task_id, self._unsaved[task_id])]
        for key, record in records:
            with record.lock:
                if record.unsaved is not None:
                    task, _ = record.state
                    self._save(key, record, task, record.unsaved, self._worker_id)

    def _save(
        self, task_id: str, record: Record, folded: Task, log: list[Unsaved], worker: str | None
    ) -> StoredTask:
        """Write an unreported task and its log (``record.lock`` held), then tell this
        process's subscribers its events, in order."""
        try:
            created = self._rows.create_logged(folded, record.principal, log, worker)
        except InternalError:
            self._forget(task_id, record)
            raise
        if not created:
            self._forget(task_id, record)
            raise ConfigurationError(f"task {task_id!r} exists already")
        seq = log[-1][0]
        record.state = (folded, seq)
        record.stored_seq = seq
        record.unsaved = None
        with self._lock:
            self._unsaved.pop(task_id, None)
            self._records[task_id] = record
            if len(self._records) > self._size:
                self._records.popitem(last=False)
        for event_seq, event, _ in log:
            self._router.publish(task_id, event_seq, event)
        return StoredTask(folded, seq, record.principal)

    def _forget(self, task_id: str, record: Record) -> None:
        """Drop an unreported task whose write failed: it was never shown, so it never was
        (a later append finds no row: TaskNotFound)."""
        record.unsaved = None
        with self._lock:
            if self._unsaved.get(task_id) is record:
                del self._unsaved[task_id]

    def record(self, task_id: str) -> Record | None:
        """The cached record, loaded on a miss."""
        with self._lock:
            record = self._unsaved.get(task_id)
            if record is not None:
                return record
            record = self._records.get(task_id)
            if record is not None:
                self._records.move_to_end(task_id)
                return record
        row = self._rows.fetch(task_id, None)
        return self.remember(task_id, row) if row is not None else None

    def remember(self, task_id: str, row: Row) -> Record:
        """Cache ``row`` unless a newer copy is cached already."""
        with self._lock:
            record = self._records.get(task_id)
            if record is None:
                record = Record(row.task, row.seq, row.principal, row.stored_seq)
                self._records[task_id] = record
                if len(self._records) > self._size:
                    self._records.popitem(last=False)
            elif record.state[1] < row.seq:
                record.state = (row.task, row.seq)
                record.stored_seq = max(record.stored_seq, row.stored_seq)
            return record

    def refresh(self, record: Record, task_id: str) -> bool:
        """Re-read the task; True when it changed since cached."""
        cached = record.state
        row = self._rows.fetch(task_id, cached)
        if row is None or row.seq == cached[1]:
            return False
        record.state = (row.task, row.seq)
        record.stored_seq = max(record.stored_seq, row.stored_seq)
        return True

    def append(self, task_id: str, event: StreamEvent) -> StoredTask:
        """Fold ``event`` onto the task and store it (see
        :meth:`~a2a_sync.server.stores.base.TaskStore.append_event`)."""
        record = self.record(task_id)
        if record is None:
            raise TaskNotFound()
        with record.lock:
            if record.unsaved is not None:
                return self._append_unsaved(task_id, record, event)
            checked = False  # the cached snapshot was re-read after refusing the event
            for _ in range(APPEND_ATTEMPTS):
                task, seq = record.state
                try:
                    check_open(task)
                    folded = accumulate(task, event)
                except (UnsupportedOperation, ProtocolError):
                    # Refused by a cached snapshot: refuse only if it is the latest one.
                    if checked or not self.refresh(record, task_id):
                        raise
                    checked = True
                    continue
                new_seq = seq + 1
                final = is_final(event)
                snapshot = final or new_seq - record.stored_seq >= SNAPSHOT_INTERVAL
                worker = None if final else self._worker_id
                if self._rows.write(folded, event, seq=new_seq, worker=worker, snapshot=snapshot):
                    record.state = (folded, new_seq)
                    if snapshot:
                        record.stored_seq = new_seq
                    self._router.publish(task_id, new_seq, event)
                    return StoredTask(folded, new_seq, record.principal)
                # Another worker appended first (or the task vanished): re-read and fold again.
                if not self.refresh(record, task_id) and record.state[1] == seq:
                    raise TaskNotFound()
        raise InternalError("task store: the task changed too often to append to it")

    def _append_unsaved(self, task_id: str, record: Record, event: StreamEvent) -> StoredTask:
        """Append to a task created unreported (``record.lock`` held): kept here, or, with
        a final state, written with the task's creation and log in one statement."""
        assert record.unsaved is not None  # (checked by the caller under the lock)
        task, seq = record.state
        check_open(task)  # no other writer: this copy is the latest
        folded = accumulate(task, event)
        log = [*record.unsaved, (seq + 1, event, event_blob(event))]
        if is_final(event):
            return self._save(task_id, record, folded, log, None)
        record.unsaved = log
        record.state = (folded, seq + 1)
        return StoredTask(folded, seq + 1, record.principal)

    def settle(self, task_id: str, worker: str, note: str) -> None:
        """Fail a task run by ``worker`` with ``note``, unless it moved on meanwhile."""
        for _ in range(APPEND_ATTEMPTS):
            row = self._rows.fetch(task_id, None)
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
            if self._rows.write(
                folded, event, seq=seq, worker=None, snapshot=True, only_if_worker=worker
            ):
                self.remember(task_id, Row(folded, seq, row.principal, None, seq))
                self._router.publish(task_id, seq, event)
                return
