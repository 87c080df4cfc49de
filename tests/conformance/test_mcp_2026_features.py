"""MCP 2026-07-28 client requirements beyond test_mcp_2026.py: ``subscriptions/listen``,
cancellation over stdio, multi round-trip requests on prompts and resources, caching
hints, the per-request log level and the ``HeaderMismatch`` retry.

stdio: the scripted peer (:mod:`.mcp_stdio_peer`) speaking 2026-07-28 records every
message it reads. HTTP: a raw-socket modern server records every request. Sections are
pages of modelcontextprotocol/modelcontextprotocol ``docs/specification/2026-07-28/``.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import DeadlineExceeded, InvalidParams, ResourceNotFound
from a2a_sync.mcp import ElicitRequest, ElicitResult, MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from tests.support.servers import RecordedRequest, ScriptedServer, respond, respond_json

from .mcp_peer import methods, peer, received, requests_named

requirement = pytest.mark.requirement
MODERN = "2026-07-28"
WAIT = 10.0
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
TEXT = {"content": [{"type": "text", "text": "ok"}]}
FORM = {"type": "object", "properties": {"name": {"type": "string"}}}
#: An input_required result asking for one elicitation, with an opaque requestState.
ASK = {
    "resultType": "input_required",
    "inputRequests": {
        "who": {
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "who?", "requestedSchema": FORM},
        }
    },
    "requestState": "opaque-state-1",
}


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Any:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def plan(capabilities: dict[str, Any], replies: dict[str, Any]) -> dict[str, Any]:
    return {"version": MODERN, "capabilities": capabilities, "replies": replies}


def answer_ada(_request: ElicitRequest) -> ElicitResult:
    return ElicitResult.accept({"name": "Ada"})


@requirement("mcp-2026-07-28-§subscriptions-listen-filter-and-tagged-events")
@requirement("mcp-2026-07-28-§subscriptions-stdio-close-cancels-listen")
def test_listen_names_the_wanted_notifications_and_closing_cancels_it(tmp_path: Path) -> None:
    """``subscriptions/listen`` carries the notification filter; the acknowledgement and
    the events tagged with the listen request's id reach the subscription; closing it
    over stdio sends ``notifications/cancelled`` for that request."""
    record = tmp_path / "received.jsonl"
    tag = {SUBSCRIPTION: "$id"}
    granted = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a.txt"]}
    listen_step = {
        "send": [
            {
                "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": granted, "_meta": tag},
            },
            {
                "method": "notifications/resources/updated",
                "params": {"uri": "file:///a.txt", "_meta": tag},
            },
        ],
        "hold": True,
    }
    replies = {"subscriptions/listen": [listen_step]}
    argv = peer(record, plan({"tools": {"listChanged": True}, "resources": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        subscription = client.listen(tools=True, resource_uris=["file:///a.txt"])
        event = subscription.get_event(WAIT)
        assert event is not None
        assert (event.kind, event.uri) == ("resource_updated", "file:///a.txt")
        subscription.close()
        client.ping()  # the server has read the cancellation before this
    messages = received(record)
    (listen,) = requests_named(messages, "subscriptions/listen")
    assert listen["params"]["notifications"] == granted
    cancels = [m for m in messages if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [listen["id"]]
    assert all("id" not in c for c in cancels)


@requirement("mcp-2026-07-28-§cancellation-stdio-cancelled-notification")
def test_a_timed_out_request_over_stdio_is_cancelled_by_notification(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    replies = {"tools/call": [{"hold": True}, {"result": TEXT}]}
    argv = peer(record, plan({"tools": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        with pytest.raises(DeadlineExceeded):
            client.call_tool("slow", {}, timeout=0.3)
        assert client.call_tool("next", {}).text == "ok"  # read after the cancellation
    messages = received(record)
    slow = requests_named(messages, "tools/call")[0]
    cancels = [m for m in messages if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [slow["id"]]


def check_retry(messages: list[dict[str, Any]], method: str, key: str) -> None:
    first, retry = requests_named(messages, method)[:2]
    assert retry["id"] != first["id"]
    assert retry["params"][key] == first["params"][key]
    assert "inputResponses" not in first["params"]
    assert retry["params"]["requestState"] == "opaque-state-1"
    assert retry["params"]["inputResponses"] == {
        "who": {"action": "accept", "content": {"name": "Ada"}}
    }


@requirement("mcp-2026-07-28-§mrtr-prompts-get-retried-with-inputs")
def test_an_input_required_prompt_is_retried_with_the_answers(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    rendered = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi Ada"}}]}
    replies = {"prompts/get": [{"result": ASK}, {"result": rendered}]}
    argv = peer(record, plan({"prompts": {}}, replies))
    with MCPConnection.stdio(
        argv, era=MODERN, timeout=WAIT, elicitation_callback=answer_ada
    ) as conn:
        prompt = conn.client().get_prompt("greet", {"tone": "warm"})
    assert prompt.messages[0].content.text == "hi Ada"  # type: ignore[union-attr]
    check_retry(received(record), "prompts/get", "name")


@requirement("mcp-2026-07-28-§mrtr-resources-read-retried-with-inputs")
def test_an_input_required_read_is_retried_with_the_answers(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    contents = {"contents": [{"uri": "file:///a.txt", "text": "secret"}]}
    replies = {"resources/read": [{"result": ASK}, {"result": contents}]}
    argv = peer(record, plan({"resources": {}}, replies))
    with MCPConnection.stdio(
        argv, era=MODERN, timeout=WAIT, elicitation_callback=answer_ada
    ) as conn:
        (part,) = conn.client().read_resource("file:///a.txt")
    assert part.text == "secret"  # type: ignore[union-attr]
    check_retry(received(record), "resources/read", "uri")


@requirement("mcp-2026-07-28-§caching-ttl-honoured")
def test_a_list_is_served_from_cache_within_its_ttl_only(tmp_path: Path) -> None:
    """``ttlMs`` 60 s: the second listing is served from the cache; ``ttlMs`` 0: every
    listing asks the server."""
    record = tmp_path / "received.jsonl"
    tool = {"name": "t", "inputSchema": {"type": "object"}}
    fresh = {"tools": [tool], "ttlMs": 60_000, "cacheScope": "private"}
    stale = {"prompts": [{"name": "p"}], "ttlMs": 0, "cacheScope": "private"}
    replies = {"tools/list": [{"result": fresh}], "prompts/list": [{"result": stale}]}
    argv = peer(record, plan({"tools": {}, "prompts": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        assert [t.name for t in client.list_tools()] == [t.name for t in client.list_tools()]
        client.list_prompts()
        client.list_prompts()
    sent = methods(received(record))
    assert sent.count("tools/list") == 1
    assert sent.count("prompts/list") == 2


@requirement("mcp-2026-07-28-§caching-input-required-retries-not-cached")
def test_the_result_of_an_input_required_retry_is_not_cached(tmp_path: Path) -> None:
    """A read that needed input is answered with a long ``ttlMs``: the next read still
    goes to the server (the cached answer would skip the input the server asked for)."""
    record = tmp_path / "received.jsonl"
    contents = {
        "contents": [{"uri": "file:///a.txt", "text": "secret"}],
        "ttlMs": 60_000,
        "cacheScope": "private",
    }
    answers = [{"result": ASK}, {"result": contents}]
    replies = {"resources/read": answers * 2}
    argv = peer(record, plan({"resources": {}}, replies))
    with MCPConnection.stdio(
        argv, era=MODERN, timeout=WAIT, elicitation_callback=answer_ada
    ) as conn:
        client = conn.client()
        client.read_resource("file:///a.txt")
        client.read_resource("file:///a.txt")
    assert methods(received(record)).count("resources/read") == 4


@requirement("mcp-2026-07-28-§index-log-level-opt-in-in-meta")
def test_the_log_level_rides_in_meta_and_no_set_level_is_sent(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    replies: dict[str, Any] = {"tools/list": [{"result": {"tools": []}}]}
    argv = peer(record, plan({"tools": {}, "logging": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        client.set_logging_level("info")
        client.list_tools()
    messages = received(record)
    assert "logging/setLevel" not in methods(messages)
    (listing,) = requests_named(messages, "tools/list")
    assert listing["params"]["_meta"][LOG_LEVEL] == "info"


class MismatchServer:
    """A modern HTTP server whose tool gains an ``x-mcp-header`` annotation after the
    client first listed it: the first call lacks the header and is refused with
    HeaderMismatch (400, -32020)."""

    def __init__(self) -> None:
        self.listings = 0
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def tool(self) -> dict[str, Any]:
        region: dict[str, Any] = {"type": "string"}
        if self.listings > 1:
            region["x-mcp-header"] = "Region"
        schema = {"type": "object", "properties": {"region": region}}
        return {"name": "weather", "inputSchema": schema}

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method != "POST":
            respond(sock, 405)
            return
        message = request.json()
        method, reply_id = message["method"], message.get("id")
        result: dict[str, Any] = {"resultType": "complete"}
        if method == "server/discover":
            result |= {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
        elif method == "tools/list":
            self.listings += 1
            result |= {"tools": [self.tool()], "ttlMs": 0, "cacheScope": "private"}
        elif method == "tools/call" and "Mcp-Param-Region" not in request.headers:
            error = {"code": -32020, "message": "Header mismatch: Mcp-Param-Region missing"}
            respond_json(sock, {"jsonrpc": "2.0", "id": reply_id, "error": error}, status=400)
            return
        else:
            result |= TEXT
        respond_json(sock, {"jsonrpc": "2.0", "id": reply_id, "result": result})


@requirement("mcp-2026-07-28-§streamable-http-header-mismatch-relist-and-retry")
def test_header_mismatch_relists_the_tools_and_retries_once() -> None:
    script = MismatchServer()
    with script.server, MCPConnection.http(script.url, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        client.list_tools()
        assert client.call_tool("weather", {"region": "eu-west"}).text == "ok"
    sent = [(r.json()["method"], r.headers.get("Mcp-Param-Region")) for r in script.server.requests]
    calls = [i for i, (m, _) in enumerate(sent) if m == "tools/call"]
    assert len(calls) == 2  # the refused call and one retry
    assert ("tools/list", None) in sent[calls[0] : calls[1]]
    assert sent[calls[1]] == ("tools/call", "eu-west")


@requirement("mcp-2026-07-28-§resources-legacy-not-found-code-accepted")
def test_a_legacy_not_found_code_is_still_understood(tmp_path: Path) -> None:
    """2026-07-28 answers an unknown resource with -32602; a server still using the old
    -32002 is understood too (both surface as typed errors)."""
    record = tmp_path / "received.jsonl"
    old = {"error": {"code": -32002, "message": "Resource not found"}}
    new = {"error": {"code": -32602, "message": "Unknown resource"}}
    replies = {"resources/read": [old, new]}
    argv = peer(record, plan({"resources": {}}, replies))
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        with pytest.raises(ResourceNotFound):
            client.read_resource("file:///gone.txt")
        with pytest.raises(InvalidParams):
            client.read_resource("file:///gone.txt")


class HoldingServer:
    """A modern HTTP server that never answers ``tools/call``: it waits (bounded) until
    the client closes the connection and notes it."""

    def __init__(self) -> None:
        self.gone = threading.Event()
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method != "POST":
            respond(sock, 405)
            return
        message = request.json()
        if message.get("method") == "tools/call":
            deadline = time.monotonic() + WAIT
            while time.monotonic() < deadline:
                readable, _, _ = select.select([sock], [], [], 0.05)
                if readable and sock.recv(1, socket.MSG_PEEK) == b"":
                    self.gone.set()
                    return
            return
        result = {
            "resultType": "complete",
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
        }
        if "id" in message:
            respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        else:
            respond(sock, 202)


@requirement("mcp-2026-07-28-§streamable-http-cancel-by-closing-the-stream")
def test_over_http_a_request_is_cancelled_by_closing_its_stream() -> None:
    """Over Streamable HTTP the client cancels by closing the request's connection; it
    sends no ``notifications/cancelled`` (the only client notification, and for stdio)."""
    script = HoldingServer()
    with script.server:
        with MCPConnection.http(script.url, era=MODERN, timeout=WAIT) as conn:
            with pytest.raises(DeadlineExceeded):
                conn.client().call_tool("slow", {}, timeout=0.3)
            assert script.gone.wait(WAIT)
            conn.client().ping()  # anything sent after the timeout has arrived by now
        sent = [r.json().get("method") for r in script.server.requests if r.method == "POST"]
    assert "tools/call" in sent
    assert "notifications/cancelled" not in sent


@pytest.mark.peer
def test_the_official_server_acknowledges_and_tags_a_listen() -> None:
    """The same listen against the official ``mcp`` 2.3.0 server (in process, 2026-07-28):
    it grants the filter the client sent, and its tagged list-changed event reaches the
    subscription, to show the scripted test above expects what a real server does."""
    pytest.importorskip("mcp")
    from a2a_sync.testing.mcp_sdk import SDKServerTransport

    from .mcp_official import official_server

    server = official_server()
    with MCPConnection(lambda: SDKServerTransport(server), era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        with client.listen(tools=True) as subscription:
            assert subscription.granted == {"toolsListChanged": True}
            assert client.call_tool("change", {}).text == "changed"
            event = subscription.get_event(WAIT)
        assert event is not None
        assert event.kind == "tools"


@requirement("mcp-2026-07-28-§progress-token-in-meta-and-notifications-routed")
def test_progress_is_asked_for_in_meta_and_reaches_the_callback(tmp_path: Path) -> None:
    """A call that wants progress carries a unique ``progressToken`` in ``_meta``; the
    server's ``notifications/progress`` for that token reach the callback in order."""
    record = tmp_path / "received.jsonl"
    steps = [
        {
            "method": "notifications/progress",
            "params": {"progressToken": "$token", "progress": n, "total": 2},
        }
        for n in (1, 2)
    ]
    replies = {"tools/call": [{"send": steps, "result": TEXT}]}
    argv = peer(record, plan({"tools": {}}, replies))
    seen: list[float] = []
    with MCPConnection.stdio(argv, era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        client.call_tool("a", {}, progress=lambda p: seen.append(p.progress))
        client.call_tool("b", {}, progress=lambda p: None)
    assert seen == [1, 2]
    tokens = [
        m["params"]["_meta"]["progressToken"]
        for m in requests_named(received(record), "tools/call")
    ]
    assert all(isinstance(t, (str, int)) and not isinstance(t, bool) for t in tokens)
    assert len(set(tokens)) == 2
