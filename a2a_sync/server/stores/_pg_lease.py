"""Worker leases for the PostgreSQL task store: heartbeats, and failing orphaned tasks.

Internal to :mod:`a2a_sync.server.stores.postgres`. Every store (one per worker process)
is a row of ``a2a_workers`` whose ``heartbeat`` a daemon thread refreshes every
``heartbeat_interval``; a task whose agent runs on a worker names it in
``a2a_tasks.worker`` until the task is final (terminal or interrupted). Each beat also
looks for tasks whose worker's heartbeat is older than ``lease_timeout`` (measured by the
database's clock, so hosts' clocks do not matter) and hands them to ``fail_task``: the
worker died (``kill -9``, a lost host, a network partition) and its agents with it. Every
worker reaps; the append that fails a task is conditional on the task still naming the
dead worker, so concurrent reapers fail it once.

One heartbeat per worker, not per task: the cost is one UPDATE and one indexed query per
interval, whatever the number of running tasks.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from typing import Any, Final

from ...errors import InternalError

__all__ = ["Lease"]

logger = logging.getLogger(__name__)

#: Orphaned tasks failed per beat at most (the rest on the next beats).
REAP_BATCH: Final = 100

Query = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]

_REGISTER: Final = (
    "INSERT INTO a2a_workers (id, host, pid) VALUES (%s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET heartbeat = now()"
)
_BEAT: Final = "UPDATE a2a_workers SET heartbeat = now() WHERE id = %s RETURNING id"
_ORPHANS: Final = (
    "SELECT t.id, t.worker FROM a2a_tasks t LEFT JOIN a2a_workers w ON w.id = t.worker"
    " WHERE t.worker IS NOT NULL AND t.worker <> %s"
    " AND (w.id IS NULL OR w.heartbeat < now() - make_interval(secs => %s))"
    " LIMIT %s"
)
# Dead workers that no task names any more (claims of theirs are taken over on demand).
_FORGET_DEAD: Final = (
    "DELETE FROM a2a_workers w WHERE w.id <> %s"
    " AND w.heartbeat < now() - make_interval(secs => %s)"
    " AND NOT EXISTS (SELECT 1 FROM a2a_tasks t WHERE t.worker = w.id)"
)
_RETIRE: Final = "DELETE FROM a2a_workers WHERE id = %s"


class Lease:
    """This worker's heartbeat and the reaper, on one daemon thread. Thread-safe.

    Args:
        query: Runs one statement on a pooled connection, returns its rows (raises
            InternalError when the database fails).
        worker_id: This worker's id.
        heartbeat_interval: Seconds between beats.
        lease_timeout: Seconds without a beat after which a worker counts as dead.
        fail_task: ``fail_task(task_id, dead_worker_id)`` fails one orphaned task.
        name: Thread name.

    Raises:
        InternalError: The worker could not be registered.
    """

    def __init__(
        self,
        query: Query,
        worker_id: str,
        *,
        heartbeat_interval: float,
        lease_timeout: float,
        fail_task: Callable[[str, str], None],
        name: str,
    ) -> None:
        self._query = query
        self.worker_id = worker_id
        self._interval = heartbeat_interval
        self._timeout = lease_timeout
        self._fail_task = fail_task
        self._stop = threading.Event()
        self._register()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _register(self) -> None:
        self._query(_REGISTER, (self.worker_id, socket.gethostname(), os.getpid()))

    def beat_and_reap(self) -> int:
        """One beat: refresh this worker's lease, fail the tasks of dead workers.

        Returns:
            How many orphaned tasks were handed to ``fail_task``.
        """
        if not self._query(_BEAT, (self.worker_id,)):
            # Another worker judged this one dead (a pause longer than the lease): its
            # tasks were failed; register again so new work is leased normally.
            logger.warning("worker %s was presumed dead; registering again", self.worker_id)
            self._register()
        orphans = self._query(_ORPHANS, (self.worker_id, self._timeout, REAP_BATCH))
        for task_id, worker in orphans:
            logger.warning("task %s: worker %s stopped renewing its lease: failed", task_id, worker)
            self._fail_task(task_id, worker)
        if not orphans:
            self._query(_FORGET_DEAD, (self.worker_id, self._timeout))
        return len(orphans)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.beat_and_reap()
            except InternalError:
                logger.warning("task store heartbeat failed; retrying in %s s", self._interval)
            except Exception:  # top of the heartbeat thread: log and keep beating
                logger.exception("task store heartbeat failed")

    def close(self, timeout: float) -> bool:
        """Stop beating (the row stays until :meth:`retire`).

        Returns:
            True when the thread ended in time.
        """
        self._stop.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def retire(self) -> None:
        """Remove this worker's row (after its tasks were settled)."""
        self._query(_RETIRE, (self.worker_id,))
