"""Issue 18 item 4, fourth pass: the deadline-capped reader made once, bodies read without
urllib3's decoding step when nothing is encoded, merged headers remembered per content,
the adapter's own send (plain-dict headers for urllib3), unary calls tracked in a plain
set. Each keeps what it replaced observable: deadlines, decoding, header merges, errors,
cancellation, and the ``responses`` library's interception."""

from __future__ import annotations

import gzip
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import requests.adapters
import responses
import urllib3

from a2a_sync._net import pool
from a2a_sync._net.call import Call
from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.lean_response import LeanResponse
from a2a_sync.errors import Cancelled, ConnectError, DeadlineExceeded
from a2a_sync.policies import RetryPolicy, Timeout
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond, respond_json

WAIT = 10.0


@pytest.fixture
def transport() -> Iterator[HTTPTransport]:
    with HTTPTransport(timeout=Timeout(connect=WAIT, read=WAIT, total=2 * WAIT)) as made:
        yield made


def echo(sock: socket.socket, request: RecordedRequest) -> None:
    respond_json(sock, {"path": request.path})


# -- the deadline-capped reader ------------------------------------------------------------------


_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def test_the_reader_is_made_once_over_the_socket_and_closing_it_releases_the_socket() -> None:
    a, b = socket.socketpair()
    try:
        pool.local.call = Call(time.monotonic() + WAIT)
        b.sendall(_ANSWER)
        response = pool._DeadlineHTTPResponse(a, method="GET")
        assert isinstance(response.fp.raw, pool._DeadlineSocketIO)  # not a wrapped plain file
        assert a._io_refs == 1  # type: ignore[attr-defined]
        response.begin()
        assert response.read() == b"ok"
        response.close()
        assert a._io_refs == 0  # type: ignore[attr-defined]
    finally:
        pool.local.call = None
        a.close()
        b.close()


def test_a_socket_like_object_that_is_no_socket_gets_the_wrapping_reader() -> None:
    """urllib3's SSLTransport (TLS through an HTTPS proxy) makes its own files."""
    a, b = socket.socketpair()

    class Tunnel:  # what http.client uses of SSLTransport: makefile, gettimeout, settimeout
        def makefile(self, mode: str, buffering: int | None = None) -> Any:
            sock: Any = a
            return sock.makefile(mode, buffering)

        def gettimeout(self) -> float | None:
            return a.gettimeout()

        def settimeout(self, value: float | None) -> None:
            a.settimeout(value)

    try:
        pool.local.call = Call(time.monotonic() + WAIT)
        b.sendall(_ANSWER)
        response = pool._DeadlineHTTPResponse(Tunnel(), method="GET")
        assert isinstance(response.fp.raw, pool._DeadlineReader)
        response.begin()
        assert response.read() == b"ok"
        assert 0 < (a.gettimeout() or 0) <= WAIT  # capped by the deadline
        response.close()
    finally:
        pool.local.call = None
        a.close()
        b.close()


def test_without_a_deadline_the_response_reads_the_plain_socket_file() -> None:
    a, b = socket.socketpair()
    try:
        pool.local.call = Call(None)
        b.sendall(_ANSWER)
        response = pool._DeadlineHTTPResponse(a, method="GET")
        assert type(response.fp.raw) is socket.SocketIO
        response.begin()
        assert response.read() == b"ok"
        response.close()
    finally:
        pool.local.call = None
        a.close()
        b.close()


def test_a_peer_dripping_the_headers_still_meets_the_deadline(
    scripted_server: ScriptedServerFactory,
) -> None:
    def drip(sock: socket.socket, request: RecordedRequest) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\n")
        for _ in range(40):  # one header byte every 0.1 s: each recv is well within read=5
            try:
                sock.sendall(b"X")
            except OSError:
                return
            time.sleep(0.1)

    server = scripted_server(drip)
    with HTTPTransport(timeout=Timeout(connect=WAIT, read=5, total=0.5)) as transport:
        started = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            transport.request("GET", f"{server.url}/x")
        assert time.monotonic() - started < 3.5  # the deadline, not 40 x the read timeout


# -- bodies --------------------------------------------------------------------------------------


