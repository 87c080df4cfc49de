"""Issue 21: what mcp and fastmcp users expect of the MCP client, and the paging defects.

* Broken paging (items 5, 6): any repeated cursor (a → b → a) and a ``nextCursor`` that is
  not a string are a ProtocolError naming the server, after a bounded number of requests
  (the scripted server, in memory and as a subprocess).
* Capabilities (item 9): listings of what a server does not declare return ``[]`` without
  asking it.
* Per-call cache control (item 3): ``refresh=True`` and ``clear_cache()`` against the
  official server sending ``ttlMs`` over stdio and HTTP; list_changed still evicts.
* Schema-derived results (item 4): ``call_tool_data`` against the official server and
  server-everything, and the decoder's rules.
* In-memory transports (item 2): the scripted server, a plain ``handle`` callable and an
  official ``MCPServer`` object, in-process.
"""

from __future__ import annotations

import datetime
import functools
import gc
import importlib.util
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.errors import ConfigurationError, ConnectionClosed, ProtocolError, ToolOutputError
from a2a_sync.mcp import (
    CreateMessageRequest,
    CreateMessageResult,
    ElicitRequest,
    ElicitResult,
    MCPConnection,
    TextContent,
)
from a2a_sync.mcp._schema import decode
from a2a_sync.testing import (
    InMemoryTransport,
    ScriptedMCPServer,
    connect_in_memory,
    mcp_server_command,
)
from tests.mcp.peers.launch import EVERYTHING, MCPSERVER_PEER, mcpserver_http

