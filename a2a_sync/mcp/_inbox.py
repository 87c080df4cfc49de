"""The session's receiving side: what a transport delivers to (its ``MessageSink``).

:class:`SessionInbox` is a base of :class:`~a2a_sync.mcp.session.MCPSession`, so a
transport's reader calls straight into it (no forwarding layer on the per-message path).
It routes every incoming message by kind: answers go to the correlator (by ``id``, never
"the next line is my answer"); server→client requests go to the responder and
notifications to the user's callbacks, both on a named dispatcher thread
(:class:`~.callbacks.Dispatcher`) so user callbacks never block the transport's reader;
progress, cancellation, internal listeners and subscription routes are handled on the
transport's thread. It also records the transport's end and waits for the dispatcher.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import A2ASyncError, ConnectionClosed
from . import eras
from ._correlator import Correlator, Route
from .callbacks import (
    CALLBACK_FLUSH_TIMEOUT,
    DISPATCHER_JOIN_TIMEOUT,
    Dispatcher,
    Handlers,
    Responder,
    requests_progress_only,
    run_progress,
)
from .transports import RequestId

__all__ = ["SessionInbox"]

logger = logging.getLogger("a2a_sync.mcp.session")  # the session's


class SessionInbox:
    """Incoming messages, callback dispatch and the session's end (a base of the session).

    Thread-safe. The session sets the attributes declared here and calls
    :meth:`_open_inbox` from its constructor.
    """

    transport_name: str
    handlers: Handlers
    _calls: Correlator

    def _open_inbox(self, reply: Callable[[dict[str, Any]], None]) -> None:
        """Create the receiving side's state; ``reply`` sends a response to the server."""
        # _lock guards _listeners; the correlator and the responder have their own.
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self._responder = Responder(self.handlers, reply, self.transport_name)
        self._dispatcher = Dispatcher()

    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> None:
        """Register an internal notification observer, run on the transport's thread.

        For bookkeeping only (cache eviction): it must be fast and must not block.
        """
        with self._lock:
            self._listeners.append(listener)

    def add_route(self, request_id: RequestId, route: Route) -> None:
        """Route notifications tagged with ``_meta.subscriptionId == request_id`` to
        ``route`` (on the transport's thread) in addition to the normal callbacks."""
        self._calls.add_route(request_id, route)

    def remove_route(self, request_id: RequestId) -> None:
        """Undo :meth:`add_route`."""
        self._calls.remove_route(request_id)

    # --- MessageSink ------------------------------------------------------------------------

    def deliver(self, message: dict[str, Any]) -> None:
        """Route one incoming message (called by the transport's reader)."""
        if "method" not in message:
            self._calls.answer(message)
            return
        method = message["method"]
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if "id" in message:
            request_id = message["id"]
            self._dispatcher.submit(lambda: self._responder.answer(request_id, method, params))
            return
        self._on_notification(method, params)

    def fail(self, request_id: RequestId, error: A2ASyncError) -> None:
        """Fail one pending request with a transport-level error (its HTTP exchange
        failed); the connection stays open. Unknown or answered ids are ignored."""
        slot = self._calls.take(request_id)
        if slot is None:
            logger.debug("ignoring a failure of unknown request %r", request_id)
            return
        slot.fail(error)

    def transport_closed(self, error: A2ASyncError | None) -> None:
        """Fail every pending request at once; stop the dispatcher after queued work."""
        self._calls.close(
            error or ConnectionClosed(f"MCP connection to {self.transport_name} closed")
        )
        self._closed.set()
        self._dispatcher.close()

    @property
    def closed_error(self) -> A2ASyncError | None:
        """Why the session ended, or None while it is open."""
        return self._calls.closed_error

    def wait_closed(self, timeout: float | None) -> bool:
        """Block until the transport reported its end; False on timeout."""
        return self._closed.wait(timeout)

    def flush_callbacks(self, timeout: float = CALLBACK_FLUSH_TIMEOUT) -> None:
        """Wait (bounded) until callbacks queued so far have run. No-op on the dispatcher
        thread itself (a callback calling back into the client must not wait for itself)."""
        self._dispatcher.flush(timeout)

    def join_dispatcher(self, timeout: float = DISPATCHER_JOIN_TIMEOUT) -> None:
        """Wait (bounded) for queued callbacks to finish; called after close."""
        self._dispatcher.join(timeout)

    # --- notifications and server requests ------------------------------------------------------

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/progress":
            slot = self._calls.peek(params.get("progressToken"))
            if slot is not None:
                slot.last_progress = time.monotonic()
                callback = slot.progress
                if callback is not None and callback is not requests_progress_only:
                    self._dispatcher.submit(lambda: run_progress(callback, params))
        elif method == "notifications/cancelled":
            self._responder.cancelled(params.get("requestId"))
        if self._listeners:
            for listener in self._listeners:
                listener(method, params)
        meta = params.get("_meta")
        if isinstance(meta, dict):
            route = self._calls.route(meta.get(eras.META_SUBSCRIPTION_ID))
            if route is not None:
                route(method, params)
        if not self.handlers.wants_notifications:
            return
        self._dispatcher.submit(lambda: self.handlers.on_notification(method, params))
