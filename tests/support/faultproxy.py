"""A fault-injecting TCP proxy for tests: toxiproxy's toxics, built from threads and sockets.

toxiproxy cannot be installed here (reliability-cases.md §10), so the suite carries this small
replacement. Put a :class:`FaultProxy` between the client under test and a real local server,
then switch faults on and off from the test while traffic flows::

    with serve_wsgi(app) as base_url, FaultProxy(base_url) as proxy:
        proxy.cut_after_events(1)  # "cut the stream after the Task event"
        client = Client(proxy.url)
        ...

Directions follow toxiproxy: ``"upstream"`` is client → server (the request), ``"downstream"``
is server → client (the response), ``"both"`` is both. Setters default to ``"downstream"``.

When a toxic takes effect:

* ``latency``, ``slice`` and ``stall`` act on every chunk forwarded after the call, on live
  and new connections.
* ``cut_after``, ``reset_after`` and ``cut_after_events`` count per connection: a live
  connection counts from the call, a new one from its first byte. The cut happens when data
  flows (an idle connection stays open).
* ``blackhole`` acts on connections accepted after the call; ``reset_peer`` and
  ``close_connections`` act once, on the connections open at the call.
* ``clear`` removes every toxic and resumes a stall (blackholed sockets stay held).

Each direction of a connection is one thread that reads a chunk (at most 64 KiB), applies the
toxics and writes it on, so back-pressure passes through. A half-close (FIN) is passed on; an
RST from the server becomes an RST to the client. The proxy can be shared across threads: the
test thread switches toxics while the proxy threads forward.

:func:`full_backlog_listener` is the loopback replacement for "connect to a black-holed
address": a listener whose accept queue is full, so connects to it time out.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Literal
from urllib.parse import urlsplit

import attrs

logger = logging.getLogger(__name__)

Address = tuple[str, int]
Direction = Literal["upstream", "downstream"]
Directions = Literal["upstream", "downstream", "both"]

WAIT_TIMEOUT = 5.0  # default bound of wait_for_connections: loopback events take milliseconds
CONNECT_TIMEOUT = 5.0  # the upstream is on loopback; a slower connect is a broken test setup
CLOSE_TIMEOUT = 5.0  # close() waits this long for the proxy threads before failing the test
THREAD_PREFIX = "a2a-sync-test-proxy"  # every proxy thread name starts with this
_READ_SIZE = 65536  # one recv per forwarded chunk
_MAX_HEAD = 65536  # an HTTP head longer than this stops the SSE scanner (stream left alone)
_BACKLOG_PROBE_TIMEOUT = 0.1  # a loopback connect that is accepted completes in microseconds
_BACKLOG_MAX_FILL = 64  # more queued connections than this means listen(0) is not honoured
_CR, _LF, _COLON = 13, 10, 58


def parse_address(upstream: Address | str) -> Address:
    """Turn ``("127.0.0.1", 8000)`` or ``"http://127.0.0.1:8000/any/path"`` into an address."""
    if isinstance(upstream, str):
        parts = urlsplit(upstream)
        if parts.hostname is None:
            raise ValueError(f"no host in {upstream!r}")
        return parts.hostname, parts.port or 80
    return upstream


def _directions(direction: Directions) -> tuple[Direction, ...]:
    if direction == "both":
        return ("upstream", "downstream")
    if direction not in ("upstream", "downstream"):
        raise ValueError(f"direction must be 'upstream', 'downstream' or 'both': {direction!r}")
    return (direction,)


@attrs.frozen
class _Shaping:
    """Per-direction toxics that change timing and segmentation, not content."""

    latency: float = 0.0
    jitter: float = 0.0
    slice_size: int | None = None
    slice_delay: float = 0.0


@attrs.frozen
class _Cut:
    """A cut toxic: close (or reset) the connection after a number of bytes or events.

    ``count`` is the bytes still to forward, or the connection's event number to cut after.
    """

    count: int
    reset: bool


class _EventScanner:
    """Finds where SSE events end in the downstream bytes of one connection.

    Follows HTTP/1.1 response framing (``Content-Length``, ``chunked``, close-delimited; 1xx,
    204 and 304 have no body) and scans only ``text/event-stream`` bodies. An event ends at the
    blank line (LF, CRLF or CR) closing a block with at least one field line; blocks of comments
    only (``: ping``) are not events. In a chunked body an event counts as delivered after the
    CRLF of its chunk: urllib3 drops a chunk whose CRLF never arrives. Responses to HEAD are not
    understood (the proxy does not see the method); upgraded or unparsable streams are left
    alone. Not thread-safe: one per connection, fed under the proxy lock.
    """

    def __init__(self) -> None:
        self._state = "head"  # head, length, close, chunk_size, chunk_data, chunk_crlf, trailer
        self._pending = bytearray()  # partial head, chunk-size or trailer line
        self._remaining = 0
        self._chunk_events = 0
        self._start_body(sse=False)

    def _start_body(self, *, sse: bool) -> None:
        self._sse = sse
        self._line_start = True
        self._has_field = False
        self._after_cr = False
        self._cr_event = False

    def feed(self, data: bytes) -> list[int]:
        """Scan the next bytes; return the offsets in ``data`` just past each completed event."""
        ends: list[int] = []
        pos = 0
        while pos < len(data) and self._state != "opaque":
            state = self._state
            if state in ("head", "chunk_size", "trailer"):
                taken = self._take_line(data, pos, b"\r\n\r\n" if state == "head" else b"\r\n")
                if taken is None:
                    break
                pos, line = taken
                try:
                    self._end_line(state, line)
                except ValueError:
                    self._state = "opaque"
            elif state == "chunk_crlf":
                take = min(self._remaining, len(data) - pos)
                pos, self._remaining = pos + take, self._remaining - take
                if not self._remaining:
                    ends.extend([pos] * self._chunk_events)
                    self._chunk_events, self._state = 0, "chunk_size"
            else:  # a body: length, close or chunk_data
                take = (
                    len(data) - pos if state == "close" else min(self._remaining, len(data) - pos)
                )
                found = self._scan_sse(data, pos, pos + take) if self._sse else []
                pos += take
                if state == "chunk_data":
                    self._chunk_events += len(found)
                else:
                    ends.extend(found)
                if state != "close":
                    self._remaining -= take
                    if not self._remaining:
                        self._state = "chunk_crlf" if state == "chunk_data" else "head"
                        self._remaining = 2 if state == "chunk_data" else 0
        return ends

    def _take_line(self, data: bytes, pos: int, terminator: bytes) -> tuple[int, bytes] | None:
        before = len(self._pending)
        search_from = max(0, before - len(terminator) + 1)
        self._pending += data[pos:]
        index = self._pending.find(terminator, search_from)
        if index < 0:
            if len(self._pending) > _MAX_HEAD:
                self._state = "opaque"
            return None
        line = bytes(self._pending[:index])
        self._pending.clear()
        return pos + index + len(terminator) - before, line

    def _end_line(self, state: str, line: bytes) -> None:
        if state == "chunk_size":
            self._remaining = int(line.split(b";")[0], 16)
            self._state = "chunk_data" if self._remaining else "trailer"
        elif state == "trailer":
            self._state = "trailer" if line else "head"
        else:
            self._start_response(line)

    def _start_response(self, head: bytes) -> None:
        status_line, *header_lines = head.split(b"\r\n")
        version, status, *_ = [*status_line.split(None, 2), b"", b""]
        if not version.startswith(b"HTTP/"):
            raise ValueError("not an HTTP response")
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip().lower()
        code = int(status)
        self._start_body(sse=headers.get(b"content-type", b"").startswith(b"text/event-stream"))
        if code == 101:
            self._state = "opaque"
        elif code < 200 or code in (204, 304):
            self._state = "head"
        elif b"chunked" in headers.get(b"transfer-encoding", b""):
            self._state = "chunk_size"
        elif b"content-length" in headers:
            self._remaining = int(headers[b"content-length"])
            self._state = "length" if self._remaining else "head"
        else:
            self._state = "close"

    def _scan_sse(self, data: bytes, start: int, stop: int) -> list[int]:
        ends: list[int] = []
        for index in range(start, stop):
            byte = data[index]
            if self._after_cr:
                self._after_cr = False
                if byte == _LF:  # the LF of a CRLF ends nothing new
                    if self._cr_event:
                        ends.append(index + 1)
                        self._cr_event = False
                    continue
            if self._cr_event:  # a lone CR ended the event
                ends.append(index)
                self._cr_event = False
            if byte in (_CR, _LF):
                if self._line_start and self._has_field:
                    self._has_field = False
                    if byte == _LF:
                        ends.append(index + 1)
                    else:
                        self._cr_event = True
                self._line_start = True
                self._after_cr = byte == _CR
            elif self._line_start:
                self._line_start = False
                self._has_field = self._has_field or byte != _COLON
        if self._cr_event:  # the LF (if any) is not here yet: the event is complete anyway
            ends.append(stop)
            self._cr_event = False
        return ends


@attrs.define
class _Link:
    """Cut bookkeeping of one direction of one connection (guarded by the proxy lock)."""

    bytes_cut: _Cut | None = None
    events_cut: _Cut | None = None
    scanner: _EventScanner | None = None
    events_seen: int = 0

    def cut_point(self, data: bytes) -> tuple[int | None, bool]:
        """Account for ``data``; return where to cut it (None: forward all) and whether to reset."""
        cuts: list[tuple[int, bool]] = []
        if self.bytes_cut is not None:
            if len(data) >= self.bytes_cut.count:
                cuts.append((self.bytes_cut.count, self.bytes_cut.reset))
            else:
                self.bytes_cut = attrs.evolve(
                    self.bytes_cut, count=self.bytes_cut.count - len(data)
                )
        if self.scanner is not None:
            ends = self.scanner.feed(data)
            seen_before, self.events_seen = self.events_seen, self.events_seen + len(ends)
            if self.events_cut is not None and self.events_cut.count <= self.events_seen:
                cuts.append((ends[self.events_cut.count - seen_before - 1], self.events_cut.reset))
        return min(cuts) if cuts else (None, False)


class _Connection:
    """One proxied connection: a client socket, an upstream socket and two pump threads."""

    def __init__(self, client: socket.socket, upstream: socket.socket, lock: threading.Condition):
        self.client = client
        self.upstream = upstream
        self.closing = threading.Event()
        self.threads: list[threading.Thread] = []
        self.links: dict[Direction, _Link] = {
            "upstream": _Link(),
            "downstream": _Link(scanner=_EventScanner()),
        }
        self._lock = lock
        self._pumps_running = 2

    def shutdown(self, *, reset: bool) -> None:
        """Stop forwarding; the client gets a FIN, or an RST if ``reset``. Idempotent."""
        with self._lock:
            if self.closing.is_set():
                return
            self.closing.set()
            self._lock.notify_all()
        with contextlib.suppress(OSError):
            if reset:
                linger = struct.pack("ii", 1, 0)
                self.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                # SHUT_RD wakes the thread blocked in recv without sending a FIN; the RST goes
                # out when the last pump closes the socket (a close() racing a blocked recv
                # would be deferred by the kernel until that recv returns).
                self.client.shutdown(socket.SHUT_RD)
            else:
                self.client.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.upstream.shutdown(socket.SHUT_RDWR)

    def pump_finished(self) -> bool:
        """Called by each pump on exit; the last one closes both sockets and returns True."""
        with self._lock:
            self._pumps_running -= 1
            if self._pumps_running:
                return False
        self.client.close()
        self.upstream.close()
        return True


class FaultProxy:
    """A TCP proxy on 127.0.0.1 whose faults are switched at run time by the test.

    Args:
        upstream: The server to forward to, as ``(host, port)`` or an ``http://`` URL.

    Attributes:
        address: ``("127.0.0.1", port)`` the clients connect to.
        url: ``"http://127.0.0.1:port"``; the ``Host`` header clients send names this port.

    Use as a context manager or call :meth:`close`. Safe to share across threads.
    """

    def __init__(self, upstream: Address | str) -> None:
        self._upstream = parse_address(upstream)
        self._lock = threading.Condition()
        self._shaping: dict[Direction, _Shaping] = {
            "upstream": _Shaping(),
            "downstream": _Shaping(),
        }
        self._bytes_cut: dict[Direction, _Cut | None] = {"upstream": None, "downstream": None}
        self._events_cut: _Cut | None = None
        self._stalled: set[Direction] = set()
        self._blackhole = False
        self._held: list[socket.socket] = []
        self._connections: list[_Connection] = []
        self._threads: list[threading.Thread] = []
        self._accepted = 0
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address: Address = self._listener.getsockname()[:2]
        self.url = f"http://127.0.0.1:{self.address[1]}"
        self._name = f"{THREAD_PREFIX}-{self.address[1]}"
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"{self._name}-accept", daemon=True
        )
        self._accept_thread.start()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<FaultProxy {self.url} -> {self._upstream[0]}:{self._upstream[1]}>"

    # -- toxics ----------------------------------------------------------------------------

    def latency(
        self, seconds: float, *, jitter: float = 0.0, direction: Directions = "downstream"
    ) -> None:
        """Delay every chunk by ``seconds`` ± ``jitter`` (uniform) before forwarding it.

        A chunk is delayed after it is read, so a steady stream slows down like a slow link.
        ``latency(0)`` removes the toxic.
        """
        if seconds < 0 or jitter < 0:
            raise ValueError("latency and jitter must be >= 0")
        self._reshape(
            direction, lambda shaping: attrs.evolve(shaping, latency=seconds, jitter=jitter)
        )

    def slice(self, size: int, *, delay: float = 0.0, direction: Directions = "downstream") -> None:
        """Write every chunk in ``size``-byte pieces, ``delay`` seconds apart (TCP_NODELAY is set).

        Without a delay a fast reader still gets the pieces one by one in most reads, but the
        kernel may coalesce them; use a small delay when the test needs separate reads.
        :meth:`clear` removes the toxic.
        """
        if size < 1 or delay < 0:
            raise ValueError("size must be >= 1 and delay >= 0")
        self._reshape(
            direction, lambda shaping: attrs.evolve(shaping, slice_size=size, slice_delay=delay)
        )

    def cut_after(self, n_bytes: int, *, direction: Directions = "downstream") -> None:
        """Forward ``n_bytes`` more bytes per connection, then close it (toxiproxy ``limit_data``).

        The client gets exactly ``n_bytes`` and a FIN. Counted per connection from this call
        (new connections: from their start).
        """
        self._set_bytes_cut(direction, _Cut(n_bytes, reset=False))

    def reset_after(self, n_bytes: int, *, direction: Directions = "downstream") -> None:
        """Like :meth:`cut_after`, but the connection ends with an RST instead of a FIN."""
        self._set_bytes_cut(direction, _Cut(n_bytes, reset=True))

    def cut_after_events(self, count: int, *, reset: bool = False) -> None:
        """Close each connection once ``count`` more SSE events went downstream.

        The client receives the events completely (in chunked bodies up to the end of the
        chunk) and then a FIN (RST if ``reset``). See :class:`_EventScanner` for what counts as
        an event. Counted per connection from this call (new connections: from their start).
        """
        if count < 1:
            raise ValueError("count must be >= 1")
        with self._lock:
            self._events_cut = _Cut(count, reset)
            for connection in self._connections:
                link = connection.links["downstream"]
                link.events_cut = _Cut(link.events_seen + count, reset)

    def stall(self, *, direction: Directions = "both") -> None:
        """Stop forwarding (data and FIN are held, sockets stay open) until :meth:`resume`.

        This is toxiproxy's ``timeout`` toxic with timeout 0: the client hangs until its own
        timeout. ``direction="downstream"`` lets the request through and holds the response.
        """
        with self._lock:
            self._stalled.update(_directions(direction))
            self._lock.notify_all()

    def resume(self) -> None:
        """Release a :meth:`stall`; held data is forwarded."""
        with self._lock:
            self._stalled.clear()
            self._lock.notify_all()

    def blackhole(self) -> None:
        """Accept new connections but never read from them nor connect upstream."""
        with self._lock:
            self._blackhole = True

    def reset_peer(self) -> None:
        """Send an RST to the client of every open connection (``SO_LINGER`` (1, 0), close)."""
        for connection in self._live_connections():
            connection.shutdown(reset=True)

    def close_connections(self) -> None:
        """Close every open connection with a FIN (like a server closing idle keep-alives)."""
        for connection in self._live_connections():
            connection.shutdown(reset=False)

    def clear(self) -> None:
        """Remove every toxic and resume a stall; open connections carry on unharmed."""
        with self._lock:
            self._shaping = {"upstream": _Shaping(), "downstream": _Shaping()}
            self._bytes_cut = {"upstream": None, "downstream": None}
            self._events_cut = None
            self._blackhole = False
            self._stalled.clear()
            for connection in self._connections:
                for link in connection.links.values():
                    link.bytes_cut = link.events_cut = None
            self._lock.notify_all()

    # -- observation -----------------------------------------------------------------------

    @property
    def connections_accepted(self) -> int:
        """How many client connections the proxy accepted and set up (blackholed included)."""
        with self._lock:
            return self._accepted

    @property
    def open_connections(self) -> int:
        """How many proxied connections are currently open (blackholed ones excluded)."""
        with self._lock:
            return len(self._connections)

    def wait_for_connections(self, count: int, timeout: float = WAIT_TIMEOUT) -> None:
        """Block until ``count`` connections were accepted and set up in total.

        Once it returns, those connections are subject to every toxic and to
        :meth:`reset_peer` / :meth:`close_connections`.

        Raises:
            AssertionError: Fewer arrived within ``timeout`` seconds.
        """
        with self._lock:
            if not self._lock.wait_for(lambda: self._accepted >= count, timeout):
                raise AssertionError(f"{self._accepted} of {count} connections within {timeout} s")

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Stop accepting, close every connection and join all proxy threads. Idempotent.

        Raises:
            AssertionError: A proxy thread did not finish within :data:`CLOSE_TIMEOUT`.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(OSError):  # wake the blocked accept()
            socket.create_connection(self.address, timeout=CONNECT_TIMEOUT).close()
        self._accept_thread.join(CLOSE_TIMEOUT)
        self._listener.close()
        for connection in self._live_connections():
            connection.shutdown(reset=False)
        with self._lock:
            held, self._held = self._held, []
            threads = [self._accept_thread, *self._threads]
        for sock in held:
            sock.close()
        join_threads(threads, CLOSE_TIMEOUT)

    def _live_connections(self) -> list[_Connection]:
        with self._lock:
            return list(self._connections)

    def _reshape(self, direction: Directions, change: Callable[[_Shaping], _Shaping]) -> None:
        with self._lock:
            for name in _directions(direction):
                self._shaping[name] = change(self._shaping[name])

    def _set_bytes_cut(self, direction: Directions, cut: _Cut) -> None:
        if cut.count < 0:
            raise ValueError("n_bytes must be >= 0")
        with self._lock:
            for name in _directions(direction):
                self._bytes_cut[name] = cut
                for connection in self._connections:
                    connection.links[name].bytes_cut = cut

    def _accept_loop(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                if self._blackhole:
                    self._held.append(client)
                    self._count_accepted()
                    continue
            self._start_connection(client)

    def _count_accepted(self) -> int:
        # Counted once the connection is set up, so after wait_for_connections() every toxic
        # and reset_peer() reach it. Called with the lock held.
        self._accepted += 1
        self._lock.notify_all()
        return self._accepted

    def _start_connection(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self._upstream, timeout=CONNECT_TIMEOUT)
        except OSError:
            logger.debug("proxy %s: upstream connect failed", self.url, exc_info=True)
            client.close()
            with self._lock:
                self._count_accepted()
            return
        upstream.settimeout(None)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection = _Connection(client, upstream, self._lock)
        with self._lock:
            number = self._count_accepted()
            for name in ("upstream", "downstream"):
                connection.links[name].bytes_cut = self._bytes_cut[name]
            connection.links["downstream"].events_cut = self._events_cut
            self._connections.append(connection)
            # Forget pump threads that already finished (every earlier one was started):
            # a long soak through one proxy must not keep a Thread per connection ever made.
            self._threads = [t for t in self._threads if t.ident is None or t.is_alive()]
            for name in ("upstream", "downstream"):
                thread = threading.Thread(
                    target=self._pump,
                    args=(connection, name),
                    name=f"{self._name}-c{number}-{name}",
                    daemon=True,
                )
                self._threads.append(thread)
                connection.threads.append(thread)
        for thread in connection.threads:
            thread.start()

    def _pump(self, connection: _Connection, direction: Direction) -> None:
        if direction == "upstream":
            source, target = connection.client, connection.upstream
        else:
            source, target = connection.upstream, connection.client
        try:
            while True:
                data = source.recv(_READ_SIZE)
                if not self._wait_while_stalled(connection, direction):
                    break
                if not data:
                    target.shutdown(socket.SHUT_WR)  # pass the FIN on (half-close)
                    break
                if not self._forward(connection, direction, data, target):
                    break
        except OSError as exc:
            # An RST from the server is passed on as an RST; anything else ends the connection.
            connection.shutdown(
                reset=isinstance(exc, ConnectionResetError) and direction == "downstream"
            )
        finally:
            if connection.pump_finished():
                with self._lock:
                    self._connections.remove(connection)

    def _wait_while_stalled(self, connection: _Connection, direction: Direction) -> bool:
        with self._lock:  # unbounded on purpose: resume(), clear() and close() notify
            self._lock.wait_for(
                lambda: direction not in self._stalled or connection.closing.is_set()
            )
            return not connection.closing.is_set()

    def _forward(
        self, connection: _Connection, direction: Direction, data: bytes, target: socket.socket
    ) -> bool:
        with self._lock:
            shaping = self._shaping[direction]
            cut, reset = connection.links[direction].cut_point(data)
        delay = shaping.latency
        if shaping.jitter:
            delay = max(0.0, delay + random.uniform(-shaping.jitter, shaping.jitter))
        if delay and connection.closing.wait(delay):
            return False
        if cut is not None:
            data = data[:cut]
        size = shaping.slice_size or len(data) or 1
        for start in range(0, len(data), size):
            if start and shaping.slice_delay and connection.closing.wait(shaping.slice_delay):
                return False
            target.sendall(data[start : start + size])
        if cut is not None:
            connection.shutdown(reset=reset)
            return False
        return True


def join_threads(threads: list[threading.Thread], timeout: float) -> None:
    """Join ``threads`` within one shared deadline; fail the test if any is left running."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    alive = [thread.name for thread in threads if thread.is_alive()]
    if alive:
        raise AssertionError(f"threads still running after {timeout} s: {alive}")


@contextlib.contextmanager
def full_backlog_listener() -> Iterator[Address]:
    """Yield the address of a loopback listener whose accept queue is full: connects time out.

    The listener uses ``listen(0)``; it is filled with connections that are never accepted
    until one more connect times out. Linux (checked on 6.18) queues ``backlog + 1`` = 1
    connection and then *drops* further SYNs (``tcp_abort_on_overflow`` = 0, the default), so
    a client's connect retransmits its SYN and runs into its connect timeout: a real
    ``ConnectTimeout`` without leaving 127.0.0.1. Setting it up costs one probe timeout (0.1 s).

    Raises:
        RuntimeError: The kernel kept accepting connections (behaviour differs on this OS).
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    fillers: list[socket.socket] = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        address: Address = listener.getsockname()[:2]
        for _ in range(_BACKLOG_MAX_FILL):
            probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            probe.settimeout(_BACKLOG_PROBE_TIMEOUT)
            try:
                probe.connect(address)
            except TimeoutError:
                probe.close()
                break
            fillers.append(probe)
        else:
            raise RuntimeError("a listen(0) socket kept accepting; no connect timeout possible")
        yield address
    finally:
        for sock in fillers:
            sock.close()
        listener.close()
