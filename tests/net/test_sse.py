"""SSEStream against real local peers: prompt delivery, WHATWG reconnection with
Last-Event-ID, backoff that only progress resets, and close() from any thread
(reliability-cases S-03..S-13; parsing itself is tested in test_sse_decoder.py).

Reconnect waits go to an injected recorder unless the wait itself is what is tested.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.sse import ServerSentEvent, SSEOptions, SSEStream, StreamRequest
from a2a_sync._net.sse_reader import StreamReader
from a2a_sync.errors import (
    Cancelled,
    HTTPStatusError,
    ProtocolError,
    RedirectRefused,
    ResponseTooLarge,
    StreamInterrupted,
    TransportError,
)
from a2a_sync.policies import ReconnectPolicy, RetryPolicy, Timeout
from tests.support.fixtures import FaultProxyFactory, ScriptedServerFactory, WsgiServerFactory
from tests.support.polling import blocked_in, wait_until
from tests.support.servers import (
    Handler,
    RecordedRequest,
    ScriptedServer,
    close_connection,
    hold,
    reset_connection,
    respond,
    write_chunk,
    write_head,
)

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

WAIT = 5.0  # bound for every wait on something that takes milliseconds on loopback
SSE_HEAD = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
#: Reconnect quickly and predictably: no jitter, a small base the tests can recognise.
FAST = ReconnectPolicy(max_attempts=3, initial_delay=0.01, backoff_max=10.0, jitter=0.0)


class WaitRecorder:
    """Stands in for the reconnect wait: records each delay, never waits."""

    def __init__(self, then: Callable[[float], object] | None = None) -> None:
        self.delays: list[float] = []
        self._then = then

    def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        if self._then is not None:
            self._then(delay)


@pytest.fixture
def transport() -> Iterator[HTTPTransport]:
    """A transport that does not retry by itself: the stream's reconnects are what count."""
    with HTTPTransport(retry=RetryPolicy.none(), timeout=Timeout(connect=WAIT, total=WAIT)) as t:
        yield t


@pytest.fixture
def release(scripted_server: ScriptedServerFactory) -> Iterator[threading.Event]:
    """An event held handlers wait on; set at teardown, before the servers close."""
    event = threading.Event()
    yield event
    event.set()


def stream_of(*frames: bytes, end: str = "clean") -> Handler:
    """A handler answering with an event stream of ``frames``, then ending it.

    ``end``: ``"clean"`` (terminating chunk), ``"close"`` (FIN mid-body, no terminating
    chunk) or ``"reset"`` (RST).
    """

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, SSE_HEAD)
        for frame in frames:
            write_chunk(sock, frame)
        if end == "clean":
            write_chunk(sock, b"")
        elif end == "close":
            close_connection(sock)
        else:
            reset_connection(sock)

    return handler


def no_content(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 204)


def in_turn(*handlers: Handler, then: Handler = no_content) -> Handler:
    """Answer request n with ``handlers[n]``; every later request with ``then``."""
    lock = threading.Lock()
    count = 0

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        nonlocal count
        with lock:
            index, count = count, count + 1
        (handlers[index] if index < len(handlers) else then)(sock, request)

    return handler


def get(server: ScriptedServer | str, path: str = "/events", **kwargs: Any) -> StreamRequest:
    base = server if isinstance(server, str) else server.url
    return StreamRequest("GET", f"{base}{path}", idempotent=True, **kwargs)


def drain(stream: SSEStream) -> list[ServerSentEvent]:
    return list(stream)


# -- S-03: prompt delivery ---------------------------------------------------------------


def test_event_on_a_close_delimited_http10_stream_arrives_before_the_server_writes_more(
    wsgi_server: WsgiServerFactory, transport: HTTPTransport
) -> None:
    gate = threading.Event()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b"id: 1\ndata: first\n\n"
        assert gate.wait(WAIT)  # nothing else is written until the test has the event
        yield b"data: second\n\n"

    url = wsgi_server(app, http10=True)
    with SSEStream(
        transport, StreamRequest("GET", url), reconnect_policy=ReconnectPolicy.none()
    ) as s:
        first = s.next_event(timeout=WAIT)
        assert not gate.is_set()
        gate.set()
        rest = drain(s)
    assert first == ServerSentEvent("first", id="1")
    assert [event.data for event in rest] == ["second"]


