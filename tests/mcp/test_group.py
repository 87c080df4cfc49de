"""``MCPGroup`` and the ``mcpServers`` configuration (issue 21, item 1).

Groups of real servers: scripted stdio servers, the official ``MCPServer`` over Streamable
HTTP and HTTP+SSE, server-everything over stdio, in-process servers; servers that cannot
start (no such program, a server that never answers) are reported per server while the
others work.
"""

from __future__ import annotations

import functools
import json
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import (
    ConfigurationError,
    RequestTimeout,
    ServerProcessError,
)
from a2a_sync.mcp import (
    GroupTool,
    HTTPServerConfig,
    MCPConnection,
    MCPGroup,
    MCPGroupError,
    StdioServerConfig,
    load_servers,
)
from a2a_sync.testing import ScriptedMCPServer, connect_in_memory, mcp_server_command
from tests.support.ports import refused_url

from .peers.launch import EVERYTHING, mcpserver_http

#: A server that reads its input and never answers: its start can only time out.
SILENT = [sys.executable, "-c", "import sys; sys.stdin.read()"]


def stdio_entry(argv: list[str], **extra: Any) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:], **extra}


def scripted(script: dict[str, Any]) -> dict[str, Any]:
    return stdio_entry(mcp_server_command(script))


# --- configuration ---------------------------------------------------------------------------


def test_load_servers_reads_the_common_format_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    config = {
        "mcpServers": {
            "files": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}, "cwd": "/srv"},
            "search": {"url": "https://example.com/mcp", "headers": {"X-Key": "secret"}},
            "old": {"url": "http://127.0.0.1:1/sse", "transport": "sse"},
            "new": {"url": "http://127.0.0.1:1/mcp", "type": "http"},
        }
    }
    path.write_text(json.dumps(config), encoding="utf-8")
    servers = load_servers(path)
    assert list(servers) == ["files", "search", "old", "new"]
    assert servers["files"] == StdioServerConfig("npx", ("-y", "x"), {"A": "1"}, "/srv")
    assert servers["search"] == HTTPServerConfig("https://example.com/mcp", {"X-Key": "secret"})
    assert servers["old"].transport == "sse"  # type: ignore[union-attr]
    assert servers["new"].transport == "streamable-http"  # type: ignore[union-attr]
    assert "secret" not in repr(servers["search"])
    assert load_servers(config["mcpServers"]) == servers  # the inner map works too


@pytest.mark.parametrize(
    ("entry", "fragment"),
    [
        ({"command": "x", "argz": []}, "unknown keys ['argz']"),
        ({"command": "x", "args": "a b"}, "'args' must be a list of strings"),
        ({"command": ""}, "'command' must be a non-empty string"),
        ({"url": "ftp://h/mcp"}, "'url' must be an http(s) URL"),
        ({"url": "http://h/mcp", "transport": "websocket"}, "unknown transport 'websocket'"),
        ({"url": "http://h/mcp", "headers": {"A": 1}}, "'headers' must map strings"),
        ({"env": {}}, "needs 'command' (stdio) or 'url' (HTTP)"),
        ("npx x", "the entry must be an object"),
    ],
)
def test_bad_entries_are_refused_naming_the_server(entry: Any, fragment: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        load_servers({"mcpServers": {"broken": entry}})
    assert "'broken'" in str(info.value)
    assert fragment in str(info.value)


def test_an_unreadable_config_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"bad\.json"):
        load_servers(tmp_path / "bad.json")
    with pytest.raises(ConfigurationError, match=r"missing\.json"):
        load_servers(tmp_path / "missing.json")


def test_a_bad_config_starts_nothing() -> None:
    with pytest.raises(ConfigurationError, match="'b'"):
        MCPGroup.connect({"a": scripted({"tools": {"t": "x"}}), "b": {"command": 3}})


# --- groups of stdio servers ------------------------------------------------------------------


