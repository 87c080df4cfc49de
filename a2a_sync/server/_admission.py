"""Admission of an application's calls: the stream cap, unary calls in flight, closing.

Every binding (JSON-RPC, HTTP+JSON, gRPC) admits its calls here, so the cap and the
graceful shutdown hold for all of them at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ._streams import RefusalLog, SSEBody

__all__ = ["Admission"]


class Admission:
    """Counts open streams and unary calls in flight; refuses both once closing.

    Thread-safe.

    Args:
        max_streams: Streams open at once (more are refused: 503 with ``Retry-After``).
    """

    def __init__(self, max_streams: int) -> None:
        self.max_streams = max_streams
        # admit/release take the lock itself (a C call), not the condition's Python
        # __enter__: they run on every unary call.
        self._lock = threading.RLock()
        #: Notified whenever a stream closes, or a unary call ends once closing began
        #: (only :meth:`close` waits for unary calls).
        self.changed = threading.Condition(self._lock)
        self._streams: set[SSEBody] = set()
        self._refusals = RefusalLog()
        self._in_flight = 0
        self._closing = False

    @property
    def closing(self) -> bool:
        """True once :meth:`close` began."""
        return self._closing

    @property
    def active_streams(self) -> int:
        """Streams open now."""
        return len(self._streams)

    def admit(self) -> bool:
        """Count a unary call in flight; ``False`` when the app is closing (answer 503)."""
        with self._lock:
            if self._closing:
                return False
            self._in_flight += 1
            return True

    def release(self) -> None:
        """A unary call admitted by :meth:`admit` ended."""
        with self._lock:
            self._in_flight -= 1
            if self._closing:
                self.changed.notify_all()

    def open_stream(self, make_body: Callable[[], SSEBody]) -> SSEBody | None:
        """Register a new stream's body (made by ``make_body`` under the lock), or
        ``None`` when the cap is reached or the app is closing (answer 503)."""
        with self._lock:
            if len(self._streams) >= self.max_streams or self._closing:
                self._refusals.note(len(self._streams))
                return None
            body = make_body()
            self._streams.add(body)
            return body

    def stream_closed(self, body: SSEBody) -> None:
        """A stream's body closed (its ``on_close``)."""
        with self._lock:
            self._streams.discard(body)
            self.changed.notify_all()

    def close(self, deadline: float) -> bool:
        """Refuse new calls, interrupt open streams, wait until ``deadline`` (monotonic)
        for unary calls in flight.

        Returns:
            True when no unary call is in flight any more.
        """
        with self._lock:
            self._closing = True
            streams = list(self._streams)
        for body in streams:
            body.interrupt()
        with self._lock:
            return self.changed.wait_for(
                lambda: self._in_flight == 0, timeout=max(0.0, deadline - time.monotonic())
            )