def test_event_split_into_one_byte_segments_arrives_whole(
    scripted_server: ScriptedServerFactory,
    fault_proxy: FaultProxyFactory,
    transport: HTTPTransport,
) -> None:
    frame = 'id: é1\r\ndata: {"text": "héllo"}\r\ndata: second line\r\n\r\n'.encode()
    server = scripted_server(stream_of(frame))
    proxy = fault_proxy(server.url)
    proxy.slice(1)
    with SSEStream(transport, get(proxy.url), reconnect_policy=ReconnectPolicy.none()) as s:
        events = drain(s)
    assert events == [ServerSentEvent('{"text": "héllo"}\nsecond line', id="é1")]


# -- S-04 / S-12: resuming with Last-Event-ID ---------------------------------------------


@pytest.mark.parametrize("end", ["clean", "close", "reset"])
def test_partial_event_is_discarded_and_the_reconnect_resumes_after_the_last_complete_one(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport, end: str
) -> None:
    server = scripted_server(
        in_turn(
            stream_of(b"id: 1\ndata: a\n\nid: 2\ndata: b-cut-he", end=end),
            stream_of(b"id: 2\ndata: b\n\nid: 3\ndata: c\n\n"),
        )
    )
    waits = WaitRecorder()
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s:
        events = drain(s)
    assert [(e.id, e.data) for e in events] == [("1", "a"), ("2", "b"), ("3", "c")]
    first, second, third = server.wait_for_requests(3)
    assert "Last-Event-ID" not in first.headers
    assert second.headers["Last-Event-ID"] == "1"
    assert third.headers["Last-Event-ID"] == "3"
    assert s.reconnects == 2
    assert waits.delays == [0.01, 0.01]  # the reconnection time; events reset the backoff


def test_stream_cut_after_every_second_event_resumes_without_loss_or_duplicates(
    wsgi_server: WsgiServerFactory,
    fault_proxy: FaultProxyFactory,
    transport: HTTPTransport,
) -> None:
    total = 7

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        after = int(environ.get("HTTP_LAST_EVENT_ID") or 0)
        if after >= total:
            start_response("204 No Content", [])
            return
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        for number in range(after + 1, total + 1):
            yield b"id: %d\ndata: event %d\n\n" % (number, number)

    proxy = fault_proxy(wsgi_server(app))
    proxy.cut_after_events(2)
    with SSEStream(
        transport, get(proxy.url, "/"), reconnect_policy=FAST, sleep=WaitRecorder()
    ) as s:
        events = drain(s)
    assert [event.data for event in events] == [f"event {n}" for n in range(1, total + 1)]
    assert s.last_event_id == str(total)


def test_priming_event_with_empty_data_is_delivered_and_its_id_resumes_the_stream(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(
        in_turn(stream_of(b"id: p1\ndata:\n\n", end="close"), stream_of(b"data: {}\n\n"))
    )
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=WaitRecorder()) as s:
        events = drain(s)
    assert events == [ServerSentEvent("", id="p1"), ServerSentEvent("{}", id="p1")]
    assert server.wait_for_requests(2)[1].headers["Last-Event-ID"] == "p1"


# -- S-05 / S-06: reconnection time and backoff -------------------------------------------


