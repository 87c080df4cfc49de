"""One request in flight: the slot its answer lands in and the handle callers wait on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import A2ASyncError, Cancelled, DeadlineExceeded
from . import types as t

if TYPE_CHECKING:
    from .session import MCPSession

__all__ = ["PendingRequest"]


class _Slot:
    """One pending request. ``lock`` is held until the answer (or failure) is stored;
    ``done`` (optional) is set at that moment too, for waiters that watch several things."""

    __slots__ = ("done", "error", "last_progress", "lock", "method", "progress", "result")

    def __init__(
        self,
        method: str,
        progress: Callable[[t.Progress], None] | None,
        done: threading.Event | None = None,
    ) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.method = method
        self.progress = progress
        self.done = done
        self.last_progress = 0.0
        self.result: Any = None
        self.error: A2ASyncError | None = None

    def settle(self) -> None:
        """The result or error is stored: wake the waiter (once per slot)."""
        self.lock.release()
        if self.done is not None:
            self.done.set()


class PendingRequest:
    """A request in flight. :meth:`wait` for its result or :meth:`cancel` it.

    Thread-safe: one thread may wait while another cancels.
    """

    __slots__ = ("_session", "_slot", "method", "request_id")

    def __init__(self, session: MCPSession, request_id: int, slot: _Slot) -> None:
        self._session = session
        self._slot = slot
        self.request_id = request_id
        self.method = slot.method

    def done(self) -> bool:
        """True once a result or an error is stored."""
        return self._slot.lock.locked() is False

    def wait(
        self,
        timeout: float,
        *,
        operation: str | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
    ) -> Any:
        """Block until the result arrives and return it (the raw ``result`` member).

        Args:
            timeout: Seconds to wait (since the last progress update when
                ``reset_on_progress``).
            operation: Names the call in a timeout message (default: the method).
            reset_on_progress: Restart the timeout on each progress notification.
            max_timeout: Hard limit since this call when resetting (default 10 x timeout).

        Raises:
            DeadlineExceeded: The timeout expired (the request was cancelled).
            RPCError: The server answered with an error.
            ConnectionClosed: The connection closed first.
        """
        slot = self._slot
        if slot.lock.acquire(timeout=timeout):
            return self._outcome()
        start = time.monotonic() - timeout
        if reset_on_progress:
            hard = start + (max_timeout if max_timeout is not None else 10 * timeout)
            while True:
                now = time.monotonic()
                deadline = min(max(slot.last_progress, start) + timeout, hard)
                if deadline <= now:
                    break
                if slot.lock.acquire(timeout=deadline - now):
                    return self._outcome()
        if self._session._forget(self.request_id, "timeout"):
            waited = time.monotonic() - start if reset_on_progress else timeout
            raise DeadlineExceeded(
                f"{operation or self.method} timed out after {_seconds(waited)}",
                url=self._session.transport_name,
                timeout=timeout,
            )
        slot.lock.acquire()  # the answer is being stored right now
        return self._outcome()

    def cancel(self, reason: str | None = None) -> bool:
        """Stop waiting and tell the server (``notifications/cancelled``).

        A thread blocked in :meth:`wait` gets :class:`~a2a_sync.errors.Cancelled`.
        Returns False if the request had already finished.
        """
        if not self._session._forget(self.request_id, reason or "cancelled by the client"):
            return False
        self._slot.error = Cancelled(
            f"{self.method} was cancelled", url=self._session.transport_name
        )
        self._slot.settle()
        return True

    def _outcome(self) -> Any:
        slot = self._slot
        slot.lock.release()  # keep it released: repeated waits see the same outcome
        if slot.progress is not None:
            # Progress arrived before the answer: deliver it before the caller moves on.
            self._session.flush_callbacks()
        if slot.error is not None:
            # One error instance may fail many calls: do not grow a shared traceback.
            raise slot.error.with_traceback(None)
        return slot.result


def _seconds(value: float) -> str:
    return f"{value:g} s"
