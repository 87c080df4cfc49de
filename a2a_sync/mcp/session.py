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

from .._net import jsonrpc as _jsonrpc
from .._version import __version__
from ..errors import (
    A2ASyncError,
    ConnectionClosed,
    InternalError,
    ProtocolError,
    RPCError,
)
from . import _codec, eras
from . import types as t
from .callbacks import CALLBACK_FLUSH_TIMEOUT, DISPATCHER_JOIN_TIMEOUT, Dispatcher, Handlers
from .pending import PendingRequest, _Slot
from .transports import Outgoing, RequestId, Transport

__all__ = [
    "DEFAULT_INPUT_REQUIRED_MAX_ROUNDS",
    "Handlers",
    "MCPSession",
    "PendingRequest",
    "progress_for",
]

logger = logging.getLogger(__name__)

#: Rounds of ``input_required`` answers before a call gives up (the TypeScript, C# and Go
#: SDKs use the same cap): a server that keeps asking is broken or looping.
DEFAULT_INPUT_REQUIRED_MAX_ROUNDS: Final = 10
#: First pause before retrying an ``input_required`` result that only carries state.
_STATE_ONLY_BACKOFF: Final = 0.05
#: Longest such pause.
_STATE_ONLY_BACKOFF_MAX: Final = 0.25
#: Server cancellations remembered for requests we may still be answering; a bound so a
#: server cancelling ids it never sent cannot grow memory.
_MAX_REMEMBERED_CANCELS: Final = 1024
#: Methods the spec forbids cancelling.
_UNCANCELLABLE: Final = frozenset({"initialize", "server/discover"})


