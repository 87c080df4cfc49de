"""The scripted server records what clients send and answers exactly as scripted; serve_wsgi
serves apps over HTTP/1.1 (waitress) or HTTP/1.0 (wsgiref) and stops cleanly."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import requests

from tests.support.fixtures import ScriptedServerFactory, WsgiServerFactory
from tests.support.servers import (
    THREAD_PREFIX,
    RecordedRequest,
    ScriptedServer,
    close_connection,
    hold,
    reset_connection,
    respond,
    respond_json,
    serve_wsgi,
    write_head,
)

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

TIMEOUT = 5.0


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        piece = sock.recv(65536)
        assert piece, f"EOF before {marker!r} in {data!r}"
        data += piece
    return data


# -- ScriptedServer ------------------------------------------------------------------------


def test_records_method_path_headers_and_json_body(scripted_server: ScriptedServerFactory) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        respond_json(sock, {"jsonrpc": "2.0", "id": request.json()["id"], "result": {}})

    server = scripted_server(handler)
    response = requests.post(
        f"{server.url}/rpc?x=1",
        json={"jsonrpc": "2.0", "id": 7, "method": "GetTask"},
        headers={"X-API-Key": "k1"},
        timeout=TIMEOUT,
    )
    assert response.json()["id"] == 7
    (request,) = server.wait_for_requests(1)
    assert (request.method, request.path, request.version) == ("POST", "/rpc?x=1", "HTTP/1.1")
    assert request.headers["x-api-key"] == "k1"
    assert request.headers["CONTENT-TYPE"] == "application/json"
    assert request.json() == {"jsonrpc": "2.0", "id": 7, "method": "GetTask"}


def test_reads_chunked_request_bodies(scripted_server: ScriptedServerFactory) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 204))
    pieces = iter([b"hello ", b"chunked ", b"world"])  # a generator body is sent chunked
    assert requests.post(server.url, data=pieces, timeout=TIMEOUT).status_code == 204
    (request,) = server.wait_for_requests(1)
    assert request.headers["Transfer-Encoding"] == "chunked"
    assert request.body == b"hello chunked world"


def test_keeps_the_connection_alive_between_requests(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 200, request.path.encode()))
    with requests.Session() as session:
        bodies = [session.get(f"{server.url}/{n}", timeout=TIMEOUT).content for n in range(3)]
    assert bodies == [b"/0", b"/1", b"/2"]
    assert [request.path for request in server.wait_for_requests(3)] == ["/0", "/1", "/2"]
    assert server.connections_accepted == 1


def test_respond_with_close_ends_the_connection(scripted_server: ScriptedServerFactory) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 200, [b"a", b"b"], close=True))
    with requests.Session() as session:
        for _ in range(2):
            response = session.get(server.url, timeout=TIMEOUT)
            assert (response.content, response.headers["Connection"]) == (b"ab", "close")
    assert server.connections_accepted == 2


def test_chunked_response_arrives_whole(scripted_server: ScriptedServerFactory) -> None:
    server = scripted_server(lambda sock, request: respond(sock, 200, [b"a", b"bc"], chunked=True))
    response = requests.get(server.url, timeout=TIMEOUT)
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert response.content == b"abc"


def test_closing_without_an_answer_is_a_connection_error_for_the_client(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: close_connection(sock))
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.post(server.url, json={}, timeout=TIMEOUT)
    assert len(server.wait_for_requests(1)) == 1


def test_reset_reaches_the_client_as_connection_reset(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: reset_connection(sock))
    with socket.create_connection(server.address, timeout=TIMEOUT) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        with pytest.raises(ConnectionResetError):
            client.recv(100)


def test_partial_body_is_an_incomplete_read_for_the_client(
    scripted_server: ScriptedServerFactory,
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Content-Length": "10"})
        sock.sendall(b"abc")
        close_connection(sock)

    server = scripted_server(handler)
    with pytest.raises(requests.exceptions.ChunkedEncodingError):  # requests' name for it
        requests.get(server.url, timeout=TIMEOUT)


def test_held_handler_times_the_client_out_until_released(
    scripted_server: ScriptedServerFactory,
) -> None:
    release = threading.Event()

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        hold(release)
        respond(sock, 200, b"late")

    server = scripted_server(handler)
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.get(server.url, timeout=(TIMEOUT, 0.2))
    release.set()
    assert requests.get(server.url, timeout=TIMEOUT).content == b"late"


def test_wait_for_requests_fails_when_too_few_arrive(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: respond(sock))
    with pytest.raises(AssertionError):
        server.wait_for_requests(1, timeout=0.05)


def test_malformed_request_is_answered_400_and_not_recorded(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: respond(sock))
    with socket.create_connection(server.address, timeout=TIMEOUT) as client:
        client.sendall(b"NONSENSE\r\n\r\n")
        assert read_until(client, b"\r\n").startswith(b"HTTP/1.1 400 ")
    assert server.requests == []


def test_a_failing_handler_fails_the_test_at_close() -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        raise ValueError("bug in the handler")

    server = ScriptedServer(handler)
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(server.url, timeout=TIMEOUT)
    with pytest.raises(AssertionError) as excinfo:
        server.close()
    assert isinstance(excinfo.value.__cause__, ValueError)


def test_close_joins_every_server_thread(scripted_server: ScriptedServerFactory) -> None:
    server = scripted_server(lambda sock, request: respond(sock))
    with requests.Session() as session:
        session.get(server.url, timeout=TIMEOUT)  # leaves a kept-alive connection open
        server.close()
    prefix = f"{THREAD_PREFIX}-scripted-{server.address[1]}"
    assert not [thread for thread in threading.enumerate() if thread.name.startswith(prefix)]


# -- serve_wsgi ----------------------------------------------------------------------------

SERVERS = [pytest.param(False, id="waitress"), pytest.param(True, id="wsgiref-http10")]


@pytest.mark.parametrize("http10", SERVERS)
def test_serve_wsgi_answers_requests(wsgi_server: WsgiServerFactory, http10: bool) -> None:
    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [environ["PATH_INFO"].encode()]

    response = requests.get(f"{wsgi_server(app, http10=http10)}/hello", timeout=TIMEOUT)
    assert response.content == b"/hello"
    assert response.raw.version == (10 if http10 else 11)


@pytest.mark.parametrize("http10", SERVERS)
def test_serve_wsgi_sends_each_event_before_the_next_is_produced(
    wsgi_server: WsgiServerFactory, http10: bool
) -> None:
    first_received = threading.Event()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        yield b"data: first\n\n"
        assert first_received.wait(TIMEOUT)
        yield b"data: second\n\n"

    host, port = wsgi_server(app, http10=http10).removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as client:
        client.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        received = read_until(client, b"data: first\n\n")
        first_received.set()
        received += read_until(client, b"data: second\n\n")
    head = received.split(b"\r\n\r\n")[0].lower()
    if http10:  # close-delimited: no chunk framing around the events
        assert head.startswith(b"http/1.0 200")
        assert b"transfer-encoding" not in head
        assert received.endswith(b"\r\n\r\ndata: first\n\ndata: second\n\n")
    else:
        assert head.startswith(b"http/1.1 200")
        assert b"transfer-encoding: chunked" in head


@pytest.mark.parametrize("http10", SERVERS)
def test_serve_wsgi_exit_ends_open_streams_and_joins_its_threads(http10: bool) -> None:
    stop = threading.Event()

    def app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterator[bytes]:
        start_response("200 OK", [("Content-Type", "text/event-stream")])
        while not stop.wait(0.01):  # an endless stream of heartbeats
            yield b": heartbeat\n\n"

    with contextlib.ExitStack() as cleanup:
        cleanup.callback(stop.set)
        with serve_wsgi(app, http10=http10) as url:
            host, port = url.removeprefix("http://").split(":")
            client = cleanup.enter_context(socket.create_connection((host, int(port)), TIMEOUT))
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            read_until(client, b": heartbeat\n\n")
        names = (f"{THREAD_PREFIX}-waitress-{port}", f"{THREAD_PREFIX}-wsgiref-{port}")
        assert not [thread for thread in threading.enumerate() if thread.name.startswith(names)]
        while client.recv(65536):  # the stream ends (EOF) instead of hanging
            pass
