"""Issue 18 item 6: the MCP stdio client reads its own answer on the caller's thread.

A caller waiting for its answer takes stdout's token and reads the pipe itself while no
one else needs it; the reader thread takes over for concurrent callers, for what arrives
between calls, when a leader times out, and while the transport closes
(:mod:`a2a_sync.mcp.transports._stdio_lead`).

The races run against a scripted server: ``relay_server.py`` copies bytes between the
pipes and a socket the test holds, so the test plays the server and decides exactly how
the bytes are split; ordering comes from Events (a leader entering the pipe, a message
reaching the test), never from sleeps. The same paths then run against the real peers
(the framework-free echo server, the official ``mcp`` stdio server, server-everything).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from a2a_sync.errors import (
    Cancelled,
    ConnectionClosed,
    DeadlineExceeded,
    ServerProcessError,
)
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.session import Handlers, MCPSession
from a2a_sync.mcp.transports import _stdio_lead
from a2a_sync.mcp.transports._stdio_lead import StdoutPipe
from a2a_sync.mcp.transports.stdio import StdioTransport

from ..mcp.peers import PEERS, echo_argv
from ..mcp.peers.launch import EVERYTHING, MCPSERVER_PEER

pytestmark = pytest.mark.skipif(os.name != "posix", reason="leading needs poll() on pipes")

RELAY = str(PEERS / "relay_server.py")
WAIT = 30.0  # bounded waits: generous for a loaded 2-core machine


class Recording:
    """The session as the transport's sink, recording which thread delivered what."""

    def __init__(self, session: MCPSession) -> None:
        self.session = session
        self.lock = threading.Lock()
        self.deliveries: list[tuple[int, Any, Any]] = []  # (thread ident, id, method)

    def deliver(self, message: dict[str, Any]) -> None:
        with self.lock:
            self.deliveries.append(
                (threading.get_ident(), message.get("id"), message.get("method"))
            )
        self.session.deliver(message)

    def fail(self, request_id: Any, error: Any) -> None:
        self.session.fail(request_id, error)

    def transport_closed(self, error: Any) -> None:
        self.session.transport_closed(error)

    def thread_of(self, request_id: Any) -> int:
        with self.lock:
            found = [t for t, i, m in self.deliveries if i == request_id and m is None]
        assert len(found) == 1, f"reply {request_id!r} delivered {len(found)} times"
        return found[0]


class Leaders:
    """Instruments StdoutPipe._pump: an Event per thread that starts leading."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: dict[int, threading.Event] = {}

    def event(self, ident: int) -> threading.Event:
        with self.lock:
            return self.events.setdefault(ident, threading.Event())

    def wrap(self, pump: Callable[..., int]) -> Callable[..., int]:
        def instrumented(pipe: StdoutPipe, waiter: Any, deadline: Any) -> int:
            if waiter is not None:
                self.event(threading.get_ident()).set()
            return pump(pipe, waiter, deadline)

        return instrumented


@pytest.fixture
def leaders(monkeypatch: pytest.MonkeyPatch) -> Leaders:
    recorder = Leaders()
    monkeypatch.setattr(StdoutPipe, "_pump", recorder.wrap(StdoutPipe._pump))
    return recorder


class Scripted:
    """The test as the server: reads the client's lines, writes chosen bytes."""

    def __init__(self, *flags: str, handlers: Handlers | None = None, **options: Any) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(WAIT)
        port = self.listener.getsockname()[1]
        self.transport = StdioTransport([sys.executable, RELAY, str(port), *flags], **options)
        self.session = MCPSession(self.transport, handlers)
        self.sink = Recording(self.session)
        self.transport.start(self.sink)
        self.sock, _ = self.listener.accept()
        self.sock.settimeout(WAIT)
        self.lines = self.sock.makefile("rb")

    def receive(self) -> dict[str, Any]:
        line = self.lines.readline()
        assert line, "the client closed its stdin"
        message: dict[str, Any] = json.loads(line)
        return message

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def die(self) -> None:
        """End the relay (it exits with status 3)."""
        self.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with contextlib.suppress(ServerProcessError):
            self.transport.close()
        self.session.join_dispatcher()
        self.lines.close()
        self.sock.close()
        self.listener.close()


@pytest.fixture
def scripted() -> Iterator[Callable[..., Scripted]]:
    made: list[Scripted] = []

    def make(*flags: str, **options: Any) -> Scripted:
        peer = Scripted(*flags, stderr=None, **options)
        made.append(peer)
        return peer

    yield make
    for peer in made:
        peer.close()


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def reply(request_id: Any, text: str) -> bytes:
    return line({"jsonrpc": "2.0", "id": request_id, "result": {"text": text}})


