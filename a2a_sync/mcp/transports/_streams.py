"""The event streams of Streamable HTTP: one request's exchange, resuming its broken
response stream (GET + ``Last-Event-ID``); the session's GET stream is in
:mod:`._listener`.

Every loop here runs on one thread (a worker, or the GET thread), reads with
:func:`~._httpbase.pump` and hands messages to the session as they arrive. Waits and
reads end at once when the exchange or stream is stopped from another thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from ..._net import jsonrpc as _jsonrpc
from ..._net.http import HTTPTransport, StreamResponse
from ..._net.pool import Call
from ..._net.sse_decoder import ServerSentEvent, SSEDecoder
from ...errors import (
    A2ASyncError,
    Cancelled,
    ConnectionLost,
    RedirectRefused,
    ResponseTooLarge,
    SessionExpired,
    StreamInterrupted,
    TransportError,
)
from ...policies import ReconnectPolicy, Timeout
from . import MessageSink, Outgoing, RequestId
from ._httpbase import (
    ERROR_BODY_LIMIT,
    EVENT_STREAM_TYPE,
    LAST_EVENT_ID_HEADER,
    SESSION_HEADER,
    Endpoint,
    decode_messages,
    pump,
    session_unknown,
    status_error,
)

__all__ = ["Exchange", "Link", "resume"]

logger = logging.getLogger(__name__)

#: Floor for any reconnect delay: a server sending ``retry: 0`` must not make us spin.
MIN_RECONNECT_DELAY: Final = 0.1
#: After the answer, how long to wait for the server to end its stream (it should at
#: once) before dropping the connection instead of returning it to the pool.
DRAIN_TIMEOUT: Final = 1.0
#: Guards making an exchange's stop event against :meth:`Exchange.abort` (both rare).
_STOP_LOCK: Final = threading.Lock()


class Link:
    """What the stream loops need from their transport (immutable, shared)."""

    __slots__ = (
        "endpoint",
        "http",
        "max_event_bytes",
        "name",
        "open_timeout",
        "policy",
        "read_timeout",
    )

    def __init__(
        self,
        endpoint: Endpoint,
        http: HTTPTransport,
        *,
        name: str,
        open_timeout: Timeout,
        policy: ReconnectPolicy,
        max_event_bytes: int,
    ) -> None:
        self.endpoint = endpoint
        self.http = http
        self.name = name
        self.open_timeout = open_timeout
        self.policy = policy
        self.max_event_bytes = max_event_bytes
        #: The longest silence on a response (``open_timeout.read``).
        self.read_timeout: float | None = open_timeout.read

    def open(
        self, method: str, headers: dict[str, str], on_start: Callable[[Call], None]
    ) -> StreamResponse:
        """Open a GET (or POST with ``body``) whose answer may be an event stream."""
        return self.http.open_stream(
            method,
            self.endpoint.url,
            headers=headers,
            idempotent=True,
            timeout=self.open_timeout,
            idle_timeout=self.read_timeout,
            on_start=on_start,
        )

    def delay(self, failures: int, server_retry: float | None) -> float:
        return max(MIN_RECONNECT_DELAY, self.policy.delay(max(failures, 1), server_retry))


class Exchange:
    """One request: its POST, the answer read for it, and any resumption.

    Owned by the thread running it (the waiting caller, or a worker); :meth:`abort` may
    be called from any thread. Internal exchanges (requests the transport replays
    itself) keep their answer in :attr:`result` instead of handing it to the session.

    Made once per call, so it is kept light: no :class:`threading.Event` unless someone
    waits on one (:attr:`stop` is made on first use: a resumption's pause, a failure
    report), a plain lock marks a request still leaving (:meth:`wait_quiet`), and the
    event-stream decoder is made when an answer turns out to be an event stream.
    """

    __slots__ = (
        "_sending",
        "_stop_event",
        "answered",
        "body",
        "call",
        "context",
        "decoder",
        "events",
        "failure",
        "generation",
        "internal",
        "max_event_bytes",
        "message",
        "method",
        "modern",
        "refusal",
        "request_id",
        "result",
        "sink",
        "stopped",
        "wire_id",
    )

    def __init__(
        self,
        message: dict[str, Any],
        context: Outgoing,
        sink: MessageSink,
        max_event_bytes: int,
        *,
        internal: bool = False,
    ) -> None:
        self.message = message
        self.context = context
        self.sink = sink
        self.request_id: RequestId = message["id"]
        #: The id on the wire: a re-issued request gets a new one.
        self.wire_id: RequestId = self.request_id
        self.method = context.method or ""
        self.modern = "Mcp-Method" in context.headers
        self.internal = internal
        self.body = _jsonrpc.encode(message)
        self.max_event_bytes = max_event_bytes
        #: Made by :meth:`read` (an event-stream answer); kept for resuming it.
        self.decoder: SSEDecoder | None = None
        #: Abandoned or closing: waits and reads end, quietly. Set only by :meth:`abort`.
        self.stopped = False
        self._stop_event: threading.Event | None = None
        #: Held while an HTTP request for this exchange is being sent.
        self._sending = threading.Lock()
        self.call: Call | None = None
        self.answered = False
        self.result: dict[str, Any] | None = None
        self.events = 0
        self.failure: TransportError | None = None
        self.generation = 0
        self.refusal: A2ASyncError | dict[str, Any] | None = None

    @property
    def stop(self) -> threading.Event:
        """Set once the exchange is stopped (:meth:`abort`); made on first use, for a
        wait that must end when it is (a resumption's pause)."""
        event = self._stop_event
        if event is None:
            with _STOP_LOCK:
                event = self._stop_event
                if event is None:
                    event = self._stop_event = threading.Event()
                    if self.stopped:
                        event.set()
        return event

    def started(self, call: Call) -> None:
        """``on_start`` of every HTTP call made for this exchange."""
        self.call = call
        if self.stopped:
            call.cancel()

    @property
    def sending(self) -> threading.Lock:
        """Held (``with exchange.sending:``) in the span in which a request of this
        exchange may still be leaving."""
        return self._sending

    def wait_quiet(self, timeout: float) -> bool:
        """Wait until no request of this exchange is leaving; False on timeout."""
        if self._sending.acquire(timeout=timeout):
            self._sending.release()
            return True
        return False

    def abort(self) -> None:
        """Stop from any thread: the current call (opening or streaming) fails at once."""
        with _STOP_LOCK:
            self.stopped = True
            event = self._stop_event
        if event is not None:
            event.set()
        call = self.call
        if call is not None:
            call.cancel()

    def reissue(self, new_id: str) -> None:
        """Send again under a new JSON-RPC id (the answer is mapped back to ours)."""
        self.wire_id = new_id
        self.message = {**self.message, "id": new_id}
        self.body = _jsonrpc.encode(self.message)
        self.decoder = None
        self.answered = False

    def take(self, message: dict[str, Any]) -> None:
        """Route one message read for this request: its answer (under the caller's id),
        or whatever else the server sent along (notifications, server requests)."""
        if "method" not in message:
            answer_id = message.get("id")
            if answer_id is None or answer_id == self.wire_id:
                self.answered = True
                if self.internal:
                    self.result = message
                    return
                if answer_id != self.request_id:
                    message = {**message, "id": self.request_id}
        self.sink.deliver(message)

    def read(self, response: StreamResponse, source: str) -> bool:
        """Read the answer's event stream to its end, delivering as events arrive (after
        the answer, for at most :data:`DRAIN_TIMEOUT`).

        Returns:
            True when done (answered, or stopped from outside); False when the stream
            ended first (:attr:`failure` says why, if it broke).
        """

        answered_before = self.answered

        def on_event(event: ServerSentEvent) -> bool:
            nonlocal answered_before
            self.events += 1
            if event.data:  # empty: a priming event; only its id matters
                for message in decode_messages(event.data, source):
                    self.take(message)
            if self.answered and not answered_before:
                answered_before = True
                # Servers end the stream right after the answer: read on to its end so
                # the connection goes back to the pool, but only briefly, so a server
                # that keeps it open cannot hold this thread.
                response.set_idle_timeout(DRAIN_TIMEOUT)
            return False

        decoder = self.decoder
        if decoder is None:
            decoder = self.decoder = SSEDecoder(self.max_event_bytes)
        try:
            self.failure = pump(response, decoder, on_event)
        except Cancelled:
            if self.stopped:
                return True
            raise
        return self.answered or self.stopped


def resume(link: Link, exchange: Exchange, headers: Callable[[], dict[str, str]]) -> None:
    """Legacy era: re-attach to a response stream that broke before the answer, with GET +
    ``Last-Event-ID``, after the server's ``retry:``; the failure counter resets when a
    resumed stream brings any event (a server that polls sends a priming event each time).

    Returns once the answer was delivered or the exchange was stopped.

    Raises:
        ConnectionLost: No event id to resume from.
        StreamInterrupted: The reconnect budget is spent.
        SessionExpired: The server forgot the session meanwhile.
        HTTPStatusError: The resuming GET was refused for good.
    """
    decoder = exchange.decoder
    failure: A2ASyncError | None = exchange.failure
    if decoder is None or not decoder.last_event_id:
        raise ConnectionLost(
            f"the response stream of {exchange.method} from {link.name} ended before the "
            "answer, without an event id to resume from" + _detail(failure),
            url=link.endpoint.name,
        )
    failures = 0
    while True:
        failures += 1
        if failures > link.policy.max_attempts:
            raise StreamInterrupted(
                f"the response stream of {exchange.method} from {link.name} could not be "
                f"resumed after {failures - 1} attempt(s)" + _detail(failure),
                url=link.endpoint.name,
                attempts=failures - 1,
                last_event_id=decoder.last_event_id,
            )
        if exchange.stop.wait(link.delay(failures, decoder.retry)):
            return
        request_headers = headers()
        # The same id until a resumed stream brings a newer one (MH-07).
        request_headers[LAST_EVENT_ID_HEADER] = decoder.last_event_id
        before = exchange.events
        try:
            with exchange.sending:
                response = link.open("GET", request_headers, exchange.started)
        except Cancelled:
            if exchange.stopped:
                return
            raise
        except (RedirectRefused, ResponseTooLarge):
            raise  # the same next time
        except TransportError as exc:
            failure = exc
            continue
        with response:
            status = response.status
            if 200 <= status < 300 and response.content_type == EVENT_STREAM_TYPE:
                if exchange.read(response, link.name):
                    return
                failure = exchange.failure
                if exchange.events > before:
                    failures = 0
                continue
            body = response.read_body(ERROR_BODY_LIMIT)
            if SESSION_HEADER in request_headers and session_unknown(status, body):
                raise SessionExpired(
                    f"{link.name} ended the MCP session while {exchange.method} was running"
                )
            error = status_error(
                "GET",
                link.endpoint.name,
                status,
                body,
                headers=response.headers,
                content_type=response.content_type,
            )
            if status not in (408, 429) and status < 500:
                raise error
            failure = error


def _detail(failure: A2ASyncError | None) -> str:
    return f": {failure}" if failure is not None else ""
