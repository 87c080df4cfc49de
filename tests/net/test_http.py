"""HTTPTransport against real local peers: timeouts that hold, only safe retries, no
redirects, capped bodies, prompt cancellation, no leaks (reliability-cases CT-01..CT-18).

Faults come from the scripted raw-socket server and the fault proxy; retry delays go to an
injected recorder, so no test here backs off for real.
"""

from __future__ import annotations

import email.utils
import gc
import hashlib
import json
import logging
import os
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.sse import SSEStream, StreamRequest
from a2a_sync.errors import (
    Cancelled,
    ConnectError,
    ConnectionLost,
    ConnectTimeout,
    DeadlineExceeded,
    ReadTimeout,
    RedirectRefused,
    ResponseTooLarge,
    TransportError,
)
from a2a_sync.policies import RetryPolicy, Timeout
from tests.support.faultproxy import Address
from tests.support.fixtures import ScriptedServerFactory
from tests.support.ports import refused_url
from tests.support.servers import (
    Handler,
    RecordedRequest,
    ScriptedServer,
    close_connection,
    hold,
    reset_connection,
    respond,
    respond_json,
    write_chunk,
    write_head,
)

WAIT = 5.0  # bound for every wait on an event that takes milliseconds on loopback
#: A SendMessage-shaped JSON-RPC request body.
SEND_MESSAGE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": "req-1",
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "m-1",
                "role": "ROLE_USER",
                "parts": [{"text": "hello"}],
            }
        },
    },
    separators=(",", ":"),
).encode()


class SleepRecorder:
    """Stands in for time.sleep: records the delays, never waits (thread-safe)."""

    def __init__(self, then: Callable[[float], object] | None = None) -> None:
        self.delays: list[float] = []
        self._then = then
        self._lock = threading.Lock()

    def __call__(self, delay: float) -> None:
        with self._lock:
            self.delays.append(delay)
        if self._then is not None:
            self._then(delay)


TransportFactory = Callable[..., HTTPTransport]


@pytest.fixture
def recorder() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def transport_factory(recorder: SleepRecorder) -> Iterator[TransportFactory]:
    """Build transports that sleep through ``recorder`` (by default) and close at teardown."""
    made: list[HTTPTransport] = []

    def make(**kwargs: Any) -> HTTPTransport:
        kwargs.setdefault("sleep", recorder)
        kwargs.setdefault("timeout", Timeout(connect=WAIT, read=WAIT, total=2 * WAIT))
        transport = HTTPTransport(**kwargs)
        made.append(transport)
        return transport

    yield make
    for transport in made:
        transport.close()


@pytest.fixture
def scripted_server(scripted_server: ScriptedServerFactory) -> ScriptedServerFactory:
    """The suite's scripted-server factory, with Nagle's algorithm off on every connection.

    The scripted server writes a head and a body in two sends; on a reused connection the
    second one would wait for the client's delayed ACK (~40 ms), which makes loops slow.
    """

    def start(handler: Handler) -> ScriptedServer:
        def wrapped(sock: socket.socket, request: RecordedRequest) -> None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            handler(sock, request)

        return scripted_server(wrapped)

    return start


@pytest.fixture
def release(scripted_server: ScriptedServerFactory) -> Iterator[threading.Event]:
    """An event held handlers wait on; set at teardown, before the servers close."""
    event = threading.Event()
    yield event
    event.set()


