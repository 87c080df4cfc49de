"""The deprecated HTTP+SSE transport of MCP 2024-11-05.

The client opens one event stream with ``GET <url>``; its first event, ``endpoint``,
names the URL to POST messages to (python-sdk: ``/messages/?session_id=...``). Every
client message is its own POST there (the server answers 202); every server message
(responses, requests, notifications) arrives as an ``event: message`` on the GET stream.
The session lives exactly as long as that stream: when it ends, the connection is over.

Used directly (``MCPConnection.http(url, transport="sse")``) or as the fallback of the
Streamable HTTP transport when a server refuses ``initialize`` with 400/404/405.

Security: the ``endpoint`` must be on the same origin (scheme, host, port) as the URL we
were given, or the transport refuses to start; the credential and custom headers are only
ever sent there. The POST URL carries the server's session id, so it is never logged and
errors name the configured URL instead.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable
from typing import Any, Final
from urllib.parse import urljoin

from ..._net import jsonrpc as _jsonrpc
from ..._net.http import HTTPTransport, StreamResponse
from ..._net.sse_decoder import DEFAULT_MAX_EVENT_BYTES, ServerSentEvent, SSEDecoder
from ...errors import (
    A2ASyncError,
    Cancelled,
    ConnectionClosed,
    DeadlineExceeded,
    ProtocolError,
    TransportError,
    excerpt,
)
from ...policies import Timeout
from . import MessageSink, Outgoing, RequestId
from ._httpbase import (
    ACK_TIMEOUT,
    CONNECT_TIMEOUT,
    ERROR_BODY_LIMIT,
    EVENT_STREAM_TYPE,
    JSON_TYPE,
    THREAD_JOIN_TIMEOUT,
    Endpoint,
    decode_messages,
    pump,
    redacted,
    status_error,
)
from .options import HTTPOptions

__all__ = ["ENDPOINT_TIMEOUT", "LegacySSETransport"]

logger = logging.getLogger(__name__)

#: How long the server may take to name its POST endpoint after the GET is answered
#: (python-sdk and TypeScript servers send it at once).
ENDPOINT_TIMEOUT: Final = 10.0


class LegacySSETransport:
    """MCP over the 2024-11-05 HTTP+SSE transport.

    Thread-safe: any thread may ``send``; ``close`` may be called from any thread, any
    number of times. One daemon thread (``a2a-sync-mcp-sse-...``) reads the event stream.

    Args:
        url: The SSE endpoint (python-sdk servers: ``http://host:port/sse``).
        options: Headers, credentials, timeouts, TLS and size caps
            (:class:`~.options.HTTPOptions`). ``read_timeout`` is the longest silence on
            the event stream before it counts as dead (``None``: wait forever; the stream
            IS the session, so an idle timeout would end an idle connection).
        endpoint_timeout: Seconds to wait for the ``endpoint`` event.
    """

    wants_context = False
    #: The wire, as on every transport (:attr:`Transport.kind`).
    kind = "http+sse"

    def __init__(
        self,
        url: str,
        options: HTTPOptions | None = None,
        *,
        endpoint_timeout: float = ENDPOINT_TIMEOUT,
    ) -> None:
        opts = options or HTTPOptions()
        endpoint = Endpoint(
            url,
            headers=opts.headers,
            auth=opts.auth,
            insecure_credentials=opts.allow_insecure_credentials,
        )
        http = HTTPTransport(
            timeout=Timeout(connect=opts.connect_timeout, read=ACK_TIMEOUT, total=ACK_TIMEOUT),
            max_response_bytes=opts.max_response_bytes,
            verify=opts.verify,
            cert=opts.cert,
            trust_env=opts.trust_env,
        )
        self._setup(
            endpoint,
            http,
            owns_http=True,
            connect_timeout=opts.connect_timeout,
            read_timeout=opts.read_timeout,
            endpoint_timeout=endpoint_timeout,
        )
        self._max_event_bytes = opts.max_event_bytes

    @classmethod
    def borrowing(
        cls,
        endpoint: Endpoint,
        http: HTTPTransport,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> LegacySSETransport:
        """A transport on another transport's endpoint and connection pool (which it
        does not close): the Streamable HTTP transport's fallback."""
        self = cls.__new__(cls)
        self._setup(
            endpoint,
            http,
            owns_http=False,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            endpoint_timeout=ENDPOINT_TIMEOUT,
        )
        self._max_event_bytes = max_event_bytes
        return self

    def _setup(
        self,
        endpoint: Endpoint,
        http: HTTPTransport,
        *,
        owns_http: bool,
        connect_timeout: float,
        read_timeout: float | None,
        endpoint_timeout: float,
    ) -> None:
        self._endpoint = endpoint
        self.name = f"MCP server at {endpoint.name} (HTTP+SSE)"
        self._http = http
        self._owns_http = owns_http
        self._open_timeout = Timeout(connect=connect_timeout, read=endpoint_timeout, total=None)
        self._ack_timeout = Timeout(connect=connect_timeout, read=ACK_TIMEOUT, total=ACK_TIMEOUT)
        self._read_timeout = read_timeout
        self._endpoint_timeout = endpoint_timeout
        self._sink: MessageSink | None = None
        self._post_url: str | None = None
        self._start_error: A2ASyncError | None = None
        self._ready = threading.Event()
        self._response: StreamResponse | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # guards _closing, _reported
        self._closing = False
        self._reported = False

    @property
    def era_key(self) -> Hashable:
        """The endpoint URL (scheme, host, port, path): what the era cache is keyed by."""
        return self._endpoint.era_key

    # --- Transport ----------------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Open the event stream and wait for the ``endpoint`` event.

        A 401/403 is answered by an OAuth ``auth`` (login, refresh, step-up) and the GET
        sent again.

        Raises:
            HTTPStatusError: The GET was refused.
            AuthorizationError: A 401/403 the authorization could not answer.
            ProtocolError: Not an event stream, or an endpoint on another origin.
            DeadlineExceeded: No endpoint event within ``endpoint_timeout``.
            TransportError: The server could not be reached.
        """
        self._sink = sink
        response = self._open()
        try:
            if not 200 <= response.status < 300 or response.content_type != EVENT_STREAM_TYPE:
                body = response.read_body(ERROR_BODY_LIMIT)
                if not 200 <= response.status < 300:
                    raise status_error(
                        "GET",
                        self._endpoint.name,
                        response.status,
                        body,
                        headers=response.headers,
                        content_type=response.content_type,
                    )
                raise ProtocolError(
                    f"{self.name} answered GET with {response.content_type or 'no Content-Type'}"
                    ", not an event stream",
                    excerpt=excerpt(body),
                )
        except BaseException:
            response.close()
            raise
        self._response = response
        thread = threading.Thread(
            target=self._read, args=(response,), name="a2a-sync-mcp-sse-reader", daemon=True
        )
        self._thread = thread
        thread.start()
        if not self._ready.wait(self._endpoint_timeout):
            self._start_error = DeadlineExceeded(
                f"{self.name} sent no endpoint event within {self._endpoint_timeout:g} s",
                url=self._endpoint.name,
                timeout=self._endpoint_timeout,
            )
        error = self._start_error
        if error is not None:
            with self._lock:
                self._reported = True  # start() raises instead: the session never began
            self._shutdown(None)
            raise error

    def _open(self) -> StreamResponse:
        """GET the event stream; a 401/403 is answered by the endpoint's authorization
        (log in, refresh or step up; it bounds the attempts) and the GET sent again."""
        attempt = 0
        while True:
            headers = self._endpoint.headers(EVENT_STREAM_TYPE)
            headers["Cache-Control"] = "no-store"
            try:
                response = self._http.open_stream(
                    "GET",
                    self._endpoint.url,
                    headers=headers,
                    idempotent=True,
                    timeout=self._open_timeout,
                    idle_timeout=self._read_timeout,
                )
            except TransportError as exc:
                raise self._endpoint.redact(exc) from None
            if response.status not in (401, 403):
                return response
            attempt += 1
            try:
                again = self._endpoint.challenged(
                    response.status, response.headers, headers.get("Authorization"), attempt
                )
            except BaseException:
                response.close()
                raise
            if not again:
                return response  # start() reports the refusal
            response.close()

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        """POST one message to the endpoint; the answer arrives on the event stream.

        Raises:
            ConnectionClosed: The transport is closed.
            HTTPStatusError: The server refused the message.
            AuthorizationError: A 401/403 the authorization could not answer.
            TransportError: The POST failed.
        """
        post_url = self._post_url
        if self._closing or post_url is None:
            raise ConnectionClosed(f"MCP connection to {self.name} is closed")
        body = _jsonrpc.encode(message)
        attempt = 0
        while True:
            headers = self._endpoint.headers(JSON_TYPE)
            headers["Content-Type"] = JSON_TYPE
            try:
                result = self._http.request(
                    "POST",
                    post_url,
                    body=body,
                    headers=headers,
                    timeout=self._ack_timeout,
                    max_response_bytes=ERROR_BODY_LIMIT,
                )
            except Cancelled as exc:
                if self._closing:
                    raise ConnectionClosed(f"MCP connection to {self.name} is closed") from None
                raise redacted(exc, post_url, self._endpoint.name) from None
            except TransportError as exc:
                raise redacted(exc, post_url, self._endpoint.name) from None
            # A refusal the authorization answers (new or stepped-up token) is sent again,
            # as on the Streamable HTTP POST path; the authorization bounds the attempts.
            if result.status not in (401, 403):
                break
            attempt += 1
            if not self._endpoint.challenged(
                result.status, result.headers, headers.get("Authorization"), attempt
            ):
                break
        if not result.ok:
            raise status_error(
                "POST",
                self._endpoint.name,
                result.status,
                result.content,
                headers=result.headers,
                content_type=result.content_type,
            )

    def abandon(self, request_id: RequestId) -> bool:
        """HTTP+SSE cancels with ``notifications/cancelled``: nothing to do here."""
        return False

    def close(self) -> None:
        """Close the event stream (which ends the server's session) and the pool.
        Idempotent, from any thread."""
        self._shutdown(None)

    def __repr__(self) -> str:
        return f"<LegacySSETransport {self._endpoint.name}>"

    # --- internals ------------------------------------------------------------------------------

    def _read(self, response: StreamResponse) -> None:
        decoder = SSEDecoder(self._max_event_bytes)
        error: A2ASyncError | None
        try:
            failure = pump(response, decoder, self._on_event)
            detail = f": {self._endpoint.redact(failure)}" if failure is not None else ""
            # The stream is the session: the connection is over (no resuming in 2024-11-05).
            error = ConnectionClosed(f"{self.name} ended its event stream{detail}")
        except Cancelled:
            error = None if self._closing else ConnectionClosed(f"{self.name} went away")
        except Exception:  # top of the reader thread: the session must not hang
            logger.exception("MCP HTTP+SSE reader for %s failed", self.name)
            error = ConnectionClosed(f"reading from {self.name} failed")
        finally:
            response.close()
        if not self._ready.is_set():
            if self._start_error is None and error is not None:
                self._start_error = error
            self._ready.set()
            return  # start() reports the failure
        if self._start_error is None:
            self._shutdown(error)

    def _on_event(self, event: ServerSentEvent) -> bool:
        if event.event == "endpoint":
            if self._post_url is None:
                self._adopt_endpoint(event.data.strip())
                self._ready.set()
            return self._start_error is not None
        if event.event != "message" or not event.data:
            return self._closing
        sink = self._sink
        assert sink is not None
        for message in decode_messages(event.data, self.name):
            sink.deliver(message)
        return self._closing

    def _adopt_endpoint(self, data: str) -> None:
        url = urljoin(self._endpoint.url, data)
        if not data or not self._endpoint.same_origin(url):
            # The credential would follow the POSTs to wherever the server points.
            self._start_error = ProtocolError(
                f"{self.name} named a message endpoint on another origin; refusing to send "
                "messages (and credentials) there"
            )
            return
        self._post_url = url

    def _shutdown(self, error: A2ASyncError | None) -> None:
        with self._lock:
            first = not self._closing
            self._closing = True
        if first:
            response = self._response
            if response is not None:
                response.abort()
            thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(THREAD_JOIN_TIMEOUT)
                if thread.is_alive():
                    logger.warning("MCP HTTP+SSE reader %s did not stop", thread.name)
            if self._owns_http:
                self._http.close()
        self._report(error)

    def _report(self, error: A2ASyncError | None) -> None:
        with self._lock:
            if self._reported or self._sink is None:
                return
            self._reported = True
        self._sink.transport_closed(error)