def test_server_retry_field_sets_the_wait_before_the_next_attempt(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(in_turn(stream_of(b"retry: 1500\nid: 1\ndata: a\n\n")))
    waits = WaitRecorder()
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s:
        assert [event.data for event in drain(s)] == ["a"]
    assert s.retry == 1.5
    assert waits.delays == [1.5]


class WaitsRecorded(threading.Event):
    """A close flag whose timed waits are recorded and return at once (unless set)."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return self.is_set()


def test_default_reconnect_wait_lasts_the_server_reconnection_time(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(in_turn(stream_of(b"retry: 300\ndata: a\n\n")))
    policy = ReconnectPolicy(initial_delay=0.01, jitter=0.0)
    closed = WaitsRecorded()
    # No sleep injected: the reader's own wait, on the close flag it was given.
    reader = StreamReader(transport, get(server), SSEOptions(reconnect_policy=policy), closed)
    reader.open()
    try:
        assert [event.data for batch in reader.batches() for event in batch] == ["a"]
    finally:
        reader.release()
    assert closed.waits == [0.3]  # the server's reconnection time, not the policy's 0.01 s
    assert len(server.requests) == 2


def test_refused_reconnects_back_off_exponentially_then_give_up(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(stream_of(b"id: 5\ndata: a\n\n", end="close"))
    waits = WaitRecorder(then=lambda delay: server.close())  # the server goes away for good
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s:
        assert s.next_event(timeout=WAIT) == ServerSentEvent("a", id="5")
        with pytest.raises(StreamInterrupted) as excinfo:
            s.next_event(timeout=WAIT)
    assert excinfo.value.attempts == 3
    assert excinfo.value.last_event_id == "5"
    assert waits.delays == pytest.approx([0.01, 0.02, 0.04])
    assert s.reconnects == 0


def test_503_reconnects_back_off_exponentially_then_give_up(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    def busy(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, 503, b"busy")

    server = scripted_server(in_turn(stream_of(b"data: a\n\n"), then=busy))
    waits = WaitRecorder()
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s:
        assert s.next_event(timeout=WAIT) is not None
        with pytest.raises(StreamInterrupted):
            s.next_event(timeout=WAIT)
    assert waits.delays == pytest.approx([0.01, 0.02, 0.04])
    assert len(server.requests) == 1 + 3


def test_reconnect_attempts_are_capped_by_the_reconnect_policy_alone(
    scripted_server: ScriptedServerFactory,
) -> None:
    def busy(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, 503, b"busy")

    server = scripted_server(in_turn(stream_of(b"data: a\n\n"), then=busy))
    transport_waits = WaitRecorder()
    with HTTPTransport(retry=RetryPolicy(max_retries=2), sleep=transport_waits) as transport:
        stream_waits = WaitRecorder()
        with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=stream_waits) as s:
            assert s.next_event(timeout=WAIT) is not None
            with pytest.raises(StreamInterrupted):
                s.next_event(timeout=WAIT)
    # Three reconnects, one request each: the transport's own retries do not multiply them.
    assert len(server.requests) == 1 + 3
    assert transport_waits.delays == []
    assert len(stream_waits.delays) == 3


def test_server_that_accepts_and_closes_at_once_backs_off_instead_of_looping(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(stream_of())  # 200 text/event-stream, empty body, every time
    waits = WaitRecorder()
    with (
        SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s,
        pytest.raises(StreamInterrupted),
    ):
        drain(s)
    assert waits.delays == pytest.approx([0.01, 0.02, 0.04])  # growing, never reset
    assert len(server.requests) == 1 + 3


def test_each_event_resets_the_backoff_so_a_long_lived_stream_keeps_going(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    connections = 6  # more than the 3 consecutive failures the policy allows
    frames = [stream_of(b"id: %d\ndata: x\n\n" % n, end="close") for n in range(connections)]
    server = scripted_server(in_turn(*frames))
    waits = WaitRecorder()
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s:
        events = drain(s)
    assert [event.id for event in events] == [str(n) for n in range(connections)]
    assert waits.delays == [0.01] * connections
    assert s.reconnects == connections


# -- S-07: answers that end the stream ------------------------------------------------------


def test_reconnect_answered_204_ends_the_stream_cleanly(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(in_turn(stream_of(b"data: a\n\n", end="reset")))
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=WaitRecorder()) as s:
        assert [event.data for event in drain(s)] == ["a"]
        assert s.next_event() is None  # stays ended
    assert len(server.requests) == 2


def _html(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 200, b"<html>login</html>", headers={"Content-Type": "text/html"})


def _not_found(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 404, b'{"error": "gone"}', headers={"Content-Type": "application/json"})


def _moved(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 307, headers={"Location": "http://elsewhere.invalid/events"})


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        pytest.param(_not_found, HTTPStatusError, id="404"),
        pytest.param(_html, ProtocolError, id="200-text/html"),
        pytest.param(_moved, RedirectRefused, id="307"),
    ],
)
def test_reconnect_answered_with_a_final_error_raises_it_and_stops(
    scripted_server: ScriptedServerFactory,
    transport: HTTPTransport,
    answer: Handler,
    error: type[Exception],
) -> None:
    server = scripted_server(in_turn(stream_of(b"data: a\n\n", end="close"), then=answer))
    waits = WaitRecorder()
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits) as s:
        assert s.next_event(timeout=WAIT) is not None
        with pytest.raises(error):
            s.next_event(timeout=WAIT)
    assert len(server.requests) == 2
    assert len(waits.delays) == 1


def test_non_2xx_answer_to_the_opening_request_raises_with_the_body(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    def limited(sock: socket.socket, request: RecordedRequest) -> None:
        headers = {"Content-Type": "application/json", "Retry-After": "7"}
        respond(sock, 429, b'{"error": "slow down"}', headers=headers)

    server = scripted_server(limited)
    with pytest.raises(HTTPStatusError) as excinfo:
        SSEStream(transport, get(server))
    error = excinfo.value
    assert (error.status_code, error.body, error.retry_after) == (
        429,
        b'{"error": "slow down"}',
        7.0,
    )
    assert error.content_type == "application/json"
    assert len(server.requests) == 1


def test_opening_answer_that_is_not_an_event_stream_raises_protocol_error(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(_html)
    with pytest.raises(ProtocolError) as excinfo:
        SSEStream(transport, get(server))
    assert "login" in excinfo.value.excerpt


def test_json_answer_becomes_one_event_when_json_fallback_is_on(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32004, "message": "no streaming"}}'
    server = scripted_server(
        lambda sock, request: respond(sock, 200, body, headers={"Content-Type": "application/json"})
    )
    request = StreamRequest("POST", server.url, body=b"{}")
    with SSEStream(transport, request, json_fallback=True) as s:
        events = drain(s)
    assert events == [ServerSentEvent(body.decode())]
    with pytest.raises(ProtocolError):
        SSEStream(transport, request)


# -- POST streams: never re-sent blindly ---------------------------------------------------


@pytest.mark.parametrize("end", ["clean", "close", "reset"])
def test_post_stream_is_never_reconnected_without_a_hook(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport, end: str
) -> None:
    server = scripted_server(stream_of(b"id: t1\ndata: task\n\n", end=end))
    request = StreamRequest("POST", server.url, body=b'{"method": "SendStreamingMessage"}')
    with SSEStream(transport, request, sleep=WaitRecorder()) as s:
        assert s.next_event(timeout=WAIT) == ServerSentEvent("task", id="t1")
        if end == "clean":
            assert s.next_event(timeout=WAIT) is None
        else:
            with pytest.raises(StreamInterrupted) as excinfo:
                s.next_event(timeout=WAIT)
            assert excinfo.value.outcome_unknown
            assert excinfo.value.last_event_id == "t1"
    assert len(server.requests) == 1
    assert s.reconnects == 0


def test_post_stream_reconnects_with_the_request_its_hook_builds(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(
        in_turn(
            stream_of(b"id: t1\ndata: task\n\n", end="reset"),
            stream_of(b"id: t2\ndata: update\n\n"),
        )
    )
    seen: list[str] = []

    def resubscribe(last_event_id: str) -> StreamRequest | None:
        seen.append(last_event_id)
        if len(seen) > 1:
            return None  # the task is complete: nothing to resume
        headers = {"X-Resume-From": last_event_id}
        return StreamRequest("GET", f"{server.url}/resubscribe", headers=headers)

    request = StreamRequest(
        "POST", f"{server.url}/send", body=b'{"method": "SendStreamingMessage"}'
    )
    with SSEStream(transport, request, reconnect=resubscribe, sleep=WaitRecorder()) as s:
        events = drain(s)
    assert [event.data for event in events] == ["task", "update"]
    assert seen == ["t1", "t2"]
    original, resumed = server.wait_for_requests(2)
    assert (original.method, original.path) == ("POST", "/send")
    assert (resumed.method, resumed.path, resumed.body) == ("GET", "/resubscribe", b"")
    assert resumed.headers["X-Resume-From"] == "t1"
    assert resumed.headers["Accept"] == "text/event-stream"
    assert len(server.requests) == 2


# -- S-08: heartbeats and idle timeout -----------------------------------------------------


def test_heartbeats_keep_an_idle_stream_open_and_their_absence_triggers_a_reconnect(
    scripted_server: ScriptedServerFactory,
    release: threading.Event,
    transport: HTTPTransport,
) -> None:
    idle = 1.0

    def heartbeats(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, SSE_HEAD)
        # Twice the idle timeout with nothing but comments, one every tenth of it (the
        # release ends the pacing at teardown).
        for _ in range(20):
            write_chunk(sock, b": keep-alive\n\n")
            if release.wait(idle / 10):
                return
        write_chunk(sock, b"id: 9\ndata: late\n\n")
        hold(release)  # then nothing at all

    server = scripted_server(in_turn(heartbeats))
    with SSEStream(
        transport, get(server), idle_timeout=idle, reconnect_policy=FAST, sleep=WaitRecorder()
    ) as s:
        assert s.next_event(timeout=WAIT) == ServerSentEvent("late", id="9")
        assert s.reconnects == 0
        assert s.next_event(timeout=WAIT) is None  # idle timeout, reconnect, 204
    assert s.reconnects == 1
    assert server.wait_for_requests(2)[1].headers["Last-Event-ID"] == "9"


# -- S-09: request headers -----------------------------------------------------------------


def test_stream_requests_ask_for_an_uncompressed_uncached_event_stream(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(in_turn(stream_of(b"data: a\n\n", end="close")))
    request = get(server, headers={"Authorization": "Bearer t"})
    with SSEStream(transport, request, reconnect_policy=FAST, sleep=WaitRecorder()) as s:
        drain(s)
    for recorded in server.wait_for_requests(2):  # the opening request and the reconnect
        assert recorded.headers["Accept"] == "text/event-stream"
        assert recorded.headers["Cache-Control"] == "no-store"
        assert recorded.headers["Accept-Encoding"] == "identity"
        assert recorded.headers["Authorization"] == "Bearer t"


# -- S-10: size cap ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b"data: " + b"x" * 4096 + b"\n\n", id="big-event"),
        pytest.param(b"data: " + b"x" * 4096, id="endless-line"),
    ],
)
def test_event_over_the_cap_ends_the_stream_with_response_too_large(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport, frame: bytes
) -> None:
    server = scripted_server(stream_of(b"data: small\n\n", frame, end="close"))
    with SSEStream(
        transport, get(server), max_event_bytes=1024, reconnect_policy=FAST, sleep=WaitRecorder()
    ) as s:
        assert s.next_event(timeout=WAIT) == ServerSentEvent("small")
        with pytest.raises(ResponseTooLarge) as excinfo:
            s.next_event(timeout=WAIT)
    assert excinfo.value.limit == 1024
    assert len(server.requests) == 1  # a hostile event is not fetched again


# -- S-13: close from another thread -------------------------------------------------------


@pytest.mark.parametrize("http10", [False, True], ids=["chunked", "http10"])
def test_close_from_another_thread_during_an_idle_wait_cancels_the_consumer_promptly(
    wsgi_server: WsgiServerFactory, transport: HTTPTransport, http10: bool
) -> None:
    stop = threading.Event()
    connections = []

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        connections.append(environ.get("HTTP_LAST_EVENT_ID"))
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b"id: 1\ndata: a\n\n"
        stop.wait(WAIT)  # silence: the client's read blocks

    url = wsgi_server(app, http10=http10)
    stream = SSEStream(transport, get(url, "/"), idle_timeout=30)
    try:
        assert stream.next_event(timeout=WAIT) is not None
        errors: list[BaseException] = []

        def consume() -> None:
            try:
                stream.next_event()
            except TransportError as exc:
                errors.append(exc)

        consumer = threading.Thread(target=consume, name="a2a-sync-test-consumer")
        consumer.start()
        wait_until(lambda: blocked_in(consumer, "get", "queue.py"), "the consumer to block")
        stream.close()
        # The idle timeout is 30 s: only the shut-down socket lets the reader end (close()
        # joins it) and the blocked consumer learn of the close this soon.
        assert not stream._thread.is_alive()
        consumer.join(WAIT)
        assert not consumer.is_alive()
        assert [type(error) for error in errors] == [Cancelled]
    finally:
        stop.set()
        stream.close()
    assert connections == [None]  # no reconnect after close
    assert stream.next_event() is None  # iterating a closed stream just stops


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
def reconnect_announced() -> Iterator[threading.Event]:
    """Set once an SSE reader announces that it waits before reconnecting."""
    logger = logging.getLogger("a2a_sync._net.sse")
    handler, level = _LogSeen("reconnecting"), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield handler.seen
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_close_during_the_reconnect_wait_returns_at_once_and_never_reconnects(
    scripted_server: ScriptedServerFactory,
    transport: HTTPTransport,
    reconnect_announced: threading.Event,
) -> None:
    server = scripted_server(in_turn(stream_of(b"data: a\n\n", end="close")))
    policy = ReconnectPolicy(initial_delay=30.0)
    stream = SSEStream(transport, get(server), reconnect_policy=policy)  # the real wait
    assert stream.next_event(timeout=WAIT) is not None
    assert reconnect_announced.wait(WAIT)  # the reader is in (or entering) its 30 s wait
    stream.close()
    assert not stream._thread.is_alive()  # joined: the close ended the 30 s wait
    assert len(server.requests) == 1


def test_idle_timeout_applies_to_a_close_delimited_stream(
    wsgi_server: WsgiServerFactory,
) -> None:
    stop = threading.Event()
    silence_over = threading.Event()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b"data: a\n\n"
        stop.wait(WAIT)  # then silence, ended cleanly by the test or after WAIT
        silence_over.set()

    url = wsgi_server(app, http10=True)
    with HTTPTransport(timeout=Timeout(read=30, total=30)) as transport:
        try:
            with SSEStream(transport, StreamRequest("POST", url), idle_timeout=0.3) as s:
                assert s.next_event(timeout=WAIT) is not None
                with pytest.raises(StreamInterrupted):  # a POST is not reconnected
                    s.next_event(timeout=2 * WAIT)
                # Dropped during the silence: the idle timeout, not the 30 s read timeout
                # (without it the body would have ended cleanly once the silence was over).
                assert not silence_over.is_set()
        finally:
            stop.set()


def test_close_while_a_reconnect_waits_for_its_answer_returns_at_once(
    scripted_server: ScriptedServerFactory, release: threading.Event
) -> None:
    def silent(sock: socket.socket, request: RecordedRequest) -> None:
        hold(release)  # the reconnect request is read and never answered

    server = scripted_server(in_turn(stream_of(b"data: a\n\n", end="close"), then=silent))
    transport = HTTPTransport(retry=RetryPolicy.none(), timeout=Timeout(read=30, total=60))
    try:
        stream = SSEStream(transport, get(server), reconnect_policy=FAST, sleep=WaitRecorder())
        assert stream.next_event(timeout=WAIT) is not None
        server.wait_for_requests(2)  # the reconnect is in flight
        stream.close()
        assert not stream._thread.is_alive()  # joined: the close abandoned the 30 s read
    finally:
        transport.close()
    assert len(server.requests) == 2


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_transport_close_cancels_its_open_streams_without_reconnecting(
    scripted_server: ScriptedServerFactory, release: threading.Event, method: str
) -> None:
    def endless(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, SSE_HEAD)
        write_chunk(sock, b"data: a\n\n")
        hold(release)

    server = scripted_server(endless)
    transport = HTTPTransport()
    waits = WaitRecorder()
    request = StreamRequest(method, server.url, idempotent=method == "GET")
    stream = SSEStream(transport, request, idle_timeout=30, reconnect_policy=FAST, sleep=waits)
    try:
        assert stream.next_event(timeout=WAIT) is not None
        transport.close()
        with pytest.raises(Cancelled):  # not ReadTimeout: the idle timeout is 30 s
            stream.next_event(timeout=WAIT)
    finally:
        stream.close()
    assert waits.delays == []
    assert len(server.requests) == 1


# -- inline mode: the consumer reads the socket itself (no reader thread) -------------------


def test_inline_stream_delivers_events_promptly_without_a_reader_thread(
    wsgi_server: WsgiServerFactory, transport: HTTPTransport
) -> None:
    gate = threading.Event()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b"id: 1\ndata: first\n\n"
        assert gate.wait(WAIT)
        yield b"data: second\n\n"

    url = wsgi_server(app, http10=True)
    before = {thread.name for thread in threading.enumerate()}
    with SSEStream(
        transport,
        StreamRequest("GET", url),
        reconnect_policy=ReconnectPolicy.none(),
        threaded=False,
    ) as s:
        first = next(s)
        assert not gate.is_set()  # delivered while the server still waits
        started = {thread.name for thread in threading.enumerate()} - before
        gate.set()
        rest = drain(s)
    assert not [name for name in started if name.startswith("a2a-sync-sse")]
    assert first == ServerSentEvent("first", id="1")
    assert [event.data for event in rest] == ["second"]


def test_inline_stream_closed_from_another_thread_cancels_the_blocked_consumer(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport, release: threading.Event
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, SSE_HEAD)
        write_chunk(sock, b"data: one\n\n")
        hold(release)

    server = scripted_server(handler)
    stream = SSEStream(
        transport, get(server), reconnect_policy=ReconnectPolicy.none(), threaded=False
    )
    assert next(stream).data == "one"
    errors: list[BaseException] = []
    blocked = threading.Event()

    def consume() -> None:
        blocked.set()
        try:
            next(stream)
        except TransportError as exc:
            errors.append(exc)

    consumer = threading.Thread(target=consume, name="a2a-sync-test-consumer")
    consumer.start()
    assert blocked.wait(WAIT)
    stream.close()
    consumer.join(WAIT)
    assert not consumer.is_alive()
    assert [type(error) for error in errors] == [Cancelled]
    assert next(stream, None) is None  # iterating a closed stream just stops


def test_inline_stream_reconnects_in_the_consumer_thread_with_last_event_id(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(
        in_turn(
            stream_of(b"id: 1\ndata: a\n\nid: 2\ndata: b-cut", end="close"),
            stream_of(b"id: 2\ndata: b\n\n"),
        )
    )
    waits = WaitRecorder()
    with SSEStream(transport, get(server), reconnect_policy=FAST, sleep=waits, threaded=False) as s:
        events = drain(s)
    assert [(e.id, e.data) for e in events] == [("1", "a"), ("2", "b")]
    requests = server.wait_for_requests(3)  # the third is answered 204: stop reconnecting
    assert requests[1].headers["Last-Event-ID"] == "1"
    assert requests[2].headers["Last-Event-ID"] == "2"
    assert s.reconnects == 2


def test_inline_post_stream_that_drops_raises_stream_interrupted(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport
) -> None:
    server = scripted_server(stream_of(b"data: a\n\ndata: cut", end="reset"))
    request = StreamRequest("POST", f"{server.url}/rpc", body=b"{}")
    with SSEStream(transport, request, threaded=False) as s:
        assert next(s).data == "a"
        with pytest.raises(StreamInterrupted):
            next(s)
    assert len(server.requests) == 1  # a POST is never sent again


def test_inline_stream_released_by_close_when_nobody_reads(
    scripted_server: ScriptedServerFactory, transport: HTTPTransport, release: threading.Event
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, SSE_HEAD)
        write_chunk(sock, b"data: one\n\n")
        hold(release)

    server = scripted_server(handler)
    stream = SSEStream(
        transport, get(server), reconnect_policy=ReconnectPolicy.none(), threaded=False
    )
    assert next(stream).data == "one"
    stream.close()
    assert stream.closed
    assert next(stream, None) is None
