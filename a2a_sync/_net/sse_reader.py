"""The reading side of an event stream: open it, check the answer, decode the body, and
re-establish it when it drops.

:class:`StreamReader` is what :class:`~a2a_sync._net.sse.SSEStream` runs on its reader
thread (or in the consumer's thread, inline). Reconnection follows WHATWG HTML §9.2.3:
after the body ends or the connection drops, wait the reconnection time (the server's
``retry:``, else the policy's), plus exponential backoff for consecutive failures, then
reopen. For GET streams the request is repeated with ``Last-Event-ID``. A POST is never
repeated blindly: the caller supplies ``reconnect``, a function that returns the request to
re-establish the stream with (A2A resubscribes to the task) or ``None`` to end. A 204, or
an answer that is not an event stream, stops reconnecting. The failure counter resets
only when an event arrives.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Generator
from typing import Final

import attrs

from .._redact import redact_url
from ..errors import (
    A2ASyncError,
    Cancelled,
    HTTPStatusError,
    ProtocolError,
    RedirectRefused,
    ResponseTooLarge,
    StreamInterrupted,
    TransportError,
    excerpt,
)
from ..policies import ReconnectPolicy, RetryPolicy, parse_retry_after
from .http import HTTPTransport, StreamResponse
from .pool import Call
from .sse_decoder import ServerSentEvent, SSEDecoder
from .sse_options import SSEOptions, StreamRequest

__all__ = ["StreamReader"]

# The logger of the module users know (and tests listen to) for stream diagnostics.
logger = logging.getLogger("a2a_sync._net.sse")

_EVENT_STREAM: Final = "text/event-stream"
#: JSON answers read as a stream of one event when the options allow it.
_JSON_TYPES: Final = ("application/json", "application/a2a+json")
#: Largest non-SSE body read to explain a failed stream request (an error document).
_ERROR_BODY_LIMIT: Final = 64 * 1024
_NO_RETRY: Final = RetryPolicy.none()


class StreamReader:
    """Opens one event stream and reads it, reconnecting as the policy allows.

    Thread contract: :meth:`open` and :meth:`batches` run in one thread at a time (the
    caller's, then the reader's); :meth:`abort` and :meth:`release` may be called from any
    thread. ``closed`` is the owning stream's close flag: once set, the reader stops at the
    next opportunity and never reconnects.
    """

    def __init__(
        self,
        transport: HTTPTransport,
        request: StreamRequest,
        options: SSEOptions,
        closed: threading.Event,
    ) -> None:
        self._transport = transport
        self._request = request
        self._closed = closed
        self._retry = options.retry
        self._sleep = options.sleep
        self._timeout = options.timeout
        self._idle_timeout = options.idle_timeout
        reconnect, policy = options.reconnect, options.reconnect_policy
        if policy is None:
            policy = (
                ReconnectPolicy() if request.idempotent or reconnect else ReconnectPolicy.none()
            )
        self._policy = policy
        if reconnect is None and request.idempotent:
            reconnect = self._repeat_with_last_event_id
        self._reconnect = reconnect
        self._json_fallback = options.json_fallback
        self.decoder = SSEDecoder(options.max_event_bytes)
        self._lock = threading.Lock()  # guards _response and _opening
        self._opening: Call | None = None  # a (re)connect waiting for its answer
        self._response: StreamResponse | None = None
        self._single_body: bytes | None = None
        self.reconnects = 0  #: How many times the stream was re-established.

    def open(self) -> StreamResponse:
        """Open the stream (in the caller's thread, so a failure raises there); a JSON
        answer accepted as a stream of one event is read here."""
        response = self._open(self._request)
        self._response = response
        if response.content_type in _JSON_TYPES:
            self._single_body = response.read_body(self._transport.max_response_bytes)
        return response

    def abort(self) -> None:
        """Shut the open response down and abandon a (re)connect waiting for its answer,
        so a blocked read or open returns at once (safe from any thread)."""
        with self._lock:
            response, opening = self._response, self._opening
        if response is not None:
            response.abort()
        if opening is not None:
            opening.cancel()

    def abandon(self) -> None:
        """:meth:`abort` without taking the lock, for a finalizer."""
        response = self._response
        if response is not None:
            response.abort()

    def release(self) -> None:
        """Close the response (the connection goes back to the pool or is discarded)."""
        with self._lock:
            response, self._response = self._response, None
        if response is not None:
            response.close()

    # -- opening -------------------------------------------------------------------------------

    def _open(self, request: StreamRequest, *, reconnecting: bool = False) -> StreamResponse:
        headers = {
            "Accept": _EVENT_STREAM,
            "Cache-Control": "no-store",
            # Compression would make the decoder wait for whole compressed blocks.
            "Accept-Encoding": "identity",
            **request.headers,
        }
        try:
            response = self._transport.open_stream(
                request.method,
                request.url,
                body=request.body,
                headers=headers,
                idempotent=request.idempotent,
                timeout=self._timeout,
                idle_timeout=self._idle_timeout,
                # A reconnect is retried by the reconnect loop, with its backoff and cap;
                # transport retries inside each attempt would multiply the attempts.
                retry=_NO_RETRY if reconnecting else self._retry,
                on_start=self._opening_started,
            )
        finally:
            with self._lock:
                self._opening = None
        try:
            self._check(response)
        except BaseException:
            response.close()
            raise
        return response

    def _opening_started(self, call: Call) -> None:
        # Lets close() abandon a (re)connect that waits for its answer.
        with self._lock:
            self._opening = call
            closed = self._closed.is_set()
        if closed:
            call.cancel()

    def _check(self, response: StreamResponse) -> None:
        status = response.status
        if not 200 <= status < 300:
            body = response.read_body(_ERROR_BODY_LIMIT)
            # The URL as requested (like unary errors), not requests' normalized one.
            raise HTTPStatusError(
                f"{self._request.method} {self._request.url} answered HTTP {status}"
                + (f": {excerpt(body)}" if body else ""),
                status_code=status,
                body=body,
                url=self._request.url,
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
                content_type=response.content_type,
            )
        content_type = response.content_type
        if status == 204 or content_type == _EVENT_STREAM:
            return
        if self._json_fallback and content_type in _JSON_TYPES:
            return
        body = response.read_body(_ERROR_BODY_LIMIT)
        raise ProtocolError(
            f"expected an event stream from {redact_url(response.url)}, got "
            f"{content_type or 'no Content-Type'}",
            excerpt=excerpt(body),
        )

    def _repeat_with_last_event_id(self, last_event_id: str) -> StreamRequest:
        headers = dict(self._request.headers)
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        return attrs.evolve(self._request, headers=headers)

    def _wait(self, delay: float) -> bool:
        """Wait ``delay`` seconds before a reconnect; True when the stream was closed."""
        if self._sleep is None:
            return self._closed.wait(delay)
        self._sleep(delay)
        return self._closed.is_set()

    # -- reading -------------------------------------------------------------------------------

    def batches(self) -> Generator[list[ServerSentEvent], None, A2ASyncError | None]:  # noqa: PLR0912 - one reconnect loop: read, decode, classify the failure, back off
        """Read, decode and reconnect until the stream ends, yielding the events of each
        read; return the final error (``None`` for a clean end or a close)."""
        if self._single_body is not None:
            yield [ServerSentEvent(data=self._single_body.decode("utf-8", "replace"))]
            return None
        failures = 0
        decoder = self.decoder
        while True:
            response = self._response
            assert response is not None
            failure: A2ASyncError | None = None
            if response.status != 204:
                while True:
                    try:
                        data = response.read1()
                    except Cancelled:
                        if self._closed.is_set():
                            return None
                        raise  # the transport was closed: nothing to reconnect with
                    except TransportError as exc:
                        failure = exc
                        break
                    if not data:
                        break
                    events = decoder.feed(data)  # ResponseTooLarge ends the stream
                    if events:
                        failures = 0  # progress resets the backoff
                        yield events
                        if self._closed.is_set():
                            return None
                decoder.finish()  # an unterminated final event is discarded
            if self._closed.is_set():
                return None
            with self._lock:
                self._response = None
            response.close()
            if response.status == 204:
                return None  # "stop reconnecting" (WHATWG §9.2.1)
            request = self._reconnect(decoder.last_event_id) if self._reconnect else None
            if request is None or self._policy.max_attempts == 0:
                if failure is None:
                    return None
                return StreamInterrupted(
                    f"stream from {self._request.url} dropped: {failure}",
                    url=self._request.url,
                    last_event_id=decoder.last_event_id or None,
                )
            opened = None
            while opened is None:
                failures += 1
                if failures > self._policy.max_attempts:
                    return StreamInterrupted(
                        f"stream from {self._request.url} could not be re-established "
                        f"after {failures - 1} attempt(s)"
                        + (f": {failure}" if failure is not None else ""),
                        url=self._request.url,
                        attempts=failures - 1,
                        last_event_id=decoder.last_event_id or None,
                    )
                delay = self._policy.delay(failures, decoder.retry)
                logger.debug("reconnecting %s in %.3f s", redact_url(request.url), delay)
                if self._wait(delay):
                    return None
                try:
                    opened = self._open(request, reconnecting=True)
                except (TransportError, HTTPStatusError) as exc:
                    if not _worth_retrying(exc):
                        return exc  # reconnecting cannot help
                    failure = exc
                    logger.debug("reconnect to %s failed: %s", redact_url(request.url), exc)
                except ProtocolError as exc:
                    return exc  # not an event stream: stop (WHATWG "fail the connection")
            with self._lock:
                if self._closed.is_set():
                    opened.close()
                    return None
                self._response = opened
            self.reconnects += 1


def _worth_retrying(error: TransportError | HTTPStatusError) -> bool:
    """Whether a failed reconnect may succeed later (an outage, not a refusal)."""
    if isinstance(error, HTTPStatusError):
        return error.status_code in (408, 429) or error.status_code >= 500
    # A redirect or an oversized answer will be the same next time; a closed transport
    # cannot send anything any more.
    return not isinstance(error, (RedirectRefused, ResponseTooLarge, Cancelled))
