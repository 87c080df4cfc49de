"""LISTEN/NOTIFY for the PostgreSQL task store: events, cancel requests, cache invalidation.

Internal to :mod:`a2a_sync.server.stores.postgres`. Every append commits a
``NOTIFY`` with it on the task's own channel (:func:`task_channel`), payload
``"<seq> <worker id> <task id>"``: no event, so it stays small whatever the event's size.
A worker ``LISTEN``\\s only to the channels of tasks it has subscribers for, so events
nobody follows elsewhere (every blocking SendMessage) wake no other process: the cost of
an event does not grow with the number of workers.

Each store runs one :class:`Listener` thread owning two connections of its own (not from
the pool, so a saturated pool never delays delivery): one listens, the other reads the
log. The thread sleeps in ``select`` on the listening socket and on a pipe that
subscribing threads write to when the set of followed tasks changes; it then
``LISTEN``\\s/``UNLISTEN``\\s to match and reads each newly followed task from where its
subscribers are (events committed before the ``LISTEN`` took effect sent no
notification it could see).

Delivery to the subscriptions of this process goes through a :class:`Router`:

* an event appended **in this process** is pushed to local subscribers directly by the
  appending thread (no read); its own notification is skipped by the worker id;
* a notification from another worker beyond what was pushed makes the listener read the
  log from there (one query, which also covers notifications still queued behind it);
* a :class:`~a2a_sync.server.events.Subscription` fills any gap from the log itself, so a
  late notification delays an event, it never loses or repeats one.

When the LISTEN connection breaks, notifications sent meanwhile are lost: after
reconnecting, every followed task is read from where its subscribers were, and the
store's caches are dropped (``on_reconnect``).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import logging
import os
import select
import threading
from collections.abc import Callable
from typing import Any, Final

import psycopg

from ..events import DEFAULT_SUBSCRIBER_BUFFER, Backlog, LogEntry, Subscription

__all__ = ["CANCEL_CHANNEL", "PUSH_CHANNEL", "Listener", "Router", "event_payload", "task_channel"]

logger = logging.getLogger(__name__)

#: Channel of cancel requests; payload ``"<task id>"``.
CANCEL_CHANNEL: Final = "a2a_cancel"
#: Channel of push-config changes; payload ``"<task id>"``.
PUSH_CHANNEL: Final = "a2a_push"
#: Longest the listener sleeps before looking at its stop flag (close also wakes it).
LISTEN_STEP: Final = 1.0
#: Reconnect backoff after the LISTEN connection broke: first and largest wait.
RECONNECT_MIN: Final = 0.1
RECONNECT_MAX: Final = 5.0

_READ_LOG: Final = "SELECT seq, event FROM a2a_events WHERE task_id = %s AND seq > %s ORDER BY seq"


def task_channel(task_id: str) -> str:
    """The NOTIFY channel of one task's events (a hash: any task id makes a valid name)."""
    return "a2a_t_" + hashlib.blake2b(task_id.encode(), digest_size=12).hexdigest()


def event_payload(seq: int, worker_id: str, task_id: str) -> str:
    """The payload announcing event ``seq`` of ``task_id``, appended by ``worker_id``."""
    return f"{seq} {worker_id} {task_id}"


class Router:
    """The subscriptions of this process, per task, and how far each task was pushed.

    Thread-safe: appending threads and the listener thread publish; any thread
    subscribes and closes subscriptions.

    Args:
        buffer: Events buffered per subscriber before it re-reads the log.
        on_change: Called (without locks held) when a task gains its first subscriber
            or loses its last.
    """

    def __init__(
        self, *, buffer: int = DEFAULT_SUBSCRIBER_BUFFER, on_change: Callable[[], None]
    ) -> None:
        self._buffer = buffer
        self._on_change = on_change
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
            first = task_id not in self._subs
            self._subs[task_id] = (*self._subs.get(task_id, ()), sub)
            self._pushed[task_id] = max(self._pushed.get(task_id, 0), after_seq)
        if first:
            self._on_change()
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
                return
            self._subs.pop(sub.task_id, None)
            self._pushed.pop(sub.task_id, None)
        self._on_change()


