"""A threaded Server-Sent Events reader with reconnection.

:class:`SSEStream` opens the HTTP request in the caller's thread (so a refused
connection, an HTTP error or a JSON error body raises right there), then a named daemon
thread reads the body with urllib3's ``read1()`` — each event is delivered as soon as
its bytes arrive, also on close-delimited HTTP/1.0 responses where 128/512-byte
iterators hold events back — decodes it with :class:`~a2a_sync._net.sse_decoder.SSEDecoder`
and hands events to the consumer through a bounded queue (back-pressure, bounded memory).

Closing from any thread is prompt: :meth:`SSEStream.close` shuts the socket down
(urllib3 ``HTTPResponse.shutdown()`` semantics), so a blocked read returns at once instead
of waiting out its idle timeout, and the reader thread is joined.

Reconnection follows WHATWG HTML §9.2.3: after the body ends or the connection drops, wait
the reconnection time (the server's ``retry:``, else the policy's), plus exponential backoff
for consecutive failures, then reopen. For GET streams the request is repeated with
``Last-Event-ID``. A POST is never repeated blindly: the caller supplies ``reconnect``, a
function that returns the request to re-establish the stream with (A2A resubscribes to the
task) or ``None`` to end. A 204, or an answer that is not an event stream, stops
reconnecting. The failure counter resets only when an event arrives.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import Generator, Iterator, Mapping
from typing import Any, Final

import attrs

from .. import _constants as C
from .._redact import redact_url
from ..errors import (
    A2ASyncError,
    Cancelled,
    HTTPStatusError,
    ProtocolError,
    ReadTimeout,
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
from .sse_options import ReconnectHook, SSEOptions, StreamRequest, resolve_sse_options

__all__ = ["SSEOptions", "SSEStream", "ServerSentEvent", "StreamRequest", "ReconnectHook"]

logger = logging.getLogger(__name__)

_EVENT_STREAM: Final = "text/event-stream"
_JSON_TYPES: Final = ("application/json", "application/a2a+json")
#: Largest non-SSE body read to explain a failed stream request (an error document).
_ERROR_BODY_LIMIT: Final = 64 * 1024
_stream_numbers = itertools.count(1)
_NO_RETRY: Final = RetryPolicy.none()


class _End:
    """Queue marker: the stream ended (``error`` is ``None`` for a clean end)."""

    __slots__ = ("error",)

    def __init__(self, error: A2ASyncError | None) -> None:
        self.error = error


_CLOSED: Final = object()  # queue marker put by close()


class SSEStream:
    """Iterate the events of one server-sent event stream.

    Iterate from one thread (the consumer); :meth:`close` may be called from any thread.
    A consumer blocked waiting while another thread closes the stream gets
    :class:`~a2a_sync.errors.Cancelled`; iterating after close just stops. Use it as a
    context manager so the connection and the reader thread are always released.

    Args:
        transport: The HTTP transport to send requests with.
        request: The request that opens the stream.
        options: The options below as one :class:`SSEOptions` value; keywords override it.
        timeout: Limits for opening (connect, and the wait for response headers).
        idle_timeout: Longest silence between received bytes before the connection
            counts as dead (a reconnect, if allowed, follows). Keep it above the
            server's heartbeat interval.
        reconnect_policy: How often and how soon to re-establish a dropped stream.
            Defaults to the standard policy for idempotent (GET) requests and to no
            reconnects otherwise.
        reconnect: Builds the re-establishing request from the last event id. Defaults
            to repeating idempotent requests with ``Last-Event-ID``; required to
            reconnect a non-idempotent (POST) stream.
        max_event_bytes: Cap on one event.
        queue_size: Event batches buffered ahead of a slow consumer.
        json_fallback: Treat a 2xx ``application/json`` answer as a stream of one event
            whose data is that body (servers answer a streaming request with a plain
            JSON-RPC error, and MCP servers may answer a POST with JSON).
        sleep: Waits out the delay before a reconnect; tests inject a recorder. The
            default waits on the stream's close flag, so :meth:`close` ends the wait at
            once (an injected function is not interrupted; the stream checks the flag
            when it returns).
        threaded: Read on a background thread feeding a bounded queue (default), or in
            the consuming thread itself (one wake-up per event instead of two).
        retry: Retry policy for the opening request (the transport's by default).
            Reconnects never use transport retries: the reconnect policy paces them.

    Raises:
        TransportError: The stream could not be opened.
        HTTPStatusError: The server answered with a non-2xx status (body attached).
        ProtocolError: The answer is neither an event stream nor accepted JSON.
    """

    def __init__(
        self,
        transport: HTTPTransport,
        request: StreamRequest,
        options: SSEOptions | None = None,
        **overrides: Any,
    ) -> None:
        self._closed = threading.Event()  # first: __del__ reads it even if we raise
        opts = resolve_sse_options(options, overrides)
        retry, sleep, timeout = opts.retry, opts.sleep, opts.timeout
        reconnect_policy, reconnect = opts.reconnect_policy, opts.reconnect
        self._transport = transport
        self._retry = retry
        self._sleep = sleep
        self._request = request
        self._timeout = timeout
        self._idle_timeout = opts.idle_timeout
        if reconnect_policy is None:
            reconnect_policy = (
                ReconnectPolicy() if request.idempotent or reconnect else ReconnectPolicy.none()
            )
        self._policy = reconnect_policy
        if reconnect is None and request.idempotent:
            reconnect = self._repeat_with_last_event_id
        self._reconnect = reconnect
        self._json_fallback = opts.json_fallback
        self._decoder = SSEDecoder(opts.max_event_bytes)
        self._queue: queue.Queue[object] = queue.Queue(maxsize=opts.queue_size)
        self._pending: list[ServerSentEvent] = []
        self._pending_index = 0
        self._finished = False
        self._lock = threading.Lock()  # guards _response and _opening
        self._opening: Call | None = None  # a (re)connect waiting for its answer
        self._reading = False  # inline mode: the consumer is inside the socket read
        self.reconnects = 0  #: How many times the stream was re-established.

        response = self._open(request)  # raises in the caller's thread
        self._response: StreamResponse | None = response
        self.status: int = response.status
        self.headers: Mapping[str, str] = response.headers
        self._single_body: bytes | None = None
        if response.content_type in _JSON_TYPES:
            self._single_body = self._read_json_fallback(response)
        self._inline: Generator[list[ServerSentEvent], None, A2ASyncError | None] | None = None
        self._thread: threading.Thread | None = None
        if opts.threaded:
            self._thread = threading.Thread(
                target=self._run,
                name=f"a2a-sync-sse-{next(_stream_numbers)}",
                daemon=True,
            )
            self._thread.start()
        else:
            self._inline = self._batches()

    # -- consumer side -----------------------------------------------------------------------

    @property
    def last_event_id(self) -> str:
        """The last event id received (``""`` when none)."""
        return self._decoder.last_event_id

    @property
    def retry(self) -> float | None:
        """The reconnection time last set by the server, in seconds."""
        return self._decoder.retry

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def __iter__(self) -> Iterator[ServerSentEvent]:
        return self

    def __next__(self) -> ServerSentEvent:
        event = self.next_event()
        if event is None:
            raise StopIteration
        return event

    def next_event(self, timeout: float | None = None) -> ServerSentEvent | None:
        """Return the next event, or ``None`` at the end of the stream.

        Args:
            timeout: Longest wait; ``None`` waits as long as the reader is alive (the
                reader itself is bounded by the idle timeout and reconnect policy).

        Raises:
            ReadTimeout: ``timeout`` passed without an event.
            Cancelled: The stream was closed by another thread during the wait.
            TransportError, ProtocolError, HTTPStatusError: The stream failed.
        """
        pending = self._pending
        if self._pending_index < len(pending):
            event = pending[self._pending_index]
            self._pending_index += 1
            return event
        if self._finished or self._closed.is_set():
            return None
        if self._inline is not None:
            return self._next_inline()
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise ReadTimeout(
                f"no event within {timeout} s", url=self._request.url, timeout=timeout
            ) from None
        if type(item) is list:
            self._pending = item
            self._pending_index = 1
            return item[0]  # type: ignore[no-any-return]
        if item is _CLOSED:
            self._finished = True
            raise Cancelled("the stream was closed", url=self._request.url)
        assert isinstance(item, _End)
        self._finished = True
        if item.error is not None:
            raise item.error
        return None

    def _next_inline(self) -> ServerSentEvent | None:
        """Read the socket in the consumer's own thread (no reader thread)."""
        assert self._inline is not None
        with self._lock:
            self._reading = True
        try:
            batch = next(self._inline)
        except StopIteration as end:
            self._finish_inline()
            if end.value is not None:
                raise end.value from None
            return None
        except BaseException:
            self._finish_inline()
            raise
        finally:
            with self._lock:
                self._reading = False
        if self._closed.is_set():
            self._finish_inline()
        self._pending = batch
        self._pending_index = 1
        return batch[0]

    def _finish_inline(self) -> None:
        self._finished = True
        self._release()
        if self._closed.is_set():
            raise Cancelled("the stream was closed", url=self._request.url)

    def close(self) -> None:
        """Stop reading, release the connection and join the reader thread.

        Safe from any thread and idempotent; returns promptly even while the reader is
        blocked on the socket.
        """
        if self._closed.is_set():
            return
        self._closed.set()
        with self._lock:
            response, opening = self._response, self._opening
        if response is not None:
            response.abort()
        if opening is not None:
            opening.cancel()
        if self._inline is not None:
            # A consumer blocked reading gets Cancelled from the aborted socket and releases
            # the connection itself; otherwise nobody is reading and it is released here.
            with self._lock:
                reading = self._reading
            if not reading:
                self._release()
            return
        # Unblock a reader waiting on a full queue, then wake a waiting consumer.
        self._drain()
        # If the queue is full the consumer sees the closed flag on its next call instead.
        with contextlib.suppress(queue.Full):
            self._queue.put_nowait(_CLOSED)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(C.THREAD_JOIN_TIMEOUT)
            if self._thread.is_alive():  # pragma: no cover - needs a wedged interpreter
                logger.warning("SSE reader thread %s did not stop", self._thread.name)

    def __enter__(self) -> SSEStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # A forgotten stream must not keep a socket and a thread alive forever.
        if not self._closed.is_set() and hasattr(self, "_thread"):
            self._closed.set()
            response = self._response
            if response is not None:
                response.abort()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<SSEStream {self._request.method} {redact_url(self._request.url)} {state}>"

    # -- reader side ---------------------------------------------------------------------------

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

    def _read_json_fallback(self, response: StreamResponse) -> bytes:
        return response.read_body(self._transport.max_response_bytes)

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

    def _put(self, item: object) -> bool:
        """Hand an item to the consumer; False when the stream was closed meanwhile."""
        if self._closed.is_set():
            return False
        self._queue.put(item)
        return not self._closed.is_set()

    def _drain(self) -> None:
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                return

    def _run(self) -> None:
        """The reader thread: move event batches from the socket into the queue."""
        batches = self._batches()
        error: A2ASyncError | None = None
        try:
            while True:
                try:
                    batch = next(batches)
                except StopIteration as end:
                    error = end.value
                    break
                if not self._put(batch):
                    break
        except A2ASyncError as exc:
            error = exc
        except Exception as exc:  # a bug must reach the consumer, not kill it silently
            logger.exception("SSE reader failed")
            error = ProtocolError(f"SSE reader failed: {type(exc).__name__}")
        finally:
            batches.close()
            self._release()
        if not self._closed.is_set():
            self._put(_End(error))

    def _release(self) -> None:
        with self._lock:
            response, self._response = self._response, None
        if response is not None:
            response.close()

    def _batches(self) -> Generator[list[ServerSentEvent], None, A2ASyncError | None]:  # noqa: PLR0912 - one reconnect loop: read, decode, classify the failure, back off
        """Read, decode and reconnect until the stream ends, yielding the events of each
        read; return the final error (``None`` for a clean end or a close)."""
        if self._single_body is not None:
            yield [ServerSentEvent(data=self._single_body.decode("utf-8", "replace"))]
            return None
        failures = 0
        decoder = self._decoder
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
