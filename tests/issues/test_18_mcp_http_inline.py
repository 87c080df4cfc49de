"""Issue 18 item 5: a Streamable HTTP call is POSTed and read on the caller's thread.

A request whose sender waits for it at once (``call_tool``, listings, ``session.request``)
is registered by ``send`` and run from ``lead`` on the waiting thread: no worker thread,
no hand-off. Its deadline is kept by one lazy watchdog thread
(:class:`a2a_sync.mcp.transports._deadlines.Deadlines`); a cancel from another thread and
``close()`` abort the read. Against the official ``mcp`` Streamable HTTP server in both
eras and server-everything (legacy era, event-stream answers).
"""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterator

import pytest

from a2a_sync.errors import Cancelled, ConnectionClosed
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.transports._deadlines import Deadlines

from ..mcp.peers.launch import EVERYTHING, everything_http, mcpserver_http

WAIT = 30.0  # bounded waits: generous for a loaded 2-core machine
WORKER = re.compile(r"a2a-sync-mcp-http-\d+$")  # the POST workers' names


def workers() -> list[str]:
    return [t.name for t in threading.enumerate() if WORKER.match(t.name)]


@pytest.fixture(scope="module")
def mcpserver_url() -> Iterator[str]:
    with mcpserver_http("http") as base:
        yield base + "/mcp"


@pytest.fixture(params=["legacy", "modern"])
def conn(request: pytest.FixtureRequest, mcpserver_url: str) -> Iterator[MCPConnection]:
    with MCPConnection.http(mcpserver_url, era=request.param) as connection:
        yield connection


@pytest.mark.peer
def test_calls_run_on_the_callers_thread(conn: MCPConnection) -> None:
    assert workers() == []  # the handshake ran inline too
    client = conn.client(timeout=WAIT)
    for i in range(5):
        assert client.call_tool("echo", {"text": f"hi {i}"}).text == f"hi {i}"
    assert [tool.name for tool in client.list_tools()]
    assert workers() == []


@pytest.mark.peer
def test_cancel_from_another_thread_aborts_an_inline_call(conn: MCPConnection) -> None:
    tag = f"inline-cancel-{conn.session.era}"
    running = threading.Event()
    pending = conn.session.begin(
        "tools/call",
        {"name": "slow", "arguments": {"seconds": 60, "tag": tag}},
        progress=lambda progress: running.set(),
        inline=True,
    )
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            pending.wait(300)  # leads: the POST is sent and read on this thread
        except Cancelled as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait, name="a2a-sync-test-inline-waiter")
    waiter.start()
    assert running.wait(WAIT)  # the server runs the call: the cancel must reach it
    assert pending.cancel("test")
    waiter.join(WAIT)
    assert not waiter.is_alive()
    assert len(errors) == 1
    client = conn.client(timeout=WAIT)
    seen = client.call_tool("cancelled", {"wait_for": tag, "timeout": 10}).structured_content
    assert tag in seen["result"]
    assert client.call_tool("echo", {"text": "after"}).text == "after"


@pytest.mark.peer
def test_close_aborts_an_inline_call(mcpserver_url: str) -> None:
    conn = MCPConnection.http(mcpserver_url, era="modern")
    running = threading.Event()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            conn.client(timeout=300).call_tool(
                "slow", {"seconds": 60}, progress=lambda progress: running.set()
            )
        except ConnectionClosed as exc:
            errors.append(exc)

    caller = threading.Thread(target=call, name="a2a-sync-test-inline-caller")
    caller.start()
    try:
        assert running.wait(WAIT)
    finally:
        conn.close()
    caller.join(WAIT)
    assert not caller.is_alive()
    assert len(errors) == 1


@pytest.mark.peer
def test_concurrent_inline_calls_against_server_everything() -> None:
    if not EVERYTHING.exists() or shutil.which("node") is None:
        pytest.skip("server-everything not installed (run `npm ci` at the repo top)")
    failures: list[str] = []
    with everything_http() as url, MCPConnection.http(url) as conn:
        client = conn.client(timeout=WAIT)

        def caller(tag: str) -> None:
            for i in range(10):
                text = f"{tag}-{i}"
                result = client.call_tool("echo", {"message": text})
                if text not in result.text:
                    failures.append(f"{text}: {result.text!r}")

        threads = [threading.Thread(target=caller, args=(tag,)) for tag in "abcd"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT * 2)
            assert not thread.is_alive()
        assert workers() == []
    assert failures == []


# --- the watchdog ----------------------------------------------------------------------------


class FakeExchange:
    def __init__(self) -> None:
        self.aborted = threading.Event()

    def abort(self) -> None:
        self.aborted.set()


def test_watchdog_aborts_only_what_is_still_watched_when_due() -> None:
    deadlines = Deadlines("a2a-sync-test-deadlines")
    try:
        finished, due = FakeExchange(), FakeExchange()
        soon = time.monotonic() + 0.05
        entry = deadlines.watch(finished, soon)  # type: ignore[arg-type]
        deadlines.unwatch(entry)  # the call ended in time
        late = deadlines.watch(due, soon)  # type: ignore[arg-type]
        assert due.aborted.wait(WAIT)
        assert late.fired
        assert not finished.aborted.is_set()
        assert not entry.fired
        # An earlier deadline than the one it sleeps on wakes it.
        far, near = FakeExchange(), FakeExchange()
        deadlines.watch(far, time.monotonic() + 3600)  # type: ignore[arg-type]
        deadlines.watch(near, time.monotonic() + 0.05)  # type: ignore[arg-type]
        assert near.aborted.wait(WAIT)
        assert not far.aborted.is_set()
    finally:
        deadlines.close()
    assert not any(t.name == "a2a-sync-test-deadlines" for t in threading.enumerate())