def test_an_encoded_body_is_still_decoded(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def zipped(sock: socket.socket, request: RecordedRequest) -> None:
        respond(
            sock,
            200,
            gzip.compress(b'{"a": 1}'),
            headers=[("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
        )

    server = scripted_server(zipped)
    assert transport.request("GET", f"{server.url}/x").content == b'{"a": 1}'


def test_a_body_without_a_length_is_read_to_its_end(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def close_delimited(sock: socket.socket, request: RecordedRequest) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 70_000)
        sock.shutdown(socket.SHUT_WR)

    server = scripted_server(close_delimited)
    assert transport.request("GET", f"{server.url}/x").content == b"x" * 70_000


# -- request headers -----------------------------------------------------------------------------


def test_remembered_merges_follow_the_session_and_the_call_headers(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(echo)
    url = f"{server.url}/rpc"
    call_headers = {"X-Call": "1"}
    transport.request("POST", url, body=b"{}", headers=call_headers)
    transport.session.headers["X-Team"] = "blue"
    transport.request("POST", url, body=b"{}", headers=call_headers)
    call_headers["X-Call"] = "2"  # the same dict, changed in place
    transport.request("POST", url, body=b"", headers=call_headers)
    del transport.session.headers["X-Team"]
    transport.request("POST", url, body=b"{}", headers={"X-Call": "2", "Accept": None})  # type: ignore[dict-item]
    first, second, third, fourth = server.wait_for_requests(4)
    assert (first.headers.get("X-Team"), first.headers["X-Call"]) == (None, "1")
    assert (second.headers["X-Team"], second.headers["X-Call"]) == ("blue", "1")
    assert (third.headers["X-Team"], third.headers["X-Call"]) == ("blue", "2")
    assert third.headers["Content-Length"] == "0"  # not the earlier call's length
    assert first.headers["Content-Length"] == "2"
    assert fourth.headers.get("X-Team") is None
    assert "Accept" not in fourth.headers  # a None value removes a session header


# -- the adapter's send --------------------------------------------------------------------------


def test_urllib3_gets_the_headers_as_a_plain_dict_and_the_response_keeps_requests_ones(
    transport: HTTPTransport,
    scripted_server: ScriptedServerFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server = scripted_server(echo)
    seen: list[Any] = []
    urlopen = urllib3.connectionpool.HTTPConnectionPool.urlopen

    def spy(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs["headers"])
        return urlopen(self, method, url, *args, **kwargs)

    monkeypatch.setattr(urllib3.connectionpool.HTTPConnectionPool, "urlopen", spy)
    response = transport._sender.send(
        "POST", f"{server.url}/rpc", b"{}", {"X-Call": "1"}, timeout=WAIT
    )
    try:
        assert type(seen[0]) is dict
        assert seen[0]["X-Call"] == "1"
        assert isinstance(response, LeanResponse)
        assert isinstance(response.request.headers, requests.structures.CaseInsensitiveDict)
        assert response.request.headers["x-call"] == "1"
    finally:
        response.close()


def test_a_patched_httpadapter_send_sees_every_call(transport: HTTPTransport) -> None:
    with responses.RequestsMock() as rsps:
        rsps.add(responses.POST, "http://agent.test/rpc", json={"ok": True})
        result = transport.request("POST", "http://agent.test/rpc", body=b"{}")
    assert result.status == 200
    assert result.content == b'{"ok": true}'
    # Unpatched again: the adapter's own send is back.
    assert requests.adapters.HTTPAdapter.send is requests.adapters.HTTPAdapter.__dict__["send"]


def test_connect_failures_keep_requests_errors_under_the_translation(
    transport: HTTPTransport,
) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with pytest.raises(ConnectError) as caught:
        transport.request("GET", f"http://127.0.0.1:{port}/x", retry=RetryPolicy(max_retries=0))
    assert "nothing listens" in str(caught.value)
    session = transport.session
    with pytest.raises(requests.exceptions.ConnectionError):  # the adapter, via requests
        session.get(f"http://127.0.0.1:{port}/x", timeout=WAIT)


def test_an_answer_with_set_cookie_is_requests_own_response_and_fills_the_jar(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def cookie(sock: socket.socket, request: RecordedRequest) -> None:
        respond_json(sock, {}, headers=[("Set-Cookie", "sid=abc; Path=/")])

    server = scripted_server(cookie)
    response = transport._sender.send("GET", f"{server.url}/x", None, None, timeout=WAIT)
    try:
        assert not isinstance(response, LeanResponse)
        assert response.cookies["sid"] == "abc"
    finally:
        response.close()
    assert transport.session.cookies["sid"] == "abc"


# -- tracking calls ------------------------------------------------------------------------------


def test_finished_calls_are_not_tracked_and_open_streams_are_until_closed(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def stream(sock: socket.socket, request: RecordedRequest) -> None:
        sock.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            b"data: 1\n\n"
        )
        sock.shutdown(socket.SHUT_WR)

    server = scripted_server(stream)
    transport.request("GET", f"{server.url}/x")
    assert not transport._inflight
    opened = transport.open_stream("GET", f"{server.url}/s")
    assert not transport._inflight
    assert len(transport._streams) == 1
    opened.close()
    assert len(transport._streams) == 0


def test_closing_the_transport_cancels_an_open_stream(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def hold(sock: socket.socket, request: RecordedRequest) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        sock.settimeout(WAIT)
        try:
            sock.recv(1)  # until the client's socket is shut down
        except OSError:
            return

    server = scripted_server(hold)
    opened = transport.open_stream("GET", f"{server.url}/s")
    try:
        transport.close()
        with pytest.raises(Cancelled):
            opened.read1()
    finally:
        opened.close()
