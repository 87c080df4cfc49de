"""Issue 18 item 5: a Streamable HTTP call's exchange is light, and behaves as before.

An :class:`~a2a_sync.mcp.transports._streams.Exchange` is made for every request. It used
to make two ``threading.Event`` objects and an SSE decoder each time, although a call
answered with JSON on the caller's own thread waits on neither. Now the stop event is
made on first use, a plain lock marks a request still leaving, and the decoder is made
when an answer turns out to be an event stream. These tests pin the semantics the
events carried: a stop seen by waits made before and after it, ``abandon``'s wait for
a request still leaving, and a resumption without an event stream read.
"""

from __future__ import annotations

import codecs
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync.errors import ConnectionLost
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.transports import Outgoing
from a2a_sync.mcp.transports._httpbase import ACCEPT_BOTH, JSON_TYPE, Endpoint, decode_messages
from a2a_sync.mcp.transports._streams import Exchange, Link, resume
from a2a_sync.policies import ReconnectPolicy, Timeout

from ..mcp.peers.launch import mcpserver_http

WAIT = 30.0  # bounded waits: generous for a loaded 2-core machine


class _Sink:
    def __init__(self) -> None:
        self.delivered: list[dict[str, Any]] = []

    def deliver(self, message: dict[str, Any]) -> None:
        self.delivered.append(message)

    def fail(self, request_id: Any, error: Any) -> None:  # pragma: no cover - unused
        raise AssertionError(error)

    def transport_closed(self, error: Any) -> None:  # pragma: no cover - unused
        raise AssertionError(error)


def _exchange() -> Exchange:
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo"}}
    context = Outgoing("request", "tools/call", 7, {"MCP-Protocol-Version": "2025-11-25"})
    return Exchange(message, context, _Sink(), 1 << 20)


def test_an_exchange_is_made_without_events_or_decoder() -> None:
    exchange = _exchange()
    assert exchange._stop_event is None
    assert exchange.decoder is None
    assert not exchange.stopped
    assert (
        exchange.body == b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}'
    )


def test_abort_before_the_stop_event_is_made_is_seen_by_it() -> None:
    exchange = _exchange()
    exchange.abort()
    assert exchange.stopped
    assert exchange.stop.is_set()
    assert exchange.stop.wait(0)  # a resumption's pause ends at once


def test_abort_wakes_a_wait_on_the_stop_event_from_another_thread() -> None:
    exchange = _exchange()
    stop = exchange.stop  # made now, before the abort
    assert not stop.is_set()
    waiting = threading.Event()
    woke: list[bool] = []

    def wait() -> None:
        waiting.set()
        woke.append(stop.wait(WAIT))

    thread = threading.Thread(target=wait, name="a2a-sync-test-stop-waiter", daemon=True)
    thread.start()
    assert waiting.wait(WAIT)
    exchange.abort()
    thread.join(WAIT)
    assert woke == [True]
    assert exchange.stop is stop


def test_wait_quiet_waits_for_a_request_still_leaving() -> None:
    exchange = _exchange()
    assert exchange.wait_quiet(0)  # nothing is being sent
    holding = threading.Event()
    release = threading.Event()

    def send() -> None:
        with exchange.sending:
            holding.set()
            release.wait(WAIT)

    thread = threading.Thread(target=send, name="a2a-sync-test-sender", daemon=True)
    thread.start()
    assert holding.wait(WAIT)
    assert not exchange.wait_quiet(0.01)  # still leaving: the wait times out
    release.set()
    assert exchange.wait_quiet(WAIT)
    thread.join(WAIT)
    assert exchange.wait_quiet(0)  # and it stays quiet


def test_resume_without_an_event_stream_read_is_connection_lost() -> None:
    endpoint = Endpoint("http://127.0.0.1:9/mcp")
    with HTTPTransport() as http:
        link = Link(
            endpoint,
            http,
            name="MCP server at test",
            open_timeout=Timeout(connect=1, read=1, total=None),
            policy=ReconnectPolicy(),
            max_event_bytes=1 << 20,
        )
        with pytest.raises(ConnectionLost, match="without an event id"):
            resume(link, _exchange(), lambda: {})


def test_post_headers_equal_the_generic_headers_plus_content_type() -> None:
    asked: list[int] = []

    def token() -> str:
        asked.append(1)
        return f"t{len(asked)}"

    endpoint = Endpoint("http://127.0.0.1:9/mcp", headers={"X-Tenant": "t1"}, auth=token)
    generic = endpoint.headers(ACCEPT_BOTH)
    first = endpoint.post_headers()
    assert len(asked) == 2  # the credential is asked per request
    assert first == {**generic, "Content-Type": JSON_TYPE, "Authorization": "Bearer t2"}
    first["X-Tenant"] = "changed"  # a fresh dict each time: the template is not shared
    assert endpoint.post_headers()["X-Tenant"] == "t1"


@pytest.fixture(scope="module")
def resumable_url() -> Iterator[str]:
    with mcpserver_http("http", "--resumable") as base:
        yield base + "/mcp"


@pytest.mark.peer
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_calls_still_answered_in_both_eras(resumable_url: str, era: str) -> None:
    with MCPConnection.http(resumable_url, era=era) as conn:
        client = conn.client(timeout=WAIT)
        for i in range(3):
            assert client.call_tool("echo", {"text": f"x{i}"}).text == f"x{i}"


_MESSAGE = {"jsonrpc": "2.0", "id": 1, "result": {"text": "h\u00e9llo \u2603 \U0001f600"}}


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(_MESSAGE, ensure_ascii=False).encode(),  # UTF-8: the fast path
        json.dumps([_MESSAGE, _MESSAGE]).encode(),  # a batch
        b" " + json.dumps(_MESSAGE).encode(),  # leading space: json.loads' own detection
        codecs.BOM_UTF8 + json.dumps(_MESSAGE).encode(),
        json.dumps(_MESSAGE).encode("utf-16"),  # BOM + UTF-16: detected, as before
        json.dumps(_MESSAGE).encode("utf-16-le"),  # no BOM, NUL second byte
        b'{"jsonrpc":"2.0","id":1,"result":"\\ud800"}',  # a lone surrogate escape
    ],
)
def test_decode_messages_reads_bodies_as_json_loads_does(body: bytes) -> None:
    expected = json.loads(body)
    assert decode_messages(body, "test") == (expected if isinstance(expected, list) else [expected])


@pytest.mark.parametrize("body", [b'{"id": 1, "x": "\xff"}', b"{not json", b"{", b"[1, 2]"])
def test_decode_messages_drops_what_is_not_a_message(body: bytes) -> None:
    assert decode_messages(body, "test") == []
