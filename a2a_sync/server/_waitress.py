"""Read deadlines for waitress: a channel that notes when each request began, and a sweep
run by waitress's own maintenance hook that answers 408 to clients past their deadline.

waitress only has ``channel_timeout``, measured from the last byte received: a client
dripping one byte a second keeps a connection forever, and enough of them fill
``connection_limit``. Here the clock starts when the connection opens (or a new request's
first byte arrives) and is never reset by more bytes. Why a channel subclass plus a sweep:
``docs/decisions.md``.

Internal to :mod:`a2a_sync.server`; imports waitress (the ``server`` extra).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final

from waitress.channel import HTTPChannel
from waitress.server import BaseWSGIServer

from .limits import ServerLimits

__all__ = ["DeadlineChannel", "install"]

logger = logging.getLogger(__name__)

_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Connection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 24\r\n"
    b"\r\n"
    b"request took too long.\r\n"
)


_PLAIN_HTTP_RESPONSE: Final = (
    b"HTTP/1.1 400 Bad Request\r\n"
    b"Connection: close\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: 47\r\n"
    b"\r\n"
    b"this server speaks plain HTTP: use http:// URLs"
)
#: A TLS handshake record starts with these bytes (content type 22, version 3.x).
_TLS_HANDSHAKE: Final = b"\x16\x03"


class DeadlineChannel(HTTPChannel):  # type: ignore[misc]  # waitress has no type hints
    """An ``HTTPChannel`` that records when the request it is reading began and when its
    headers were complete (monotonic seconds; None between requests)."""

    request_started: float | None
    headers_done: float | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The first request's clock starts at accept: a silent connection is late too.
        self.request_started = time.monotonic()
        self.headers_done = None
        self.first_bytes = True
        super().__init__(*args, **kwargs)

    def received(self, data: bytes) -> Any:
        if self.first_bytes and data:
            self.first_bytes = False
            if data.startswith(_TLS_HANDSHAKE):
                # An https:// client: answer at once (its TLS layer reports a wrong
                # version) instead of waiting for a request line that never comes.
                _answer_and_close(self, _PLAIN_HTTP_RESPONSE)
                return len(data)
        previous = self.request
        result = super().received(data)
        current = self.request
        now = time.monotonic()
        if current is None:
            self.request_started = self.headers_done = None
        else:
            if current is not previous:  # a new request began in this chunk
                if previous is not None or self.request_started is None:
                    self.request_started = now
                self.headers_done = None
            if current.headers_finished and self.headers_done is None:
                self.headers_done = now
        return result


def _late(channel: Any, now: float, limits: ServerLimits) -> bool:
    started: float | None = getattr(channel, "request_started", None)
    if started is None or channel.requests or channel.will_close or channel.close_when_flushed:
        return False  # between requests, or the app is answering: not the client's time
    done: float | None = channel.headers_done
    if done is None:
        return now - started > limits.header_timeout
    return now - done > limits.body_timeout


def _expire(channel: Any) -> None:
    """Answer 408 and close once it is sent (on the loop thread, no task running)."""
    _answer_and_close(channel, _TIMEOUT_RESPONSE)


def _answer_and_close(channel: Any, response: bytes) -> None:
    channel.request = None
    channel.request_started = channel.headers_done = None
    with channel.outbuf_lock:
        channel.outbufs[-1].append(response)
        channel.current_outbuf_count += len(response)
        channel.total_outbufs_len += len(response)
    channel.close_when_flushed = True


def _sweep(
    server: Any, limits: ServerLimits, idle: Callable[[float], None]
) -> Callable[[float], None]:
    def maintenance(now: float) -> None:
        idle(now)  # waitress's own: closes connections idle longer than idle_timeout
        clock = time.monotonic()
        late = [c for c in list(server.active_channels.values()) if _late(c, clock, limits)]
        for channel in late:
            _expire(channel)
        if late:
            logger.info("closed %d connections that were too slow to send a request", len(late))

    return maintenance


def install(socket_map: dict[int, Any], limits: ServerLimits) -> None:
    """Make every waitress server in ``socket_map`` create :class:`DeadlineChannel`\\ s and
    enforce ``limits``' read deadlines in its maintenance sweep."""
    for dispatcher in list(socket_map.values()):
        if isinstance(dispatcher, BaseWSGIServer):
            dispatcher.channel_class = DeadlineChannel
            dispatcher.maintenance = _sweep(dispatcher, limits, dispatcher.maintenance)
