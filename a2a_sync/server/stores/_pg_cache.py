"""The PostgreSQL task store's per-process snapshot cache and its fold-and-append loop.

Internal to :mod:`a2a_sync.server.stores.postgres`. An append folds the event onto the
cached snapshot here and writes it with one conditional statement (:mod:`._pg_tasks`),
guarded by the expected sequence number: a stale cache (another worker appended first)
costs a re-read and one more attempt. Only a committed append reaches this process's
subscribers (:class:`~._pg_listen.Router`), so nobody is told a state before it is
stored.
"""

from __future__ import annotations

import collections
import threading
from typing import Final

from ...a2a.accumulate import accumulate
from ...a2a.types import (
    Message,
    StreamEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ...errors import InternalError, ProtocolError, TaskNotFound, UnsupportedOperation
from ._pg_listen import Router
from ._pg_tasks import SNAPSHOT_INTERVAL, Record, Row, TaskRows
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

    def __len__(self) -> int:
        return len(self._records)

    def cached(self, task_id: str) -> Record | None:
        """The cached record, if any (no database access)."""
        with self._lock:
            return self._records.get(task_id)

    def record(self, task_id: str) -> Record | None:
        """The cached record, loaded on a miss."""
        with self._lock:
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
