"""Issue 12 §2: slow, idle or streaming clients must not lock everyone out of ``serve()``.

Before: waitress's defaults (100 connections, a 120 s idle timeout that any byte resets)
let 101 half-sent requests, or 100 kept-alive stream subscribers, take every connection:
an ordinary call got no answer, and subscribers beyond the limit got no 503.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server.app import A2AApplication
from a2a_sync.server.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.server.limits import ServerLimits
from a2a_sync.server.serving import serve_in_thread
from tests.server.agents import card

#: Bound on every wait here: generous for a loaded 2-core machine, far below the 120 s
#: waitress took before.
BOUND = 20.0
#: More than waitress's default connection_limit (100).
CROWD = 150


class Holding(AgentExecutor):
    """Completes at once, except for the text ``hold``: then it starts work and holds its
    stream open until released (or canceled)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        if context.text != "hold":
            updater.complete()
            return
        updater.start_work()
        while not self.release.is_set() and not context.wait_cancelled(0.05):
            pass
        updater.complete()


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def _request(method: str, message_id: str, text: str = "x") -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": method,
            "params": {
                "message": {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}
            },
        }
    ).encode()
    return (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"A2A-Version: 1.0\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


def _ordinary_call(url: str) -> None:
    response = requests.post(
        url + "/",
        data=_request("SendMessage", "ordinary").split(b"\r\n\r\n", 1)[1],
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
        timeout=BOUND,
    )
    assert response.status_code == 200
    assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@contextlib.contextmanager
def _sockets(port: int, count: int) -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            opened.append(socket.create_connection(("127.0.0.1", port), timeout=BOUND))
        yield opened
    finally:
        for sock in opened:
            sock.close()


@pytest.fixture
def agent() -> Iterator[Holding]:
    holding = Holding()
    yield holding
    holding.release.set()


def _app(agent: AgentExecutor, **kwargs: Any) -> A2AApplication:
    return A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, **kwargs)


def test_more_half_sent_requests_than_the_old_connection_limit_leave_room_for_a_call(
    agent: Holding,
) -> None:
    with serve_in_thread(_app(agent)) as url, _sockets(_port(url), CROWD) as idle:
        for sock in idle:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and then nothing
        _ordinary_call(url)


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by BOUND)."""
    sock.settimeout(BOUND)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


def _drip(sock: socket.socket, stop: threading.Event) -> None:
    """One byte every 50 ms until the server hangs up (or the test ends)."""
    with contextlib.suppress(OSError):
        while not stop.wait(0.05):  # the pace of the drip, not a synchronisation
            sock.sendall(b"a")


@pytest.mark.parametrize(
    "head",
    [
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: ",  # headers never end
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 100000\r\n\r\n{",  # the body never ends
    ],
    ids=["headers", "body"],
)
def test_a_dripping_client_is_answered_408_and_cut_off_at_its_deadline(
    agent: Holding, head: bytes
) -> None:
    limits = ServerLimits(header_timeout=1.0, body_timeout=1.0, sweep_interval=0.1)
    stop = threading.Event()
    with serve_in_thread(_app(agent), limits=limits) as url, _sockets(_port(url), 1) as (sock,):
        sock.sendall(head)
        dripper = threading.Thread(target=_drip, args=(sock, stop), name="test-drip")
        dripper.start()
        try:
            answer = _read_until_closed(sock)  # old waitress: the drip kept it open
        finally:
            stop.set()
            dripper.join(BOUND)
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
        _ordinary_call(url)


def test_a_connection_that_never_sends_is_cut_off_at_the_header_deadline(agent: Holding) -> None:
    limits = ServerLimits(header_timeout=1.0, sweep_interval=0.1)
    with serve_in_thread(_app(agent), limits=limits) as url, _sockets(_port(url), 1) as (sock,):
        assert _read_until_closed(sock).startswith(b"HTTP/1.1 408")


def test_subscribers_over_the_stream_cap_get_a_prompt_503_while_calls_still_answer(
    agent: Holding,
) -> None:
    """Every subscriber keeps its connection (as a pooled client does): before, the ones
    beyond waitress's 100 connections got no answer at all."""
    with serve_in_thread(_app(agent, max_streams=2)) as url, _sockets(_port(url), CROWD) as subs:
        selector = selectors.DefaultSelector()
        heads: dict[socket.socket, bytes] = {}
        for i, sock in enumerate(subs):
            sock.sendall(_request("SendStreamingMessage", f"s{i}", "hold"))
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, sock)
            heads[sock] = b""

        def answered(sock: socket.socket) -> bool:
            return b"\r\n\r\n" in heads[sock]

        pending = len(subs)
        while pending:
            ready = selector.select(timeout=BOUND)
            assert ready, f"{pending} subscribers got no answer within {BOUND} s"
            for key, _ in ready:
                sub: socket.socket = key.data
                chunk = sub.recv(65536)
                assert chunk, "the server closed a subscriber's connection without an answer"
                heads[sub] += chunk
                if answered(sub):
                    selector.unregister(sub)
                    pending -= 1
        selector.close()
        statuses = [heads[sock].split(b"\r\n", 1)[0] for sock in subs]
        assert statuses.count(b"HTTP/1.1 200 OK") == 2
        assert statuses.count(b"HTTP/1.1 503 Service Unavailable") == CROWD - 2
        for sock in subs:
            if heads[sock].startswith(b"HTTP/1.1 503"):
                assert b"\r\nRetry-After: " in heads[sock]
        _ordinary_call(url)  # the 150 connections are all still open