def note(n: int) -> bytes:
    return line(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "n": n}}
    )


class Call:
    """One request waited for on its own thread."""

    def __init__(self, session: MCPSession, text: str, timeout: float = WAIT) -> None:
        self.pending = session.begin("tools/call", {"name": "echo", "text": text})
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(timeout,), daemon=True)
        self.thread.start()

    def _run(self, timeout: float) -> None:
        try:
            self.result = self.pending.wait(timeout)
        except Exception as exc:  # recorded for the test to assert on
            self.error = exc

    @property
    def ident(self) -> int:
        ident = self.thread.ident
        assert ident is not None
        return ident

    def join(self) -> None:
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the waiting caller was never woken"


def test_a_single_caller_reads_its_own_reply(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    peer = scripted()
    for n in range(3):
        call = Call(peer.session, f"hi {n}")
        request = peer.receive()
        assert leaders.event(call.ident).wait(WAIT)
        peer.write(reply(request["id"], f"hi {n}"))
        call.join()
        assert call.error is None
        assert call.result == {"text": f"hi {n}"}
        assert peer.sink.thread_of(request["id"]) == call.ident


def test_notification_and_server_request_interleaved_with_the_reply(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    seen: list[int] = []
    got_first = threading.Event()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        seen.append(params["n"])
        if params["n"] == 1:
            got_first.set()

    peer = scripted(handlers=Handlers(notification=on_notification))
    call = Call(peer.session, "x")
    request = peer.receive()
    assert leaders.event(call.ident).wait(WAIT)
    ping = line({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})
    answer = reply(request["id"], "x")
    # One write: a notification, a server request and the first half of the reply.
    peer.write(note(1) + ping + answer[:7])
    assert got_first.wait(WAIT)  # the leader has consumed that chunk
    peer.write(answer[7:] + note(2))
    call.join()
    assert call.result == {"text": "x"}
    pong = peer.receive()  # the server request is answered although a call was leading
    assert pong == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
    assert peer.sink.thread_of(request["id"]) == call.ident
    # note 2 came after the reply in the same chunk: the reader takes it from the buffer.
    peer.session.flush_callbacks()
    follow = Call(peer.session, "y")
    request = peer.receive()
    peer.write(reply(request["id"], "y"))
    follow.join()
    peer.session.flush_callbacks()
    assert seen == [1, 2]


def test_concurrent_callers_answered_out_of_order(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    peer = scripted()
    first = Call(peer.session, "a")
    request_a = peer.receive()
    assert leaders.event(first.ident).wait(WAIT)
    second = Call(peer.session, "b")  # finds the first caller leading: follows
    request_b = peer.receive()
    # Both replies in one write, the second caller's first: the leader delivers both.
    peer.write(reply(request_b["id"], "b") + reply(request_a["id"], "a"))
    first.join()
    second.join()
    assert (first.result, second.result) == ({"text": "a"}, {"text": "b"})
    assert peer.sink.thread_of(request_a["id"]) == first.ident


def test_leader_answered_first_hands_the_pipe_to_the_reader(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    peer = scripted()
    first = Call(peer.session, "a")
    request_a = peer.receive()
    assert leaders.event(first.ident).wait(WAIT)
    second = Call(peer.session, "b")
    request_b = peer.receive()
    peer.write(reply(request_a["id"], "a"))
    first.join()
    assert first.result == {"text": "a"}
    # The second call is still pending: someone must read its answer (the reader, or
    # the second caller if it took the token): never the first caller, which has left.
    peer.write(reply(request_b["id"], "b"))
    second.join()
    assert second.result == {"text": "b"}
    assert peer.sink.thread_of(request_b["id"]) != first.ident


def test_timeout_while_leading_cancels_and_the_reader_takes_over(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    got = threading.Event()
    peer = scripted(handlers=Handlers(notification=lambda method, params: got.set()))
    call = Call(peer.session, "slow", timeout=0.5)
    request = peer.receive()
    call.join()
    assert isinstance(call.error, DeadlineExceeded)
    assert leaders.event(call.ident).is_set()
    cancelled = peer.receive()
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == request["id"]
    # The late answer is dropped; a notification between calls still arrives.
    peer.write(reply(request["id"], "late") + note(7))
    assert got.wait(WAIT)
    follow = Call(peer.session, "next")
    request = peer.receive()
    peer.write(reply(request["id"], "next"))
    follow.join()
    assert follow.result == {"text": "next"}


def test_cancel_from_another_thread_wakes_the_leader(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    peer = scripted()
    call = Call(peer.session, "x", timeout=300)
    request = peer.receive()
    assert leaders.event(call.ident).wait(WAIT)
    assert call.pending.cancel("test")
    call.join()  # woken long before its 300 s timeout
    assert isinstance(call.error, Cancelled)
    assert peer.receive()["params"]["requestId"] == request["id"]


def test_close_while_leading_wakes_the_caller(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    # The relay ignores stdin EOF: only the transport's close can end the lead.
    peer = scripted("--ignore-eof", terminate_timeout=0.2, kill_timeout=1.0)
    call = Call(peer.session, "x", timeout=300)
    peer.receive()
    assert leaders.event(call.ident).wait(WAIT)
    peer.transport.close()
    call.join()
    assert isinstance(call.error, ConnectionClosed)


def test_server_dying_mid_reply_fails_the_leading_call(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    peer = scripted()
    call = Call(peer.session, "x", timeout=300)
    request = peer.receive()
    assert leaders.event(call.ident).wait(WAIT)
    peer.write(reply(request["id"], "x")[:10])  # half a line, then the server dies
    peer.die()
    call.join()
    assert isinstance(call.error, ServerProcessError)
    assert call.error.returncode == 3


def test_no_line_lost_or_read_twice_across_hand_overs(scripted: Callable[..., Scripted]) -> None:
    """Many calls from three threads, each answered by a notification and the reply
    split at random byte offsets: every reply reaches its caller once, every
    notification arrives once and in order."""
    seen: list[int] = []
    peer = scripted(handlers=Handlers(notification=lambda method, params: seen.append(params["n"])))
    rng = random.Random(18)
    stop = threading.Event()

    def serve() -> None:
        n = 0
        while not stop.is_set():
            try:
                request = peer.receive()
            except (AssertionError, OSError, ValueError):
                return
            if request.get("method") != "tools/call":
                continue
            n += 1
            data = note(n) + reply(request["id"], request["params"]["text"])
            cuts = sorted(rng.sample(range(1, len(data)), 2))
            for piece in (data[: cuts[0]], data[cuts[0] : cuts[1]], data[cuts[1] :]):
                peer.write(piece)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    failures: list[str] = []

    def caller(tag: str) -> None:
        for i in range(60):
            text = f"{tag}-{i}"
            params = {"name": "echo", "text": text}
            result = peer.session.request("tools/call", params, timeout=WAIT)
            if result != {"text": text}:
                failures.append(f"{text}: {result!r}")

    threads = [threading.Thread(target=caller, args=(tag,)) for tag in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
        assert not thread.is_alive()
    stop.set()
    peer.session.flush_callbacks()
    assert failures == []
    assert seen == list(range(1, 181))
    replies = [i for _, i, m in peer.sink.deliveries if m is None]
    assert len(replies) == len(set(replies)) == 180


def test_notifications_between_calls_reach_the_reader_after_the_linger(
    scripted: Callable[..., Scripted], leaders: Leaders
) -> None:
    got = threading.Event()
    peer = scripted(handlers=Handlers(notification=lambda method, params: got.set()))
    call = Call(peer.session, "x")
    request = peer.receive()
    assert leaders.event(call.ident).wait(WAIT)
    peer.write(reply(request["id"], "x"))
    call.join()
    # No call is pending: the free token goes back to the reader within LINGER.
    peer.write(note(1))
    assert got.wait(WAIT)
    assert _stdio_lead.LINGER < 1


# --- real peers ------------------------------------------------------------------------------

REAL_PEERS = {
    "echo": echo_argv(),
    "mcpserver": [sys.executable, MCPSERVER_PEER],
    "everything": [str(EVERYTHING)],
}


@pytest.fixture(params=sorted(REAL_PEERS))
def real(request: pytest.FixtureRequest) -> Iterator[MCPConnection]:
    if request.param == "everything" and (not EVERYTHING.exists() or shutil.which("node") is None):
        pytest.skip("server-everything not installed (run `npm ci` at the repo top)")
    conn = MCPConnection.stdio(REAL_PEERS[request.param], era="legacy", stderr=None)
    try:
        yield conn
    finally:
        with contextlib.suppress(ServerProcessError):
            conn.close()


@pytest.mark.peer
def test_concurrent_callers_against_real_peers(real: MCPConnection) -> None:
    client = real.client()
    key = "message" if "everything" in real.transport.name else "text"
    failures: list[str] = []

    def caller(tag: str) -> None:
        for i in range(25):
            text = f"{tag}-{i}"
            result = client.call_tool("echo", {key: text})
            if text not in result.text:
                failures.append(f"{text}: {result.text!r}")

    threads = [threading.Thread(target=caller, args=(tag,)) for tag in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
        assert not thread.is_alive()
    assert failures == []
    # One caller alone afterwards: leads again.
    assert "solo" in client.call_tool("echo", {key: "solo"}).text
