"""Local HTTP servers for tests: a scripted raw-socket server and WSGI apps in threads.

:class:`ScriptedServer` is modelled on urllib3's ``SocketDummyServerTestCase``: it parses and
records each request, then hands the raw socket to a handler that writes whatever bytes the test
needs: a full response (:func:`respond`, :func:`respond_json`), a head and a partial body
(:func:`write_head`, :func:`write_chunk`), nothing at all (:func:`close_connection`), an RST
(:func:`reset_connection`), or nothing until the test says so (:func:`hold`)::

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Content-Length": "10"})
        sock.sendall(b"abc")
        close_connection(sock)  # IncompleteRead for the client

    with ScriptedServer(handler) as server:
        ...
        assert server.wait_for_requests(1)[0].method == "POST"

:func:`serve_wsgi` runs a WSGI app on waitress (HTTP/1.1, chunked streaming, the supported
server) or on a threaded wsgiref server (HTTP/1.0, close-delimited bodies).

Everything binds 127.0.0.1 port 0; every thread is a named daemon joined on close.
"""

from __future__ import annotations

import contextlib
import http
import itertools
import json
import logging
import selectors
import socket
import socketserver
import struct
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import attrs
from requests.structures import CaseInsensitiveDict

from tests.support.faultproxy import CLOSE_TIMEOUT, WAIT_TIMEOUT, join_threads

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication

logger = logging.getLogger(__name__)

THREAD_PREFIX = "a2a-sync-test-server"  # every thread started here is named with this prefix
_MAX_LINE = 65536  # a request line or header block longer than this is refused
_READ_SIZE = 65536

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


@attrs.frozen
class RecordedRequest:
    """One request as the scripted server read it.

    Attributes:
        method: The request method, e.g. ``"POST"``.
        path: The request target as sent, e.g. ``"/rpc?x=1"``.
        headers: Case-insensitive; repeated headers are joined with ``", "``.
        body: The body, de-chunked if it was sent chunked.
        version: The protocol of the request line, e.g. ``"HTTP/1.1"``.
    """

    method: str
    path: str
    headers: CaseInsensitiveDict[str]
    body: bytes
    version: str = "HTTP/1.1"

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


Handler = Callable[[socket.socket, RecordedRequest], None]


# -- writing responses ---------------------------------------------------------------------


def write_head(
    sock: socket.socket, status: int, headers: Headers = (), *, reason: str | None = None
) -> None:
    """Write a status line and headers (nothing else: no Content-Length is added)."""
    phrase = reason if reason is not None else _reason(status)
    lines = [
        f"HTTP/1.1 {status} {phrase}",
        *(f"{name}: {value}" for name, value in _items(headers)),
    ]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))


def write_chunk(sock: socket.socket, data: bytes) -> None:
    """Write one chunk of a chunked body; ``b""`` writes the terminating zero-size chunk."""
    sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))


def respond(
    sock: socket.socket,
    status: int = 200,
    body: bytes | Iterable[bytes] = b"",
    *,
    headers: Headers = (),
    chunked: bool = False,
    close: bool = False,
) -> None:
    """Write a complete response.

    Args:
        sock: The connection socket the handler got.
        status: The status code; the reason phrase is the standard one.
        body: The body, or its pieces (each becomes one chunk if ``chunked``).
        headers: Extra headers; ``Content-Length`` or ``Transfer-Encoding`` is added.
        chunked: Send the body with chunked transfer coding.
        close: Send ``Connection: close`` and close the connection (FIN) afterwards.
    """
    pieces = [body] if isinstance(body, bytes) else list(body)
    extra = _items(headers)
    if chunked:
        extra.append(("Transfer-Encoding", "chunked"))
    else:
        extra.append(("Content-Length", str(sum(len(piece) for piece in pieces))))
    if close:
        extra.append(("Connection", "close"))
    write_head(sock, status, extra)
    for piece in pieces:
        if chunked and piece:
            write_chunk(sock, piece)
        elif piece:
            sock.sendall(piece)
    if chunked:
        write_chunk(sock, b"")
    if close:
        close_connection(sock)


