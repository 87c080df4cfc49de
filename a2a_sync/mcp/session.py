"""The MCP protocol session: request/response correlation over any transport.

:class:`MCPSession` implements :class:`~a2a_sync.mcp.transports.MessageSink`. It numbers
requests, keeps a lock-guarded map of pending calls, routes every incoming message by
``id`` (never "the next line is my answer"), applies per-request timeouts (sending
``notifications/cancelled`` when one expires), stamps the era envelope on requests, and
hands notifications and server→client requests to a named dispatcher thread
(:class:`~.callbacks.Dispatcher`) so user callbacks never block the transport's reader.
That receiving side (the ``MessageSink`` methods) is :class:`~._inbox.SessionInbox`, a
base of the session; this module is the sending side.

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
from ..errors import A2ASyncError
from . import eras
from . import types as t
from ._correlator import Correlator, PendingRequest, Route, Slot
from ._inbox import SessionInbox
from ._mrtr import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS, NOT_ANSWERED, InputRounds
from .callbacks import Handlers, progress_for, requests_progress_only
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


class MCPSession(SessionInbox):
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
        self._calls = Correlator(
            self.transport_name,
            abandon=self._abandon,
            flush=self.flush_callbacks,
            lead=transport.lead if isinstance(transport, Leader) else None,
        )
        self._open_inbox(self._reply)
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
        # progress_for(progress, reset_on_progress), without its frame on every call
        wanted = requests_progress_only if progress is None and reset_on_progress else progress
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

    # --- replies to server requests -------------------------------------------------------

    def _reply(self, reply: dict[str, Any]) -> None:
        if self._wants_context:
            self._send(reply, self._outgoing("response", None, reply["id"], None, False))
        else:
            self._send(reply)
