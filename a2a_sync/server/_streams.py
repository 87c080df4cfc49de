"""The WSGI response body of an event stream: one SSE frame per event, heartbeats while
idle, one error event on failure, and cleanup when the server closes it.

Internal to :mod:`a2a_sync.server`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Final

from .._net.jsonrpc import encode_result
from ..a2a.codec import Codec
from ..a2a.types import StreamEvent
from ..errors import InternalError, RPCError
from ._wire import StartResponse, error_payload, plain, retry_after_header

__all__ = ["SSE_HEADERS", "Prefetched", "RefusalLog", "SSEBody"]

logger = logging.getLogger(__name__)

SSE_HEADERS: Final = [
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache"),
    ("X-Accel-Buffering", "no"),  # nginx: do not buffer the stream
]
_HEARTBEAT: Final = b": keep-alive\n\n"
#: At most one "streams refused" warning per this many seconds (a flood of 1,000
#: subscribers is one line, not 1,000).
REFUSAL_LOG_INTERVAL: Final = 10.0


class RefusalLog:
    """Counts streams refused at the cap; logs one summary warning per interval.
    Callers hold the application's lock."""

    def __init__(self, interval: float = REFUSAL_LOG_INTERVAL) -> None:
        self._interval = interval
        self._next = 0.0
        self._count = 0

    def note(self, open_streams: int) -> None:
        self._count += 1
        now = time.monotonic()
        if now >= self._next:
            logger.warning(
                "%d stream(s) refused with 503: %d streams open (the app's max_streams); "
                "raise max_streams (and the server's threads) if this is normal load",
                self._count,
                open_streams,
            )
            self._count = 0
            self._next = now + self._interval


class Prefetched(Iterator[StreamEvent]):
    """A plain iterator whose first item was fetched eagerly (upfront errors raise here)."""

    def __init__(self, events: Iterator[StreamEvent]) -> None:
        self._events = events
        try:
            self._first: list[StreamEvent] = [next(events)]
        except StopIteration:
            self._first = []

    def __next__(self) -> StreamEvent:
        if self._first:
            return self._first.pop()
        return next(self._events)

    def close(self) -> None:
        close = getattr(self._events, "close", None)
        if close is not None:
            close()


class SSEBody:
    """The WSGI response iterable of one stream: SSE bytes per event, heartbeats, cleanup.

    Iterated by one server thread; :meth:`interrupt` and :meth:`close` may come from others.
    """

    def __init__(
        self,
        codec: Codec,
        request_id: Any,
        revision: str,
        *,
        heartbeat_interval: float,
        closing: Callable[[], bool],
        on_close: Callable[[SSEBody], None],
    ) -> None:
        self._heartbeat_interval = heartbeat_interval
        self._closing = closing
        self._on_close = on_close
        self._codec = codec
        self._id = request_id
        self._revision = revision
        self._events: Any = None
        self._done = False
        self._closed = False

    @staticmethod
    def busy(start_response: StartResponse) -> list[bytes]:
        """The answer when no stream may open now (cap reached, or closing): 503."""
        return plain(
            start_response, "503 Service Unavailable", "too many streams", retry_after_header()
        )

    def attach(self, events: Any) -> None:
        self._events = events

    def __iter__(self) -> SSEBody:
        return self

    def __next__(self) -> bytes:
        if self._done:
            self.close()
            raise StopIteration
        events = self._events
        try:
            poll = getattr(events, "poll", None)
            if poll is not None:
                event = poll(self._heartbeat_interval)
                if event is None:
                    if self._closing():
                        raise StopIteration
                    return _HEARTBEAT
            else:
                event = next(events)
            data = self._frame(event)
        except StopIteration:
            self.close()
            raise
        except RPCError as exc:
            self._done = True
            return b"event: error\ndata: " + self._error_frame(exc) + b"\n\n"
        except Exception:  # the stream's top level: log, one error event, end
            logger.exception("internal error in an event stream")
            self._done = True
            return b"event: error\ndata: " + self._error_frame(InternalError()) + b"\n\n"
        return b"data: " + data + b"\n\n"

    def _frame(self, event: StreamEvent) -> bytes:
        """One event's ``data`` (JSON-RPC: a response carrying the request id)."""
        return encode_result(self._id, self._codec.dump_stream_event(event))

    def _error_frame(self, exc: RPCError) -> bytes:
        """An error event's ``data`` (JSON-RPC: an error response)."""
        return error_payload(exc, self._id, self._revision)

    def interrupt(self) -> None:
        """End the stream soon (server shutdown): its reader stops at the next poll."""
        self._done = True
        close = getattr(self._events, "close", None)
        if close is not None:
            close()

    def close(self) -> None:
        """Called by the WSGI server when the response ends or the client went away."""
        if self._closed:
            return
        self._closed = True
        self._done = True
        close = getattr(self._events, "close", None)
        try:
            if close is not None:
                close()
        finally:
            self._on_close(self)
