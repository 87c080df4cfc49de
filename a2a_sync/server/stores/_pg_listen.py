"""LISTEN/NOTIFY for the PostgreSQL task store: events, cancel requests, cache invalidation.

Internal to :mod:`a2a_sync.server.stores.postgres`. Every append commits a
``NOTIFY a2a_events, '<seq> <task id>'`` with it; the notification carries no event, so
it stays small whatever the event's size. Each store (one per worker process) runs one
:class:`Listener` thread owning two connections of its own (not from the pool, so a
saturated pool never delays delivery): one ``LISTEN``\\s, the other reads the log.

Delivery to the subscriptions of this process goes through a :class:`Router`:

* an event appended **in this process** is pushed to local subscribers directly by the
  appending thread (no read);
* a notification for a task that has local subscribers and a sequence number beyond what
  was pushed makes the listener read the log from there (one query, which also covers
  notifications still queued behind it), then push; other notifications cost a dict
  lookup;
* a :class:`~a2a_sync.server.events.Subscription` fills any gap from the log itself, so a
  lost or late notification delays an event, it never loses or repeats one.

When the LISTEN connection breaks, notifications sent meanwhile are lost: after
reconnecting, every followed task is read from where its subscribers were, and the
store's caches are dropped (``on_reconnect``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final

import psycopg

from ..events import DEFAULT_SUBSCRIBER_BUFFER, Backlog, LogEntry, Subscription

__all__ = ["CANCEL_CHANNEL", "EVENTS_CHANNEL", "PUSH_CHANNEL", "Listener", "Router"]

logger = logging.getLogger(__name__)

#: Channel of appended events; payload ``"<seq> <task id>"``.
EVENTS_CHANNEL: Final = "a2a_events"
#: Channel of cancel requests; payload ``"<task id>"``.
CANCEL_CHANNEL: Final = "a2a_cancel"
#: Channel of push-config changes; payload ``"<task id>"``.
PUSH_CHANNEL: Final = "a2a_push"
#: Longest the listener blocks before looking at its stop flag (close also wakes it).
LISTEN_STEP: Final = 1.0
#: Reconnect backoff after the LISTEN connection broke: first and largest wait.
RECONNECT_MIN: Final = 0.1
RECONNECT_MAX: Final = 5.0

_READ_LOG: Final = "SELECT seq, event FROM a2a_events WHERE task_id = %s AND seq > %s ORDER BY seq"


class Router:
    """The subscriptions of this process, per task, and how far each task was pushed.

    Thread-safe: appending threads and the listener thread publish; any thread
    subscribes and closes subscriptions.
    """

    def __init__(self, *, buffer: int = DEFAULT_SUBSCRIBER_BUFFER) -> None:
        self._buffer = buffer
        self._lock = threading.Lock()
        # task id -> subscriptions (tuples replaced under the lock, read without it)
        self._subs: dict[str, tuple[Subscription, ...]] = {}
        # task id -> highest sequence number pushed to its subscribers (same keys)
        self._pushed: dict[str, int] = {}
        self._closed = False

    def subscribe(self, task_id: str, after_seq: int, backlog: Backlog) -> Subscription:
        """Follow ``task_id`` after ``after_seq`` (the subscription reads the log first)."""
        sub = Subscription(task_id, after_seq, backlog, maxsize=self._buffer, on_close=self._remove)
        with self._lock:
            if self._closed:
                sub.interrupt()
            self._subs[task_id] = (*self._subs.get(task_id, ()), sub)
            self._pushed[task_id] = max(self._pushed.get(task_id, 0), after_seq)
        return sub

    def publish(self, task_id: str, seq: int, event: Any) -> None:
        """Push one event to the task's local subscribers (cheap when there are none)."""
        subs = self._subs.get(task_id)
        if not subs:
            return
        with self._lock:
            if self._pushed.get(task_id, 0) < seq and task_id in self._subs:
                self._pushed[task_id] = seq
        for sub in subs:
            sub.push(seq, event)

    def read_from(self, task_id: str, seq: int) -> int | None:
        """Where to read the log from for a notification of ``seq``; ``None``: nothing to do
        (no local subscriber, or ``seq`` was pushed already)."""
        if task_id not in self._subs:
            return None
        with self._lock:
            pushed = self._pushed.get(task_id)
        if pushed is None or seq <= pushed:
            return None
        return pushed

    def followed(self) -> dict[str, int]:
        """Every task with local subscribers, and how far it was pushed."""
        with self._lock:
            return dict(self._pushed)

    def close(self) -> None:
        """Interrupt every subscription; later ones start interrupted."""
        with self._lock:
            self._closed = True
            subs = [sub for group in self._subs.values() for sub in group]
        for sub in subs:
            sub.interrupt()

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            remaining = tuple(s for s in self._subs.get(sub.task_id, ()) if s is not sub)
            if remaining:
                self._subs[sub.task_id] = remaining
            else:
                self._subs.pop(sub.task_id, None)
                self._pushed.pop(sub.task_id, None)


