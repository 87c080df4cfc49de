"""The scriptable MCP stdio server, through the real MCP client and as a pure handler."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from a2a_sync.errors import ConfigurationError, RPCError
from a2a_sync.mcp import MCPConnection, Progress
from a2a_sync.testing import ScriptedMCPServer, mcp_server_command, recorded_messages

WAIT = 5.0

SCRIPT = {
    "name": "scripted-test",
    "tools": {
        "greet": "Hello, {name}!",
        "add": {
            "description": "adds",
            "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "output_schema": {"type": "object", "properties": {"sum": {"type": "integer"}}},
            "structured": {"sum": 3},
        },
        "broken": {"error": {"code": -32603, "message": "tool exploded"}},
        "slow": {"reply": "done", "delay": 0.05, "progress": 3},
    },
    "resources": {"mem://notes": {"name": "notes", "text": "remember"}},
    "prompts": {"review": {"description": "code review", "text": "Review {code}"}},
}


def test_tools_resources_and_prompts_answer_as_scripted() -> None:
    with MCPConnection.stdio(mcp_server_command(SCRIPT), timeout=WAIT) as conn:
        client = conn.client()
        assert conn.server_info.name == "scripted-test"
        assert [tool.name for tool in client.list_tools()] == ["greet", "add", "broken", "slow"]
        assert client.call_tool("greet", {"name": "Ada"}).text == "Hello, Ada!"
        assert client.call_tool("add", {"a": 1}).structured_content == {"sum": 3}
        assert [r.uri for r in client.list_resources()] == ["mem://notes"]
        assert client.read_resource("mem://notes")[0].text == "remember"  # type: ignore[union-attr]
        assert [p.name for p in client.list_prompts()] == ["review"]
        prompt = client.get_prompt("review", {"code": "x = 1"})
        assert prompt.messages[0].content.text == "Review x = 1"  # type: ignore[union-attr]


def test_errors_progress_and_unknown_tools() -> None:
    updates: list[Progress] = []
    with MCPConnection.stdio(mcp_server_command(SCRIPT), timeout=WAIT) as conn:
        client = conn.client()
        with pytest.raises(RPCError) as broken:
            client.call_tool("broken")
        assert broken.value.code == -32603
        with pytest.raises(RPCError) as unknown:
            client.call_tool("no-such-tool")
        assert unknown.value.code == -32602
        assert client.call_tool("slow", progress=updates.append).text == "done"
    assert [(u.progress, u.total) for u in updates] == [(1, 3), (2, 3), (3, 3)]


def test_command_line_shorthands_and_the_record(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    argv = mcp_server_command(
        tools={"greet": "hi {who}"},
        error_tools={"fail": "it failed"},
        resources={"mem://a": "A"},
        prompts={"p": "say {word}"},
        record=record,
    )
    with MCPConnection.stdio(argv, timeout=WAIT) as conn:
        client = conn.client()
        assert client.call_tool("greet", {"who": "you"}).text == "hi you"
        failed = client.call_tool("fail")
        assert (failed.is_error, failed.text) == (True, "it failed")
        assert client.read_resource("mem://a")[0].text == "A"  # type: ignore[union-attr]
        assert client.list_prompts()[0].arguments[0].name == "word"
    calls = [m for m in recorded_messages(record) if m.get("method") == "tools/call"]
    assert [c["params"]["name"] for c in calls] == ["greet", "fail"]
    assert calls[0]["params"]["arguments"] == {"who": "you"}


def test_a_script_file_works_like_the_dict(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    with MCPConnection.stdio(mcp_server_command(path), timeout=WAIT) as conn:
        assert conn.client().call_tool("greet", {"name": "file"}).text == "Hello, file!"


def test_a_malformed_script_fails_in_the_test_not_in_the_server() -> None:
    with pytest.raises(ConfigurationError):
        mcp_server_command({"tool": {}})
    with pytest.raises(ConfigurationError):
        mcp_server_command({"tools": {"x": {"replay": "typo"}}})


def test_the_command_exits_2_on_a_bad_script() -> None:
    argv = [*mcp_server_command(), "--script-json", '{"tools": {"x": {"bogus": 1}}}']
    done = subprocess.run(
        argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert b"bogus" in done.stderr


def test_placeholders_without_an_argument_and_json_braces_are_kept() -> None:
    server = ScriptedMCPServer({"tools": {"t": '{"a": {x}, "b": {missing}}'}})
    [answer] = server.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "t", "arguments": {"x": 1}},
        }
    )
    assert answer["result"]["content"][0]["text"] == '{"a": 1, "b": {missing}}'


def test_python_handlers_answer_and_their_bad_arguments_fail_the_call() -> None:
    def double(arguments: dict[str, object]) -> dict[str, object]:
        n = arguments["n"]
        if not isinstance(n, int):
            raise TypeError("n must be an integer")
        return {"n": n * 2}

    server = ScriptedMCPServer(handlers={"double": double})
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    [ok] = server.handle({**call, "params": {"name": "double", "arguments": {"n": 2}}})
    assert ok["result"]["structuredContent"] == {"n": 4}
    [bad] = server.handle({**call, "params": {"name": "double", "arguments": {"n": "x"}}})
    assert bad["result"]["isError"] is True
    assert bad["result"]["content"][0]["text"] == "n must be an integer"


def test_unknown_methods_and_notifications() -> None:
    server = ScriptedMCPServer()
    [answer] = server.handle({"jsonrpc": "2.0", "id": 7, "method": "server/discover"})
    assert answer["error"]["code"] == -32601
    assert server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []


def test_the_handshake_echoes_a_known_revision_and_counters_an_unknown_one() -> None:
    server = ScriptedMCPServer()
    for offered, answered in (("2025-06-18", "2025-06-18"), ("2099-01-01", "2025-11-25")):
        [answer] = server.handle(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": offered},
            }
        )
        assert answer["result"]["protocolVersion"] == answered


def test_the_command_runs_the_module_with_this_interpreter() -> None:
    assert mcp_server_command()[:3] == [sys.executable, "-m", "a2a_sync.testing.mcp_server"]
