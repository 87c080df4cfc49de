"""A bounded pool of named daemon threads that runs agent executors."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Final

from ..errors import ConfigurationError, InternalError

__all__ = ["DEFAULT_WORKERS", "WorkerPool"]

logger = logging.getLogger(__name__)

#: Executor threads when the application names none: enough for a handful of slow agents
#: (most time is spent waiting on models or tools), few enough to stay cheap when idle.
DEFAULT_WORKERS: Final = 16


class WorkerPool:
    """Runs callables on at most ``max_workers`` daemon threads, started on demand.

    Unlike :class:`concurrent.futures.ThreadPoolExecutor` the threads are daemons (an
    agent stuck in a call never blocks interpreter exit) and :meth:`shutdown` waits a
    bounded time. Work beyond ``max_workers`` waits in a queue. Thread-safe.

    Args:
        max_workers: Most threads running at once.
        name: Thread name prefix.
        max_inline: Most callers running work on their own thread at once
            (:meth:`run_here`); default half of ``max_workers`` (at least 1), so work
            submitted to the pool always finds the other half.
    """

    def __init__(
        self,
        max_workers: int = DEFAULT_WORKERS,
        *,
        name: str = "a2a-sync-agent",
        max_inline: int | None = None,
    ) -> None:
        if max_workers < 1:
            raise ConfigurationError("max_workers must be at least 1")
        self.max_workers = max_workers
        self.max_inline = max(1, max_workers // 2) if max_inline is None else max_inline
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._numbers = itertools.count(1)
        self._closed = False
        # Worker slots taken by whoever runs work: a pool thread or a caller running work
        # on its own thread (run_here). Keeps max_workers exact. A count under _lock (a
        # semaphore's Python condition cost more than the rest of run_here); a pool
        # thread waits on _slot_free while a caller running work inline holds the last.
        self._busy = 0  # guarded by _lock
        self._slot_waiters = 0  # pool threads waiting for a slot; guarded by _lock
        self._slot_free = threading.Condition(self._lock)
        self._inline = 0  # callers inside run_here; guarded by _lock
        self._inline_done = threading.Condition(self._lock)

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work()`` on a pool thread. Exceptions are logged, never raised here.

        Raises:
            InternalError: The pool is shut down.
        """
        with self._lock:
            if self._closed:
                raise InternalError("the server is shutting down")
            self._queue.put(work)
            if self._idle > 0:
                self._idle -= 1
                return
            if len(self._threads) < self.max_workers:
                thread = threading.Thread(
                    target=self._run, name=f"{self._name}-{next(self._numbers)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def run_here(self, work: Callable[[], None]) -> bool:
        """Run ``work()`` on the calling thread if a worker slot is free now and fewer
        than ``max_inline`` callers run work here.

        The slot counts toward ``max_workers`` like a pool thread's, and :meth:`shutdown`
        waits for it. Exceptions are logged, never raised here.

        Returns:
            False (nothing ran) when every slot is taken, or ``max_inline`` callers run
            work here already: submit the work instead.

        Raises:
            InternalError: The pool is shut down.
        """
        with self._lock:
            if self._closed:
                raise InternalError("the server is shutting down")
            if self._inline >= self.max_inline or self._busy >= self.max_workers:
                return False
            self._inline += 1
            self._busy += 1
        try:
            work()
        except Exception:  # the caller's thread: log, as a pool thread would
            logger.exception("agent work failed")
        finally:
            with self._lock:
                self._busy -= 1
                self._inline -= 1
                if self._slot_waiters:
                    self._slot_free.notify()
                if not self._inline and self._shutting_down():  # (only shutdown waits)
                    self._inline_done.notify_all()
        return True

    def _shutting_down(self) -> bool:
        return self._closed  # (a call: read again after run_here's check above)

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            with self._lock:
                while self._busy >= self.max_workers:  # callers running work inline hold them
                    self._slot_waiters += 1
                    try:
                        self._slot_free.wait()
                    finally:
                        self._slot_waiters -= 1
                self._busy += 1
            try:
                work()
            except Exception:  # top of a pool thread: log and keep serving
                logger.exception("agent work failed")
            with self._lock:
                self._busy -= 1
                self._idle += 1
                if self._slot_waiters:
                    self._slot_free.notify()

    def shutdown(self, timeout: float) -> bool:
        """Refuse new work, let queued and running work finish, stop the threads.

        Args:
            timeout: Longest wait in seconds for running work to end.

        Returns:
            True when every thread ended in time (else they are daemons left behind).
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                for _ in self._threads:
                    self._queue.put(None)
            threads = list(self._threads)
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            inline_done = self._inline_done.wait_for(
                lambda: not self._inline, max(0.0, deadline - time.monotonic())
            )
            inline = self._inline
        if alive:
            logger.warning("agent threads still running after %.1f s: %s", timeout, alive)
        if not inline_done:
            logger.warning("%d agent runs on request threads still running", inline)
        return not alive and inline_done

    @property
    def active(self) -> int:
        """Threads started and not idle, plus callers running work inline (approximate)."""
        with self._lock:
            return len(self._threads) - self._idle + self._inline
