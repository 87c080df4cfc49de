"""The SQLite store's writes: one connection, batched transactions, committed in order.

Internal to :mod:`a2a_sync.server.stores.sqlite`. Ops are queued; a caller that waits for
its op commits the queue itself (everything queued before its op rides in the same
transaction), so a durable write costs no hand-off to another thread and back. *Urgent*
ops nobody waits for (a stream's events) are committed by the writer thread after
lingering briefly for more; the others (claims, and the writes of a task nobody was told
of yet) usually ride with a waiting caller's commit, and the thread commits them only
once they waited :data:`DEFER` (it is not even woken for them).
Whoever commits holds one lock and takes ops in queue order, so ops apply in the order
they were queued.
"""

from __future__ import annotations

import collections
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Final

from ...errors import A2ASyncError, InternalError
from .._flag import Flag

__all__ = ["BatchWriter", "WriteOp"]

logger = logging.getLogger(__name__)

#: Writes committed in one transaction at most.
WRITE_BATCH: Final = 512
#: Longest wait for a durable write before the call fails (a stuck disk, not a busy one).
DURABLE_WRITE_TIMEOUT: Final = 30.0
#: How long the writer thread lingers for more writes before committing ops nobody waits
#: for: a request's claim and context ride with its task's creation, a task's
#: intermediate events with its final state, and a stream's chunks share transactions.
LINGER: Final = 0.002
#: How long an op that is not urgent may wait in the queue for a waiting caller to commit
#: it (at most twice this) before the writer thread does.
DEFER: Final = 0.05

Apply = Callable[[sqlite3.Connection], None]


class WriteOp:
    """One unit of work. On the committing thread, ``committed`` runs after its commit,
    and ``failed`` as soon as it failed (before any later op runs): how fire-and-forget
    ops report.

    Ops of many callers share a transaction: an op that fails fails only itself
    (:meth:`wait` raises for it), the others commit.
    """

    __slots__ = ("apply", "committed", "done", "error", "failed", "row", "urgent", "writer")

    def __init__(
        self,
        apply: Apply,
        *,
        wait: bool,
        committed: Callable[[], None] | None = None,
        failed: Callable[[BaseException], None] | None = None,
        urgent: bool | None = None,
        row: tuple[str, int] | None = None,
    ) -> None:
        self.apply = apply
        # (key, version) of a row the op writes whole: see BatchWriter.superseded
        self.row = row
        # (default: ops nobody waits for; a waited op is committed by its waiter)
        self.urgent = not wait if urgent is None else urgent
        self.committed = committed
        self.failed = failed
        self.done = Flag() if wait else None
        self.error: BaseException | None = None
        self.writer: BatchWriter | None = None

    def wait(self) -> None:
        """Block until committed (no-op for fire-and-forget ops), committing the queue
        on this thread when nobody else is.

        Raises:
            InternalError: The commit failed or timed out.
            A2ASyncError: The op refused its write with this error (it is re-raised).
        """
        if self.done is None:
            return
        if self.writer is not None:
            finished = self.writer.commit_through(self)
        else:
            finished = self.done.wait(DURABLE_WRITE_TIMEOUT)
        if not finished:
            raise InternalError("task store write timed out")
        if self.error is not None:
            if isinstance(self.error, A2ASyncError):
                raise self.error
            raise InternalError("task store write failed") from self.error

    @property
    def finished(self) -> bool:
        """True once a waited op was committed or failed."""
        return self.done is not None and self.done.is_set()

    @property
    def timed_out(self) -> bool:
        """True while a waited op has not finished (its outcome is unknown yet)."""
        return self.done is not None and not self.done.is_set()


