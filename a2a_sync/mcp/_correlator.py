"""Ids and pending calls: the lock-guarded map an MCP session correlates answers with.

A :class:`Correlator` numbers requests, keeps one :class:`Slot` per request in flight and
settles it when the answer, a transport failure, a cancellation or the end of the
connection arrives. A :class:`PendingRequest` is the handle a caller waits on. Neither
knows the session that uses them: the session passes the two things they need from it
(how to tell the server a request was abandoned, and how to flush queued callbacks) as
plain callables, so the chain runs one way (session -> correlator).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .._net import jsonrpc as _jsonrpc
from ..errors import A2ASyncError, Cancelled, DeadlineExceeded, ProtocolError
from . import types as t
from .transports import RequestId

__all__ = ["Correlator", "PendingRequest", "Route", "Slot"]

logger = logging.getLogger("a2a_sync.mcp.session")  # where these messages always logged

#: Receives the notifications tagged with one request's id (``subscriptions/listen``).
Route = Callable[[str, dict[str, Any]], None]
#: A transport's ``lead`` (:class:`~.transports.Leader`).
Lead = Callable[[RequestId, "Slot", "float | None", Callable[[], bool]], None]


class Slot:
    """One pending request. ``lock`` is held until the answer (or failure) is stored;
    ``done`` (optional) is set at that moment too, for waiters that watch several things."""

    __slots__ = (
        "done",
        "error",
        "last_progress",
        "lock",
        "method",
        "progress",
        "result",
        "waker",
    )

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
        #: Wakes a caller that reads the transport itself (``Leader``), while it does.
        self.waker: Callable[[], None] | None = None

    def settled(self) -> bool:
        """True once the result or error is stored."""
        return not self.lock.locked()

    def settle(self) -> None:
        """The result or error is stored: wake the waiter (once per slot)."""
        self.lock.release()
        if self.done is not None:
            self.done.set()
        waker = self.waker
        if waker is not None:
            waker()

    def fail(self, error: A2ASyncError) -> None:
        """Store ``error`` as the outcome and wake the waiter."""
        self.error = error
        self.settle()


class Correlator:
    """Request ids, the pending map and the subscription routes of one session.

    Thread-safe (one lock guards the ids, the map, the routes and the closed state).

    Args:
        name: The peer as messages name it (the transport's name; no credentials).
        abandon: ``(request_id, method, reason)``: tell the peer a request is no longer
            awaited (called outside the lock, only while the connection is open).
        flush: Wait (bounded) until queued callbacks have run (progress before a result).
        lead: The transport's ``lead`` (:class:`~.transports.Leader`): a waiting caller
            reads its own answer; None: callers wait for the transport's reader.
    """

    def __init__(
        self,
        name: str,
        *,
        abandon: Callable[[RequestId, str, str], None],
        flush: Callable[[], None],
        lead: Lead | None = None,
    ) -> None:
        self.name = name
        self.lead = lead
        self._abandon = abandon
        self._flush = flush
        self._lock = threading.Lock()
        self._pending: dict[RequestId, Slot] = {}
        self._routes: dict[RequestId, Route] = {}
        self._next_id = 1
        self._closed_error: A2ASyncError | None = None

    def busy(self) -> bool:
        """True while any request is pending."""
        return bool(self._pending)

    @property
    def closed_error(self) -> A2ASyncError | None:
        """Why the connection ended, or None while it is open."""
        return self._closed_error

    def open(self, slot: Slot, route: Route | None = None) -> int:
        """Register ``slot`` (and ``route``) under a fresh request id and return the id.

        Raises:
            ConnectionClosed: The connection is closed (the error it closed with).
        """
        with self._lock:
            if self._closed_error is not None:
                raise self._closed_error.with_traceback(None)
            request_id = self._next_id
            self._next_id = request_id + 1
            self._pending[request_id] = slot
            if route is not None:
                self._routes[request_id] = route
        return request_id

    def handle(self, request_id: int, slot: Slot) -> PendingRequest:
        """The caller's handle on an opened request."""
        return PendingRequest(self, request_id, slot)

    def take(self, request_id: Any) -> Slot | None:
        """Remove and return the slot of ``request_id`` (its answer arrived, or it failed);
        None for unknown, answered or unhashable ids. Its route goes too."""
        try:
            with self._lock:
                self._routes.pop(request_id, None)
                return self._pending.pop(request_id, None)
        except TypeError:  # unhashable id
            return None

    def answer(self, message: dict[str, Any]) -> None:
        """Settle the request a JSON-RPC response answers (result, error, or a
        ``ProtocolError`` for neither); responses to unknown ids are logged and dropped.
        A route stays: late notifications tagged with a listen request's id may still be
        on their way."""
        request_id = message.get("id")
        try:
            with self._lock:
                slot = self._pending.pop(request_id, None)  # type: ignore[arg-type]
        except TypeError:  # unhashable id
            slot = None
        if slot is None:
            if request_id is None and "error" in message:
                logger.warning(
                    "%s sent an error without an id: %s",
                    self.name,
                    _jsonrpc._short_json(message.get("error")),
                )
            else:
                logger.debug("ignoring response to unknown id %r", request_id)
            return
        if "result" in message:
            slot.result = message["result"]
        elif "error" in message:
            try:
                slot.error = _jsonrpc.error_from_object(message["error"], _jsonrpc.MCP_ERRORS)
            except ProtocolError as exc:
                slot.error = exc
        else:
            slot.error = ProtocolError(
                "JSON-RPC response has neither result nor error",
                excerpt=_jsonrpc._short_json(message),
            )
        slot.settle()

    def wait(
        self,
        request_id: RequestId,
        slot: Slot,
        timeout: float,
        operation: str | None,
        reset_on_progress: bool,
        max_timeout: float | None,
    ) -> Any:
        """:meth:`PendingRequest.wait` (the session's own calls come here directly)."""
        lock = slot.lock
        lead = self.lead
        if lead is None:
            if lock.acquire(timeout=timeout):
                return self._outcome(slot)
            start = time.monotonic() - timeout
        else:
            # Read our own answer on this thread if nobody else reads (leader/follower).
            start = time.monotonic()
            # With progress resetting the timeout, the caller's clock moves: do not block
            # in the transport (it still starts what it kept for this thread).
            deadline = None if reset_on_progress else start + timeout
            lead(request_id, slot, deadline, self.busy)
            if lock.acquire(False) or lock.acquire(
                timeout=max(start + timeout - time.monotonic(), 0)
            ):
                if slot.progress is None and slot.error is None:
                    lock.release()  # keep it released: repeated waits see the same outcome
                    return slot.result
                return self._outcome(slot)
        if reset_on_progress:
            hard = start + (max_timeout if max_timeout is not None else 10 * timeout)
            while True:
                now = time.monotonic()
                deadline = min(max(slot.last_progress, start) + timeout, hard)
                if deadline <= now:
                    break
                if lock.acquire(timeout=deadline - now):
                    return self._outcome(slot)
        if self.forget(request_id, "timeout"):
            waited = time.monotonic() - start if reset_on_progress else timeout
            raise DeadlineExceeded(
                f"{operation or slot.method} timed out after {waited:g} s",
                url=self.name,
                timeout=timeout,
            )
        lock.acquire()  # the answer is being stored right now
        return self._outcome(slot)

    def _outcome(self, slot: Slot) -> Any:
        slot.lock.release()  # keep it released: repeated waits see the same outcome
        if slot.progress is not None:
            # Progress arrived before the answer: deliver it before the caller moves on.
            self._flush()
        if slot.error is not None:
            # One error instance may fail many calls: do not grow a shared traceback.
            raise slot.error.with_traceback(None)
        return slot.result

    def peek(self, request_id: Any) -> Slot | None:
        """The slot of a request still in flight (progress notifications), or None."""
        try:
            with self._lock:
                return self._pending.get(request_id)
        except TypeError:
            return None

    def forget(self, request_id: RequestId, reason: str) -> bool:
        """Stop waiting for a request and tell the peer; False if it was already answered."""
        with self._lock:
            slot = self._pending.pop(request_id, None)
        if slot is None:
            return False
        if self._closed_error is None:
            self._abandon(request_id, slot.method, reason)
        return True

    def flush(self) -> None:
        """Wait (bounded) until callbacks queued so far have run."""
        self._flush()

    def add_route(self, request_id: RequestId, route: Route) -> None:
        with self._lock:
            self._routes[request_id] = route

    def remove_route(self, request_id: RequestId) -> None:
        with self._lock:
            self._routes.pop(request_id, None)

    def route(self, request_id: Any) -> Route | None:
        """The route registered for ``request_id``, or None."""
        if not self._routes:
            return None
        try:
            return self._routes.get(request_id)
        except TypeError:
            return None

    def close(self, error: A2ASyncError) -> A2ASyncError:
        """Fail every pending request with the connection's closing error (the first one
        given wins) and return that error."""
        with self._lock:
            if self._closed_error is None:
                self._closed_error = error
            error = self._closed_error
            pending = list(self._pending.values())
            self._pending.clear()
            self._routes.clear()
        for slot in pending:
            slot.fail(error)
        return error


class PendingRequest:
    """A request in flight. :meth:`wait` for its result or :meth:`cancel` it.

    Thread-safe: one thread may wait while another cancels.
    """

    __slots__ = ("_calls", "_slot", "method", "request_id")

    def __init__(self, calls: Correlator, request_id: int, slot: Slot) -> None:
        self._calls = calls
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
        return self._calls.wait(
            self.request_id, self._slot, timeout, operation, reset_on_progress, max_timeout
        )

    def cancel(self, reason: str | None = None) -> bool:
        """Stop waiting and tell the server (``notifications/cancelled``).

        A thread blocked in :meth:`wait` gets :class:`~a2a_sync.errors.Cancelled`.
        Returns False if the request had already finished.
        """
        if not self._calls.forget(self.request_id, reason or "cancelled by the client"):
            return False
        self._slot.fail(Cancelled(f"{self.method} was cancelled", url=self._calls.name))
        return True
