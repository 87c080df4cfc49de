"""One call in flight: its deadline, attempts and socket, shared with the thread that may
cancel it, and the wait between attempts that ends on cancellation or at the deadline.

The calling thread's :class:`Call` sits in :data:`local` so the urllib3 glue
(:mod:`a2a_sync._net.pool`, :mod:`a2a_sync._net.retry`) finds it inside urllib3.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable

from ..policies import RetryPolicy

__all__ = ["BudgetExhausted", "Call", "local", "wait_before_retry"]

# The logger keeps the name it had before the split, so log configuration stays valid.
logger = logging.getLogger("a2a_sync._net.pool")

#: Per-thread slots read inside requests/urllib3: the current call and its Retry.
local = threading.local()


class Call:
    """One call in flight: its deadline, attempt count and the socket it is using.

    Shared between the calling thread and :meth:`HTTPTransport.close` (another thread);
    ``_lock`` guards ``_sock``, ``_cancelled`` and ``_event``. The event a backoff wait
    blocks on (so cancelling ends the wait) is made only when a call first waits: most
    calls never do, and an event is a condition and two locks.

    The socket itself is kept, not the connection: http.client drops the connection's
    reference to it as soon as a response is delimited by closing the connection
    (HTTP/1.0, ``Connection: close``), while the response goes on reading from it.
    """

    __slots__ = ("__weakref__", "_cancelled", "_event", "_lock", "_sock", "attempts", "deadline")

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.attempts = 1
        self._cancelled = False
        self._event: threading.Event | None = None
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @property
    def sock(self) -> socket.socket | None:
        """The socket of the current attempt, once its request was sent."""
        return self._sock

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def wait_cancelled(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True as soon as the call is cancelled."""
        with self._lock:
            if self._cancelled:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def attach(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            cancelled = self._cancelled
        if cancelled:
            _shutdown_socket(sock)

    def detach(self) -> None:
        with self._lock:
            self._sock = None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            sock = self._sock
            if self._event is not None:
                self._event.set()
        _shutdown_socket(sock)


def _shutdown_socket(sock: socket.socket | None) -> None:
    if sock is not None:
        # Already closed: nothing is blocked on it.
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class BudgetExhausted(Exception):
    """Raised inside urllib3's retry loop when the call's deadline leaves no room.

    Deliberately not an OSError, so requests passes it through untouched.
    """


def wait_before_retry(
    policy: RetryPolicy,
    call: Call | None,
    sleep: Callable[[float], None] | None,
    failures: int,
    retry_after: float | None = None,
) -> None:
    """Wait before the next attempt, or raise :class:`BudgetExhausted` if the call was
    cancelled or the wait would not end before its deadline.

    ``sleep`` ``None`` waits on the call's cancellation, so cancelling ends the wait.
    """
    if call is not None and call.cancelled:
        raise BudgetExhausted("cancelled")
    delay = policy.delay(failures, retry_after)
    remaining = call.remaining() if call is not None else None
    if remaining is not None and delay >= remaining:
        what = "Retry-After" if retry_after is not None else "backoff"
        raise BudgetExhausted(
            f"{what} of {delay:.2f} s exceeds the call's remaining budget of "
            f"{max(remaining, 0.0):.2f} s"
        )
    if delay > 0:
        logger.debug("retrying in %.3f s (after %d failed attempt(s))", delay, failures)
        if sleep is not None:
            sleep(delay)
        elif call is None:
            time.sleep(delay)
        elif call.wait_cancelled(delay):
            raise BudgetExhausted("cancelled")