CYCLE = {
    "tools": {"a": "A", "b": "B", "c": "C"},
    "pages": {
        "tools": {
            "": {"items": ["a"], "next": "p1"},
            "p1": {"items": ["b"], "next": "p2"},
            "p2": {"items": ["c"], "next": "p1"},
        }
    },
}
NUMBER_CURSOR = {
    "tools": {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"},
    "pages": {"tools": {"": {"items": ["a", "b"], "next": 5}}},
}


class Counting:
    """A scripted server that counts the listing requests it answers."""

    def __init__(self, script: dict[str, Any]) -> None:
        self.server = ScriptedMCPServer(script)
        self.methods: list[str] = []

    def handle(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        if "method" in message:
            self.methods.append(message["method"])
        return self.server.handle(message)


# --- items 5 and 6: broken paging ---------------------------------------------------------------


def test_a_cursor_cycle_is_a_protocol_error_naming_the_server_after_one_round() -> None:
    server = Counting({**CYCLE, "name": "cyclic"})
    with connect_in_memory(server, era="legacy") as conn, pytest.raises(ProtocolError) as info:
        conn.client().list_tools()
    assert "cyclic" in str(info.value)
    assert "'p1' a second time" in str(info.value)
    assert server.methods.count("tools/list") == 3  # "", p1, p2: then p1 again is refused


def test_a_cursor_cycle_from_a_server_process_is_refused_too() -> None:
    conn = MCPConnection.stdio(mcp_server_command(CYCLE), era="legacy")
    with conn, pytest.raises(ProtocolError, match="cycle") as info:
        conn.client().list_tools()
    assert "scripted-mcp-server" in str(info.value)


def test_a_number_as_next_cursor_is_a_protocol_error_not_a_short_listing() -> None:
    conn = MCPConnection.stdio(mcp_server_command(NUMBER_CURSOR), era="legacy")
    with conn, pytest.raises(ProtocolError) as info:
        conn.client().list_tools()
    message = str(info.value)
    assert "scripted-mcp-server" in message
    assert "not a string" in message
    assert "number" in message


@pytest.mark.parametrize("cursor", [5, 1.5, True, ["x"], {"k": "v"}])
def test_every_non_string_cursor_is_refused(cursor: Any) -> None:
    script = {**NUMBER_CURSOR, "pages": {"tools": {"": {"items": ["a"], "next": cursor}}}}
    conn = connect_in_memory(ScriptedMCPServer(script), era="legacy")
    with conn, pytest.raises(ProtocolError, match="not a string"):
        conn.client().list_tools()


def test_empty_and_null_cursors_end_a_listing_normally() -> None:
    script = {
        "tools": {"a": "A", "b": "B"},
        "pages": {"tools": {"": {"items": ["a"], "next": "n"}, "n": {"items": ["b"], "next": ""}}},
        "prompts": {"p": "P"},
        "resources": {"mem://r": "R"},
    }
    paged_prompts = {"prompts": {"": {"items": ["p"], "next": None}}}
    script["pages"] = {**script["pages"], **paged_prompts}  # type: ignore[dict-item]
    with connect_in_memory(ScriptedMCPServer(script), era="legacy") as conn:
        assert [t.name for t in conn.client().list_tools()] == ["a", "b"]
        assert [p.name for p in conn.client().list_prompts()] == ["p"]


def test_paged_resources_with_a_cycle_are_refused() -> None:
    script = {
        "resources": {"mem://a": "A", "mem://b": "B"},
        "pages": {
            "resources": {"": {"items": ["mem://a"], "next": "x"}, "x": {"items": [], "next": "x"}}
        },
    }
    conn = connect_in_memory(ScriptedMCPServer(script), era="legacy")
    with conn, pytest.raises(ProtocolError, match="cycle"):
        conn.client().list_resources()


# --- item 9: capabilities ------------------------------------------------------------------------


def test_listings_a_server_does_not_declare_are_empty_without_asking(tmp_path: Any) -> None:
    record = tmp_path / "record.jsonl"
    argv = mcp_server_command(tools={"greet": "hi"}, record=record)
    with MCPConnection.stdio(argv, era="legacy") as conn:
        client = conn.client()
        assert conn.server_info.capabilities.resources is None
        assert client.list_resources() == []
        assert client.list_resource_templates() == []
        assert client.list_prompts() == []
        assert [t.name for t in client.list_tools()] == ["greet"]
    from a2a_sync.testing import recorded_messages

    sent = [m.get("method") for m in recorded_messages(record)]
    assert "resources/list" not in sent
    assert "prompts/list" not in sent
    assert "resources/templates/list" not in sent
    assert "tools/list" in sent


def test_a_loop_over_servers_needs_no_special_case() -> None:
    tools_only = ScriptedMCPServer({"tools": {"t": "x"}})
    everything = ScriptedMCPServer({"resources": {"mem://r": "R"}, "prompts": {"p": "P"}})
    found = []
    for server in (tools_only, everything):
        with connect_in_memory(server, era="legacy") as conn:
            client = conn.client()
            found.append((len(client.list_resources()), len(client.list_prompts())))
    assert found == [(0, 0), (1, 1)]


# --- item 3: per-call cache control (official server sending ttlMs) ------------------------------


@pytest.fixture(scope="module")
def ttl_http_url() -> Iterator[str]:
    with mcpserver_http("http", "--ttl", "600000") as base:
        yield f"{base}/mcp"


@pytest.fixture(params=["stdio", "http"])
def ttl_peer(request: pytest.FixtureRequest) -> Iterator[MCPConnection]:
    if request.param == "stdio":
        argv = [sys.executable, MCPSERVER_PEER, "--ttl", "600000"]
        conn = MCPConnection.stdio(argv, era="modern", stderr=None)
    else:
        conn = MCPConnection.http(request.getfixturevalue("ttl_http_url"), era="modern")
    with conn:
        yield conn


def _fresh_name() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.mark.peer
def test_refresh_bypasses_a_ttl_cached_listing(ttl_peer: MCPConnection) -> None:
    client = ttl_peer.client()
    before = {t.name for t in client.list_tools()}
    name = _fresh_name()
    client.call_tool("grow", {"name": name})  # the server adds a tool without telling
    assert {t.name for t in client.list_tools()} == before  # the ttlMs hint holds
    assert name in {t.name for t in client.list_tools(refresh=True)}
    assert name in {t.name for t in client.list_tools()}  # the refresh replaced the cache


@pytest.mark.peer
def test_clear_cache_forgets_cached_listings(ttl_peer: MCPConnection) -> None:
    client = ttl_peer.client()
    client.list_tools()
    name = _fresh_name()
    client.call_tool("grow", {"name": name})
    client.clear_cache()
    assert name in {t.name for t in client.list_tools()}


@pytest.mark.peer
def test_list_changed_still_evicts_the_cached_listing(ttl_peer: MCPConnection) -> None:
    client = ttl_peer.client()
    client.list_tools()
    name = _fresh_name()
    client.call_tool("grow", {"name": name})
    with client.listen(tools=True) as subscription:
        client.call_tool("change", {})  # announces tools/list_changed
        event = subscription.get_event(10)  # the cache listener ran before this queued it
        assert event is not None
        assert event.kind == "tools"
    assert name in {t.name for t in client.list_tools()}


class ModernTTLServer:
    """A 2026-07-28 server whose every listing and read carries ``ttlMs`` 60 s; it counts
    what it is asked, and its answers change with every call (so a cached one shows)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def handle(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        method = message.get("method")
        if "id" not in message or not isinstance(method, str):
            return []
        self.asked.append(method)
        n = self.asked.count(method)
        results: dict[str, dict[str, Any]] = {
            "server/discover": {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
            },
            "tools/list": {"tools": [{"name": f"t{n}", "inputSchema": {"type": "object"}}]},
            "prompts/list": {"prompts": [{"name": f"p{n}"}]},
            "resources/list": {"resources": [{"uri": f"mem://{n}", "name": "r"}]},
            "resources/templates/list": {
                "resourceTemplates": [{"uriTemplate": f"mem://{n}/{{x}}", "name": "t"}]
            },
            "resources/read": {"contents": [{"uri": "mem://a", "text": f"v{n}"}]},
        }
        result = {"resultType": "complete", "ttlMs": 60_000, **results[method]}
        return [{"jsonrpc": "2.0", "id": message["id"], "result": result}]


def test_refresh_works_for_every_cached_listing_and_read() -> None:
    server = ModernTTLServer()
    with connect_in_memory(server, era="modern") as conn:
        client = conn.client()
        listings: list[Callable[[bool], list[Any]]] = [
            lambda refresh: [t.name for t in client.list_tools(refresh=refresh)],
            lambda refresh: [p.name for p in client.list_prompts(refresh=refresh)],
            lambda refresh: [r.uri for r in client.list_resources(refresh=refresh)],
            lambda refresh: [
                r.uri_template for r in client.list_resource_templates(refresh=refresh)
            ],
            lambda refresh: [
                getattr(c, "text", None) for c in client.read_resource("mem://a", refresh=refresh)
            ],
        ]
        for listing in listings:
            first = listing(False)
            assert listing(False) == first  # served from the cache
            fresh = listing(True)
            assert fresh != first  # asked again
            assert listing(False) == fresh  # and the fresh answer is what is cached now
        client.clear_cache()
        assert [t.name for t in client.list_tools()] == ["t3"]
    assert server.asked.count("tools/list") == 3


# --- item 4: schema-derived results ---------------------------------------------------------------


@attrs.define
class Point:
    x: int
    y: int


@pytest.mark.peer
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_call_tool_data_against_the_official_server(era: str) -> None:
    argv = [sys.executable, MCPSERVER_PEER]
    with MCPConnection.stdio(argv, era=era, stderr=None) as conn:
        client = conn.client()
        assert client.call_tool_data("add", {"a": 2, "b": 3}) == 5  # {"result": 5} unwrapped
        assert client.call_tool_data("point", {"x": 1, "y": 2}) == {"x": 1, "y": 2}
        assert client.call_tool_data("point", {"x": 1, "y": 2}, into=Point) == Point(1, 2)
        assert client.call_tool_data("echo", {"text": "hi"}) == "hi"
        with pytest.raises(ToolOutputError, match="fail"):
            client.call_tool_data("fail", {})


@pytest.mark.peer
def test_call_tool_data_against_server_everything() -> None:
    if not EVERYTHING.exists() or shutil.which("node") is None:
        pytest.skip("server-everything not installed (run `npm ci` at the repo top)")
    with MCPConnection.stdio([str(EVERYTHING)], stderr=None) as conn:
        client = conn.client()
        data = client.call_tool_data("get-structured-content", {"location": "New York"})
        raw = client.call_tool("get-structured-content", {"location": "New York"})
        assert data == raw.structured_content  # an object schema: plain dicts, unchanged
        assert isinstance(data, dict)
        assert "temperature" in data
        assert client.call_tool_data("echo", {"message": "x"}) is None  # no structured content


def test_decode_follows_formats_prefix_items_refs_and_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "id": {"type": "string", "format": "uuid"},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"$ref": "#/$defs/D"}]},
            "maybe": {"anyOf": [{"type": "null"}, {"type": "string", "format": "date"}]},
            "bad": {"type": "string", "format": "date"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/D"}},
        },
        "$defs": {"D": {"type": "string", "format": "date"}},
    }
    value = {
        "at": "2026-07-28T10:00:00Z",
        "day": "2026-07-28",
        "id": "12345678-1234-5678-1234-567812345678",
        "pair": [1, "2026-01-02"],
        "maybe": "2026-03-04",
        "bad": "not a date",
        "items": ["2026-05-06"],
        "extra": 1,
    }
    out = decode(value, schema)
    assert out["at"] == datetime.datetime(2026, 7, 28, 10, tzinfo=datetime.timezone.utc)
    assert out["day"] == datetime.date(2026, 7, 28)
    assert out["id"] == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert out["pair"] == (1, datetime.date(2026, 1, 2))
    assert out["maybe"] == datetime.date(2026, 3, 4)
    assert out["bad"] == "not a date"  # does not fit: kept as it came
    assert out["items"] == [datetime.date(2026, 5, 6)]
    assert out["extra"] == 1


def test_decode_unwraps_only_the_sdk_result_wrapper() -> None:
    wrapped = {"type": "object", "title": "addOutput", "properties": {"result": {}}}
    wrapped["required"] = ["result"]
    assert decode({"result": 3}, wrapped) == 3
    fastmcp = {"type": "object", "properties": {"result": {}}, "x-fastmcp-wrap-result": True}
    assert decode({"result": [1]}, fastmcp) == [1]
    own_model = {"type": "object", "title": "Answer", "properties": {"result": {}}}
    assert decode({"result": 3}, own_model) == {"result": 3}


# --- item 2: in-memory transports -----------------------------------------------------------------


def test_the_scripted_server_in_memory_answers_tools_progress_and_pushes() -> None:
    server = ScriptedMCPServer(
        {"tools": {"greet": "Hello, {name}!", "slow": {"reply": "done", "progress": 3}}}
    )
    changed: list[str] = []
    seen = threading.Event()

    def on_change(kind: str) -> None:
        changed.append(kind)
        seen.set()

    with connect_in_memory(server, list_changed_callback=on_change) as conn:
        client = conn.client()
        assert client.call_tool("greet", {"name": "Ada"}).text == "Hello, Ada!"
        steps: list[float] = []
        assert client.call_tool("slow", {}, progress=lambda p: steps.append(p.progress)).text == (
            "done"
        )
        transport = conn.transport
        assert isinstance(transport, InMemoryTransport)
        transport.push({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        assert seen.wait(10)
    assert steps == [1, 2, 3]
    assert changed == ["tools"]


def test_any_handle_callable_is_a_server() -> None:
    def handle(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "tiny", "version": "0"},
            }
            return [{"jsonrpc": "2.0", "id": message["id"], "result": result}]
        if message.get("method") == "tools/list":
            return [{"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}}]
        if message.get("method") == "tools/call":
            text = message["params"]["arguments"]["text"][::-1]
            answer = {"content": [{"type": "text", "text": text}]}
            return [{"jsonrpc": "2.0", "id": message["id"], "result": answer}]
        if "id" in message and "method" in message:
            error = {"code": -32601, "message": "Method not found"}
            return [{"jsonrpc": "2.0", "id": message["id"], "error": error}]
        return []

    with connect_in_memory(handle, name="tiny", era="legacy") as conn:
        result = conn.client().call_tool("reverse", {"text": "abc"})
        assert result.content == (TextContent(text="cba"),)
        assert "tiny" in repr(conn)


def test_a_server_that_raises_closes_the_connection_with_the_reason() -> None:
    def handle(message: dict[str, Any]) -> list[dict[str, Any]]:
        if message.get("method") == "tools/call":
            raise KeyError("no such thing")
        return ScriptedMCPServer({"tools": {"t": "x"}}).handle(message)

    with connect_in_memory(handle, era="legacy") as conn:
        with pytest.raises(ConnectionClosed, match="KeyError"):
            conn.client().call_tool("t", {})
        assert conn.closed


def test_values_json_cannot_carry_fail_in_the_test() -> None:
    conn = connect_in_memory(ScriptedMCPServer({"tools": {"t": "x"}}), era="legacy")
    with conn, pytest.raises(TypeError):
        conn.client().call_tool("t", {"when": datetime.date(2026, 1, 1)})


def test_each_server_object_gets_its_own_era_verdict() -> None:
    for _round in range(3):  # objects come and go; a dead one's verdict never applies
        legacy = ScriptedMCPServer({"tools": {"t": "x"}})
        with connect_in_memory(legacy) as conn:
            assert conn.era == "legacy"
        with connect_in_memory(legacy) as conn:  # the verdict is cached for this object
            assert conn.era == "legacy"
        del legacy, conn
        gc.collect()
        with connect_in_memory(ModernTTLServer()) as conn:
            assert conn.era == "modern"


def test_an_object_without_handle_is_refused_at_once() -> None:
    with pytest.raises(ConfigurationError, match="handle"):
        connect_in_memory(object())  # type: ignore[arg-type]


def _sdk_server() -> Any:
    from mcp.server.mcpserver import MCPServer  # the official SDK: the test extra (peer)

    server = MCPServer("in-process")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def point(x: int, y: int) -> dict[str, int]:
        """A point."""
        return {"x": x, "y": y}

    @server.prompt()
    def review(code: str) -> str:
        return f"Review {code}"

    return server


@pytest.mark.peer
@pytest.mark.parametrize("era", ["auto", "legacy", "modern"])
def test_an_official_mcp_server_object_runs_in_process(era: str) -> None:
    from a2a_sync.testing.mcp_sdk import SDKServerTransport

    server = _sdk_server()
    with MCPConnection(lambda: SDKServerTransport(server), era=era) as conn:
        client = conn.client()
        assert client.call_tool_data("add", {"a": 1, "b": 2}) == 3
        assert client.call_tool_data("point", {"x": 1, "y": 2}) == {"x": 1, "y": 2}
        assert [p.name for p in client.list_prompts()] == ["review"]
        assert client.list_resources() == []
    assert not [t for t in threading.enumerate() if t.name == "a2a-sync-mcp-sdk-loop"]


@pytest.mark.peer
@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_the_full_official_peer_in_process_progress_sampling_elicitation(era: str) -> None:
    from a2a_sync.testing.mcp_sdk import SDKServerTransport

    spec = importlib.util.spec_from_file_location("mcpserver_peer_in_process", MCPSERVER_PEER)
    assert spec is not None
    assert spec.loader is not None
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)

    def sampling(request: CreateMessageRequest) -> CreateMessageResult:
        return CreateMessageResult.from_text("hi from the model", model="m")

    def elicitation(request: ElicitRequest) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    factory = functools.partial(SDKServerTransport, peer.mcp)
    with MCPConnection(
        factory, era=era, sampling_callback=sampling, elicitation_callback=elicitation
    ) as conn:
        client = conn.client()
        steps: list[float] = []
        assert (
            client.call_tool(
                "long_task", {"steps": 3}, progress=lambda p: steps.append(p.progress)
            ).text
            == "done 3"
        )
        assert client.call_tool("sampled").text == "hi from the model"
        assert client.call_tool("greet").text == "Hello, Ada!"
        assert conn.era == era
    assert steps == [1, 2, 3]


@pytest.mark.peer
def test_sdk_transport_refuses_other_objects() -> None:
    from a2a_sync.testing.mcp_sdk import SDKServerTransport

    with pytest.raises(ConfigurationError, match="MCPServer"):
        SDKServerTransport(object())
