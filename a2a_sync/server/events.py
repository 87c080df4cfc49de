"""In-process fan-out of a task's events to the streams that follow it.

Every task store keeps an ordered **event log** per task (sequence numbers 1, 2, 3 ...).
A :class:`Subscription` follows one task's log from a given sequence number: it receives
new events as they are appended (pushed into a small bounded buffer, so the producer
never waits for a slow reader) and reads the log itself whenever it sees a gap. A gap
appears when the reader falls more than the buffer size behind (the buffer is then
dropped and refilled from the log) or when it subscribes after events were appended.
So a subscriber never misses an event, never sees one twice, and always sees them in
log order, however slow it is: back-pressure costs memory in the log (which the store
keeps anyway), not in per-subscriber queues.

:class:`EventBroker` is the in-process delivery used by the in-memory and SQLite stores.
A store shared by several processes (PostgreSQL, later) feeds the same
:class:`Subscription` from its own notification channel (``LISTEN``/``NOTIFY``): all a
subscription needs is "something was appended" pushes plus a way to read the log
(:data:`Backlog`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from ..a2a.types import StreamEvent

__all__ = ["DEFAULT_SUBSCRIBER_BUFFER", "Backlog", "EventBroker", "LogEntry", "Subscription"]

#: Events buffered per subscriber before the buffer is dropped and the subscriber catches
#: up from the log instead. Large enough that a reader keeping pace never re-reads the
#: log, small enough that a thousand stalled readers cost little memory.
DEFAULT_SUBSCRIBER_BUFFER: Final = 256

#: One entry of a task's event log: ``(sequence number, event)``.
LogEntry = tuple[int, StreamEvent]
#: ``backlog(task_id, after_seq)`` returns the task's log entries after ``after_seq``, in
#: order (empty when the task does not exist yet).
Backlog = Callable[[str, int], list[LogEntry]]


class Subscription:
    """One reader following one task's event log, in order, without gaps or repeats.

    Get one from the task store (``store.subscribe(task_id, after_seq=...)``). One thread
    reads (:meth:`poll`); any thread may :meth:`interrupt` or :meth:`close` it, and the
    store's publisher pushes into it from the producing thread.
    """

    __slots__ = (
        "_backlog",
        "_closed",
        "_cond",
        "_fresh",
        "_interrupted",
        "_items",
        "_maxsize",
        "_on_close",
        "last_seq",
        "task_id",
    )

    def __init__(
        self,
        task_id: str,
        after_seq: int,
        backlog: Backlog,
        *,
        maxsize: int = DEFAULT_SUBSCRIBER_BUFFER,
        on_close: Callable[[Subscription], None] | None = None,
    ) -> None:
        #: The task followed.
        self.task_id = task_id
        #: Sequence number of the last event returned by :meth:`poll`.
        self.last_seq = after_seq
        self._backlog = backlog
        self._maxsize = maxsize
        self._on_close = on_close
        self._cond = threading.Condition(threading.Lock())
        self._items: deque[LogEntry] = deque()
        # The log may already hold events after ``after_seq``: read it on the first poll.
        self._fresh = True
        self._interrupted = False
        self._closed = False

    @property
    def interrupted(self) -> bool:
        """True once :meth:`interrupt` was called (the owner wants the reader to stop)."""
        return self._interrupted

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def push(self, seq: int, event: StreamEvent) -> None:
        """Deliver a newly appended event (called by the store's publisher; never blocks)."""
        with self._cond:
            if self._closed:
                return
            if len(self._items) >= self._maxsize:
                # The reader is far behind: drop the buffer; the gap sends it to the log.
                self._items.clear()
            self._items.append((seq, event))
            self._cond.notify()

    def poll(self, timeout: float | None) -> list[LogEntry]:
        """Wait for the next events and return them (at least one), in log order.

        Args:
            timeout: Longest wait in seconds (``None``: until events, interrupt or close).

        Returns:
            The events after :attr:`last_seq`; empty when the timeout passed or the
            subscription was interrupted or closed (check :attr:`interrupted`).
        """
        if self._fresh:
            self._fresh = False
            caught_up = self._catch_up([])
            if caught_up:
                return caught_up
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                while not self._items:
                    if self._closed or self._interrupted:
                        return []
                    if deadline is None:
                        self._cond.wait()
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return []
                    self._cond.wait(remaining)
                items = list(self._items)
                self._items.clear()
            out = self._catch_up(items)
            if out:  # else every item was already read from the log: keep waiting
                return out

    def _catch_up(self, items: list[LogEntry]) -> list[LogEntry]:
        """Order ``items`` after :attr:`last_seq`, filling gaps from the log."""
        out: list[LogEntry] = []
        last = self.last_seq
        if not items or items[0][0] > last + 1:  # events before the first item are missing
            out = self._backlog(self.task_id, last)
            if out:
                last = out[-1][0]
        for seq, event in items:
            if seq == last + 1:
                out.append((seq, event))
                last = seq
            elif seq > last + 1:  # a gap inside the batch: the buffer overflowed meanwhile
                more = self._backlog(self.task_id, last)
                out.extend(more)
                if more:
                    last = more[-1][0]
        self.last_seq = last
        return out

    def interrupt(self) -> None:
        """Make the reader's :meth:`poll` return (now, or at once if called later)."""
        with self._cond:
            self._interrupted = True
            self._cond.notify_all()

    def close(self) -> None:
        """Stop following the task. Idempotent; safe from any thread."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._items.clear()
            self._cond.notify_all()
        if self._on_close is not None:
            self._on_close(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<Subscription task={self.task_id!r} after={self.last_seq} {state}>"


class EventBroker:
    """Routes appended events to the subscriptions of their task, within one process.

    Thread-safe. :meth:`publish` is cheap when a task has no subscribers (one dict
    lookup, no lock), which is the common case for blocking SendMessage calls.
    """

    __slots__ = ("_buffer", "_closed", "_lock", "_subs")

    def __init__(self, *, buffer: int = DEFAULT_SUBSCRIBER_BUFFER) -> None:
        self._buffer = buffer
        self._lock = threading.Lock()
        # task id -> subscriptions; tuples replaced under the lock, read without it.
        self._subs: dict[str, tuple[Subscription, ...]] = {}
        self._closed = False

    def subscribe(self, task_id: str, after_seq: int, backlog: Backlog) -> Subscription:
        """Follow ``task_id`` from ``after_seq`` (events after it are delivered)."""
        sub = Subscription(task_id, after_seq, backlog, maxsize=self._buffer, on_close=self._remove)
        with self._lock:
            if self._closed:
                sub.interrupt()
            self._subs[task_id] = (*self._subs.get(task_id, ()), sub)
        return sub

    def publish(self, task_id: str, seq: int, event: StreamEvent) -> None:
        """Deliver one appended event to the task's subscribers."""
        subs = self._subs.get(task_id)
        if subs:
            for sub in subs:
                sub.push(seq, event)

    def subscriber_count(self, task_id: str) -> int:
        """How many subscriptions follow ``task_id`` now."""
        return len(self._subs.get(task_id, ()))

    def close(self) -> None:
        """Interrupt every subscription (server shutdown); later ones start interrupted."""
        with self._lock:
            self._closed = True
            subs = [sub for group in self._subs.values() for sub in group]
        for sub in subs:
            sub.interrupt()

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            group = self._subs.get(sub.task_id, ())
            remaining = tuple(s for s in group if s is not sub)
            if remaining:
                self._subs[sub.task_id] = remaining
            else:
                self._subs.pop(sub.task_id, None)