def test_a_group_qualifies_tool_names_and_routes_calls() -> None:
    servers = {
        "alpha": scripted({"name": "A", "tools": {"greet": "alpha says hi to {who}"}}),
        "beta": scripted({"name": "B", "tools": {"greet": "beta says hi", "only": "o"}}),
    }
    with MCPGroup.connect({"mcpServers": servers}, era="legacy") as group:
        assert group.failures == {}
        assert group.names == ["alpha", "beta"]
        tools = group.list_tools()
        assert [t.name for t in tools] == ["alpha.greet", "beta.greet", "beta.only"]
        assert [(t.server, t.tool.name) for t in tools][:2] == [
            ("alpha", "greet"),
            ("beta", "greet"),
        ]
        assert group.call_tool("alpha.greet", {"who": "Ada"}).text == "alpha says hi to Ada"
        assert group.call_tool("beta.greet").text == "beta says hi"
        assert group.client("beta").call_tool("greet").text == "beta says hi"  # original name
        assert group.connection("alpha").server_info.name == "A"
        with pytest.raises(ConfigurationError, match="alpha"):
            group.call_tool("gamma.greet")


def test_one_server_failing_to_start_is_reported_not_fatal() -> None:
    servers = {
        "good": scripted({"tools": {"t": "fine"}}),
        "missing": {"command": "/nonexistent/mcp-server-that-is-not-there"},
        "silent": stdio_entry(SILENT),
    }
    with MCPGroup.connect(servers, timeout=10, era="legacy") as group:
        assert group.names == ["good"]
        assert set(group.failures) == {"missing", "silent"}
        assert isinstance(group.failures["missing"], ServerProcessError)
        assert isinstance(group.failures["silent"], RequestTimeout)
        assert group.call_tool("good.t").text == "fine"
        with pytest.raises(ConfigurationError, match="it failed"):
            group.client("missing")
        assert "failed=['missing', 'silent']" in repr(group)


def test_strict_raises_every_failure_and_closes_what_started() -> None:
    servers = {
        "good": scripted({"tools": {"t": "fine"}}),
        "missing": {"command": "/nonexistent/mcp-server-that-is-not-there"},
    }
    with pytest.raises(MCPGroupError) as info:
        MCPGroup.connect(servers, strict=True, era="legacy")
    assert set(info.value.errors) == {"missing"}
    assert "missing: ServerProcessError" in str(info.value)


def test_custom_separator_and_the_longest_server_name_wins() -> None:
    made: dict[str, Any] = {
        "db": lambda: connect_in_memory(ScriptedMCPServer({"tools": {"x__q": "short"}})),
        "db__x": lambda: connect_in_memory(ScriptedMCPServer({"tools": {"q": "long"}})),
    }
    with MCPGroup.connect(made, separator="__") as group:
        names = [t.name for t in group.list_tools()]
        assert names == ["db__x__q", "db__x__q"]  # ambiguous by construction...
        assert group.resolve("db__x__q") == ("db__x", "q")  # ...the longest prefix decides
        assert group.call_tool("db__x__q").text == "long"
        assert group.client("db").call_tool("x__q").text == "short"


def test_in_process_servers_and_listings_per_server() -> None:
    made: dict[str, Any] = {
        "tools": lambda: connect_in_memory(ScriptedMCPServer({"tools": {"t": "x"}})),
        "docs": lambda: connect_in_memory(
            ScriptedMCPServer({"resources": {"mem://a": "A"}, "prompts": {"p": "P {x}"}})
        ),
    }
    with MCPGroup.connect(made) as group:
        assert group.list_resources() == {
            "tools": [],
            "docs": group.client("docs").list_resources(),
        }
        assert [p.name for p in group.list_prompts()["docs"]] == ["p"]
        assert group.list_prompts()["tools"] == []
        assert group.list_tools() == [
            GroupTool("tools.t", "tools", group.client("tools").list_tools()[0])
        ]


def test_servers_start_concurrently() -> None:
    barrier = threading.Barrier(3)  # each start waits until all three are starting at once

    def start(label: str) -> MCPConnection:
        barrier.wait(timeout=30)
        return connect_in_memory(ScriptedMCPServer({"tools": {label: label}}))

    made: dict[str, Any] = {name: functools.partial(start, name) for name in ("a", "b", "c")}
    with MCPGroup.connect(made, timeout=60) as group:
        assert group.failures == {}
        assert [t.name for t in group.list_tools()] == ["a.a", "b.b", "c.c"]