class BatchWriter:
    """Owns ``db``; commits queued ops in batches, on the thread of a caller waiting for
    one or on its daemon thread. Thread-safe."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._queue: collections.deque[WriteOp] = collections.deque()
        self._ready = threading.Condition(threading.Lock())  # guards the 4 fields below
        self._urgent = 0  # urgent ops queued
        self._idle = False  # the thread waits for any op (not only urgent ones)
        self._commit_lock = threading.Lock()  # one batch at a time, in queue order
        self._newest_rows: dict[str, int] = {}  # of the batch run without savepoints
        self._stopping = False
        self._thread = threading.Thread(
            target=self._loop, name="a2a-sync-sqlite-writer", daemon=True
        )
        self._thread.start()

    def put(self, op: WriteOp) -> WriteOp:
        """Queue ``op``; returns it (``op.wait()`` for durability)."""
        op.writer = self
        with self._ready:
            self._queue.append(op)
            if op.urgent:
                self._urgent += 1
                if self._urgent == 1:
                    self._ready.notify()
            elif self._idle:  # (it starts counting DEFER)
                self._idle = False
                self._ready.notify()
        return op

    def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        self.put(WriteOp(lambda db: None, wait=True)).wait()

    def commit_through(self, op: WriteOp) -> bool:
        """Commit queued batches on this thread until ``op`` is committed (or failed).

        Returns:
            False when that did not happen within :data:`DURABLE_WRITE_TIMEOUT`.
        """
        assert op.done is not None
        deadline = time.monotonic() + DURABLE_WRITE_TIMEOUT
        while not op.done.is_set():
            if not self._commit_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                return op.done.is_set()
            try:
                if not op.done.is_set() and not self._commit_queued():
                    # Not queued and not done: it was never put (a bug); do not hang.
                    op.error = InternalError("task store write was not queued")
                    op.done.set()
            finally:
                self._commit_lock.release()
        return True

    def close(self, timeout: float) -> bool:
        """Commit what is queued, stop the thread, close the connection.

        Returns:
            True when everything ended in time (else the connection is left open).
        """
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive() or not self._commit_lock.acquire(timeout=timeout):
            logger.error("task store writer did not finish within %s s", timeout)
            return False
        try:
            while self._commit_queued():  # (put by callers racing with close)
                pass
            self._db.close()
        finally:
            self._commit_lock.release()
        return True

    def superseded(self, key: str, version: int) -> bool:
        """True when the batch being run (all of it commits or none) also writes a newer
        version of the row ``key`` (ops with ``row``): an op may then skip writing it.
        Never while ops run one by one in savepoints (one of them may be undone)."""
        return self._newest_rows.get(key, 0) > version

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _loop(self) -> None:
        """Commit ops nobody waits for (a waiting caller usually commits first)."""
        while True:
            with self._ready:
                if not self._due():
                    return
            with self._commit_lock:
                self._commit_queued()

    def _due(self) -> bool:
        """Wait until queued ops are due (``_ready`` held): urgent ones after lingering
        :data:`LINGER` for more, the others once the head of the queue waited
        :data:`DEFER`. False when stopping with nothing queued."""
        head: WriteOp | None = None
        while not self._stopping:
            if self._urgent:
                deadline = time.monotonic() + LINGER
                while not self._stopping and len(self._queue) < WRITE_BATCH:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        break
                    self._ready.wait(remaining)
                return True
            if not self._queue:
                head = None
                self._idle = True
                self._ready.wait()
                self._idle = False
            elif head is not None and self._queue[0] is head:  # it waited DEFER
                return True
            else:
                head = self._queue[0]
                self._ready.wait(DEFER)
        return bool(self._queue)

    def _commit_queued(self) -> bool:
        """Commit the next batch of queued ops (commit lock held); False when none."""
        with self._ready:
            batch = [self._queue.popleft() for _ in range(min(len(self._queue), WRITE_BATCH))]
            self._urgent -= sum(op.urgent for op in batch)
        if batch:
            self._commit(batch)
        return bool(batch)

    def _commit(self, batch: list[WriteOp]) -> None:
        """Commit ``batch`` in one transaction. Ops run one after another; when one fails,
        the transaction is rolled back and run again with each op inside its own
        savepoint: an op that fails is undone alone and fails alone; every other op
        commits. Only a failure of the transaction itself (BEGIN, COMMIT, a lost savepoint
        after an I/O error that rolled everything back) fails the whole batch."""
        db = self._db
        try:
            if not self._run_plain(batch):  # (rolled back: one op failed)
                db.execute("BEGIN")
                for op in batch:
                    self._apply(op, savepoint=len(batch) > 1)  # a lone op: its transaction
            if db.in_transaction:  # (a lone op that failed rolled it back already)
                db.execute("COMMIT")
        except sqlite3.Error as exc:  # the transaction failed: nothing of it is durable
            logger.exception("task store: committing %d operations failed", len(batch))
            if db.in_transaction:
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    logger.debug("rollback after a failed batch failed too", exc_info=True)
            for op in batch:
                self._fail(op, exc)
        for op in batch:
            if op.error is None and op.committed is not None:
                op.committed()
            if op.done is not None:
                op.done.set()

    def _run_plain(self, batch: list[WriteOp]) -> bool:
        """Run every op in one open transaction without savepoints (the common case: no
        op fails, and a savepoint per op costs two statements). Returns False, with the
        transaction rolled back, when an op raised (nobody is told: the batch runs again)."""
        db = self._db
        newest = self._newest_rows
        for op in batch:
            if op.row is not None and op.row[1] > newest.get(op.row[0], 0):
                newest[op.row[0]] = op.row[1]
        try:
            db.execute("BEGIN")
            for op in batch:
                try:
                    op.apply(db)
                except Exception:  # one caller's op: the batch runs again, each op alone
                    logger.debug("task store: a write failed; the batch runs again", exc_info=True)
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    return False
            return True
        finally:
            newest.clear()

    def _apply(self, op: WriteOp, *, savepoint: bool) -> None:
        """Run one op inside the open transaction; undo it alone if it fails."""
        db = self._db
        if savepoint:
            db.execute("SAVEPOINT op")
        try:
            op.apply(db)
        except Exception as exc:  # one caller's op: log, undo it alone, tell its waiter
            logger.error("task store: one write failed: %r", exc, exc_info=exc)
            if savepoint:
                db.execute("ROLLBACK TO op")
            elif db.in_transaction:  # (an I/O error may have rolled it back already)
                db.execute("ROLLBACK")
            self._fail(op, exc)
        if savepoint:
            db.execute("RELEASE op")

    @staticmethod
    def _fail(op: WriteOp, exc: BaseException) -> None:
        op.error = exc
        if op.failed is not None:
            op.failed(exc)