class Listener:
    """The thread that LISTENs and routes notifications. Thread-safe to close.

    Args:
        connect: Opens a new autocommit connection.
        router: Where events go.
        decode: Turns a stored event blob into ``(seq, event)``'s event.
        wake_channel: A channel only this listener uses (``close`` notifies it).
        on_cancel: Called with a task id when another process asks to cancel it (on the
            listener thread: must not block).
        on_push_change: Called with a task id when its push configs changed anywhere.
        on_reconnect: Called after the connection was re-established (notifications
            may have been missed).
        name: Thread name.

    Raises:
        psycopg.Error: The first connection failed (the store translates it).
    """

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        router: Router,
        decode: Callable[[bytes], Any],
        *,
        wake_channel: str,
        on_cancel: Callable[[str], None],
        on_push_change: Callable[[str], None],
        on_reconnect: Callable[[], None],
        name: str,
    ) -> None:
        self._connect_db = connect
        self._router = router
        self._decode = decode
        self._wake_channel = wake_channel
        self._on_cancel = on_cancel
        self._on_push_change = on_push_change
        self._on_reconnect = on_reconnect
        self._stop = threading.Event()
        self._listen: psycopg.Connection[Any] | None = None
        self._reader: psycopg.Connection[Any] | None = None
        self._connect()  # the first connection fails loudly, in the caller's thread
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def close(self, timeout: float, wake: Callable[[str], None]) -> bool:
        """Stop the thread (``wake(channel)`` sends it a notification) and disconnect.

        Returns:
            True when the thread ended in time.
        """
        self._stop.set()
        try:
            wake(self._wake_channel)
        except psycopg.Error:
            logger.debug("could not wake the listener; it stops within %s s", LISTEN_STEP)
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning("task store listener did not stop within %s s", timeout)
            return False
        return True

    # -- the thread ----------------------------------------------------------------------------

    def _connect(self) -> None:
        listen = self._connect_db()
        try:
            for channel in (EVENTS_CHANNEL, CANCEL_CHANNEL, PUSH_CHANNEL, self._wake_channel):
                listen.execute(f'LISTEN "{channel}"')
            self._reader = self._connect_db()
        except BaseException:
            listen.close()
            raise
        self._listen = listen

    def _disconnect(self) -> None:
        for conn in (self._listen, self._reader):
            if conn is not None:
                try:
                    conn.close()
                except psycopg.Error:
                    logger.debug("closing a listener connection failed", exc_info=True)
        self._listen = self._reader = None

    def _loop(self) -> None:
        delay = RECONNECT_MIN
        while not self._stop.is_set():
            try:
                if self._listen is None:
                    self._connect()
                    logger.info("task store listener reconnected")
                    self._on_reconnect()
                    self._catch_up_all()
                delay = RECONNECT_MIN
                self._listen_once()
            except psycopg.Error as exc:
                if self._stop.is_set():
                    break
                logger.warning(
                    "task store listener: connection lost (%s); reconnecting in %.1f s",
                    type(exc).__name__,
                    delay,
                )
                self._disconnect()
                self._stop.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX)
            except Exception:  # top of the listener thread: log, reconnect, keep serving
                logger.exception("task store listener failed; reconnecting")
                self._disconnect()
                self._stop.wait(delay)
                delay = min(delay * 2, RECONNECT_MAX)
        self._disconnect()

    def _listen_once(self) -> None:
        listen = self._listen
        assert listen is not None
        for note in listen.notifies(timeout=LISTEN_STEP):
            if self._stop.is_set():
                return
            channel, payload = note.channel, note.payload
            if channel == EVENTS_CHANNEL:
                seq_text, _, task_id = payload.partition(" ")
                self._route(task_id, int(seq_text))
            elif channel == CANCEL_CHANNEL:
                self._on_cancel(payload)
            elif channel == PUSH_CHANNEL:
                self._on_push_change(payload)

    def _route(self, task_id: str, seq: int) -> None:
        after = self._router.read_from(task_id, seq)
        if after is None:
            return
        entries = self._read(task_id, after)
        if not entries or entries[-1][0] < seq:
            # Not visible yet to this connection (never expected: NOTIFY is delivered after
            # the commit): read once more; the subscription's gap check covers the rest.
            entries = self._read(task_id, after)
        for entry_seq, event in entries:
            self._router.publish(task_id, entry_seq, event)

    def _catch_up_all(self) -> None:
        for task_id, after in self._router.followed().items():
            for entry_seq, event in self._read(task_id, after):
                self._router.publish(task_id, entry_seq, event)

    def _read(self, task_id: str, after: int) -> list[LogEntry]:
        reader = self._reader
        assert reader is not None
        rows = reader.execute(_READ_LOG, (task_id, after), binary=True).fetchall()
        return [(seq, self._decode(blob)) for seq, blob in rows]