def test_a_factory_raising_anything_is_that_servers_failure() -> None:
    def broken() -> MCPConnection:
        raise OSError("no route to the moon")

    made: dict[str, Any] = {
        "ok": lambda: connect_in_memory(ScriptedMCPServer({"tools": {"t": "x"}})),
        "broken": broken,
    }
    with MCPGroup.connect(made) as group:
        assert group.names == ["ok"]
        assert isinstance(group.failures["broken"], OSError)


def test_adopting_connections_and_closing_them_together() -> None:
    conns = {
        "a": connect_in_memory(ScriptedMCPServer({"tools": {"t": "x"}})),
        "b": MCPConnection.stdio(mcp_server_command(tools={"u": "y"}), era="legacy"),
    }
    group = MCPGroup(conns)
    assert [t.name for t in group.list_tools()] == ["a.t", "b.u"]
    group.close()
    group.close()  # idempotent
    assert all(conn.closed for conn in conns.values())


def test_unknown_options_and_a_shared_token_are_refused_before_starting() -> None:
    with pytest.raises(ConfigurationError, match="'bogus'"):
        MCPGroup.connect({"a": scripted({})}, bogus=1)
    with pytest.raises(ConfigurationError, match="headers"):
        MCPGroup.connect({"a": {"url": "http://127.0.0.1:1/mcp"}}, auth="token")


def test_an_empty_separator_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="separator"):
        MCPGroup({}, separator="")


# --- real peers over HTTP and stdio -------------------------------------------------------------


@pytest.fixture(scope="module")
def peer_base() -> Iterator[str]:
    with mcpserver_http("http") as base:
        yield base


@pytest.fixture(scope="module")
def peer_sse_base() -> Iterator[str]:
    with mcpserver_http("sse") as base:
        yield base


@pytest.mark.peer
def test_a_config_file_of_http_sse_and_stdio_peers(
    tmp_path: Path, peer_base: str, peer_sse_base: str
) -> None:
    if not EVERYTHING.exists() or shutil.which("node") is None:
        pytest.skip("server-everything not installed (run `npm ci` at the repo top)")
    config = {
        "mcpServers": {
            "py": {"url": f"{peer_base}/mcp", "transport": "http", "headers": {"X-T": "1"}},
            "sse": {"url": f"{peer_sse_base}/sse", "transport": "sse"},
            "ts": {"command": str(EVERYTHING), "args": ["stdio"]},
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    options: dict[str, Any] = {"stderr": None, "read_timeout": 120, "call_timeout": 45}
    with MCPGroup.connect(path, timeout=60, **options) as group:  # each kind takes its own
        assert group.failures == {}
        assert {group.client(name).timeout for name in group.names} == {45}
        names = {t.name for t in group.list_tools()}
        assert {"py.add", "sse.add", "ts.echo", "ts.get-sum"} <= names
        assert group.call_tool("py.add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        assert group.call_tool("sse.echo", {"text": "hi"}).text == "hi"
        assert group.call_tool("ts.echo", {"message": "yo"}).text == "Echo: yo"
        assert group.connection("sse").transport.name.endswith("(HTTP+SSE)")
        resources = group.list_resources()
        assert [r.uri for r in resources["py"]] == ["config://app", "data://bytes"]
        assert resources["ts"]


@pytest.mark.peer
def test_an_unreachable_http_server_is_reported_beside_a_working_one(peer_base: str) -> None:
    dead = refused_url("/mcp")  # bound and never listening: connecting is refused
    config = {"py": {"url": f"{peer_base}/mcp"}, "dead": {"url": dead, "transport": "http"}}
    with MCPGroup.connect(config, timeout=20) as group:
        assert group.names == ["py"]
        assert "dead" in group.failures
        assert group.call_tool("py.echo", {"text": "x"}).text == "x"
