"""Streamable HTTP: MCP over one HTTP endpoint, in both protocol eras.

Every client message is its own POST (``Accept: application/json, text/event-stream``).

* **Requests** are POSTed by a worker thread (:class:`~._httpbase.Workers`), which reads
  the answer — one JSON object, or an event stream carrying notifications and server
  requests before the response — and hands every message to the session as soon as it
  arrives. ``send`` returns at once, so the caller's own timeout and ``cancel()`` work
  while the server thinks.
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
transport (:mod:`.legacy_sse`), and the per-process era cache remembers the endpoint.

Credentials: ``Authorization`` and custom headers go on every request, only to the
configured origin (redirects are refused by :class:`~a2a_sync._http.HTTPTransport`);
neither they nor the session id are logged or shown in a repr.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Hashable, Mapping
from typing import Any, Final

from ... import _constants as C
from ... import _jsonrpc
from ..._http import HTTPTransport, StreamResponse
from ..._sse_decoder import DEFAULT_MAX_EVENT_BYTES
from ...errors import (
    A2ASyncError,
    Cancelled,
    ConnectionClosed,
    ConnectionLost,
    HTTPStatusError,
    ProtocolError,
    SessionExpired,
    TransportError,
    excerpt,
)
from ...policies import ReconnectPolicy, RetryPolicy, Timeout
from .. import eras
from . import MessageSink, Outgoing, RequestId
from ._httpbase import (
    ACK_TIMEOUT,
    CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    DELETE_TIMEOUT,
    ERROR_BODY_LIMIT,
    EVENT_STREAM_TYPE,
    JSON_TYPE,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    THREAD_JOIN_TIMEOUT,
    AuthSource,
    Endpoint,
    Workers,
    decode_messages,
    error_object,
    session_unknown,
    status_error,
)
from ._session import LegacySession
from ._streams import Exchange, Link, Listener, resume
from .legacy_sse import LegacySSETransport

__all__ = ["StreamableHTTPTransport"]

logger = logging.getLogger(__name__)

_ACCEPT_BOTH: Final = f"{JSON_TYPE}, {EVENT_STREAM_TYPE}"
#: Requests a broken modern stream may re-issue: they read, nothing changes on the server.
_REISSUABLE: Final = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
    }
)
# What became of one POST of a request.
_DONE: Final = "done"
_EXPIRED: Final = "expired"
_LOST: Final = "lost"
_FALLBACK: Final = "fallback"

#: How long ``abandon`` waits for an aborted POST to get out of the way (legacy era).
_CANCEL_ORDER_TIMEOUT: Final = 0.5

_internal_ids = itertools.count(1)


def _sse_marker(era_key: Hashable) -> Hashable:
    """The era-cache key remembering that an endpoint speaks HTTP+SSE (cleared with it)."""
    return ("http+sse", era_key)


def _new_id() -> str:
    """A JSON-RPC id for requests the transport sends itself (re-issued, replayed)."""
    return f"a2a-sync-{next(_internal_ids)}"


class StreamableHTTPTransport:
    """MCP over Streamable HTTP (both eras), with the HTTP+SSE fallback.

    Thread-safe: any thread may ``send`` or ``abandon``; ``close`` may be called from any
    thread, any number of times. Normally created by :meth:`MCPConnection.http
    <a2a_sync.mcp.connection.MCPConnection.http>`; one instance serves one connection.

    Args:
        url: The MCP endpoint (``http://127.0.0.1:8000/mcp``).
        headers: Extra headers for every request.
        auth: Bearer token, or a callable returning the current one (called per request).
        connect_timeout: Seconds to connect.
        read_timeout: Longest silence on a response (headers or stream) before it counts
            as dead.
        reconnect_policy: Delays and attempts for resuming a response stream and for
            re-opening the GET stream (the server's ``retry:`` is the base delay).
        max_event_bytes: Cap on one event of a response stream.
        max_response_bytes: Cap on a JSON response body.
        verify: TLS verification, as in requests.
        cert: Client certificate, as in requests.
        trust_env: Take proxies and the CA bundle from the environment.
        fallback_to_sse: Retry a refused ``initialize`` on the HTTP+SSE transport.

    Raises:
        ConfigurationError: Bad URL or headers.
    """

    wants_context = True

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthSource | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        reconnect_policy: ReconnectPolicy | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_response_bytes: int = C.DEFAULT_MAX_RESPONSE_BYTES,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        trust_env: bool = True,
        fallback_to_sse: bool = True,
    ) -> None:
        endpoint = Endpoint(url, headers=headers, auth=auth)
        self._endpoint = endpoint
        self.name = f"MCP server at {endpoint.name}"
        open_timeout = Timeout(connect=connect_timeout, read=read_timeout, total=None)
        self._ack_timeout = Timeout(connect=connect_timeout, read=ACK_TIMEOUT, total=ACK_TIMEOUT)
        self._connect_timeout = connect_timeout
        self._fallback = fallback_to_sse
        self._http = HTTPTransport(
            timeout=open_timeout,
            max_response_bytes=max_response_bytes,
            verify=verify,
            cert=cert,
            trust_env=trust_env,
        )
        self._link = Link(
            endpoint,
            self._http,
            name=self.name,
            open_timeout=open_timeout,
            policy=reconnect_policy or ReconnectPolicy(),
            max_event_bytes=max_event_bytes,
        )
        self._workers = Workers("a2a-sync-mcp-http")
        self._sink: MessageSink | None = None
        self._delegate: LegacySSETransport | None = None
        # _lock guards _exchanges, _internal, _listener(s), _closing, _reported.
        self._lock = threading.Lock()
        self._exchanges: dict[RequestId, Exchange] = {}
        self._internal: set[Exchange] = set()
        self._listener: Listener | None = None
        self._listeners: list[Listener] = []
        self._closing = False
        self._reported = False
        self._close_done = threading.Event()
        self._session = LegacySession(self.name)

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
        if not self._fallback or eras.ERA_CACHE.get(_sse_marker(self.era_key)) != "legacy":
            return
        legacy = self._legacy()
        try:
            legacy.start(sink)
        except (TransportError, HTTPStatusError, ProtocolError) as exc:
            logger.info("%s no longer serves HTTP+SSE (%s); using Streamable HTTP", self.name, exc)
            return
        self._delegate = legacy

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
            context = _context_of(message)
        self._session.remember(message, context)
        if context.kind != "request":
            self._post_ack(message, context)
            return
        sink = self._sink
        assert sink is not None
        exchange = Exchange(message, context, sink, self._link.max_event_bytes)
        with self._lock:
            if self._closing:
                raise ConnectionClosed(f"MCP connection to {self.name} is closed")
            self._exchanges[exchange.request_id] = exchange
        try:
            self._workers.submit(lambda: self._run(exchange))
        except Cancelled:
            self._unregister(exchange)
            raise ConnectionClosed(f"MCP connection to {self.name} is closed") from None

    def abandon(self, request_id: RequestId) -> bool:
        """Close the request's response stream; True in the modern era, where that is
        the cancellation (legacy: the session also sends ``notifications/cancelled``)."""
        delegate = self._delegate
        if delegate is not None:
            return delegate.abandon(request_id)
        with self._lock:
            exchange = self._exchanges.get(request_id)
        if exchange is None:
            return False
        exchange.abort()
        if exchange.modern:
            return True
        # The session POSTs notifications/cancelled next: let an aborted POST of the request
        # finish leaving first (it fails at once), so the server never sees the cancel
        # before the request it cancels.
        exchange.quiet.wait(_CANCEL_ORDER_TIMEOUT)
        return False

    def close(self) -> None:
        """Abort every exchange, DELETE the session (bounded, 405 tolerated), close the
        pool and join the threads. Idempotent; a concurrent second call waits."""
        with self._lock:
            first = not self._closing
            self._closing = True
            exchanges = [*self._exchanges.values(), *self._internal]
            listeners = list(self._listeners)
        if not first:
            self._close_done.wait(DELETE_TIMEOUT + 3 * THREAD_JOIN_TIMEOUT)
            return
        delegate = self._delegate
        try:
            for exchange in exchanges:
                exchange.abort()
            for listener in listeners:
                listener.halt()
            if delegate is not None:
                delegate.close()  # reports the end to the session itself
            else:
                self._delete_session()
            self._http.close()
            self._workers.close()
            for listener in listeners:
                if listener.thread is not threading.current_thread():
                    listener.thread.join(THREAD_JOIN_TIMEOUT)
        finally:
            if delegate is None:
                self._report(None)
            self._close_done.set()

    # --- one request ----------------------------------------------------------------------------

    def _run(self, exchange: Exchange) -> None:
        try:
            self._exchange(exchange)
        except A2ASyncError as exc:
            if not exchange.stop.is_set():  # else abandoned, or closing: nobody waits
                if isinstance(exc, TransportError):
                    exc = self._endpoint.redact(exc)
                exchange.sink.fail(exchange.request_id, exc)
        except Exception:  # top of a worker: the waiting caller must hear of it
            logger.exception("MCP HTTP exchange with %s failed", self.name)
            error = ConnectionClosed(f"the exchange with {self.name} failed")
            exchange.sink.fail(exchange.request_id, error)
        finally:
            self._unregister(exchange)

    def _unregister(self, exchange: Exchange) -> None:
        with self._lock:
            if self._exchanges.get(exchange.request_id) is exchange:
                del self._exchanges[exchange.request_id]

    def _exchange(self, exchange: Exchange) -> None:
        renewed = reissued = False
        while True:
            verdict = self._post(exchange)
            if verdict == _DONE:
                return
            if verdict == _EXPIRED:
                if renewed or exchange.internal or not self._renew(exchange):
                    again = " (again, after a new one was initialized)" if renewed else ""
                    raise SessionExpired(f"{self.name} no longer knows the MCP session{again}")
                renewed = True  # the server never ran the refused request: send it again
            elif verdict == _LOST:
                failure = exchange.failure
                detail = f": {failure}" if failure is not None else ""
                if reissued or exchange.method not in _REISSUABLE:
                    raise ConnectionLost(
                        f"the response stream of {exchange.method} from {self.name} broke "
                        f"before the answer; the request is lost{detail}",
                        url=self._endpoint.name,
                    )
                logger.info("%s: re-issuing %s with a new id%s", self.name, exchange.method, detail)
                reissued = True
                exchange.reissue(_new_id())
            else:
                self._fall_back(exchange)
                return

    def _post(self, exchange: Exchange) -> str:
        headers = self._endpoint.headers(_ACCEPT_BOTH)
        headers["Content-Type"] = JSON_TYPE
        headers.update(exchange.context.headers)
        if exchange.internal:  # a replay: this thread is renewing the session
            state = self._session
            session = None if exchange.method == "initialize" else state.id
            exchange.generation = state.generation
        else:
            session, exchange.generation = self._session.current()
        if session is not None and not exchange.modern:
            headers[SESSION_HEADER] = session
        try:
            with exchange.sending():
                response = self._http.open_stream(
                    "POST",
                    self._endpoint.url,
                    body=exchange.body,
                    headers=headers,
                    timeout=self._link.open_timeout,
                    idle_timeout=self._link.read_timeout,
                    on_start=exchange.started,
                )
        except Cancelled:
            if exchange.stop.is_set():
                return _DONE
            raise
        with response:
            return self._answer(exchange, response, session is not None)

    def _answer(self, exchange: Exchange, response: StreamResponse, sent_session: bool) -> str:
        status = response.status
        content_type = response.content_type
        if 200 <= status < 300 and status not in (202, 204):
            if exchange.method == "initialize":
                self._session.adopt(response.headers.get(SESSION_HEADER))
            if content_type == EVENT_STREAM_TYPE:
                if exchange.read(response, self.name):
                    return _DONE
                if exchange.modern:
                    return _LOST
                resume(self._link, exchange, lambda: self._get_headers(exchange.context))
                return _DONE
            if content_type == JSON_TYPE:
                body = response.read_body(self._http.max_response_bytes)
                for message in decode_messages(body, self.name):
                    exchange.take(message)
                if not exchange.answered:
                    raise ProtocolError(
                        f"{self.name} answered {exchange.method} with JSON that is not its "
                        "response",
                        excerpt=excerpt(body),
                    )
                return _DONE
            body = response.read_body(ERROR_BODY_LIMIT)
            raise ProtocolError(
                f"{self.name} answered {exchange.method} with {content_type or 'no Content-Type'}",
                excerpt=excerpt(body),
            )
        if status in (202, 204):
            raise ProtocolError(
                f"{self.name} accepted {exchange.method} (HTTP {status}) but sent no response"
            )
        body = response.read_body(ERROR_BODY_LIMIT)
        if sent_session and session_unknown(status, body):
            return _EXPIRED
        error = error_object(body)
        refused = status_error(
            "POST",
            self._endpoint.name,
            status,
            body,
            headers=response.headers,
            content_type=content_type,
        )
        fallback = self._fallback and not exchange.internal
        if fallback and exchange.method == "initialize" and status in (400, 404, 405):
            exchange.refusal = error or refused
            return _FALLBACK
        if error is None:
            raise refused
        # A JSON-RPC error at a 4xx/5xx status (modern servers map codes to statuses; the
        # id may be null when the server could not read ours): the request's answer.
        exchange.take({"jsonrpc": "2.0", "id": exchange.wire_id, "error": error})
        return _DONE

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
        exchange = Exchange(
            {**message, "id": _new_id()},
            context,
            sink,
            self._link.max_event_bytes,
            internal=True,
        )
        with self._lock:
            if self._closing:
                raise ConnectionClosed(f"MCP connection to {self.name} is closed")
            self._internal.add(exchange)
        try:
            self._exchange(exchange)
        finally:
            with self._lock:
                self._internal.discard(exchange)
        if exchange.result is None:
            raise ConnectionClosed(f"MCP connection to {self.name} is closed")
        return exchange.result

    # --- notifications, replies, the GET stream, DELETE ------------------------------------------

    def _post_ack(self, message: dict[str, Any], context: Outgoing) -> None:
        headers = self._endpoint.headers(_ACCEPT_BOTH)
        headers["Content-Type"] = JSON_TYPE
        headers.update(context.headers)
        session = self._session.id
        if session is not None and "Mcp-Method" not in context.headers:
            headers[SESSION_HEADER] = session
        if self._closing:
            raise ConnectionClosed(f"MCP connection to {self.name} is closed")
        try:
            result = self._http.request(
                "POST",
                self._endpoint.url,
                body=_jsonrpc.encode(message),
                headers=headers,
                timeout=self._ack_timeout,
                max_response_bytes=ERROR_BODY_LIMIT,
            )
        except TransportError as exc:
            if isinstance(exc, Cancelled) and self._closing:
                raise ConnectionClosed(f"MCP connection to {self.name} is closed") from None
            raise self._endpoint.redact(exc) from None
        if result.ok:
            if context.method == "notifications/initialized":
                self._listen()
            return
        if session is not None and session_unknown(result.status, result.content):
            raise SessionExpired(f"{self.name} no longer knows the MCP session")
        raise status_error(
            "POST",
            self._endpoint.name,
            result.status,
            result.content,
            headers=result.headers,
            content_type=result.content_type,
        )

    def _get_headers(self, context: Outgoing | None = None) -> dict[str, str]:
        headers = self._endpoint.headers(EVENT_STREAM_TYPE)
        headers["Cache-Control"] = "no-store"
        version = context.headers.get(PROTOCOL_HEADER) if context is not None else None
        version = version or self._session.protocol_version
        if version is not None:
            headers[PROTOCOL_HEADER] = version
        session = self._session.id
        if session is not None:
            headers[SESSION_HEADER] = session
        return headers

    def _listen(self) -> None:
        """Open the GET stream for server-initiated messages (replacing an old one)."""
        sink = self._sink
        assert sink is not None
        listener = Listener(
            self._link,
            sink,
            self._get_headers,
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

    def _delete_session(self) -> None:
        session = self._session.id
        if session is None:
            return
        headers = self._endpoint.headers(_ACCEPT_BOTH)
        headers[SESSION_HEADER] = session
        if self._session.protocol_version is not None:
            headers[PROTOCOL_HEADER] = self._session.protocol_version
        try:
            result = self._http.request(
                "DELETE",
                self._endpoint.url,
                headers=headers,
                timeout=Timeout(connect=DELETE_TIMEOUT, read=DELETE_TIMEOUT, total=DELETE_TIMEOUT),
                retry=RetryPolicy.none(),
                max_response_bytes=ERROR_BODY_LIMIT,
            )
        except A2ASyncError as exc:
            logger.debug("%s: ending the session failed: %s", self.name, exc)
            return
        if result.status == 405:
            logger.debug("%s does not let clients end sessions (405)", self.name)
        elif not result.ok:
            logger.debug("%s answered the session DELETE with HTTP %s", self.name, result.status)

    # --- HTTP+SSE fallback -----------------------------------------------------------------------

    def _legacy(self) -> LegacySSETransport:
        return LegacySSETransport.borrowing(
            self._endpoint,
            self._http,
            connect_timeout=self._connect_timeout,
            max_event_bytes=self._link.max_event_bytes,
        )

    def _fall_back(self, exchange: Exchange) -> None:
        """``initialize`` was refused with 400/404/405: try the 2024-11-05 transport; if
        the server has none either, the refusal is the answer."""
        refusal = exchange.refusal
        legacy = self._legacy()
        try:
            legacy.start(exchange.sink)
        except (TransportError, HTTPStatusError) as exc:
            logger.debug("%s offers no HTTP+SSE endpoint either: %s", self.name, exc)
            if isinstance(refusal, dict):
                exchange.take({"jsonrpc": "2.0", "id": exchange.wire_id, "error": refusal})
                return
            assert isinstance(refusal, A2ASyncError)
            raise refusal from None
        with self._lock:
            closing = self._closing
            if not closing:
                self._delegate = legacy
        if closing:  # close() ran meanwhile and could not see this transport
            legacy.close()
            raise ConnectionClosed(f"MCP connection to {self.name} is closed")
        logger.info("%s speaks the 2024-11-05 HTTP+SSE transport; using it", self.name)
        eras.ERA_CACHE.put(_sse_marker(self.era_key), "legacy")
        legacy.send(exchange.message, exchange.context)

    def _report(self, error: A2ASyncError | None) -> None:
        with self._lock:
            if self._reported or self._sink is None:
                return
            self._reported = True
        self._sink.transport_closed(error)


def _context_of(message: dict[str, Any]) -> Outgoing:
    method = message.get("method")
    if method is None:
        return Outgoing("response", None, message.get("id"), {})
    kind = "request" if "id" in message else "notification"
    return Outgoing(kind, method, message.get("id"), {})
