"""Streamable HTTP: MCP over one HTTP endpoint, in both protocol eras.

Every client message is its own POST (``Accept: application/json, text/event-stream``).

* **Requests** are POSTed by :class:`~._request.RequestPoster`, which reads the answer —
  one JSON object, or an event stream carrying notifications and server requests before
  the response — and hands every message to the session as soon as it arrives. A request
  whose sender waits for it at once (``Outgoing.inline``: ``call_tool``, listings...) is
  POSTed and read on the caller's own thread when it waits (:meth:`lead`), its deadline
  kept by :class:`~._deadlines.Deadlines` and ``cancel()`` from another thread aborting
  the read; any other request is run by a worker thread (:class:`~._workers.Workers`).
* **Notifications and replies** to server requests are POSTed on the caller's thread
  (the server answers 202 at once), so they reach the server in order; a reply to a
  sampling request goes out on a second pooled connection while the stream that asked
  stays open.

Legacy era (2025-03-26 .. 2025-11-25): the ``Mcp-Session-Id`` from the ``initialize``
answer (checked: visible ASCII) goes on every later request with
``MCP-Protocol-Version``; after ``notifications/initialized`` a GET stream carries
server-initiated messages (405: the server has none; a stream that keeps ending at once
is re-polled with growing delays a bounded number of times). A response stream that
breaks before its answer is resumed with ``GET`` + ``Last-Event-ID`` after the server's
``retry:``; without an event id the request fails (``ConnectionLost``): in this era a
disconnect is not a cancel, so the session sends ``notifications/cancelled`` when it
gives up. A 404 (or a 400 naming the session, as TypeScript servers answer) to a request
that carried the session id means the server forgot the session: the transport
initializes a new one once by replaying the handshake it sent (``initialize``,
``notifications/initialized``, the log level and resource subscriptions in force) and
re-sends the refused request, which the server never ran. ``close()`` DELETEs the
session (405 tolerated).

Modern era (2026-07-28): no session, no GET stream. Requests carry ``Mcp-Method``,
``Mcp-Name`` and ``Mcp-Param-*`` (computed by the session). Closing a request's response
stream is its cancellation (``abandon`` returns True). A stream that breaks before the
answer loses the request, and the spec says to re-issue it with a new id: the transport
does so once for requests that cannot change server state (listings, reads, prompts,
completions); a ``tools/call`` fails with ``ConnectionLost`` instead (outcome unknown:
the tool may have run), so the caller decides.

An ``initialize`` refused with 400/404/405 is retried on the 2024-11-05 HTTP+SSE
transport (:mod:`.legacy_sse`, through :class:`~._fallback.SSEFallback`), and the
per-process era cache remembers the endpoint.

Credentials: ``Authorization`` and custom headers go on every request, only to the
configured origin (redirects are refused by :class:`~a2a_sync._net.http.HTTPTransport`);
neither they nor the session id are logged or shown in a repr.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Hashable
from typing import Any, Final

from ..._net.http import HTTPTransport
from ...errors import A2ASyncError, Cancelled, ConnectionClosed
from ...policies import ReconnectPolicy, Timeout
from . import Busy, MessageSink, Outgoing, RequestId, Waiter
from ._deadlines import Deadlines
from ._fallback import SSEFallback
from ._httpbase import (
    ACK_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    DELETE_TIMEOUT,
    THREAD_JOIN_TIMEOUT,
    Endpoint,
)
from ._inflight import InFlight
from ._listener import Listener
from ._request import RequestPoster, log_in_first, post_ack
from ._session import LegacySession
from ._streams import Exchange, Link
from ._workers import Workers
from .legacy_sse import LegacySSETransport
from .options import HTTPOptions

__all__ = ["StreamableHTTPTransport"]

logger = logging.getLogger(__name__)

#: How long ``abandon`` waits for an aborted POST to get out of the way (legacy era).
_CANCEL_ORDER_TIMEOUT: Final = 0.5


class StreamableHTTPTransport:
    """MCP over Streamable HTTP (both eras), with the HTTP+SSE fallback.

    Thread-safe: any thread may ``send`` or ``abandon``; ``close`` may be called from any
    thread, any number of times. Normally created by :meth:`MCPConnection.http
    <a2a_sync.mcp.connection.MCPConnection.http>`; one instance serves one connection.

    Args:
        url: The MCP endpoint (``http://127.0.0.1:8000/mcp``).
        options: Headers, credentials, timeouts, TLS and size caps
            (:class:`~.options.HTTPOptions`; ``read_timeout`` ``None`` means 300 s here).
        reconnect_policy: Delays and attempts for resuming a response stream and for
            re-opening the GET stream (the server's ``retry:`` is the base delay).
        fallback_to_sse: Retry a refused ``initialize`` on the HTTP+SSE transport.

    Raises:
        ConfigurationError: Bad URL or headers.
    """

    wants_context = True

    def __init__(
        self,
        url: str,
        options: HTTPOptions | None = None,
        *,
        reconnect_policy: ReconnectPolicy | None = None,
        fallback_to_sse: bool = True,
    ) -> None:
        opts = options or HTTPOptions()
        connect_timeout = opts.connect_timeout
        read_timeout = DEFAULT_READ_TIMEOUT if opts.read_timeout is None else opts.read_timeout
        max_event_bytes = opts.max_event_bytes
        endpoint = Endpoint(
            url,
            headers=opts.headers,
            auth=opts.auth,
            insecure_credentials=opts.allow_insecure_credentials,
        )
        self._endpoint = endpoint
        self.name = f"MCP server at {endpoint.name}"
        open_timeout = Timeout(connect=connect_timeout, read=read_timeout, total=None)
        self._ack_timeout = Timeout(connect=connect_timeout, read=ACK_TIMEOUT, total=ACK_TIMEOUT)
        self._http = HTTPTransport(
            timeout=open_timeout,
            max_response_bytes=opts.max_response_bytes,
            verify=opts.verify,
            cert=opts.cert,
            trust_env=opts.trust_env,
        )
        self._link = Link(
            endpoint,
            self._http,
            name=self.name,
            open_timeout=open_timeout,
            policy=reconnect_policy or ReconnectPolicy(),
            max_event_bytes=max_event_bytes,
        )
        self._sse = (
            SSEFallback(
                endpoint,
                self._http,
                name=self.name,
                connect_timeout=connect_timeout,
                max_event_bytes=max_event_bytes,
            )
            if fallback_to_sse
            else None
        )
        self._session = LegacySession(self.name)
        self._poster = RequestPoster(
            self._link,
            self._session,
            renew=self._renew,
            fall_back=self._fall_back if fallback_to_sse else None,
        )
        self._inflight = InFlight(self._poster, endpoint, self.name)
        self._workers = Workers("a2a-sync-mcp-http")
        self._deadlines = Deadlines("a2a-sync-mcp-http-deadlines")
        self._sink: MessageSink | None = None
        self._delegate: LegacySSETransport | None = None
        # _lock guards _listener(s), _closing, _reported.
        self._lock = threading.Lock()
        self._listener: Listener | None = None
        self._listeners: list[Listener] = []
        self._closing = False
        self._reported = False
        self._close_done = threading.Event()

    @property
    def era_key(self) -> Hashable:
        """The endpoint URL (scheme, host, port, path): what the era cache is keyed by."""
        return self._endpoint.era_key

    @property
    def kind(self) -> str:
        """``"streamable-http"``, or ``"http+sse"`` after falling back."""
        return "http+sse" if self._delegate is not None else "streamable-http"

    @property
    def has_session(self) -> bool:
        """True while the server has given this client a session id (legacy era)."""
        return self._session.id is not None

    def __repr__(self) -> str:
        return f"<StreamableHTTPTransport {self._endpoint.name} ({self.kind})>"

    # --- Transport ------------------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Get ready to send (nothing is sent before the first message); an endpoint
        remembered as HTTP+SSE is opened that way at once."""
        self._sink = sink
        if self._sse is not None:
            self._delegate = self._sse.reopen(sink)

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        """POST one message; a request's answer is read on a worker thread.

        Raises:
            ConnectionClosed: The transport is closed (``SessionExpired``: a notification
                or reply for a session the server has forgotten).
            HTTPStatusError: The server refused a notification or reply.
            TransportError: A notification or reply could not be sent.
        """
        delegate = self._delegate
        if delegate is not None:
            delegate.send(message, context)
            return
        if context is None:
            context = Outgoing.of(message)
        self._session.remember(message, context)
        if context.kind != "request":
            self._post_ack(message, context)
            return
        sink = self._sink
        assert sink is not None
        exchange = Exchange(message, context, sink, self._link.max_event_bytes)
        self._inflight.add(exchange, deferred=context.inline)
        if context.inline:
            return  # the sender runs it in lead(), next, on its own thread
        try:
            self._workers.submit(lambda: self._inflight.run(exchange))
        except Cancelled:
            self._inflight.remove(exchange)
            raise ConnectionClosed(f"MCP connection to {self.name} is closed") from None

    def lead(self, request_id: RequestId, _: Waiter, deadline: float | None, busy: Busy) -> None:
        """Run the POST of a request sent ``inline`` on the waiting caller's thread and
        read its answer there; past ``deadline`` the exchange is aborted. ``deadline``
        None (the timeout restarts on progress): a worker runs it instead."""
        exchange = self._inflight.claim(request_id)
        if exchange is None:
            return
        if deadline is None:
            try:
                self._workers.submit(lambda: self._inflight.run(exchange))
            except Cancelled:
                self._inflight.remove(exchange)
                error = ConnectionClosed(f"MCP connection to {self.name} is closed")
                exchange.sink.fail(request_id, error)
            return
        entry = self._deadlines.watch(exchange, deadline)
        try:
            self._inflight.run(exchange)
        finally:
            self._deadlines.unwatch(entry)
        if entry.fired and not exchange.answered:
            self._inflight.expired(exchange)

    def abandon(self, request_id: RequestId) -> bool:
        """Close the request's response stream; True in the modern era, where that is
        the cancellation (legacy: the session also sends ``notifications/cancelled``)."""
        delegate = self._delegate
        if delegate is not None:
            return delegate.abandon(request_id)
        if self._inflight.claim(request_id) is not None:  # never sent: nothing to cancel
            self._inflight.remove_id(request_id)
            return True
        exchange = self._inflight.get(request_id) or self._inflight.take_expired(request_id)
        if exchange is None:
            return False
        exchange.abort()
        if exchange.modern:
            return True
        # The session POSTs notifications/cancelled next: let an aborted POST of the request
        # finish leaving first (it fails at once), so the server never sees the cancel
        # before the request it cancels.
        exchange.wait_quiet(_CANCEL_ORDER_TIMEOUT)
        return False

    def close(self) -> None:
        """Abort every exchange, DELETE the session (bounded, 405 tolerated), close the
        pool and join the threads. Idempotent; a concurrent second call waits."""
        with self._lock:
            first = not self._closing
            self._closing = True
            listeners = list(self._listeners)
        if not first:
            self._close_done.wait(DELETE_TIMEOUT + 3 * THREAD_JOIN_TIMEOUT)
            return
        delegate = self._delegate
        exchanges = self._inflight.close()
        try:
            for exchange in exchanges:
                exchange.abort()
            for listener in listeners:
                listener.halt()
            if delegate is not None:
                delegate.close()  # reports the end to the session itself
            else:
                self._session.end(self._http, self._endpoint, self.name)
            self._http.close()
            self._workers.close()
            self._deadlines.close()
            for listener in listeners:
                if listener.thread is not threading.current_thread():
                    listener.thread.join(THREAD_JOIN_TIMEOUT)
        finally:
            if delegate is None:
                self._report(None)
            self._close_done.set()

    # --- session renewal ------------------------------------------------------------------------

    def _renew(self, exchange: Exchange) -> bool:
        """A new session after the server forgot ours (see :class:`._session.LegacySession`)."""
        if self._closing:
            return False
        with self._lock:
            listener, self._listener = self._listener, None
        if listener is not None:
            listener.halt()  # it belongs to the old session; the replayed handshake reopens it
        return self._session.renew(exchange.generation, self._internal_request, self._post_ack)

    def _internal_request(self, message: dict[str, Any], context: Outgoing) -> dict[str, Any]:
        """Send a request of our own (a replayed one) on this thread; return its answer."""
        sink = self._sink
        assert sink is not None
        return self._inflight.run_internal(message, context, sink, self._link.max_event_bytes)

    def log_in(self, timeout: float) -> bool:
        """Let an OAuth ``auth`` log in before the era probe (see
        :func:`~._request.log_in_first`); the POST is bounded by ``timeout``. True when
        a login ran."""
        connect = min(self._ack_timeout.connect or timeout, timeout)
        return log_in_first(
            self._http, self._endpoint, Timeout(connect=connect, read=timeout, total=timeout)
        )

    # --- notifications, replies, the GET stream, DELETE ------------------------------------------

    def _post_ack(self, message: dict[str, Any], context: Outgoing) -> None:
        if self._closing:
            raise ConnectionClosed(f"MCP connection to {self.name} is closed")
        try:
            post_ack(
                self._http, self._endpoint, self._session.id, (message, context), self._ack_timeout
            )
        except Cancelled:
            if self._closing:
                raise ConnectionClosed(f"MCP connection to {self.name} is closed") from None
            raise
        if context.method == "notifications/initialized":
            self._listen()

    def _listen(self) -> None:
        """Open the GET stream for server-initiated messages (replacing an old one)."""
        sink = self._sink
        assert sink is not None
        listener = Listener(
            self._link,
            sink,
            functools.partial(self._session.get_headers, self._endpoint),
            name=f"a2a-sync-mcp-http-get-{self._session.generation}",
        )
        with self._lock:
            if self._closing:
                return
            old, self._listener = self._listener, listener
            self._listeners = [x for x in self._listeners if x.thread.is_alive()]
            self._listeners.append(listener)
        if old is not None:
            old.halt()
        listener.start()

    # --- HTTP+SSE fallback -----------------------------------------------------------------------

    def _fall_back(self, exchange: Exchange) -> None:
        """``initialize`` was refused with 400/404/405: try the 2024-11-05 transport; if
        the server has none either, the refusal is the answer."""
        assert self._sse is not None
        legacy = self._sse.open(exchange)
        if legacy is None:
            return
        with self._lock:
            closing = self._closing
            if not closing:
                self._delegate = legacy
        if closing:  # close() ran meanwhile and could not see this transport
            legacy.close()
            raise ConnectionClosed(f"MCP connection to {self.name} is closed")
        logger.info("%s speaks the 2024-11-05 HTTP+SSE transport; using it", self.name)
        self._sse.remember()
        legacy.send(exchange.message, exchange.context)

    def _report(self, error: A2ASyncError | None) -> None:
        with self._lock:
            if self._reported or self._sink is None:
                return
            self._reported = True
        self._sink.transport_closed(error)
