"""MCPConnection / MCPClient: seed parity, era detection and lifecycle.

Scripted cases run over the in-memory fake transport; process cases over the framework-free
echo server.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import io
import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

from a2a_sync.errors import (
    Cancelled,
    ConfigurationError,
    ConnectionClosed,
    DeadlineExceeded,
    EmptyToolContent,
    NoTextContent,
    ServerProcessError,
    ToolOutputError,
    ToolOutputParseError,
)
from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE

from .fake import FakeTransport, result
from .peers import echo_argv

Script = dict[str, Callable[[dict[str, Any]], Any]]


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Iterator[None]:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def scripted(script: Script, **options: Any) -> tuple[MCPConnection, list[FakeTransport]]:
    """A connection whose server answers each method with ``script[method](params)``."""
    made: list[FakeTransport] = []

    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        method = m.get("method")
        if "id" not in m or method is None:
            return
        if method == "initialize":
            tr.deliver(
                result(
                    m,
                    {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "9"},
                    },
                )
            )
        elif method in script:
            tr.deliver(result(m, script[method](m.get("params") or {})))
        else:
            tr.deliver(
                {
                    "jsonrpc": "2.0",
                    "id": m["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )

    def factory() -> FakeTransport:
        made.append(FakeTransport(reply))
        return made[-1]

    options.setdefault("era", "legacy")
    return MCPConnection(factory, **options), made


def tool_result(*content: dict[str, Any], structured: Any = None) -> Callable[..., Any]:
    def answer(params: dict[str, Any]) -> Any:
        out: dict[str, Any] = {"content": list(content)}
        if structured is not None:
            out["structuredContent"] = structured
        return out

    return answer


@attrs.define
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Named:
    name: str


# --- seed parity: handles, timeouts, typed calls ---


def test_handles_are_cheap_share_the_connection_and_keep_their_own_timeout() -> None:
    conn, _ = scripted({"tools/call": tool_result({"type": "text", "text": "ok"})})
    with conn:
        client = conn.client()
        slow = client.with_timeout(300)
        quick = conn.client(timeout=1.5)
        assert client.timeout == 30.0
        assert slow.timeout == 300
        assert quick.timeout == 1.5
        assert slow.connection is client.connection is conn
        assert slow.call_tool("x").text == "ok"


def test_server_info_reports_era_version_and_name() -> None:
    conn, _ = scripted({})
    with conn:
        info = conn.client().server_info
        assert (info.era, info.protocol_version, info.name, info.version) == (
            "legacy",
            "2025-11-25",
            "scripted",
            "9",
        )
        assert info.capabilities.tools == {}


def test_list_tools_follows_every_page() -> None:
    pages = {
        None: {"tools": [{"name": "a"}], "nextCursor": "p2"},
        "p2": {"tools": [{"name": "b"}], "nextCursor": "p3"},
        "p3": {"tools": [{"name": "c", "inputSchema": {"type": "object"}}]},
    }
    conn, _ = scripted({"tools/list": lambda p: pages[p.get("cursor")]})
    with conn:
        assert [tool.name for tool in conn.client().list_tools()] == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("arguments", "json_type"),
    [([1, 2], "array"), ("text", "string"), (3, "number"), (True, "boolean")],
)
def test_call_tool_rejects_arguments_that_are_not_an_object_naming_the_json_type(
    arguments: Any, json_type: str
) -> None:
    conn, _ = scripted({})
    with conn:
        with pytest.raises(ConfigurationError) as info:
            conn.client().call_tool("t", arguments)
        assert json_type in str(info.value)


def test_call_tool_accepts_a_dict_or_none() -> None:
    seen: list[dict[str, Any]] = []

    def call(params: dict[str, Any]) -> Any:
        seen.append(params)
        return {"content": []}

    conn, _ = scripted({"tools/call": call})
    with conn:
        conn.client().call_tool("t", {"a": 1})
        conn.client().call_tool("t")
    assert seen == [{"name": "t", "arguments": {"a": 1}}, {"name": "t"}]


def test_call_tool_typed_prefers_structured_content() -> None:
    conn, _ = scripted(
        {
            "tools/call": tool_result(
                {"type": "text", "text": "ignored"}, structured={"x": 1, "y": 2}
            )
        }
    )
    with conn:
        assert conn.client().call_tool_typed("p", into=Point) == Point(1, 2)


def test_call_tool_typed_unwraps_a_result_wrapper() -> None:
    conn, _ = scripted({"tools/call": tool_result(structured={"result": 7})})
    with conn:
        assert conn.client().call_tool_typed("n", into=int) == 7


def test_call_tool_typed_parses_the_first_text_block() -> None:
    conn, _ = scripted(
        {
            "tools/call": tool_result(
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "text", "text": '{"name": "Ada"}'},
            )
        }
    )
    with conn:
        assert conn.client().call_tool_typed("n", into=Named) == Named("Ada")


def test_call_tool_typed_distinguishes_empty_content() -> None:
    conn, _ = scripted({"tools/call": tool_result()})
    with conn, pytest.raises(EmptyToolContent) as info:
        conn.client().call_tool_typed("empty", into=Named)
    assert info.value.tool == "empty"


def test_call_tool_typed_lists_the_kinds_when_no_text_came() -> None:
    conn, _ = scripted(
        {
            "tools/call": tool_result(
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "a://b", "name": "b"},
            )
        }
    )
    with conn, pytest.raises(NoTextContent) as info:
        conn.client().call_tool_typed("pic", into=Named)
    assert info.value.kinds == ["image", "resource_link"]
    assert "image, resource_link" in str(info.value)


def test_call_tool_typed_names_the_tool_when_json_is_unparsable() -> None:
    conn, _ = scripted({"tools/call": tool_result({"type": "text", "text": "not json"})})
    with conn, pytest.raises(ToolOutputParseError) as info:
        conn.client().call_tool_typed("broken", into=Named)
    assert info.value.tool == "broken"
    assert "'broken'" in str(info.value)


def test_call_tool_typed_reports_json_that_does_not_fit_the_type() -> None:
    conn, _ = scripted({"tools/call": tool_result({"type": "text", "text": '{"x": 1}'})})
    with conn, pytest.raises(ToolOutputParseError):
        conn.client().call_tool_typed("p", into=Point)


def test_call_tool_typed_raises_when_the_tool_reports_an_error() -> None:
    conn, _ = scripted(
        {
            "tools/call": lambda p: {
                "content": [{"type": "text", "text": "division by zero"}],
                "isError": True,
            }
        }
    )
    with conn, pytest.raises(ToolOutputError) as info:
        conn.client().call_tool_typed("div", into=int)
    assert not isinstance(info.value, ToolOutputParseError)


def test_timeout_message_names_operation_and_duration() -> None:
    conn, made = scripted({"tools/call": lambda p: (_ for _ in ()).throw(AssertionError)})
    made[0].reply = None  # the server goes silent
    with conn:
        with pytest.raises(DeadlineExceeded) as info:
            conn.client().with_timeout(0.05).call_tool("slowpoke")
        assert "tool 'slowpoke'" in str(info.value)
        assert "0.05 s" in str(info.value)
        sent = [made[0].sent.get_nowait() for _ in range(made[0].sent.qsize())]
        assert sent[-1]["method"] == "notifications/cancelled"


def test_output_is_validated_against_the_output_schema() -> None:
    conn, _ = scripted(
        {
            "tools/list": lambda p: {
                "tools": [
                    {
                        "name": "n",
                        "outputSchema": {
                            "type": "object",
                            "properties": {"n": {"type": "integer"}},
                            "required": ["n"],
                        },
                    }
                ]
            },
            "tools/call": tool_result({"type": "text", "text": "{}"}, structured={"n": "seven"}),
        }
    )
    with conn, pytest.raises(ToolOutputError) as info:
        conn.client().call_tool("n")
    assert "$.n" in str(info.value)
    conn2, _ = scripted(
        {
            "tools/list": lambda p: {"tools": [{"name": "n", "outputSchema": {"type": "object"}}]},
            "tools/call": tool_result({"type": "text", "text": "{}"}, structured={"n": "seven"}),
        },
        validate_output=False,
    )
    with conn2:
        assert conn2.client().call_tool("n").structured_content == {"n": "seven"}


# --- lifecycle ---


def test_connection_is_not_copyable_or_picklable() -> None:
    conn, _ = scripted({})
    with conn:
        with pytest.raises(TypeError):
            copy.copy(conn)
        with pytest.raises(TypeError):
            copy.deepcopy(conn)
        with pytest.raises(TypeError):
            pickle.dumps(conn)


def test_close_is_idempotent_and_later_calls_raise_connection_closed() -> None:
    conn, _ = scripted({})
    client = conn.client()
    conn.close()
    conn.close()
    assert conn.closed
    with pytest.raises(ConnectionClosed):
        client.list_tools()


def test_explicit_cancel_from_another_thread() -> None:
    conn, made = scripted({})
    made[0].reply = None
    with conn:
        call = conn.client().start_tool_call("long")
        outcome: list[BaseException] = []
        thread = threading.Thread(target=lambda: _capture(call.result, outcome))
        thread.start()
        assert call.cancel("stop")
        thread.join(5)
        assert isinstance(outcome[0], Cancelled)


def _capture(fn: Callable[[], Any], into: list[BaseException]) -> None:
    try:
        fn()
    except BaseException as exc:
        into.append(exc)


# --- real processes (echo server) ---


def test_stdio_connection_round_trip_progress_and_threads() -> None:
    progress: list[float] = []
    with MCPConnection.stdio(echo_argv()) as conn:
        client = conn.client()
        assert conn.era == "legacy"
        assert client.call_tool("echo", {"text": "hi"}).structured_content == {"text": "hi"}
        result = client.call_tool(
            "progress", {"steps": 2}, progress=lambda p: progress.append(p.progress)
        )
        assert result.text == "done"
        texts: list[str] = []
        threads = [
            threading.Thread(
                target=lambda i=i: texts.append(client.call_tool("echo", {"text": str(i)}).text)
            )
            for i in range(8)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert sorted(texts) == [str(i) for i in range(8)]
    assert progress in ([1, 2], [1], [])  # delivered in order; may trail the result


def test_invalid_structured_output_from_a_real_server_is_rejected() -> None:
    with MCPConnection.stdio(echo_argv()) as conn, pytest.raises(ToolOutputError):
        conn.client().call_tool("bad_output")


def test_auto_era_falls_back_to_legacy_on_method_not_found_and_caches_it() -> None:
    with MCPConnection.stdio(echo_argv()) as conn:
        assert conn.era == "legacy"
    assert ERA_CACHE.get(conn.transport.era_key) == "legacy"


def test_auto_era_detects_a_modern_server_and_sends_the_envelope() -> None:
    with MCPConnection.stdio(echo_argv("--modern")) as conn:
        assert (conn.era, conn.protocol_version) == ("modern", "2026-07-28")
        assert conn.server_info.name == "echo-server"
        client = conn.client()
        assert client.call_tool("echo", {"text": "m"}).text == "m"
        assert [t.name for t in client.list_tools()][:1] == ["echo"]


def test_auto_era_treats_a_silent_probe_as_legacy() -> None:
    with MCPConnection.stdio(echo_argv("--no-discover-reply"), discover_timeout=0.2) as conn:
        assert conn.era == "legacy"
        assert conn.client().call_tool("echo", {"text": "x"}).text == "x"


def test_auto_era_restarts_a_server_that_locked_in_the_modern_era_at_the_probe() -> None:
    with MCPConnection.stdio(echo_argv("--pin-era")) as conn:
        assert conn.era == "legacy"
        assert conn.client().call_tool("echo", {"text": "again"}).text == "again"


def test_a_pinned_era_sends_no_probe() -> None:
    with MCPConnection.stdio(echo_argv("--pin-era"), era="legacy") as conn:
        assert conn.era == "legacy"
    with MCPConnection.stdio(echo_argv("--modern"), era="2026-07-28") as conn:
        assert conn.era == "modern"
    with pytest.raises(ConfigurationError):
        MCPConnection.stdio(echo_argv(), era="2099-01-01")


def test_wait_returns_when_the_server_exits_cleanly_and_raises_on_failure() -> None:
    with MCPConnection.stdio(echo_argv()) as conn:
        with pytest.raises(DeadlineExceeded):
            conn.wait(0.05)
        with pytest.raises(ServerProcessError):
            conn.client().call_tool("die", {"code": 0})
        conn.wait(5)
    conn = MCPConnection.stdio(echo_argv())
    with pytest.raises(ServerProcessError):
        conn.client().call_tool("die", {"code": 9})
    with pytest.raises(ServerProcessError) as info:
        conn.wait(5)
    assert info.value.returncode == 9
    with pytest.raises(ServerProcessError):
        conn.close()


def test_start_failure_reports_exit_status_and_stderr_tail() -> None:
    with pytest.raises(ServerProcessError) as info:
        MCPConnection.stdio(echo_argv("--exit-code", "3"))
    assert info.value.returncode == 3
    assert "bad configuration" in info.value.stderr_tail


def test_stderr_can_go_to_an_object_without_a_file_descriptor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notebook_stderr = io.StringIO()  # like ipykernel's OutStream: no fileno()
    monkeypatch.setattr(sys, "stderr", notebook_stderr)
    with MCPConnection.stdio(echo_argv("--stderr-flood", "10"), stderr=sys.stderr) as conn:
        assert conn.client().call_tool("echo", {"text": "nb"}).text == "nb"
    assert "eeeeeeeeee" in notebook_stderr.getvalue()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_garbage_collected_connection_stops_its_server() -> None:
    conn = MCPConnection.stdio(echo_argv())
    pid = conn.transport.pid  # type: ignore[attr-defined]
    assert _alive(pid)
    del conn
    gc.collect()
    assert not _alive(pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")
def test_interpreter_exit_without_close_stops_the_server(tmp_path: Path) -> None:
    script = tmp_path / "leaky.py"
    script.write_text(
        "import sys\n"
        "from a2a_sync.mcp import MCPConnection\n"
        f"conn = MCPConnection.stdio({echo_argv()!r})\n"
        "print(conn.transport.pid, flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=True,
    )
    assert not _alive(int(done.stdout.strip()))


# --- eras over the fake transport ---


def _legacy_server(version: str) -> Callable[[FakeTransport, dict[str, Any]], None]:
    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        if m.get("method") == "initialize":
            tr.deliver(result(m, {"protocolVersion": version, "capabilities": {}}))

    return reply


def test_legacy_handshake_accepts_an_older_counter_offer() -> None:
    sent: list[FakeTransport] = []

    def factory() -> FakeTransport:
        sent.append(FakeTransport(_legacy_server("2024-11-05")))
        return sent[-1]

    with MCPConnection(factory, era="legacy") as conn:
        assert conn.protocol_version == "2024-11-05"
    offer = sent[0].next_sent()
    assert offer["params"]["protocolVersion"] == "2025-11-25"
    assert sent[0].next_sent()["method"] == "notifications/initialized"


def test_legacy_handshake_refuses_an_unknown_counter_offer() -> None:
    from a2a_sync.errors import UnsupportedProtocolVersion

    with pytest.raises(UnsupportedProtocolVersion):
        MCPConnection(lambda: FakeTransport(_legacy_server("1999-01-01")), era="legacy")


def test_pinning_an_exact_handshake_revision_offers_it() -> None:
    made: list[FakeTransport] = []

    def factory() -> FakeTransport:
        made.append(FakeTransport(_legacy_server("2025-06-18")))
        return made[-1]

    with MCPConnection(factory, era="2025-06-18") as conn:
        assert conn.protocol_version == "2025-06-18"
    assert made[0].next_sent()["params"]["protocolVersion"] == "2025-06-18"


def _modern_server(
    script: Script, *, wants_context: bool = False
) -> tuple[Callable[[], FakeTransport], list[FakeTransport]]:
    made: list[FakeTransport] = []

    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        method = m.get("method")
        if "id" not in m:
            return
        if method == "server/discover":
            tr.deliver(
                result(
                    m,
                    {
                        "resultType": "complete",
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {"listChanged": True}},
                        "ttlMs": 0,
                        "cacheScope": "public",
                    },
                )
            )
        elif method in script:
            tr.deliver(result(m, {"resultType": "complete", **script[method](m["params"])}))

    def factory() -> FakeTransport:
        made.append(FakeTransport(reply, wants_context=wants_context))
        return made[-1]

    return factory, made


def _methods_sent(transport: FakeTransport) -> list[str]:
    out = []
    while not transport.sent.empty():
        out.append(transport.sent.get_nowait().get("method"))
    return out


def test_modern_list_results_are_cached_for_ttl_and_evicted_on_list_changed() -> None:
    factory, made = _modern_server(
        {
            "tools/list": lambda p: {
                "tools": [{"name": "a"}],
                "ttlMs": 60_000,
                "cacheScope": "private",
            }
        }
    )
    with MCPConnection(factory, era="modern") as conn:
        client = conn.client()
        assert [t.name for t in client.list_tools()] == ["a"]
        assert [t.name for t in client.list_tools()] == ["a"]
        assert _methods_sent(made[0]) == ["server/discover", "tools/list"]
        made[0].deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        client.list_tools()
        assert _methods_sent(made[0]) == ["tools/list"]


def test_modern_results_without_ttl_are_not_cached() -> None:
    factory, made = _modern_server({"tools/list": lambda p: {"tools": [], "ttlMs": 0}})
    with MCPConnection(factory, era="modern") as conn:
        conn.client().list_tools()
        conn.client().list_tools()
        assert _methods_sent(made[0]) == ["server/discover", "tools/list", "tools/list"]


def test_http_style_transports_get_param_headers_and_invalid_annotations_drop_the_tool() -> None:
    tools = [
        {
            "name": "geo",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "count": {"type": "integer", "x-mcp-header": "Count"},
                },
            },
        },
        {
            "name": "broken",
            "inputSchema": {
                "type": "object",
                "properties": {"blob": {"type": "object", "x-mcp-header": "Blob"}},
            },
        },
    ]
    factory, made = _modern_server(
        {
            "tools/list": lambda p: {"tools": tools},
            "tools/call": lambda p: {"content": []},
        },
        wants_context=True,
    )
    with MCPConnection(factory, era="modern") as conn:
        client = conn.client()
        assert [t.name for t in client.list_tools()] == ["geo"]
        client.call_tool("geo", {"region": "eu-west\u00e9", "count": 3})
        headers = made[0].contexts[-1].headers  # type: ignore[union-attr]
    assert headers["Mcp-Method"] == "tools/call"
    assert headers["Mcp-Name"] == "geo"
    assert headers["Mcp-Param-Count"] == "3"
    assert headers["Mcp-Param-Region"].startswith("=?base64?")
