"""Deadlines for exchanges run on the caller's thread: one lazy watchdog thread.

A caller that sends its POST and reads the answer itself cannot also watch its clock: it
is blocked in a read. :class:`Deadlines` aborts the exchange of a call whose deadline
passed (the read fails at once; the caller then raises ``DeadlineExceeded`` as usual).

It costs no thread hand-off per call: :meth:`Deadlines.watch` pushes an entry on a heap
and :meth:`Deadlines.unwatch` only marks it done; the thread sleeps until the earliest
deadline and is woken only when a new deadline is earlier than that (the first call, a
shorter timeout). Calls made one after another with the same timeout never wake it; it
wakes about once per timeout period and drops the finished entries it finds.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Final

from ._streams import Exchange

__all__ = ["Deadlines"]

logger = logging.getLogger("a2a_sync.mcp.transports.http")

#: How long ``close`` waits for the watchdog thread.
_JOIN_TIMEOUT: Final = 2.0


class _Entry:
    __slots__ = ("deadline", "exchange", "fired", "live")

    def __init__(self, deadline: float, exchange: Exchange) -> None:
        self.deadline = deadline
        self.exchange = exchange
        self.live = True
        self.fired = False


#: What the heap holds: (deadline, sequence number, entry), ordered by the first two
#: (compared in C; the sequence number breaks ties, so entries are never compared).
_Slot = tuple[float, int, _Entry]


class Deadlines:
    """Aborts watched exchanges at their deadline. Thread-safe.

    Args:
        name: The watchdog thread's name (``a2a-sync-...``), started on first use.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()  # guards everything below
        self._cond = threading.Condition(self._lock)
        self._heap: list[_Slot] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._sleeping_until = float("inf")
        self._closed = False

    def watch(self, exchange: Exchange, deadline: float) -> _Entry:
        """Abort ``exchange`` at ``deadline`` (``time.monotonic()``) unless unwatched."""
        entry = _Entry(deadline, exchange)
        with self._lock:  # (the condition's lock, without Condition's Python-level enter)
            heap = self._heap
            while heap and not heap[0][2].live:  # finished calls: drop them as we go
                heapq.heappop(heap)
            heapq.heappush(heap, (deadline, next(self._seq), entry))
            if self._closed:
                return entry
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            elif deadline < self._sleeping_until:
                self._cond.notify()
        return entry

    @staticmethod
    def unwatch(entry: _Entry) -> None:
        """The call ended: its deadline no longer matters."""
        entry.live = False

    def close(self) -> None:
        """Stop the watchdog (bounded join). Idempotent."""
        with self._cond:
            self._closed = True
            self._heap.clear()
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_JOIN_TIMEOUT)

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._next_due()
                if due is None:
                    return
            if isinstance(due, _Entry):
                due.exchange.abort()

    def _next_due(self) -> _Entry | bool | None:
        """(Under the lock.) Sleep until an entry is due and return it; True to look
        again; None once closed."""
        heap = self._heap
        while heap and not heap[0][2].live:
            heapq.heappop(heap)
        if self._closed:
            return None
        if not heap:
            self._sleeping_until = float("inf")
            self._cond.wait()
            return True
        entry = heap[0][2]
        now = time.monotonic()
        if entry.deadline <= now:
            heapq.heappop(heap)
            entry.live = False
            entry.fired = True
            return entry
        self._sleeping_until = entry.deadline
        self._cond.wait(entry.deadline - now)
        self._sleeping_until = float("inf")
        return True