class MCPSession:
    """JSON-RPC correlation, era envelope and callback dispatch for one MCP connection.

    Thread-safe. One instance per transport instance; it does not know which transport
    carries it. Use it through :class:`~a2a_sync.mcp.client.MCPConnection`.
    """

    def __init__(self, transport: Transport, handlers: Handlers | None = None) -> None:
        self.transport = transport
        self.transport_name: str = transport.name
        self.handlers = handlers or Handlers()
        self.client_capabilities = self.handlers.capabilities()
        self.client_info = t.Implementation(name="a2a-sync", version=_package_version())
        #: Filled by era negotiation.
        self.server_info: t.ServerInfo | None = None
        self.era: eras.Era | None = None
        self.protocol_version: str | None = None
        self.log_level: str | None = None
        #: tool name -> {argument: header}, for ``Mcp-Param-*`` (modern HTTP).
        self.param_headers: dict[str, dict[str, str]] = {}
        self._base_meta: dict[str, Any] | None = None
        self._wants_context = transport.wants_context
        # _lock guards _pending, _next_id, _closed_error, _listeners, _routes.
        self._lock = threading.Lock()
        self._pending: dict[RequestId, _Slot] = {}
        self._next_id = 1
        self._closed_error: A2ASyncError | None = None
        self._closed = threading.Event()
        self._listeners: list[Callable[[str, dict[str, Any]], None]] = []
        self._routes: dict[RequestId, Callable[[str, dict[str, Any]], None]] = {}
        self._server_cancelled: set[RequestId] = set()
        self._dispatcher = Dispatcher()
        self._send = transport.send

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
        route: Callable[[str, dict[str, Any]], None] | None = None,
        done: threading.Event | None = None,
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

        Raises:
            ConnectionClosed: The connection is closed.
            TransportError: The transport could not send.
        """
        slot = _Slot(method, progress, done)
        with self._lock:
            if self._closed_error is not None:
                raise self._closed_error.with_traceback(None)
            request_id = self._next_id
            self._next_id = request_id + 1
            self._pending[request_id] = slot
            if route is not None:
                self._routes[request_id] = route
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
                self._send(message, self._outgoing("request", method, request_id, params))
            else:
                self._send(message)
        except A2ASyncError:
            with self._lock:
                self._pending.pop(request_id, None)
                self._routes.pop(request_id, None)
            raise
        return PendingRequest(self, request_id, slot)

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
        pending = self.begin(method, params, progress=progress_for(progress, reset_on_progress))
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
        rounds = 0
        delay = _STATE_ONLY_BACKOFF
        current = params
        progress = progress_for(progress, reset_on_progress)
        while True:
            if first is not None:
                pending, first = first, None
            else:
                pending = self.begin(method, current, progress=progress)
            if on_pending is not None:
                on_pending(pending)
            result = pending.wait(
                timeout,
                operation=operation,
                reset_on_progress=reset_on_progress,
                max_timeout=max_timeout,
            )
            kind = result.get("resultType") if isinstance(result, dict) else None
            if kind is None or kind == "complete":
                return result
            if kind != "input_required":
                raise ProtocolError(f"{method} returned unknown resultType {kind!r}")
            rounds += 1
            if rounds > max_rounds:
                raise ProtocolError(
                    f"{operation or method}: server still asked for input after {max_rounds} rounds"
                )
            requests = result.get("inputRequests") or {}
            current = {
                k: v for k, v in params.items() if k not in ("inputResponses", "requestState")
            }
            if requests:
                delay = _STATE_ONLY_BACKOFF
                current["inputResponses"] = {
                    key: self.handlers.answer(str(req.get("method")), req.get("params"))
                    for key, req in requests.items()
                    if isinstance(req, dict)
                }
            else:
                time.sleep(delay)
                delay = min(delay * 2, _STATE_ONLY_BACKOFF_MAX)
            if "requestState" in result:
                current["requestState"] = result["requestState"]

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: The connection is closed.
        """
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if self._closed_error is not None:
            raise self._closed_error.with_traceback(None)
        if self._wants_context:
            self._send(message, self._outgoing("notification", method, None, params))
        else:
            self._send(message)

    def add_listener(self, listener: Callable[[str, dict[str, Any]], None]) -> None:
        """Register an internal notification observer, run on the transport's thread.

        For bookkeeping only (cache eviction): it must be fast and must not block.
        """
        with self._lock:
            self._listeners.append(listener)

    def add_route(
        self, request_id: RequestId, route: Callable[[str, dict[str, Any]], None]
    ) -> None:
        """Route notifications tagged with ``_meta.subscriptionId == request_id`` to
        ``route`` (on the transport's thread) in addition to the normal callbacks."""
        with self._lock:
            self._routes[request_id] = route

    def remove_route(self, request_id: RequestId) -> None:
        """Undo :meth:`add_route`."""
        with self._lock:
            self._routes.pop(request_id, None)

    def _outgoing(
        self, kind: str, method: str | None, request_id: RequestId | None, params: Any
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
        return Outgoing(kind, method, request_id, headers)

    def _forget(self, request_id: RequestId, reason: str) -> bool:
        """Drop a pending request we stop waiting for; tell the server. False if it was
        already answered."""
        with self._lock:
            slot = self._pending.pop(request_id, None)
        if slot is None:
            return False
        if self._closed_error is not None:
            return True
        try:
            # The transport may free what the request holds (an HTTP response stream)
            # even for requests the protocol forbids cancelling.
            if not self.transport.abandon(request_id) and slot.method not in _UNCANCELLABLE:
                self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})
        except A2ASyncError as exc:
            logger.debug(
                "could not cancel request %s on %s: %s", request_id, self.transport_name, exc
            )
        return True

    # --- MessageSink ------------------------------------------------------------------------

    def deliver(self, message: dict[str, Any]) -> None:
        """Route one incoming message (called by the transport's reader)."""
        if "method" not in message:
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
                        self.transport_name,
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
            return
        method = message["method"]
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if "id" in message:
            request_id = message["id"]
            self._dispatcher.submit(lambda: self._answer_request(request_id, method, params))
            return
        self._on_notification(method, params)

    def fail(self, request_id: RequestId, error: A2ASyncError) -> None:
        """Fail one pending request with a transport-level error (its HTTP exchange
        failed); the connection stays open. Unknown or answered ids are ignored."""
        try:
            with self._lock:
                slot = self._pending.pop(request_id, None)
                self._routes.pop(request_id, None)
        except TypeError:  # unhashable id
            return
        if slot is None:
            logger.debug("ignoring a failure of unknown request %r", request_id)
            return
        slot.error = error
        slot.settle()

    def transport_closed(self, error: A2ASyncError | None) -> None:
        """Fail every pending request at once; stop the dispatcher after queued work."""
        err = error or ConnectionClosed(f"MCP connection to {self.transport_name} closed")
        with self._lock:
            if self._closed_error is None:
                self._closed_error = err
            err = self._closed_error
            pending = list(self._pending.values())
            self._pending.clear()
            self._routes.clear()
        for slot in pending:
            slot.error = err
            slot.settle()
        self._closed.set()
        self._dispatcher.close()

    @property
    def closed_error(self) -> A2ASyncError | None:
        """Why the session ended, or None while it is open."""
        return self._closed_error

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
            with self._lock:
                slot = self._pending.get(params.get("progressToken"))  # type: ignore[arg-type]
            if slot is not None:
                slot.last_progress = time.monotonic()
                callback = slot.progress
                if callback is not None and callback is not _only_requests_progress:
                    self._dispatcher.submit(lambda: _run_progress(callback, params))
        elif method == "notifications/cancelled":
            with self._lock:
                if len(self._server_cancelled) > _MAX_REMEMBERED_CANCELS:
                    self._server_cancelled.clear()
                self._server_cancelled.add(params.get("requestId"))  # type: ignore[arg-type]
        if self._listeners:
            for listener in self._listeners:
                listener(method, params)
        meta = params.get("_meta")
        if self._routes and isinstance(meta, dict):
            route = self._routes.get(meta.get(eras.META_SUBSCRIPTION_ID))  # type: ignore[arg-type]
            if route is not None:
                route(method, params)
        if not self.handlers.wants_notifications:
            return
        self._dispatcher.submit(lambda: self.handlers.on_notification(method, params))

    def _answer_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        try:
            result = self.handlers.answer(method, params)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "result": result}
        except RPCError as exc:
            reply = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_error_object()}
        except Exception:  # a user callback on the dispatcher: log, answer -32603
            logger.exception("callback for server request %s failed", method)
            error = InternalError(f"client callback for {method} failed")
            reply = {"jsonrpc": "2.0", "id": request_id, "error": error.to_error_object()}
        with self._lock:
            if request_id in self._server_cancelled:
                self._server_cancelled.discard(request_id)
                return
        try:
            if self._wants_context:
                self._send(reply, self._outgoing("response", None, request_id, None))
            else:
                self._send(reply)
        except A2ASyncError as exc:
            logger.warning("could not answer %s to %s: %s", method, self.transport_name, exc)


def _only_requests_progress(_progress: t.Progress) -> None:
    """Stands for "send a progressToken" when nobody listens: the timeout resets on it."""


def progress_for(
    progress: Callable[[t.Progress], None] | None, reset_on_progress: bool
) -> Callable[[t.Progress], None] | None:
    """The progress callback a request needs: ``progress``, or, when only the timeout
    should reset on progress, one that asks for progress (``_meta.progressToken``) and
    ignores it (without a token the server sends no progress at all)."""
    if progress is None and reset_on_progress:
        return _only_requests_progress
    return progress


def _run_progress(callback: Callable[[t.Progress], None], params: dict[str, Any]) -> None:
    callback(_codec.structure(params, t.Progress, what="progress notification"))


def _package_version() -> str:
    return __version__
