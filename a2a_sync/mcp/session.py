"""The MCP protocol session: request/response correlation over any transport.

:class:`MCPSession` implements :class:`~a2a_sync.mcp.transports.MessageSink`. It numbers
requests, keeps a lock-guarded map of pending calls, routes every incoming message by
``id`` (never "the next line is my answer"), applies per-request timeouts (sending
``notifications/cancelled`` when one expires), stamps the era envelope on requests, and
hands notifications and server→client requests to a named dispatcher thread
(:class:`~.callbacks.Dispatcher`) so user callbacks never block the transport's reader.

The session is shared by every handle of a connection and is thread-safe: any number of
threads may have requests in flight at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final

from .._version import __version__
from ..errors import (
    A2ASyncError,
    ConnectionClosed,
)
from . import eras
from . import types as t
from ._correlator import Correlator, PendingRequest, Route, Slot
from ._mrtr import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS, NOT_ANSWERED, InputRounds
from .callbacks import (
    CALLBACK_FLUSH_TIMEOUT,
    DISPATCHER_JOIN_TIMEOUT,
    Dispatcher,
    Handlers,
    Responder,
    progress_for,
    requests_progress_only,
    run_progress,
)
from .transports import Leader, Outgoing, RequestId, Transport

__all__ = [
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
    "Handlers",
    "MCPSession",
    "PendingRequest",
    "progress_for",
]

logger = logging.getLogger(__name__)

#: Methods the spec forbids cancelling.
_UNCANCELLABLE: Final = frozenset({"initialize", "server/discover"})


class MCPSession:
    """JSON-RPC correlation, era envelope and callback dispatch for one MCP connection.

    Thread-safe. One instance per transport instance; it does not know which transport
    carries it. Use it through :class:`~a2a_sync.mcp.connection.MCPConnection`.

    Args:
        transport: The unstarted transport this session speaks over.
        handlers: The user's callbacks (server→client requests, notifications).
        sleep: Waits between ``input_required`` rounds that carry only state (MRTR
            back-off); tests inject a recorder.
    """

    def __init__(
        self,
        transport: Transport,
        handlers: Handlers | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.transport = transport
        self.transport_name: str = transport.name
        self.handlers = handlers or Handlers()
        self.client_capabilities = self.handlers.capabilities()
        self.client_info = t.Implementation(name="a2a-sync", version=__version__)
        #: Filled by era negotiation.
        self.server_info: t.ServerInfo | None = None
        self.era: eras.Era | None = None
        self.protocol_version: str | None = None
        self.log_level: str | None = None
        #: tool name -> {argument: header}, for ``Mcp-Param-*`` (modern HTTP).
        self.param_headers: dict[str, dict[str, str]] = {}
        self._base_meta: dict[str, Any] | None = None
        self._wants_context = transport.wants_context
        # _lock guards _listeners; the correlator and the responder have their own.
        self._lock = threading.Lock()
        self._calls = Correlator(
            self.transport_name,
            abandon=self._abandon,
            flush=self.flush_callbacks,
            lead=transport.lead if isinstance(transport, Leader) else None,
        )
        self._closed = threading.Event()
        self._listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self._responder = Responder(self.handlers, self._reply, self.transport_name)
        self._dispatcher = Dispatcher()
        self._send = transport.send
        self._rounds = InputRounds(
            lambda m, params, progress: self.begin(m, params, progress=progress, inline=True),
            self.handlers.answer,
            sleep,
        )

    # --- era state ------------------------------------------------------------------------

    def adopt(self, info: t.ServerInfo) -> None:
        """Install the negotiated era (called once by era negotiation)."""
        self.server_info = info
        self.era = info.era
        self.protocol_version = info.protocol_version
        self._refresh_meta()

    def set_log_level(self, level: str | None) -> None:
        """Modern era: ask for ``notifications/message`` at ``level`` on every request."""
        self.log_level = level
        self._refresh_meta()

    def _refresh_meta(self) -> None:
        if self.era == "modern" and self.protocol_version is not None:
            self._base_meta = eras.modern_meta(
                self.protocol_version, self.client_info, self.client_capabilities, self.log_level
            )
        else:
            self._base_meta = None

    # --- requests ---------------------------------------------------------------------------

    def begin(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        progress: Callable[[t.Progress], None] | None = None,
        envelope: bool = True,
        route: Route | None = None,
        done: threading.Event | None = None,
        inline: bool = False,
    ) -> PendingRequest:
        """Send a request and return at once with its :class:`PendingRequest`.

        Args:
            method: The JSON-RPC method.
            params: The params object (not modified).
            progress: Called (on the dispatcher thread) for each progress notification;
                sends ``_meta.progressToken``.
            envelope: Stamp the modern ``_meta`` envelope (False for the era probe, which
                builds its own).
            route: Receives notifications tagged with this request's id as
                ``_meta.subscriptionId`` (``subscriptions/listen``), registered before
                the request is sent.
            done: Set once the request has an outcome (result, error, cancel), for a
                caller that waits for it together with something else.
            inline: The caller waits for it next, on this thread (see ``Leader``).

        Raises:
            ConnectionClosed: The connection is closed.
            TransportError: The transport could not send.
        """
        request_id, slot = self._start(method, params, progress, envelope, route, done, inline)
        return PendingRequest(self._calls, request_id, slot)

    def _start(
        self,
        method: str,
        params: dict[str, Any] | None,
        progress: Callable[[t.Progress], None] | None,
        envelope: bool,
        route: Route | None,
        done: threading.Event | None,
        inline: bool,
    ) -> tuple[int, Slot]:
        """:meth:`begin` without the handle: the id and slot of the request sent."""
        slot = Slot(method, progress, done)
        request_id = self._calls.open(slot, route)
        base = self._base_meta if envelope else None
        if base is not None or progress is not None:
            params = dict(params) if params else {}
            meta = dict(base) if base is not None else {}
            own = params.get("_meta")
            if own:
                meta.update(own)
            if progress is not None:
                meta["progressToken"] = request_id
            params["_meta"] = meta
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            if self._wants_context:
                self._send(message, self._outgoing("request", method, request_id, params, inline))
            else:
                self._send(message)
        except A2ASyncError:
            self._calls.take(request_id)
            raise
        return request_id, slot

    def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        *,
        timeout: float,
        operation: str | None = None,
        progress: Callable[[t.Progress], None] | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request and wait for its raw result (see :meth:`PendingRequest.wait`)."""
        wanted = progress_for(progress, reset_on_progress)
        pending = self.begin(method, params, progress=wanted, inline=True)
        return pending.wait(
            timeout,
            operation=operation,
            reset_on_progress=reset_on_progress,
            max_timeout=max_timeout,
        )

    def request_with_input(
        self,
        method: str,
        params: dict[str, Any],
        *,
        timeout: float,
        operation: str | None = None,
        progress: Callable[[t.Progress], None] | None = None,
        reset_on_progress: bool = False,
        max_timeout: float | None = None,
        max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
        on_pending: Callable[[PendingRequest], None] | None = None,
        first: PendingRequest | None = None,
    ) -> Any:
        """Like :meth:`request`, answering modern ``input_required`` results (MRTR).

        Each round fulfils ``inputRequests`` through the same callbacks that answer legacy
        server→client requests (on this thread), then retries with a new id, the
        ``inputResponses`` and the echoed ``requestState``. The timeout applies per round.
        ``on_pending`` sees each round's request (to cancel it); ``first`` is a request
        already sent with ``params``.

        Raises:
            ProtocolError: More than ``max_rounds`` rounds, or an unknown ``resultType``.
            RPCError: A callback refused an input request (its error propagates).
        """
        wanted = progress_for(progress, reset_on_progress)
        answered: Any = NOT_ANSWERED
        if first is None and on_pending is None:
            # The usual call: one round, waited for at once on this thread (no handle,
            # no rounds loop, no closures); only ``input_required`` goes on to the loop.
            calls = self._calls
            request_id, slot = self._start(method, params, wanted, True, None, None, True)
            answered = calls.wait(
                request_id, slot, timeout, operation, reset_on_progress, max_timeout
            )
            if type(answered) is not dict or answered.get("resultType", "complete") == "complete":
                return answered
            first = PendingRequest(calls, request_id, slot)
        return self._rounds.run(
            method,
            params,
            wait=lambda pending: pending.wait(
                timeout,
                operation=operation,
                reset_on_progress=reset_on_progress,
                max_timeout=max_timeout,
            ),
            operation=operation,
            progress=wanted,
            max_rounds=max_rounds,
            on_pending=on_pending,
            first=first,
            answered=answered,
        )

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: The connection is closed.
        """
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        closed = self._calls.closed_error
        if closed is not None:
            raise closed.with_traceback(None)
        if self._wants_context:
            self._send(message, self._outgoing("notification", method, None, params, False))
        else:
            self._send(message)

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

    def _outgoing(
        self, kind: str, method: str | None, rid: RequestId | None, params: Any, inline: bool
    ) -> Outgoing:
        version = self.protocol_version
        era = self.era or "legacy"
        if version is None:
            # Before negotiation only the era probe carries a version (in its own _meta):
            # it must reach an HTTP server as a modern request, headers included.
            version = eras.envelope_version(params)
            era = "modern"
        headers = (
            eras.mirror_headers(era, version, method, params, self.param_headers)
            if version is not None
            else {}
        )
        return Outgoing(kind, method, rid, headers, inline)

    def _abandon(self, request_id: RequestId, method: str, reason: str) -> None:
        """The correlator stopped waiting for a request: free it at the transport, or
        tell the server (``notifications/cancelled``) where the protocol allows."""
        try:
            # The transport may free what the request holds (an HTTP response stream)
            # even for requests the protocol forbids cancelling.
            if not self.transport.abandon(request_id) and method not in _UNCANCELLABLE:
                self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except A2ASyncError as exc:
            logger.debug(
                "could not cancel request %s on %s: %s", request_id, self.transport_name, exc
            )

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

    def _reply(self, reply: dict[str, Any]) -> None:
        if self._wants_context:
            self._send(reply, self._outgoing("response", None, reply["id"], None, False))
        else:
            self._send(reply)