class _LogSeen(logging.Handler):
    """Sets an event when a log message containing ``text`` is emitted."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@pytest.fixture
def backoff_announced() -> Iterator[threading.Event]:
    """Set once a call announces that it waits before retrying (just before the wait)."""
    logger = logging.getLogger("a2a_sync._net.pool")
    handler, level = _LogSeen("retrying in"), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.seen
    logger.removeHandler(handler)
    logger.setLevel(level)


def no_jitter(**kwargs: Any) -> RetryPolicy:
    return RetryPolicy(jitter=0.0, **kwargs)


def failing_then(failures: int, fail: Callable[[socket.socket], None]) -> Callable[..., None]:
    """A handler that fails the first ``failures`` requests with ``fail``, then echoes 200."""
    count = 0
    lock = threading.Lock()

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        nonlocal count
        with lock:
            count += 1
            current = count
        if current <= failures:
            fail(sock)
        else:
            respond(sock, 200, request.body, headers={"Content-Type": "application/json"})

    return handler


CHUNKED = {"Transfer-Encoding": "chunked"}


def status_503(retry_after: str | None = None) -> Callable[[socket.socket], None]:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return lambda sock: respond(sock, 503, b"busy", headers=headers)


# -- CT-01 / CT-02: timeouts ---------------------------------------------------------------


def test_server_that_reads_but_never_answers_raises_read_timeout(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
) -> None:
    server = scripted_server(lambda sock, request: hold(release))
    transport = transport_factory(timeout=Timeout(connect=WAIT, read=0.2, total=30))
    with pytest.raises(ReadTimeout) as excinfo:
        transport.request("POST", server.url, body=SEND_MESSAGE)
    assert excinfo.value.outcome_unknown
    assert excinfo.value.attempts == 1
    assert len(server.requests) == 1  # a POST is not resent after it left


def test_idempotent_call_is_retried_after_a_read_timeout(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(lambda sock, request: hold(release))
    transport = transport_factory(
        timeout=Timeout(connect=WAIT, read=0.1, total=30), retry=no_jitter(max_retries=2)
    )
    with pytest.raises(ReadTimeout) as excinfo:
        transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert excinfo.value.attempts == 3
    assert len(server.wait_for_requests(3)) == 3
    assert len(recorder.delays) == 2


def test_full_accept_backlog_raises_connect_timeout_after_retrying(
    full_backlog_address: Address,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    host, port = full_backlog_address
    transport = transport_factory(
        timeout=Timeout(connect=0.2, read=WAIT, total=30), retry=no_jitter(max_retries=2)
    )
    with pytest.raises(ConnectTimeout) as excinfo:
        transport.request("POST", f"http://{host}:{port}/rpc", body=SEND_MESSAGE)
    error = excinfo.value
    assert isinstance(error, ConnectError)  # connect phase: the request never left
    assert not error.outcome_unknown
    assert error.attempts == 3  # retried although it is a non-idempotent POST
    assert len(recorder.delays) == 2


# -- CT-03 / CT-08 / CT-09: Retry-After and backoff ---------------------------------------


def test_retry_after_beyond_the_budget_fails_at_once_without_sleeping(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(lambda sock, request: status_503("3600")(sock))
    transport = transport_factory(timeout=Timeout(total=30))
    with pytest.raises(DeadlineExceeded) as excinfo:
        transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert recorder.delays == []  # refused before waiting any of the hour asked for
    assert "Retry-After" in str(excinfo.value)
    assert "budget" in str(excinfo.value)
    assert len(server.requests) == 1


def test_non_idempotent_call_returns_the_503_instead_of_retrying(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(lambda sock, request: status_503("1")(sock))
    result = transport_factory().request("POST", server.url, body=SEND_MESSAGE)
    assert (result.status, result.content, result.attempts) == (503, b"busy", 1)
    assert recorder.delays == []
    assert len(server.requests) == 1


def _http_date(offset: float) -> Callable[[], str]:
    return lambda: email.utils.formatdate(time.time() + offset, usegmt=True)


@pytest.mark.parametrize(
    ("retry_after", "expected"),
    [
        pytest.param("2", 2.0, id="delta-seconds"),
        pytest.param(_http_date(30), 30.0, id="http-date"),
        pytest.param(_http_date(-3600), None, id="past-date"),
        pytest.param("0", None, id="zero"),
        pytest.param("1.5", None, id="fraction"),
        pytest.param("-5", None, id="negative"),
        pytest.param("soon", None, id="word"),
        pytest.param("", None, id="empty"),
    ],
)
def test_retry_after_is_honoured_when_valid_and_falls_back_to_backoff_otherwise(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
    retry_after: str | Callable[[], str],
    expected: float | None,
) -> None:
    if callable(retry_after):
        retry_after = retry_after()
    server = scripted_server(failing_then(1, status_503(retry_after)))
    transport = transport_factory(
        retry=no_jitter(backoff_base=0.5), timeout=Timeout(connect=WAIT, read=WAIT, total=60)
    )
    result = transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert (result.status, result.attempts) == (200, 2)
    (delay,) = recorder.delays
    if expected is None:
        assert delay == 0.5  # the policy's backoff: never an immediate retry
    else:
        assert delay == pytest.approx(expected, abs=2)


def test_backoff_delays_grow_exponentially_and_are_capped(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(lambda sock, request: status_503()(sock))
    policy = no_jitter(max_retries=6, backoff_base=0.1, backoff_max=0.4)
    transport = transport_factory(retry=policy)
    result = transport.request("GET", server.url, idempotent=True)
    assert (result.status, result.attempts) == (503, 7)  # the last answer, retries spent
    assert recorder.delays == pytest.approx([0.1, 0.2, 0.4, 0.4, 0.4, 0.4])
    assert len(server.requests) == 7


def test_jitter_spreads_delays_below_the_nominal_backoff(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(lambda sock, request: status_503()(sock))
    policy = RetryPolicy(max_retries=1, backoff_base=1.0, jitter=0.5)
    transport = transport_factory(retry=policy)
    for _ in range(20):
        transport.request("GET", server.url, idempotent=True)
    assert all(0.5 <= delay <= 1.0 for delay in recorder.delays)
    assert len(set(recorder.delays)) > 1


def test_each_call_starts_its_backoff_from_the_base(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(failing_then(2, status_503()))
    transport = transport_factory(retry=no_jitter(backoff_base=0.1))
    assert transport.request("GET", server.url, idempotent=True).status == 200
    assert transport.request("GET", server.url, idempotent=True).status == 200
    assert recorder.delays == pytest.approx([0.1, 0.2])  # the second call did not need any


def test_a_backoff_that_would_outlast_the_deadline_fails_the_call_at_once(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
) -> None:
    server = scripted_server(lambda sock, request: status_503()(sock))
    transport = transport_factory(
        retry=no_jitter(max_retries=50, backoff_base=1.0),
        timeout=Timeout(connect=WAIT, read=WAIT, total=1.5),
    )
    with pytest.raises(DeadlineExceeded):
        transport.request("GET", server.url, idempotent=True)
    assert recorder.delays == [1.0]  # the 2 s backoff did not fit in what was left
    assert len(server.requests) == 2


# -- CT-05 / CT-06 / CT-07: which failures are retried -----------------------------------


def test_refused_connection_is_retried_with_growing_delays_then_connect_error(
    transport_factory: TransportFactory, recorder: SleepRecorder
) -> None:
    transport = transport_factory(retry=no_jitter(max_retries=3, backoff_base=0.2))
    with pytest.raises(ConnectError) as excinfo:
        transport.request("POST", refused_url("/rpc"), body=SEND_MESSAGE)
    assert not isinstance(excinfo.value, ConnectTimeout)
    assert not excinfo.value.outcome_unknown
    assert excinfo.value.attempts == 4
    assert recorder.delays == pytest.approx([0.2, 0.4, 0.8])


def test_refused_connection_recovers_when_the_server_comes_up(
    transport_factory: TransportFactory,
) -> None:
    # Bound but not listening: connecting is refused until listen(), and the port is ours.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/rpc"
    listening = threading.Event()

    def come_up_during_the_backoff(delay: float) -> None:
        if not listening.is_set():
            listener.listen(1)
            listening.set()

    def answer_once() -> None:
        assert listening.wait(WAIT)
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")

    transport = transport_factory(sleep=SleepRecorder(then=come_up_during_the_backoff))
    server = threading.Thread(target=answer_once, name="a2a-sync-test-late-server", daemon=True)
    server.start()
    try:
        result = transport.request("POST", url, body=SEND_MESSAGE)
    finally:
        server.join(WAIT)
        listener.close()
    assert (result.status, result.content, result.attempts) == (200, b"ok", 2)


@pytest.mark.parametrize(
    "fail",
    [
        pytest.param(close_connection, id="closed-without-answer"),
        pytest.param(reset_connection, id="reset"),
    ],
)
def test_post_that_reached_the_server_is_not_resent_after_the_connection_drops(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
    fail: Callable[[socket.socket], None],
) -> None:
    server = scripted_server(failing_then(1, fail))
    with pytest.raises(ConnectionLost) as excinfo:
        transport_factory().request("POST", server.url, body=SEND_MESSAGE)
    assert excinfo.value.outcome_unknown
    assert excinfo.value.attempts == 1
    assert len(server.requests) == 1
    assert recorder.delays == []


def _incomplete_body(sock: socket.socket) -> None:
    write_head(sock, 200, {"Content-Type": "application/json", "Content-Length": "100"})
    sock.sendall(b'{"jsonrpc":')
    close_connection(sock)


def _incomplete_chunked_body(sock: socket.socket) -> None:
    write_head(sock, 200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    write_chunk(sock, b'{"jsonrpc":')
    close_connection(sock)


@pytest.mark.parametrize(
    "fail",
    [
        pytest.param(_incomplete_body, id="content-length"),
        pytest.param(_incomplete_chunked_body, id="chunked"),
    ],
)
def test_post_whose_answer_breaks_mid_body_is_connection_lost_after_one_request(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    fail: Callable[[socket.socket], None],
) -> None:
    server = scripted_server(failing_then(1, fail))
    with pytest.raises(ConnectionLost) as excinfo:
        transport_factory().request("POST", server.url, body=SEND_MESSAGE)
    assert excinfo.value.outcome_unknown
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "fail",
    [
        pytest.param(close_connection, id="closed-without-answer"),
        pytest.param(reset_connection, id="reset"),
        pytest.param(_incomplete_body, id="incomplete-body"),
        pytest.param(_incomplete_chunked_body, id="incomplete-chunked-body"),
    ],
)
def test_idempotent_call_is_retried_after_the_connection_drops(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
    fail: Callable[[socket.socket], None],
) -> None:
    server = scripted_server(failing_then(2, fail))
    transport = transport_factory(retry=no_jitter(max_retries=2, backoff_base=0.1))
    result = transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert (result.status, result.content, result.attempts) == (200, SEND_MESSAGE, 3)
    assert len(server.requests) == 3
    assert recorder.delays == pytest.approx([0.1, 0.2])


def test_idempotent_retries_stop_at_the_configured_limit(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
) -> None:
    server = scripted_server(lambda sock, request: _incomplete_body(sock))
    transport = transport_factory(retry=no_jitter(max_retries=2, backoff_base=0.1))
    with pytest.raises(ConnectionLost) as excinfo:
        transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert excinfo.value.attempts == 3
    assert len(server.requests) == 3


def test_every_retry_sends_the_byte_identical_body(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    server = scripted_server(failing_then(3, close_connection))
    transport = transport_factory(retry=no_jitter(max_retries=3))
    headers = {"Content-Type": "application/json", "X-Request": "1"}
    transport.request("POST", server.url, body=SEND_MESSAGE, headers=headers, idempotent=True)
    requests_seen = server.wait_for_requests(4)
    assert [request.body for request in requests_seen] == [SEND_MESSAGE] * 4
    assert {request.headers["Content-Length"] for request in requests_seen} == {
        str(len(SEND_MESSAGE))
    }
    assert {request.headers["X-Request"] for request in requests_seen} == {"1"}


# -- CT-10 / CT-15: answers that are final ------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 413, 415, 500])
def test_client_errors_are_returned_without_retrying(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    recorder: SleepRecorder,
    status: int,
) -> None:
    server = scripted_server(
        lambda sock, request: respond(sock, status, b"no", headers={"Retry-After": "1"})
    )
    result = transport_factory().request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert (result.status, result.content, result.attempts, result.ok) == (status, b"no", 1, False)
    assert len(server.requests) == 1
    assert recorder.delays == []


def test_http_200_carrying_a_json_rpc_error_is_a_success_for_the_transport(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    error = {"jsonrpc": "2.0", "id": "req-1", "error": {"code": -32001, "message": "no task"}}
    server = scripted_server(lambda sock, request: respond_json(sock, error))
    result = transport_factory().request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    assert (result.status, result.ok, result.content_type) == (200, True, "application/json")
    assert json.loads(result.content) == error
    assert len(server.requests) == 1


def test_html_error_page_is_returned_intact_for_the_caller_to_classify(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    page = b"<html><body><h1>502 Bad Gateway</h1>" + b"x" * 5000 + b"</body></html>"
    headers = {"Content-Type": "text/html; charset=UTF-8"}
    server = scripted_server(lambda sock, request: respond(sock, 200, page, headers=headers))
    result = transport_factory().request("POST", server.url, body=SEND_MESSAGE)
    assert (result.status, result.content_type, result.content) == (200, "text/html", page)


# -- CT-11: redirects ------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_to_another_host_is_refused_and_no_credential_leaves(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    status: int,
) -> None:
    elsewhere = scripted_server(lambda sock, request: respond(sock, 200, b"stolen"))
    target = f"http://localhost:{elsewhere.address[1]}/collect"
    origin = scripted_server(
        lambda sock, request: respond(sock, status, headers={"Location": target})
    )
    transport = transport_factory(headers={"X-API-Key": "secret-key"})
    with pytest.raises(RedirectRefused) as excinfo:
        transport.request(
            "POST", origin.url, body=SEND_MESSAGE, headers={"Authorization": "Bearer t0k3n"}
        )
    assert excinfo.value.location == target
    assert target in str(excinfo.value)
    assert "secret-key" not in str(excinfo.value)
    assert "t0k3n" not in str(excinfo.value)
    assert origin.requests[0].headers["X-API-Key"] == "secret-key"  # the real peer got it
    assert elsewhere.connections_accepted == 0
    assert elsewhere.requests == []


def test_transport_stays_usable_after_refusing_a_redirect(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        if request.path == "/moved":
            respond(sock, 307, b"moved", headers={"Location": "/rpc"})
        else:
            respond(sock, 200, b"ok")

    server = scripted_server(handler)
    transport = transport_factory()
    with pytest.raises(RedirectRefused):
        transport.request("POST", f"{server.url}/moved", body=SEND_MESSAGE)
    assert transport.request("POST", f"{server.url}/rpc", body=SEND_MESSAGE).content == b"ok"
    assert [request.path for request in server.requests] == ["/moved", "/rpc"]


# -- CT-12 / CT-13: connection reuse ------------------------------------------------------


def test_calls_succeed_when_the_server_closes_idle_keep_alive_connections(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    closed = threading.Semaphore(0)

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, 200, request.body)  # no "Connection: close": the client keeps it
        close_connection(sock)  # ... and the server drops it as idle
        closed.release()

    server = scripted_server(handler)
    transport = transport_factory(retry=RetryPolicy.none())
    for number in range(5):
        body = b'{"n":%d}' % number
        assert transport.request("POST", server.url, body=body).content == body
        assert closed.acquire(timeout=WAIT)  # the FIN is on its way before the next call
    assert server.connections_accepted == 5
    assert len(server.requests) == 5


def test_keep_alive_connections_are_reused(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 200, request.body))
    transport = transport_factory()
    for _ in range(5):
        transport.request("POST", server.url, body=SEND_MESSAGE)
    assert server.connections_accepted == 1


def test_many_threads_sharing_one_transport_never_cross_answers(
    scripted_server: ScriptedServerFactory,
    transport_factory: TransportFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def echo(sock: socket.socket, request: RecordedRequest) -> None:
        call = request.json()
        digest = hashlib.sha256(request.body).hexdigest()
        respond_json(sock, {"jsonrpc": "2.0", "id": call["id"], "result": {"sha": digest}})

    server = scripted_server(echo)
    transport = transport_factory()
    threads, calls = 32, 50

    def worker(thread: int) -> list[str]:
        problems = []
        for number in range(calls):
            call_id = f"t{thread}-c{number}"
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": call_id,
                    "method": "GetTask",
                    "params": {"pad": "x" * number},
                }
            ).encode()
            answer = json.loads(transport.request("POST", server.url, body=body).content)
            if answer != {
                "jsonrpc": "2.0",
                "id": call_id,
                "result": {"sha": hashlib.sha256(body).hexdigest()},
            }:
                problems.append(call_id)
        return problems

    with ThreadPoolExecutor(threads, thread_name_prefix="a2a-sync-test-ct13") as pool:
        problems = [p for result in pool.map(worker, range(threads)) for p in result]
    assert problems == []
    assert len(server.requests) == threads * calls
    assert server.connections_accepted <= threads  # pooled, not one per call
    # The default pool (32) covers 32 threads: no "Connection pool is full" warnings.
    assert [r for r in caplog.records if r.name.startswith("urllib3")] == []


# -- CT-14: size caps ------------------------------------------------------------------------


def test_declared_length_over_the_cap_is_refused_before_reading(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Content-Length": str(100 * 1024 * 1024)})
        sock.sendall(b"x" * 1024)
        close_connection(sock)

    server = scripted_server(handler)
    transport = transport_factory(max_response_bytes=1024 * 1024)
    with pytest.raises(ResponseTooLarge) as excinfo:
        transport.request("POST", server.url, body=SEND_MESSAGE)
    assert excinfo.value.limit == 1024 * 1024


def test_chunked_body_over_the_cap_is_refused_while_streaming(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    sent = threading.Event()

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Transfer-Encoding": "chunked"})
        piece = b"y" * 65536
        try:
            for _ in range(1000):  # 64 MiB unless the client hangs up first
                write_chunk(sock, piece)
        except OSError:
            sent.set()  # the client stopped reading and closed
            return
        write_chunk(sock, b"")

    server = scripted_server(handler)
    transport = transport_factory(max_response_bytes=256 * 1024)
    with pytest.raises(ResponseTooLarge):
        transport.request("POST", server.url, body=SEND_MESSAGE)
    assert sent.wait(WAIT)  # the rest was never downloaded


def test_call_override_of_the_cap_applies(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 200, b"z" * 2000, chunked=True))
    transport = transport_factory()
    with pytest.raises(ResponseTooLarge):
        transport.request("POST", server.url, body=SEND_MESSAGE, max_response_bytes=1000)
    assert len(transport.request("POST", server.url, body=SEND_MESSAGE).content) == 2000


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compression_bomb_is_refused_with_memory_bounded(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory, encoding: str
) -> None:
    inflated = 256 * 1024 * 1024
    compressor = (
        zlib.compressobj(9, zlib.DEFLATED, 31) if encoding == "gzip" else zlib.compressobj(9)
    )
    block = b"\0" * (1024 * 1024)
    bomb = b"".join(compressor.compress(block) for _ in range(inflated // len(block)))
    bomb += compressor.flush()
    assert len(bomb) < 512 * 1024

    server = scripted_server(
        lambda sock, request: respond(sock, 200, bomb, headers={"Content-Encoding": encoding})
    )
    cap = 1024 * 1024
    transport = transport_factory(max_response_bytes=cap)
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLarge):
            transport.request("POST", server.url, body=SEND_MESSAGE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * cap  # a few pieces in flight, never the inflated body


# -- CT-04 / CT-16: pool saturation and cancellation ---------------------------------------


def test_unary_call_proceeds_while_open_streams_hold_every_pooled_connection(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        if request.path == "/events":
            write_head(sock, 200, {"Content-Type": "text/event-stream", **CHUNKED})
            write_chunk(sock, b"data: open\n\n")
            hold(release)
            write_chunk(sock, b"")
        else:
            respond(sock, 200, b"unary")

    server = scripted_server(handler)
    transport = transport_factory(pool_maxsize=2)
    streams = [
        SSEStream(transport, StreamRequest("GET", f"{server.url}/events"), idle_timeout=30)
        for _ in range(3)
    ]
    try:
        for stream in streams:
            assert stream.next_event(timeout=WAIT) is not None
        result = transport.request(
            "POST", f"{server.url}/rpc", body=SEND_MESSAGE, timeout=Timeout(total=10)
        )
        assert result.content == b"unary"
        # Answered on a connection of its own while every stream still holds its own (they
        # end only at teardown): the call did not wait for a pooled connection to free up.
        assert not any(stream.closed for stream in streams)
        assert server.connections_accepted == len(streams) + 1
    finally:
        for stream in streams:
            stream.close()


def test_close_from_another_thread_cancels_a_call_blocked_reading(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
) -> None:
    server_saw_eof = threading.Event()

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        sock.settimeout(WAIT)
        if sock.recv(1) == b"":  # the client closed its side: the connection is gone
            server_saw_eof.set()

    server = scripted_server(handler)
    transport = transport_factory(timeout=Timeout(connect=WAIT, read=30, total=60))
    errors: list[BaseException] = []

    def call() -> None:
        try:
            transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
        except TransportError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call, name="a2a-sync-test-caller")
    caller.start()
    server.wait_for_requests(1)
    transport.close()
    caller.join(WAIT)  # the read timeout is 30 s: only the cancellation ends the call here
    assert not caller.is_alive()
    assert [type(error) for error in errors] == [Cancelled]  # not a ReadTimeout
    assert server_saw_eof.wait(WAIT)  # the connection was discarded, not pooled
    assert len(server.requests) == 1  # cancellation is not retried
    with pytest.raises(Cancelled):
        transport.request("POST", server.url, body=SEND_MESSAGE)


@pytest.mark.parametrize(
    "head",
    [
        pytest.param({"Content-Length": "100"}, id="content-length"),
        pytest.param({"Connection": "close"}, id="close-delimited"),
    ],
)
def test_close_from_another_thread_cancels_a_call_blocked_mid_body(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
    head: dict[str, str],
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, head)
        sock.sendall(b"partial")
        hold(release)

    server = scripted_server(handler)
    transport = transport_factory(timeout=Timeout(connect=WAIT, read=30, total=60))
    errors: list[BaseException] = []

    def call() -> None:
        try:
            transport.request("POST", server.url, body=SEND_MESSAGE)
        except TransportError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call, name="a2a-sync-test-caller")
    caller.start()
    server.wait_for_requests(1)
    transport.close()
    caller.join(WAIT)  # the read timeout is 30 s: only the cancellation ends the call here
    assert not caller.is_alive()
    assert [type(error) for error in errors] == [Cancelled]  # not a ReadTimeout


def test_close_from_another_thread_ends_a_retry_backoff_at_once(
    scripted_server: ScriptedServerFactory, backoff_announced: threading.Event
) -> None:
    server = scripted_server(lambda sock, request: status_503()(sock))
    # The real sleep (no recorder): a 30 s backoff that close() has to cut short.
    transport = HTTPTransport(retry=no_jitter(backoff_base=30.0), timeout=Timeout(total=60))
    errors: list[BaseException] = []

    def call() -> None:
        try:
            transport.request("GET", server.url, idempotent=True)
        except TransportError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call, name="a2a-sync-test-caller")
    caller.start()
    assert backoff_announced.wait(WAIT)  # the caller is in (or entering) its 30 s wait
    transport.close()
    caller.join(WAIT)  # only the cancellation can end a 30 s backoff this soon
    assert not caller.is_alive()
    assert [type(error) for error in errors] == [Cancelled]
    assert len(server.requests) == 1


# -- CT-18: deadline across retries, slow drip, retry storms -------------------------------


def test_deadline_holds_when_the_server_drips_bytes_slower_than_the_read_timeout_notices(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
) -> None:
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n" + b"d" * 200
    dripped_all = threading.Event()

    def drip(sock: socket.socket, request: RecordedRequest) -> None:
        # One byte per 0.2 s: each well inside the read timeout, the whole answer ~50 s.
        for byte in answer:
            if release.wait(0.2):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return  # the client hung up
        dripped_all.set()

    server = scripted_server(drip)
    transport = transport_factory(timeout=Timeout(connect=WAIT, read=2, total=0.5))
    with pytest.raises(DeadlineExceeded):
        transport.request("POST", server.url, body=SEND_MESSAGE)
    # The call gave up mid-drip, not once the answer was complete (a check made only
    # after the response would raise too, but after the drip).
    assert not dripped_all.is_set()


def test_deadline_holds_across_retries_of_read_timeouts(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport_factory: TransportFactory,
) -> None:
    server = scripted_server(lambda sock, request: hold(release))
    transport = transport_factory(
        timeout=Timeout(connect=WAIT, read=0.2, total=2.0),
        retry=no_jitter(max_retries=50, backoff_base=0.01),
    )
    with pytest.raises(DeadlineExceeded):
        transport.request("POST", server.url, body=SEND_MESSAGE, idempotent=True)
    # Read timeouts were retried, but every attempt waited at least 0.2 s of a 2 s budget:
    # at most 11 of the 51 attempts the retry policy alone would allow.
    assert 2 <= len(server.requests) <= 11


def test_threads_retrying_a_down_server_stay_within_budget_and_recover(
    scripted_server: ScriptedServerFactory, transport_factory: TransportFactory
) -> None:
    threads = 20
    up = threading.Event()
    lock = threading.Lock()
    attempts: dict[str, int] = {}

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        caller = request.headers["X-Caller"]
        with lock:
            attempts[caller] = attempts.get(caller, 0) + 1
            first_round_done = len(attempts) == threads
        if first_round_done:
            up.set()
        if up.is_set() and attempts[caller] > 1:
            respond(sock, 200, caller.encode())
        else:
            respond(sock, 503, b"down")

    server = scripted_server(handler)
    # Every thread's backoff lasts until the server is up: each fails at least once.
    sleeper = SleepRecorder(then=lambda delay: up.wait(WAIT))
    policy = RetryPolicy(max_retries=3, backoff_base=0.5, jitter=0.25)
    transport = transport_factory(retry=policy, sleep=sleeper)

    def call(number: int) -> bytes:
        headers = {"X-Caller": f"c{number}"}
        result = transport.request("GET", server.url, headers=headers, idempotent=True)
        assert result.status == 200
        return result.content

    with ThreadPoolExecutor(threads, thread_name_prefix="a2a-sync-test-ct18") as pool:
        answers = list(pool.map(call, range(threads)))
    assert answers == [f"c{number}".encode() for number in range(threads)]
    assert all(count <= policy.max_retries + 1 for count in attempts.values())
    assert len(server.requests) == sum(attempts.values())
    assert all(0.375 <= delay <= 0.5 for delay in sleeper.delays)
    assert len(set(sleeper.delays)) > 1  # jitter spread the retries in time


# -- CT-17: no leaks ----------------------------------------------------------------------------


#: One round of the CT-17 loop: successes, resets, read timeouts and cancelled streams.
MIX = ("ok", "ok", "ok", "reset", "ok", "slow", "ok", "stream", "ok", "ok")


def _wait_for_client_to_hang_up(sock: socket.socket) -> None:
    sock.settimeout(WAIT)
    assert sock.recv(1) == b""


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _client_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if not t.name.startswith("a2a-sync-test")}


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_mixed_failures_leave_file_descriptors_and_threads_at_baseline(
    scripted_server: ScriptedServerFactory,
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        kind = request.path.strip("/")
        if kind == "ok":
            respond(sock, 200, b"ok")
        elif kind == "reset":
            reset_connection(sock)
        else:
            if kind == "stream":
                write_head(sock, 200, {"Content-Type": "text/event-stream", **CHUNKED})
                write_chunk(sock, b"data: one\n\n")
            _wait_for_client_to_hang_up(sock)

    server = scripted_server(handler)
    gc.collect()
    fds_before, threads_before = _open_fds(), _client_threads()
    transport = HTTPTransport(
        timeout=Timeout(connect=WAIT, read=WAIT, total=2 * WAIT),
        retry=RetryPolicy.none(),
        pool_maxsize=4,
    )
    outcomes: dict[str, int] = {}
    try:
        for number in range(300):
            kind = MIX[number % len(MIX)]
            try:
                if kind == "stream":
                    with SSEStream(transport, StreamRequest("GET", f"{server.url}/stream")) as s:
                        assert s.next_event(timeout=WAIT) is not None
                else:
                    timeout = Timeout(read=0.05) if kind == "slow" else None
                    transport.request(
                        "POST", f"{server.url}/{kind}", body=SEND_MESSAGE, timeout=timeout
                    )
                outcomes[kind] = outcomes.get(kind, 0) + 1
            except TransportError as exc:
                outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
    finally:
        transport.close()
    assert outcomes == {"ok": 210, "ConnectionLost": 30, "ReadTimeout": 30, "stream": 30}
    server.close()
    assert _open_fds() == fds_before
    assert _client_threads() == threads_before
