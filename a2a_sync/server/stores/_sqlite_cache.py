"""The SQLite store's cache of live tasks and of idempotency claims.

Internal to :mod:`a2a_sync.server.stores.sqlite`; every method runs under the store's lock.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar

from ...a2a.types import StreamEvent, Task
from ._sqlite_wires import Wires
from ._sqlite_writer import WriteOp

__all__ = ["Bounded", "TaskCache", "TaskRecord"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TaskRecord:
    """A cached task: snapshot plus the log entries appended since it was loaded."""

    __slots__ = (
        "base",
        "broken",
        "committed",
        "creation",
        "events",
        "hidden",
        "pending",
        "principal",
        "saved",
        "snapshot_queued",
        "task",
        "unwritten",
        "wires",
    )

    def __init__(self, task: Task, principal: str, base: int, saved: int | None = None) -> None:
        self.task = task
        self.principal = principal
        self.base = base  # entries up to this seq are in the file
        self.events: list[StreamEvent] = []  # seq base+1, base+2, ...
        self.committed = base  # highest seq known to be committed
        # The seq of the snapshot committed in the file (it may lag the log), and of the
        # last snapshot write queued.
        self.saved = base if saved is None else saved
        self.snapshot_queued = self.saved
        # A creation or final event is being committed; it is not in task/events yet
        # (nobody may see it before it is durable) and other appends wait for it.
        self.pending = False
        # A creation nobody was told of yet (create_unreported_task), not committed yet:
        # readers commit it first, subscribers hear nothing of the task meanwhile.
        self.hidden = False
        # The queued write that commits a hidden task's creation, once there is one (the
        # task's durable event carries it, or a reader queues it): readers wait for it.
        # It stays set, finished, when that write failed (the task never existed).
        self.creation: WriteOp | None = None
        # Log entries ``(seq, blob)`` not queued yet, of a hidden task (its creation
        # first): nobody can read them before the creation is committed, so they ride in
        # the task's next op (its final state's, or the one a reader queues).
        self.unwritten: list[tuple[int, bytes]] = []
        # The wires of the parts its events brought: its snapshots are built from them.
        self.wires = Wires()
        # An intermediate write failed: the file's log lacks an event the cache has, so
        # later writes of the task fail (the writer checks, in order) and appends are
        # refused; the task is settled by the next start's orphan check.
        self.broken: BaseException | None = None

    @property
    def seq(self) -> int:
        return self.base + len(self.events)

    @property
    def settled(self) -> bool:
        """Nothing in flight and nothing failed: the file has every event."""
        return self.committed == self.seq and not self.pending and self.broken is None

    @property
    def stale_snapshot(self) -> bool:
        """The file's log is complete but its snapshot lags (a snapshot write is due
        before the record may leave the cache or a listing reads the file)."""
        return self.settled and self.saved < self.seq and self.snapshot_queued < self.seq


class TaskCache:
    """Task id -> record, least recently used first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._records: collections.OrderedDict[str, TaskRecord] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._records

    def get(self, task_id: str) -> TaskRecord | None:
        """The record (now most recently used), or None."""
        record = self._records.get(task_id)
        if record is not None:
            self._records.move_to_end(task_id)
        return record

    def peek(self, task_id: str) -> TaskRecord | None:
        return self._records.get(task_id)

    def put(self, task_id: str, record: TaskRecord) -> None:
        self._records[task_id] = record

    def forget(self, task_id: str, record: TaskRecord) -> None:
        """Drop ``record`` if it is still the cached one."""
        if self._records.get(task_id) is record:
            del self._records[task_id]

    def stale(self) -> Iterator[TaskRecord]:
        """Records whose snapshot in the file lags (oldest first)."""
        return (r for r in list(self._records.values()) if r.stale_snapshot)

    def unqueued_creations(self) -> list[TaskRecord]:
        """Hidden records whose creation is not queued yet."""
        return [r for r in self._records.values() if r.hidden and r.creation is None]

    def evict(self) -> list[TaskRecord]:
        """Drop least recently used records the file has in full, down to the size.

        Returns:
            Records that would go but whose snapshot lags: write it, they go next time.
        """
        excess = len(self._records) - self.size
        due: list[TaskRecord] = []
        if excess <= 0:
            return due
        # Only the oldest few are looked at (not a copy of every key: this runs per commit).
        for task_id in list(itertools.islice(self._records, excess * 2)):
            record = self._records[task_id]
            if record.stale_snapshot:
                due.append(record)
            elif record.settled and record.saved == record.seq:
                del self._records[task_id]
                excess -= 1
                if not excess:
                    break
        return due


class Bounded(Generic[K, V]):
    """A mapping that forgets its least recently set keys beyond ``size``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: collections.OrderedDict[K, V] = collections.OrderedDict()
        #: True once a key was forgotten for lack of room.
        self.dropped = False

    def get(self, key: K) -> V | None:
        return self._items.get(key)

    def set(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        if len(self._items) > self.size:
            self._items.popitem(last=False)
            self.dropped = True

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)
