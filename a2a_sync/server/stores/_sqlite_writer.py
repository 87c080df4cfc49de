"""The SQLite store's writer thread: one connection, batched transactions.

Internal to :mod:`a2a_sync.server.stores.sqlite`.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Final

from ...errors import A2ASyncError, InternalError

__all__ = ["BatchWriter", "WriteOp"]

logger = logging.getLogger(__name__)

#: Writes committed in one transaction at most.
WRITE_BATCH: Final = 512
#: Longest wait for a durable write before the call fails (a stuck disk, not a busy one).
DURABLE_WRITE_TIMEOUT: Final = 30.0
#: How long a batch that nobody waits for lingers for more writes before it commits (a
#: waited write ends the lingering at once): the claim and context of a request ride with
#: its task's creation, a task's intermediate events with its final state, and a stream's
#: chunks share transactions, so a commit is paid per waited write, not per write.
LINGER: Final = 0.002

Apply = Callable[[sqlite3.Connection], None]


class WriteOp:
    """One unit of work. On the writer thread, ``committed`` runs after its commit, and
    ``failed`` as soon as it failed (before any later op runs): how fire-and-forget ops
    report.

    Ops of many callers share a transaction, each in its own savepoint: an op that fails
    fails only itself (:meth:`wait` raises for it), the others commit.
    """

    __slots__ = ("apply", "committed", "done", "error", "failed")

    def __init__(
        self,
        apply: Apply,
        *,
        wait: bool,
        committed: Callable[[], None] | None = None,
        failed: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.apply = apply
        self.committed = committed
        self.failed = failed
        self.done = threading.Event() if wait else None
        self.error: BaseException | None = None

    def wait(self) -> None:
        """Block until committed (no-op for fire-and-forget ops).

        Raises:
            InternalError: The commit failed or timed out.
            A2ASyncError: The op refused its write with this error (it is re-raised).
        """
        if self.done is None:
            return
        if not self.done.wait(DURABLE_WRITE_TIMEOUT):
            raise InternalError("task store write timed out")
        if self.error is not None:
            if isinstance(self.error, A2ASyncError):
                raise self.error
            raise InternalError("task store write failed") from self.error

    @property
    def timed_out(self) -> bool:
        """True while a waited op has not finished (its outcome is unknown yet)."""
        return self.done is not None and not self.done.is_set()


class BatchWriter:
    """Owns ``db`` on a daemon thread; commits queued ops in batches. Thread-safe."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._queue: queue.SimpleQueue[WriteOp | None] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._loop, name="a2a-sync-sqlite-writer", daemon=True
        )
        self._thread.start()

    def put(self, op: WriteOp) -> WriteOp:
        """Queue ``op``; returns it (``op.wait()`` for durability)."""
        self._queue.put(op)
        return op

    def flush(self) -> None:
        """Wait until everything queued so far is committed."""
        self.put(WriteOp(lambda db: None, wait=True)).wait()

    def close(self, timeout: float) -> bool:
        """Commit what is queued, stop the thread, close the connection.

        Returns:
            True when the thread ended in time (else the connection is left open).
        """
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.error("task store writer did not finish within %s s", timeout)
            return False
        self._db.close()
        return True

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def _loop(self) -> None:
        while True:
            op = self._queue.get()
            if op is None:
                return
            batch = [op]
            stop = self._gather(batch)
            self._commit(batch)
            if stop:
                return

    def _gather(self, batch: list[WriteOp]) -> bool:
        """Add queued ops to ``batch``; while nobody waits for any of them, linger up to
        :data:`LINGER` for more. Returns True when the queue asked the thread to stop."""
        deadline: float | None = None
        waited = batch[0].done is not None
        while len(batch) < WRITE_BATCH:
            try:
                more = self._queue.get_nowait()
            except queue.Empty:
                if waited:
                    return False
                now = time.monotonic()
                if deadline is None:
                    deadline = now + LINGER
                if now >= deadline:
                    return False
                try:
                    more = self._queue.get(timeout=deadline - now)
                except queue.Empty:
                    return False
            if more is None:
                return True
            batch.append(more)
            waited = waited or more.done is not None
        return False

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