class Listener:
    """The thread that LISTENs and routes notifications. :meth:`poke` and :meth:`close`
    are thread-safe.

    Args:
        connect: Opens a new autocommit connection.
        router: Where events go.
        decode: Turns a stored event blob into the event.
        worker_id: This worker (its own notifications are skipped).
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
        worker_id: str,
        on_cancel: Callable[[str], None],
        on_push_change: Callable[[str], None],
        on_reconnect: Callable[[], None],
        name: str,
    ) -> None:
        self._connect_db = connect
        self._router = router
        self._decode = decode
        self._worker_id = worker_id
        self._on_cancel = on_cancel
        self._on_push_change = on_push_change
        self._on_reconnect = on_reconnect
        self._stop = threading.Event()
        self._listen: psycopg.Connection[Any] | None = None
        self._reader: psycopg.Connection[Any] | None = None
        self._listening: dict[str, str] = {}  # task id -> channel LISTENed to
        self._dirty = True  # the followed tasks may differ from those LISTENed to
        self._received: collections.deque[psycopg.Notify] = collections.deque()
        self._pipe_lock = threading.Lock()  # guards the wake pipe's descriptors
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        try:
            self._connect()  # the first connection fails loudly, in the caller's thread
        except BaseException:
            self._close_pipe()
            raise
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def poke(self) -> None:
        """Wake the thread (the followed tasks changed, or it should stop)."""
        self._dirty = True
        with self._pipe_lock:
            if self._wake_w < 0:  # closed: never write to a descriptor number reused since
                return
            with contextlib.suppress(BlockingIOError, OSError):  # full pipe: a wake is pending
                os.write(self._wake_w, b"\0")

    def close(self, timeout: float) -> bool:
        """Stop the thread and disconnect.

        Returns:
            True when the thread ended in time.
        """
        self._stop.set()
        self.poke()
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning("task store listener did not stop within %s s", timeout)
            return False
        self._close_pipe()
        return True

    def _close_pipe(self) -> None:
        """Close the wake pipe once: a second close would close whatever file the process
        opened since under the same descriptor numbers (another server's socket, say)."""
        with self._pipe_lock:
            wake_r, wake_w = self._wake_r, self._wake_w
            self._wake_r = self._wake_w = -1
        for fd in (wake_r, wake_w):
            if fd >= 0:
                os.close(fd)

    # -- the thread ----------------------------------------------------------------------------

    def _connect(self) -> None:
        listen = self._connect_db()
        # Notifications that arrive while a LISTEN/UNLISTEN runs are handed to handlers by
        # psycopg; those arriving between commands are read off libpq in _drain().
        listen.add_notify_handler(self._received.append)
        try:
            for channel in (CANCEL_CHANNEL, PUSH_CHANNEL):
                listen.execute(f'LISTEN "{channel}"')
            self._reader = self._connect_db()
        except BaseException:
            listen.close()
            raise
        self._listen = listen
        self._listening = {}
        self._dirty = True

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
                delay = RECONNECT_MIN
                self._serve()
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

    def _serve(self) -> None:
        """Follow the router's tasks and dispatch notifications until stopped."""
        listen = self._listen
        assert listen is not None
        while not self._stop.is_set():
            if self._dirty:
                self._dirty = False  # before reading the router: a later change re-marks it
                self._follow()
            self._drain(listen)
            ready, _, _ = select.select([listen.fileno(), self._wake_r], [], [], LISTEN_STEP)
            if self._wake_r in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(self._wake_r, 4096)

    def _follow(self) -> None:
        """LISTEN to the channels of newly followed tasks (and read what they missed),
        UNLISTEN from tasks nobody here follows any more."""
        listen = self._listen
        assert listen is not None
        followed = self._router.followed()
        for task_id in [t for t in self._listening if t not in followed]:
            listen.execute(f'UNLISTEN "{self._listening.pop(task_id)}"')
        fresh = [t for t in followed if t not in self._listening]
        for task_id in fresh:
            channel = task_channel(task_id)
            listen.execute(f'LISTEN "{channel}"')
            self._listening[task_id] = channel
        for task_id in fresh:
            self._catch_up(task_id, followed[task_id])

    def _drain(self, listen: psycopg.Connection[Any]) -> None:
        """Dispatch every notification received so far (reads the socket, never blocks)."""
        received = self._received
        while received:
            note = received.popleft()
            self._dispatch(note.channel, note.payload)
        pgconn = listen.pgconn
        pgconn.consume_input()  # raises psycopg.OperationalError when the connection broke
        while (raw := pgconn.notifies()) is not None:
            self._dispatch(raw.relname.decode(), raw.extra.decode())  # client_encoding UTF8

    def _dispatch(self, channel: str, payload: str) -> None:
        if channel == CANCEL_CHANNEL:
            self._on_cancel(payload)
        elif channel == PUSH_CHANNEL:
            self._on_push_change(payload)
        else:
            seq_text, worker_id, task_id = payload.split(" ", 2)
            if worker_id != self._worker_id:  # this process pushed its own events already
                self._route(task_id, int(seq_text))

    def _route(self, task_id: str, seq: int) -> None:
        after = self._router.read_from(task_id, seq)
        if after is not None:
            self._catch_up(task_id, after)

    def _catch_up(self, task_id: str, after: int) -> None:
        for entry_seq, event in self._read(task_id, after):
            self._router.publish(task_id, entry_seq, event)

    def _read(self, task_id: str, after: int) -> list[LogEntry]:
        reader = self._reader
        assert reader is not None
        rows = reader.execute(_READ_LOG, (task_id, after), binary=True).fetchall()
        return [(seq, self._decode(blob)) for seq, blob in rows]