def respond_json(
    sock: socket.socket,
    payload: Any,
    *,
    status: int = 200,
    headers: Headers = (),
    close: bool = False,
) -> None:
    """Write ``payload`` as an ``application/json`` response."""
    extra = [("Content-Type", "application/json"), *_items(headers)]
    respond(sock, status, json.dumps(payload).encode(), headers=extra, close=close)


def close_connection(sock: socket.socket) -> None:
    """Close the connection gracefully (FIN), e.g. without answering at all."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def reset_connection(sock: socket.socket) -> None:
    """Abort the connection with an RST (``SO_LINGER`` (1, 0), then close)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def hold(release: threading.Event, timeout: float = WAIT_TIMEOUT) -> None:
    """Stall the handler until the test sets ``release``.

    Raises:
        AssertionError: ``release`` was not set within ``timeout`` seconds.
    """
    if not release.wait(timeout):
        raise AssertionError(f"handler not released within {timeout} s")


def _reason(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def _items(headers: Headers) -> list[tuple[str, str]]:
    return list(headers.items() if isinstance(headers, Mapping) else headers)


# -- reading requests ----------------------------------------------------------------------


class _BadRequest(Exception):
    """The client sent something that is not an HTTP/1.x request."""


class _Reader:
    """Buffered reads from a socket without ``makefile()`` (which would keep the fd open)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()

    def _fill(self) -> bool:
        data = self._sock.recv(_READ_SIZE)
        self._buffer += data
        return bool(data)

    def read_until(self, terminator: bytes) -> bytes | None:
        """Read through ``terminator``; None on EOF before it."""
        start = 0
        while (index := self._buffer.find(terminator, start)) < 0:
            if len(self._buffer) > _MAX_LINE:
                raise _BadRequest("line or header block too long")
            start = max(0, len(self._buffer) - len(terminator) + 1)
            if not self._fill():
                return None
        end = index + len(terminator)
        data = bytes(self._buffer[:end])
        del self._buffer[:end]
        return data

    def read_exactly(self, size: int) -> bytes | None:
        """Read ``size`` bytes; None on EOF before them."""
        while len(self._buffer) < size:
            if not self._fill():
                return None
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data

    @property
    def empty(self) -> bool:
        return not self._buffer


def _read_request(reader: _Reader) -> RecordedRequest | None:
    """Read one request; None when the client closed the connection between requests."""
    head = reader.read_until(b"\r\n\r\n")
    if head is None:
        if not reader.empty:
            raise _BadRequest("connection closed inside the request head")
        return None
    request_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _BadRequest(f"bad request line {request_line!r}")
    headers: CaseInsensitiveDict[str] = CaseInsensitiveDict()
    for line in header_lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise _BadRequest(f"bad header line {line!r}")
        name, value = name.strip(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    try:
        if "chunked" in headers.get("Transfer-Encoding", "").lower():
            body = _read_chunked(reader)
        else:
            body = reader.read_exactly(int(headers.get("Content-Length", "0")))
    except ValueError as exc:
        raise _BadRequest(f"bad body framing: {exc}") from exc
    if body is None:
        raise _BadRequest("connection closed inside the request body")
    return RecordedRequest(parts[0], parts[1], headers, body, parts[2])


def _read_chunked(reader: _Reader) -> bytes | None:
    body = bytearray()
    while True:
        size_line = reader.read_until(b"\r\n")
        if size_line is None:
            return None
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            while (trailer := reader.read_until(b"\r\n")) not in (b"\r\n", None):
                pass  # trailers are read and dropped
            return bytes(body) if trailer is not None else None
        chunk = reader.read_exactly(size + 2)
        if chunk is None:
            return None
        body += chunk[:-2]


# -- the scripted server -------------------------------------------------------------------


class ScriptedServer:
    """A raw-socket HTTP/1.1 server on 127.0.0.1 whose answers a handler writes byte by byte.

    Every request is parsed (``Content-Length`` and chunked bodies), recorded in
    :attr:`requests`, then ``handler(sock, request)`` runs in the connection's thread. If the
    handler leaves the socket open, the next request on the connection is read (keep-alive);
    once it closes the socket the connection ends. A request that cannot be parsed is answered
    with 400 and closes the connection; it is not recorded.

    A handler that blocks (:func:`hold`) must be released by the test, or :meth:`close` fails
    the test after :data:`CLOSE_TIMEOUT`. An exception from the handler (other than a socket
    error from a client that went away) is re-raised by :meth:`close` as an AssertionError.
    Safe to share across threads.

    Args:
        handler: Writes the response for each request.

    Attributes:
        address: ``("127.0.0.1", port)``.
        url: ``"http://127.0.0.1:port"``.
    """

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._lock = threading.Condition()
        self._requests: list[RecordedRequest] = []
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []
        self._accepted = 0
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self.url = f"http://127.0.0.1:{self.address[1]}"
        self._name = f"{THREAD_PREFIX}-scripted-{self.address[1]}"
        self._accept_thread = threading.Thread(
            target=self._accept_loop, name=f"{self._name}-accept", daemon=True
        )
        self._accept_thread.start()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A copy of the requests recorded so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def connections_accepted(self) -> int:
        """How many connections were accepted so far."""
        with self._lock:
            return self._accepted

    def wait_for_requests(self, count: int, timeout: float = WAIT_TIMEOUT) -> list[RecordedRequest]:
        """Block until ``count`` requests were recorded; return all recorded so far.

        Raises:
            AssertionError: Fewer arrived within ``timeout`` seconds.
        """
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= count, timeout):
                raise AssertionError(f"{len(self._requests)} of {count} requests in {timeout} s")
            return list(self._requests)

    def close(self) -> None:
        """Stop accepting, shut every connection down and join all threads. Idempotent.

        Raises:
            AssertionError: A handler failed, or a thread was still running after
                :data:`CLOSE_TIMEOUT` (a handler that was never released).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(OSError):  # wake the blocked accept()
            socket.create_connection(self.address, timeout=CLOSE_TIMEOUT).close()
        self._accept_thread.join(CLOSE_TIMEOUT)
        self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), [self._accept_thread, *self._threads]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        join_threads(threads, CLOSE_TIMEOUT)
        if self._errors:
            raise AssertionError("a ScriptedServer handler failed") from self._errors[0]

    def _accept_loop(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            # Head and body go out in separate sends; without this, Nagle plus delayed
            # ACKs hold the body back ~40 ms on a kept-alive connection.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed:
                    sock.close()
                    return
                self._accepted += 1
                self._sockets.append(sock)
                thread = threading.Thread(
                    target=self._serve,
                    args=(sock,),
                    name=f"{self._name}-c{self._accepted}",
                    daemon=True,
                )
                self._threads.append(thread)
            thread.start()

    def _serve(self, sock: socket.socket) -> None:
        reader = _Reader(sock)
        try:
            while (request := _read_request(reader)) is not None:
                with self._lock:
                    self._requests.append(request)
                    self._lock.notify_all()
                self._handler(sock, request)
                if sock.fileno() == -1:
                    return
        except _BadRequest as exc:
            logger.warning("scripted server %s: bad request: %s", self.url, exc)
            with contextlib.suppress(OSError):
                respond(sock, 400, close=True)
        except OSError:
            logger.debug("scripted server %s: connection error", self.url, exc_info=True)
        except Exception as exc:  # surfaced by close() so the test fails
            logger.exception("scripted server %s: handler failed", self.url)
            with self._lock:
                self._errors.append(exc)
        finally:
            with self._lock:
                self._sockets.remove(sock)
            sock.close()


# -- WSGI apps in a thread -----------------------------------------------------------------


@contextlib.contextmanager
def serve_wsgi(app: WSGIApplication, *, http10: bool = False) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 in background threads; yield its base URL.

    Args:
        app: The WSGI application.
        http10: Use a threaded wsgiref server (HTTP/1.0, bodies delimited by closing the
            connection, no chunking) instead of waitress (HTTP/1.1, chunked streaming, 8
            threads).

    On exit open connections are closed (a streaming app sees its client disconnect on its next
    write) and every server thread is joined.

    Raises:
        AssertionError: A server thread was still running after :data:`CLOSE_TIMEOUT` (an app
            blocked without writing).
    """
    with _serve_wsgiref(app) if http10 else _serve_waitress(app) as url:
        yield url


@contextlib.contextmanager
def _serve_waitress(app: WSGIApplication) -> Iterator[str]:
    import waitress
    from waitress import wasyncore

    server = waitress.create_server(app, host="127.0.0.1", port=0, threads=8)
    loop = threading.Thread(
        target=server.run, name=f"{THREAD_PREFIX}-waitress-{server.effective_port}", daemon=True
    )
    loop.start()
    try:
        yield f"http://127.0.0.1:{server.effective_port}"
    finally:
        # The asyncore loop is not thread-safe: close every channel from inside it (a trigger
        # thunk runs in the loop thread), which empties its map and ends run() at once.
        try:
            server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
        except OSError:
            # The loop's wake-up pipe is gone: close what is left from here (the loop
            # wakes within its poll timeout and ends on the empty map); the worker threads
            # are stopped below either way.
            logger.warning("waitress test server: wake-up pipe already closed")
            wasyncore.close_all(server._map)
        join_threads([loop], CLOSE_TIMEOUT)
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=CLOSE_TIMEOUT)
        if server.task_dispatcher.threads:
            raise AssertionError(f"waitress threads still running after {CLOSE_TIMEOUT} s")


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        logger.debug(format, *args)


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """wsgiref with one named daemon thread per connection, tracked so close can join them."""

    daemon_threads = True
    block_on_close = False

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _QuietHandler)
        self.timeout = 0  # handle_request() is only called once the listener is readable
        self._workers: dict[threading.Thread, socket.socket] = {}
        self._workers_lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._wake_reader, self._wake_writer = socket.socketpair()

    def serve_until_stopped(self) -> None:
        """Accept connections until :meth:`stop`; no poll interval, so stopping is immediate."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            while True:
                ready = selector.select()
                if any(key.fileobj is self._wake_reader for key, _ in ready):
                    return
                self.handle_request()

    def stop(self) -> None:
        """Make :meth:`serve_until_stopped` return."""
        self._wake_writer.send(b"x")

    def server_close(self) -> None:
        super().server_close()
        self._wake_reader.close()
        self._wake_writer.close()

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self._work,
            args=(request, client_address),
            name=f"{THREAD_PREFIX}-wsgiref-{self.server_port}-c{next(self._numbers)}",
            daemon=True,
        )
        with self._workers_lock:
            self._workers[thread] = request
        thread.start()

    def _work(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._workers_lock:
                del self._workers[threading.current_thread()]

    def close_workers(self) -> list[threading.Thread]:
        """Shut down every open connection; return the threads still serving them."""
        with self._workers_lock:
            workers = dict(self._workers)
        for sock in workers.values():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return list(workers)


@contextlib.contextmanager
def _serve_wsgiref(app: WSGIApplication) -> Iterator[str]:
    server = _ThreadingWSGIServer()
    server.set_app(app)
    loop = threading.Thread(
        target=server.serve_until_stopped,
        name=f"{THREAD_PREFIX}-wsgiref-{server.server_port}",
        daemon=True,
    )
    loop.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.stop()
        join_threads([loop], CLOSE_TIMEOUT)
        server.server_close()
        join_threads(server.close_workers(), CLOSE_TIMEOUT)
