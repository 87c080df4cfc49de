"""A stdio server's stdout, read by whoever holds its token: a waiting caller or the
reader thread (leader/follower).

With a reader thread that always reads, every call costs two thread hand-offs (the
reader wakes for the answer, then wakes the caller). Here the pipe has one *token*; its
holder alone reads the pipe and the shared line buffer (:mod:`._stdio_buffer`):

* A caller that waits for its answer and finds the token free takes it and reads the
  pipe itself (:meth:`StdoutPipe.lead`), with its deadline bounding each ``poll``. It
  delivers every message it reads, in order, through the same ``deliver`` the reader
  uses (answers to other callers, notifications, progress, server requests: the session
  hands callbacks to its dispatcher thread, so none of that blocks). It stops at its own
  answer, its deadline, or a wake-up (its call was cancelled or failed elsewhere, the
  transport is closing) and leaves any further lines in the buffer for the next holder.
* A caller that finds another caller leading simply waits for its answer (a follower);
  the leader delivers it.
* The reader thread holds the token when no caller leads: when calls other than the
  leader's are still pending as the leader leaves (it hands the token over at once),
  while the transport closes (it drains stdout until EOF), and after the token has been
  free for :data:`LINGER` (notifications that arrive between calls). A caller that finds
  the reader holding the token wakes it through a wake-up pipe; the reader gives the
  token up between two messages. So a single caller making calls back to back reads its
  own answers with no hand-off at all, and the reader wakes only about twice per
  :data:`LINGER`. (The price: the answer to a request nobody waits for — a
  subscription's acknowledgement, a tool call polled with ``done()`` — sent while the
  token is free is read up to :data:`LINGER` later.)
* EOF, a line over the limit or a failed read seen by a leader is recorded and the token
  handed to the reader, which ends the connection exactly as if it had seen it itself.

Every transition of the token happens under one condition lock, so a line is read by
exactly one holder and never lost: a holder leaves whatever it has not consumed in the
buffer, and every holder consumes the buffer before it polls the pipe again.

POSIX only (``select.poll`` on pipes); elsewhere the transport keeps the reader thread
alone.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import threading
import time
from collections.abc import Callable
from typing import IO, Any, Final

from ...errors import A2ASyncError, ConnectionClosed
from . import Waiter
from ._stdio_buffer import CHUNK, END, EOF, SETTLED, TIMEOUT, YIELD, LineBuffer
from ._stdio_text import NoiseLimiter

__all__ = ["LINGER", "StdoutPipe", "open_pipe", "supported"]

logger = logging.getLogger("a2a_sync.mcp.transports.stdio")  # the stdio transport's

#: How long the token stays free after a caller's answer before the reader thread
#: takes it back (the next call of a burst takes it without waking anyone; a
#: notification between calls waits at most this long).
LINGER: Final = 0.02
#: The reader thread's mark as the token's holder (thread idents are never 0).
_READER: Final = 0


def supported() -> bool:
    """True where a pipe can be polled (POSIX)."""
    return hasattr(select, "poll") and os.name == "posix"


def open_pipe(
    stdout: IO[bytes] | None,
    max_line: int,
    deliver: Callable[[dict[str, Any]], None],
    noise: NoiseLimiter,
    name: str,
) -> StdoutPipe | None:
    """A :class:`StdoutPipe` over a server's ``stdout``, or None where pipes cannot be
    polled (the reader thread then reads alone)."""
    if stdout is None or not supported():
        return None
    return StdoutPipe(stdout.fileno(), max_line, deliver, noise, name)


class StdoutPipe:
    """The server's stdout, its line buffer and the token that says who reads them.

    Thread-safe. Created once the server runs; :meth:`run` is the reader thread's body.

    Args:
        fd: The stdout pipe's file descriptor (not closed here).
        max_line: Longest line accepted (bytes, without the newline).
        deliver: Takes one decoded JSON object (the session's ``deliver``).
        noise: Counts and logs lines that are not JSON objects.
        name: The server as messages name it.
    """

    def __init__(
        self,
        fd: int,
        max_line: int,
        deliver: Callable[[dict[str, Any]], None],
        noise: NoiseLimiter,
        name: str,
    ) -> None:
        self._fd = fd
        self._name = name
        self._lines = LineBuffer(fd, max_line, deliver, noise, name)
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._wake_lock = threading.Lock()  # guards writing to / closing _wake_w
        self._wake_open = True
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self._poll.register(self._wake_r, select.POLLIN)
        # _lock (and _cond over it) guards the token state below.
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._holder: int | None = None  # None: free; _READER; else the leader's ident
        self._released_at = 0.0
        self._wanted = 0  # callers waiting for the reader to give the token up
        self._parked = False  # the reader waits (untimed) for a leader to leave
        self._closing = False
        self._stopped = False

    # --- callers ----------------------------------------------------------------------------

    def lead(self, waiter: Waiter, deadline: float, busy: Callable[[], bool]) -> None:
        """Read the pipe on this thread until ``waiter`` is settled, ``deadline``
        (``time.monotonic()``) passes or something else needs the token; return at once
        if another caller leads. ``busy()`` says whether other calls are pending once
        this one stops (then the reader takes over at once)."""
        me = threading.get_ident()
        with self._lock:  # the condition's lock: no Python frames on the hot path
            if self._closing or self._stopped or self._lines.end is not None:
                return
            if self._holder == _READER and not self._take_from_reader(waiter, deadline):
                return
            if self._holder is not None or waiter.settled():
                return
            self._holder = me
        why = YIELD
        waiter.waker = self._wake_leader
        try:
            why = self._pump(waiter, deadline)
        except Exception:  # the caller's thread is this pipe's reader now: end it alike
            logger.exception("MCP stdio reader for %s failed", self._name)
            self._lines.end = ConnectionClosed(f"reading from {self._name} failed")
            why = END
        finally:
            waiter.waker = None
            self._leave(why, busy)

    def _take_from_reader(self, waiter: Waiter, deadline: float) -> bool:
        """Ask the reader for the token (under ``_cond``); False if the wait ended
        without it coming free."""
        self._wanted += 1
        self._wake()
        try:
            while self._holder == _READER and self._may_lead() and not waiter.settled():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        finally:
            self._wanted -= 1
        if self._holder is None and (waiter.settled() or not self._may_lead()):
            # Handed over for us but no longer needed: give it straight back.
            self._holder = _READER
            self._cond.notify_all()
            return False
        return True

    def _leave(self, why: int, busy: Callable[[], bool]) -> None:
        with self._lock:
            if why in (END, TIMEOUT) or self._closing or busy():
                self._holder = _READER
                self._cond.notify_all()
            else:
                self._holder = None
                self._released_at = time.monotonic()
                if self._parked:
                    self._cond.notify_all()

    def _may_lead(self) -> bool:
        return not self._closing and not self._stopped and self._lines.end is None

    def _wake_leader(self) -> None:
        """A leader's call was settled elsewhere (cancel, connection end): wake it."""
        if self._holder != threading.get_ident():
            self._wake()

    # --- the reader thread ------------------------------------------------------------------

    def run(self) -> A2ASyncError | None:
        """The reader thread: read whenever no caller leads, until the stream ends.

        Returns:
            ``None`` at EOF, when the pipe was closed under us, or after :meth:`stop`;
            else the error that ends the connection (``ResponseTooLarge``...).
        """
        try:
            while self._take_for_reader():
                if self._pump(None, None) == END:
                    break
                with self._cond:
                    # A caller asked for it (unless it gave up meanwhile: keep reading).
                    if self._lines.end is None and not self._stopped and self._wanted:
                        self._holder = None
                        self._released_at = time.monotonic()
                        self._cond.notify_all()
        except Exception:  # top of the reader thread: keep the session from hanging
            logger.exception("MCP stdio reader for %s failed", self._name)
            return ConnectionClosed(f"reading from {self._name} failed")
        end = self._lines.end
        return None if end is None or end is EOF else end

    def _take_for_reader(self) -> bool:
        """Wait until the token is the reader's; False once the stream ended or stopped."""
        unparked = False  # woken by a leaving leader
        with self._cond:
            while True:
                if self._lines.end is not None or self._stopped:
                    return False
                holder = self._holder
                if holder == _READER:
                    return True
                if holder is None:
                    unparked = False
                    idle = time.monotonic() - self._released_at
                    if self._closing or (not self._wanted and idle >= LINGER):
                        self._holder = _READER
                        return True
                    self._cond.wait(max(LINGER - idle, 0.001))
                elif unparked:
                    # Woken as a leader left, but the next call took the token first (a
                    # burst): look again in LINGER rather than be woken by every call.
                    # It is taken at most LINGER after the last leader leaves either way.
                    unparked = False
                    self._cond.wait(LINGER)
                else:  # a caller leads: it notifies when it leaves (wakes closing too)
                    self._parked = True
                    self._cond.wait()
                    self._parked = False
                    unparked = True

    def discard(self) -> None:
        """Read and drop everything until EOF or :meth:`stop` (after a fatal error, so
        the server is not stuck on a full pipe while it is shut down)."""
        try:
            while not self._stopped:
                readable = False
                for fd, _ in self._poll.poll():
                    if fd == self._wake_r:
                        with contextlib.suppress(OSError):  # drained already, or disposed
                            os.read(self._wake_r, 4096)
                    else:
                        readable = True
                if readable and not os.read(self._fd, CHUNK):
                    return
        except OSError:
            return

    # --- closing ----------------------------------------------------------------------------

    def closing(self) -> None:
        """The transport closes: no caller leads any more; the reader drains to EOF."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._wake()

    def stop(self, reader: threading.Thread, timeout: float) -> None:
        """Stop whoever reads (the server is gone, or a grandchild holds stdout open),
        wait (bounded) until no caller is inside the pipe and ``reader`` has ended, and
        close the wake-up pipe. The stdout pipe can be closed after this."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
            self._wake()
            deadline = time.monotonic() + timeout
            while self._holder not in (None, _READER):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
        if reader is not threading.current_thread():
            reader.join(timeout)
        with self._wake_lock:
            if not self._wake_open or reader.is_alive() or self._holder not in (None, _READER):
                return  # someone may still poll it: leave it open rather than reuse the fd
            self._wake_open = False
            os.close(self._wake_w)
            os.close(self._wake_r)

    # --- reading ------------------------------------------------------------------------------

    def _pump(self, waiter: Waiter | None, deadline: float | None) -> int:
        """Deliver lines (buffered first, then from the pipe) until the reason to stop:
        ``waiter`` settled or past ``deadline`` (a leader), a caller wants the token or a
        stop (the reader), closing (a leader), or the end of the stream (both)."""
        lines = self._lines
        buf = lines.buf
        consume = lines.consume
        fill = lines.fill
        poll = self._poll.poll
        wake_r = self._wake_r
        while True:
            if buf:  # what a holder before left (or an incomplete line)
                why = consume(waiter)
                if why is not None:
                    return why
            elif waiter is not None and waiter.settled():
                return SETTLED
            if waiter is None:
                if self._stopped or (self._wanted and not self._closing):
                    return YIELD
                timeout = None
            else:
                if self._closing or self._stopped:
                    return YIELD
                assert deadline is not None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return TIMEOUT
                timeout = math.ceil(remaining * 1000)
            readable = False
            for fd, _ in poll(timeout):
                if fd == wake_r:
                    with contextlib.suppress(OSError):  # drained already, or disposed
                        os.read(wake_r, 4096)
                else:
                    readable = True
            if readable and not fill():
                return END

    def _wake(self) -> None:
        with self._wake_lock:
            if not self._wake_open:
                return
            with contextlib.suppress(BlockingIOError):  # full: a wake-up is pending
                os.write(self._wake_w, b"w")
