"""A TCP relay for the demo that cuts the first event stream on purpose.

The demo's client talks to the agent through :class:`StreamCutter`, which forwards bytes
both ways and, once, closes the connection carrying an event stream after a given number
of events: the network failure the resilient client must survive. Every later connection
(the client's resubscription) passes untouched.

It understands just enough HTTP for that: the first response whose head says
``Content-Type: text/event-stream`` is watched, and the cut falls right after the chunk
holding the n-th event (``\\n\\n`` followed by the chunk's ``\\r\\n``; the a2a_sync server
writes one chunk per event), so the client has received exactly n whole events. The test
suite has a general fault proxy; this one is small on purpose and is not a public API.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Final
from urllib.parse import urlsplit

from ..errors import ConfigurationError

__all__ = ["StreamCutter"]

logger = logging.getLogger(__name__)

#: Longest wait for the relay's threads when it closes (loopback sockets close at once).
CLOSE_TIMEOUT: Final = 5.0
#: Longest wait to connect to the agent (it is on this machine).
CONNECT_TIMEOUT: Final = 5.0
#: Downstream bytes kept to find the stream's head and events; past this the relay stops
#: looking (a demo stream is a few kilobytes).
SCAN_LIMIT: Final = 1 << 20
_READ_SIZE: Final = 65536
_EVENT_CHUNK_END: Final = b"\n\n\r\n"
_SSE_TYPE: Final = b"content-type: text/event-stream"


class _Scanner:
    """Finds the cut point in one connection's downstream bytes (one reader thread)."""

    def __init__(self, events: int) -> None:
        self._events = events
        self._seen = bytearray()
        self._body_start: int | None = None

    def cut_point(self, data: bytes) -> int | None:
        """Feed ``data``; return how much of it to forward before cutting, or ``None``."""
        if len(self._seen) > SCAN_LIMIT:
            return None
        offset = len(self._seen)
        self._seen += data
        if self._body_start is None:
            found = bytes(self._seen).lower().find(_SSE_TYPE)
            head_end = self._seen.find(b"\r\n\r\n", found) if found >= 0 else -1
            if head_end < 0:
                return None
            self._body_start = head_end + 4
        position, count = self._body_start, 0
        while count < self._events:
            index = self._seen.find(_EVENT_CHUNK_END, position)
            if index < 0:
                return None
            position, count = index + len(_EVENT_CHUNK_END), count + 1
        return position - offset


class StreamCutter:
    """Relay ``127.0.0.1:<port>`` → ``upstream``; cut the first event stream after n events.

    Thread-safe; one accept thread plus one thread per connection, all daemons, joined by
    :meth:`close`. Use it as a context manager.

    Args:
        upstream: The agent's base URL (``http://127.0.0.1:8000``).
        cut_after_events: Events the client receives before its stream is cut.
        on_cut: Called (on a relay thread) with the number of events once the cut is made.

    Attributes:
        url: The relay's base URL.
        cut: Set once the stream has been cut.

    Raises:
        ConfigurationError: ``upstream`` is not an ``http://host:port`` URL.
    """

    def __init__(
        self,
        upstream: str,
        *,
        cut_after_events: int,
        on_cut: Callable[[int], None] | None = None,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ConfigurationError(f"the relay forwards to http://host:port, not {upstream!r}")
        self._upstream = (parts.hostname, parts.port or 80)
        self._events = cut_after_events
        self._on_cut = on_cut
        self.cut = threading.Event()
        self._lock = threading.Lock()  # guards _sockets, _threads, _closed, the cut claim
        self._cut_claimed = False
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"a2a-sync-demo-relay-{port}", daemon=True
        )
        self._accept_thread.start()

    def __enter__(self) -> StreamCutter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<StreamCutter {self.url} -> {self._upstream[0]}:{self._upstream[1]}>"

    def close(self) -> bool:
        """Stop accepting, close every connection, join the threads. Idempotent.

        Returns:
            True when every relay thread ended within :data:`CLOSE_TIMEOUT`.
        """
        with self._lock:
            already, self._closed = self._closed, True
            sockets, threads = list(self._sockets), [self._accept_thread, *self._threads]
        if not already:
            with contextlib.suppress(OSError):  # wake the blocked accept()
                socket.create_connection(self._listener.getsockname(), CONNECT_TIMEOUT).close()
        for sock in sockets:
            _shut(sock)
        deadline = time.monotonic() + CLOSE_TIMEOUT
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._listener.close()
        left = [thread.name for thread in threads if thread.is_alive()]
        if left:
            logger.warning("relay threads still running: %s", left)
        return not left

    # -- threads ------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._upstream, CONNECT_TIMEOUT)
            except OSError:
                logger.warning("relay: the agent at %s:%d refused", *self._upstream)
                client.close()
                continue
            with self._lock:
                if self._closed:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
                thread = threading.Thread(
                    target=self._relay,
                    args=(client, upstream),
                    name=f"{self._accept_thread.name}-c{len(self._threads) + 1}",
                    daemon=True,
                )
                self._threads.append(thread)
            thread.start()

    def _relay(self, client: socket.socket, upstream: socket.socket) -> None:
        scanner = _Scanner(self._events)
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ, upstream)
            selector.register(upstream, selectors.EVENT_READ, client)
            try:
                while True:
                    for key, _ in selector.select(CLOSE_TIMEOUT):
                        source: socket.socket = key.fileobj  # type: ignore[assignment]
                        target: socket.socket = key.data
                        data = source.recv(_READ_SIZE)
                        if not data:
                            return
                        if source is upstream and self._forward_until_cut(scanner, data, client):
                            return
                        if source is client:
                            target.sendall(data)
                    with self._lock:
                        if self._closed:
                            return
            except OSError:
                return  # either side went away: the relay's connection ends too
            finally:
                for sock in (client, upstream):
                    _shut(sock)
                    sock.close()
                with self._lock:
                    self._sockets = [s for s in self._sockets if s not in (client, upstream)]

    def _forward_until_cut(self, scanner: _Scanner, data: bytes, client: socket.socket) -> bool:
        """Forward downstream ``data``; True when this connection was cut."""
        with self._lock:
            watching = not self._cut_claimed
        cut = scanner.cut_point(data) if watching else None
        if cut is None:
            client.sendall(data)
            return False
        with self._lock:
            if self._cut_claimed:  # another connection was cut first
                client.sendall(data)
                return False
            self._cut_claimed = True
        client.sendall(data[:cut])
        logger.info("relay: cut the stream after %d events", self._events)
        self.cut.set()
        if self._on_cut is not None:
            self._on_cut(self._events)
        return True


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
