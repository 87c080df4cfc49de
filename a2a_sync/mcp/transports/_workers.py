"""The worker threads of the MCP HTTP transports: one exchange (a POST and the answer it
streams) per thread, grown on demand."""

from __future__ import annotations

import itertools
import logging
import queue
import threading
from collections.abc import Callable

from ...errors import Cancelled
from ._httpbase import THREAD_JOIN_TIMEOUT, WORKER_IDLE_TIMEOUT

__all__ = ["Workers"]

logger = logging.getLogger("a2a_sync.mcp.transports._httpbase")  # where it always logged


class Workers:
    """Named daemon threads that each run one exchange at a time; grown on demand.

    A thread is started only when no idle one is waiting, and an idle thread exits after
    :data:`WORKER_IDLE_TIMEOUT`, so a client making one call at a time reuses one thread,
    and N concurrent calls use N threads. The pool is deliberately not capped: an
    exchange may stay open for minutes (a long tool call's event stream, a
    subscription), and the exchange that must answer it (a reply to a sampling request
    the server sent on that stream) must never queue behind it. The number of threads is
    the number of requests the caller has in flight.

    Thread-safe.
    """

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._lock = threading.Lock()  # guards _idle, _threads, _closed
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._idle = 0
        self._threads: set[threading.Thread] = set()
        self._closed = False
        self._numbers = itertools.count(1)

    def submit(self, work: Callable[[], None]) -> None:
        """Run ``work`` on an idle thread, or on a new one.

        Raises:
            Cancelled: The pool is closed.
        """
        with self._lock:
            if self._closed:
                raise Cancelled("the transport is closed")
            if self._idle:
                self._idle -= 1
                self._queue.put(work)
                return
            thread = threading.Thread(
                target=self._run,
                args=(work,),
                name=f"{self._prefix}-{next(self._numbers)}",
                daemon=True,
            )
            self._threads.add(thread)
        thread.start()

    def close(self, timeout: float = THREAD_JOIN_TIMEOUT) -> None:
        """Stop idle threads and wait (bounded) for busy ones; call after aborting what
        they block on. Idempotent."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
            threads = list(self._threads)
        for _ in range(idle):
            self._queue.put(None)
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(timeout)
                if thread.is_alive():
                    logger.warning("MCP HTTP worker %s did not stop", thread.name)

    def _run(self, work: Callable[[], None] | None) -> None:
        try:
            while work is not None:
                work()  # exchanges catch their own failures
                work = None
                with self._lock:
                    if self._closed:
                        return
                    self._idle += 1
                try:
                    work = self._queue.get(timeout=WORKER_IDLE_TIMEOUT)
                except queue.Empty:
                    with self._lock:
                        try:  # handed a job while timing out
                            work = self._queue.get_nowait()
                        except queue.Empty:
                            self._idle -= 1
                            return
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())
