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

Opening, checking, decoding and reconnecting (WHATWG HTML §9.2.3, ``Last-Event-ID``, a
``reconnect`` hook for POST streams) are :class:`~a2a_sync._net.sse_reader.StreamReader`'s.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
from collections.abc import Generator, Iterator, Mapping
from typing import Any, Final

from .. import _constants as C
from .._redact import redact_url
from ..errors import A2ASyncError, Cancelled, ProtocolError, ReadTimeout
from .http import HTTPTransport
from .sse_decoder import ServerSentEvent
from .sse_options import ReconnectHook, SSEOptions, StreamRequest, resolve_sse_options
from .sse_reader import StreamReader

__all__ = ["SSEOptions", "SSEStream", "ServerSentEvent", "StreamRequest", "ReconnectHook"]

logger = logging.getLogger(__name__)

_stream_numbers = itertools.count(1)


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
        self._request = request
        self._reader = StreamReader(transport, request, opts, self._closed)
        self._queue: queue.Queue[object] = queue.Queue(maxsize=opts.queue_size)
        self._pending: list[ServerSentEvent] = []
        self._pending_index = 0
        self._finished = False
        self._lock = threading.Lock()  # guards _reading
        self._reading = False  # inline mode: the consumer is inside the socket read

        response = self._reader.open()  # raises in the caller's thread
        self.status: int = response.status
        self.headers: Mapping[str, str] = response.headers
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
            self._inline = self._reader.batches()

    # -- consumer side -----------------------------------------------------------------------

    @property
    def last_event_id(self) -> str:
        """The last event id received (``""`` when none)."""
        return self._reader.decoder.last_event_id

    @property
    def retry(self) -> float | None:
        """The reconnection time last set by the server, in seconds."""
        return self._reader.decoder.retry

    @property
    def reconnects(self) -> int:
        """How many times the stream was re-established."""
        return self._reader.reconnects

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
        self._reader.release()
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
        self._reader.abort()
        if self._inline is not None:
            # A consumer blocked reading gets Cancelled from the aborted socket and releases
            # the connection itself; otherwise nobody is reading and it is released here.
            with self._lock:
                reading = self._reading
            if not reading:
                self._reader.release()
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
            self._reader.abandon()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<SSEStream {self._request.method} {redact_url(self._request.url)} {state}>"

    # -- the reader thread ------------------------------------------------------------------------

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
        batches = self._reader.batches()
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
            self._reader.release()
        if not self._closed.is_set():
            self._put(_End(error))
