"""The fault proxy forwards faithfully and injects exactly the faults it is asked for."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs
import pytest
import requests

from tests.support.faultproxy import THREAD_PREFIX, FaultProxy, _EventScanner
from tests.support.fixtures import FaultProxyFactory, ScriptedServerFactory, WsgiServerFactory
from tests.support.servers import RecordedRequest, write_chunk, write_head

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

TIMEOUT = 5.0


@attrs.frozen
class Link:
    """A client socket connected through the proxy to a server socket the test drives."""

    client: socket.socket
    server: socket.socket
    proxy: FaultProxy


@pytest.fixture
def link(fault_proxy: FaultProxyFactory) -> Iterator[Link]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(TIMEOUT)
        proxy = fault_proxy(listener.getsockname())
        client = socket.create_connection(proxy.address, timeout=TIMEOUT)
        server, _ = listener.accept()
        server.settimeout(TIMEOUT)
        proxy.wait_for_connections(1)
        with client, server:
            yield Link(client, server, proxy)


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        piece = sock.recv(size - len(data))
        assert piece, f"EOF after {data!r}"
        data += piece
    return data


def read_to_eof(sock: socket.socket) -> bytes:
    data = b""
    while piece := sock.recv(65536):
        data += piece
    return data


def drain(response: requests.Response, *, into: bytearray) -> None:
    for piece in response.iter_content(None):
        into.extend(piece)


def test_bytes_pass_through_unchanged_in_both_directions(link: Link) -> None:
    request, response = os.urandom(300_000), os.urandom(300_000)
    sender = threading.Thread(target=link.client.sendall, args=(request,))
    sender.start()
    assert read_exactly(link.server, len(request)) == request
    sender.join(TIMEOUT)
    link.server.sendall(response[:10])
    link.server.sendall(response[10:])  # far more than one socket buffer, read concurrently
    assert read_exactly(link.client, len(response)) == response


def test_half_close_is_passed_on_and_the_other_direction_keeps_flowing(link: Link) -> None:
    link.client.sendall(b"request")
    link.client.shutdown(socket.SHUT_WR)
    assert read_to_eof(link.server) == b"request"
    link.server.sendall(b"late answer")
    link.server.close()
    assert read_to_eof(link.client) == b"late answer"


def test_slice_delivers_the_data_in_one_byte_pieces(link: Link) -> None:
    link.proxy.slice(1, delay=0.05)
    link.server.sendall(b"abcdef")
    pieces = [link.client.recv(100) for _ in range(6)]
    # Six pieces 50 ms apart: only a reader stalled for 250 ms could see them merged.
    assert b"".join(pieces) == b"abcdef"
    assert all(len(piece) == 1 for piece in pieces)


def test_cut_after_closes_after_exactly_n_bytes_across_writes(link: Link) -> None:
    link.proxy.cut_after(5)
    link.server.sendall(b"012")
    assert read_exactly(link.client, 3) == b"012"
    link.server.sendall(b"3456789")
    assert read_to_eof(link.client) == b"34"
    assert link.server.recv(10) == b""  # the server side is closed too


def test_cut_after_counts_from_the_call_on_a_live_connection(link: Link) -> None:
    link.server.sendall(b"before")
    assert read_exactly(link.client, 6) == b"before"
    link.proxy.cut_after(2)
    link.server.sendall(b"after")
    assert read_to_eof(link.client) == b"af"


def test_cut_after_upstream_truncates_the_request(link: Link) -> None:
    link.proxy.cut_after(3, direction="upstream")
    link.client.sendall(b"hello")
    assert read_to_eof(link.server) == b"hel"


def test_reset_peer_gives_connection_reset_to_the_client(link: Link) -> None:
    link.server.sendall(b"x")
    assert read_exactly(link.client, 1) == b"x"
    link.proxy.reset_peer()
    with pytest.raises(ConnectionResetError):
        link.client.recv(10)
    assert link.server.recv(10) == b""


def test_reset_after_delivers_n_bytes_then_resets(link: Link) -> None:
    link.proxy.reset_after(4)
    link.server.sendall(b"abcdefgh")
    assert read_exactly(link.client, 4) == b"abcd"
    with pytest.raises(ConnectionResetError):
        link.client.recv(10)


def test_a_reset_from_the_server_reaches_the_client_as_a_reset(link: Link) -> None:
    link.server.sendall(b"x")
    assert read_exactly(link.client, 1) == b"x"
    link.server.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    link.server.close()
    with pytest.raises(ConnectionResetError):
        link.client.recv(10)


def test_close_connections_sends_a_fin_both_ways(link: Link) -> None:
    link.proxy.close_connections()
    assert link.client.recv(10) == b""
    assert link.server.recv(10) == b""


def test_stall_downstream_passes_the_request_and_holds_the_response_until_resume(
    link: Link,
) -> None:
    link.proxy.stall(direction="downstream")
    link.client.sendall(b"request")
    assert read_exactly(link.server, 7) == b"request"
    link.server.sendall(b"response")
    link.client.settimeout(0.2)
    with pytest.raises(TimeoutError):
        link.client.recv(10)
    link.proxy.resume()
    link.client.settimeout(TIMEOUT)
    assert read_exactly(link.client, 8) == b"response"


def test_latency_delays_a_chunk_by_at_least_the_latency(link: Link) -> None:
    link.proxy.latency(0.2)
    started = time.monotonic()
    link.server.sendall(b"x")
    assert read_exactly(link.client, 1) == b"x"
    assert time.monotonic() - started >= 0.2


def test_blackhole_accepts_but_never_connects_upstream(fault_proxy: FaultProxyFactory) -> None:
    with socket.create_server(("127.0.0.1", 0)) as upstream:
        proxy = fault_proxy(upstream.getsockname())
        proxy.blackhole()
        with socket.create_connection(proxy.address, timeout=TIMEOUT) as client:
            client.sendall(b"GET / HTTP/1.1\r\n\r\n")
            proxy.wait_for_connections(1)
            upstream.settimeout(0.2)
            with pytest.raises(TimeoutError):
                upstream.accept()


def test_wait_for_connections_fails_when_too_few_arrive(fault_proxy: FaultProxyFactory) -> None:
    proxy = fault_proxy(("127.0.0.1", 9))
    with pytest.raises(AssertionError):
        proxy.wait_for_connections(1, timeout=0.05)


def test_close_joins_every_proxy_thread(link: Link) -> None:
    link.server.sendall(b"x")
    assert read_exactly(link.client, 1) == b"x"
    link.proxy.close()
    prefix = f"{THREAD_PREFIX}-{link.proxy.address[1]}-"
    assert not [thread for thread in threading.enumerate() if thread.name.startswith(prefix)]
    assert link.client.recv(10) == b""


def test_requests_through_the_proxy_reach_a_wsgi_app_unchanged(
    wsgi_server: WsgiServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    def app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
        body = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return [body[::-1]]

    proxy = fault_proxy(wsgi_server(app))
    payload = os.urandom(100_000)
    with requests.Session() as session:
        for _ in range(3):
            response = session.post(proxy.url, data=payload, timeout=TIMEOUT)
            assert response.content == payload[::-1]
    assert proxy.connections_accepted == 1  # keep-alive survives the proxy


# -- SSE event cuts --------------------------------------------------------------------------

SSE_EVENTS = [b"data: 1\n\n", b": ping\n\n", b"data: 2\n\n", b"data: 3\n\n"]


def test_cut_after_events_ends_a_chunked_stream_after_the_kth_event(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        for event in SSE_EVENTS:
            write_chunk(sock, event)
        write_chunk(sock, b"")

    proxy = fault_proxy(scripted_server(handler).url)
    proxy.cut_after_events(2)  # the comment-only block is not an event
    received = bytearray()
    with (
        requests.get(proxy.url, stream=True, timeout=TIMEOUT) as response,
        pytest.raises(requests.exceptions.ChunkedEncodingError),  # the body ends mid-stream
    ):
        drain(response, into=received)
    assert received == b"".join(SSE_EVENTS[:3])


def test_cut_after_events_skips_non_sse_bodies_on_a_keep_alive_connection(link: Link) -> None:
    body = b'"\n\n\n"'  # blank lines in a non-SSE body are not event ends
    json_response = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    sse_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
    events = b"data: 1\r\n\r\n: ping\r\n\r\nid: 7\rdata: 2\r\r"
    link.proxy.cut_after_events(2)
    link.server.sendall(json_response + sse_head + events + b"data: 3\n\n")
    assert read_to_eof(link.client) == json_response + sse_head + events


STREAM = (
    b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\ndata: x\n\n"  # not SSE: no events
    b"HTTP/1.1 200 OK\r\ncontent-type: Text/Event-Stream; charset=utf-8\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
    b"b\r\ndata: 1\n\nda\r\n"  # event 1 ends inside the chunk: counted after the chunk
    b"6\r\nta: 2\n\r\n"
    b"3\r\n\r\n\n\r\n"  # event 2 ends in the next chunk (CRLF blank line), then a stray LF
    b"0\r\nX-Trailer: 1\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 24\r\n\r\n"
    b"data: 3\r\n\r\n:c\n\ndata: 4\r\r"  # events 3 and 4 (CR line ends)
)


def test_event_scanner_finds_event_ends_through_http_framing() -> None:
    assert _EventScanner().feed(STREAM) == [
        STREAM.index(b"da\r\n") + 4,
        STREAM.index(b"3\r\n\r\n\n\r\n") + 8,
        STREAM.index(b"data: 3\r\n\r\n") + 11,
        len(STREAM),
    ]


def test_event_scanner_result_does_not_depend_on_how_the_stream_is_split() -> None:
    expected = _EventScanner().feed(STREAM)
    unchunked_sse = STREAM.index(b"data: 3")  # where CR line ends are not hidden by chunk framing
    for split in range(1, len(STREAM)):
        scanner = _EventScanner()
        head, tail = STREAM[:split], STREAM[split:]
        ends = scanner.feed(head) + [split + end for end in scanner.feed(tail)]
        # A blank line ending in CR is complete at the CR: split from its LF, it ends there.
        cr_split = split > unchunked_sse and STREAM[split - 1 : split + 1] == b"\r\n"
        assert ends == [split if cr_split and end == split + 1 else end for end in expected]


def test_full_backlog_listener_makes_connects_time_out(
    full_backlog_address: tuple[str, int],
) -> None:
    host, port = full_backlog_address
    with pytest.raises(requests.exceptions.ConnectTimeout):
        requests.get(f"http://{host}:{port}/", timeout=(0.5, TIMEOUT))
