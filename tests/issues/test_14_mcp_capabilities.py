"""Issue 14: the MCP client uses only negotiated capabilities.

Every client request that depends on a server capability is refused before anything is
sent (a :class:`~a2a_sync.errors.ConfigurationError` naming the operation, the server and
the capability) when the server did not declare it; the listings keep answering ``[]``
without asking (issue 21). Driven over stdio against the scripted conformance peer, which
records every line it reads. On the old code each refused call reached the server (and
came back as MethodNotFound), and ``set_logging_level`` in the modern era silently
asked for logs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.mcp import MCPClient, MCPConnection
from a2a_sync.mcp.types import PromptReference
from tests.conformance.mcp_peer import methods, peer, received

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
WAIT = 10.0

Call = Callable[[MCPClient], object]

#: (test id, era, declared capabilities, the call, the capability named, the method never sent)
REFUSED: list[tuple[str, str, dict[str, Any], Call, str, str]] = [
    (
        "complete",
        LEGACY,
        {"prompts": {}},
        lambda c: c.complete(PromptReference(name="trip"), "city", "Par"),
        "completions",
        "completion/complete",
    ),
    (
        "set_logging_level",
        LEGACY,
        {"tools": {}},
        lambda c: c.set_logging_level("info"),
        "logging",
        "logging/setLevel",
    ),
    (
        "read_resource",
        LEGACY,
        {"tools": {}},
        lambda c: c.read_resource("file:///a.txt"),
        "resources",
        "resources/read",
    ),
    (
        "subscribe_resource",
        LEGACY,
        {"resources": {}},  # resources, but no subscribe flag
        lambda c: c.subscribe_resource("file:///a.txt"),
        "resources.subscribe",
        "resources/subscribe",
    ),
    (
        "unsubscribe_resource",
        LEGACY,
        {"resources": {"subscribe": False}},
        lambda c: c.unsubscribe_resource("file:///a.txt"),
        "resources.subscribe",
        "resources/unsubscribe",
    ),
    (
        "get_prompt",
        LEGACY,
        {"tools": {}},
        lambda c: c.get_prompt("greet"),
        "prompts",
        "prompts/get",
    ),
    (
        "call_tool",
        LEGACY,
        {"prompts": {}},
        lambda c: c.call_tool("add", {"a": 1}),
        "tools",
        "tools/call",
    ),
    (
        "start_tool_call",
        LEGACY,
        {"prompts": {}},
        lambda c: c.start_tool_call("add", {"a": 1}),
        "tools",
        "tools/call",
    ),
    (
        "call_tool_typed",
        LEGACY,
        {"prompts": {}},
        lambda c: c.call_tool_typed("add", {"a": 1}, into=dict),
        "tools",
        "tools/call",
    ),
    (
        "modern_complete",
        MODERN,
        {"tools": {}},
        lambda c: c.complete(PromptReference(name="trip"), "city", "Par"),
        "completions",
        "completion/complete",
    ),
    (
        "modern_call_tool",
        MODERN,
        {"prompts": {}},
        lambda c: c.call_tool("add", {}),
        "tools",
        "tools/call",
    ),
    (
        "modern_listen_tools",
        MODERN,
        {"prompts": {}},
        lambda c: c.listen(tools=True),
        "tools",
        "subscriptions/listen",
    ),
    (
        "modern_listen_resource_uris",
        MODERN,
        {"tools": {}},
        lambda c: c.listen(resource_uris=["file:///a.txt"]),
        "resources",
        "subscriptions/listen",
    ),
]


@pytest.mark.parametrize(
    ("era", "capabilities", "call", "capability", "method"),
    [pytest.param(*row[1:], id=row[0]) for row in REFUSED],
)
def test_a_request_for_an_undeclared_capability_is_refused_before_sending(
    tmp_path: Path, era: str, capabilities: dict[str, Any], call: Call, capability: str, method: str
) -> None:
    record = tmp_path / "received.jsonl"
    plan = {"version": era, "capabilities": capabilities, "replies": {}}
    with MCPConnection.stdio(peer(record, plan), era=era, timeout=WAIT) as conn:
        client = conn.client()
        with pytest.raises(ConfigurationError) as caught:
            call(client)
        client.ping()  # the server has read everything the client sent before this
    message = str(caught.value)
    assert repr(capability) in message
    assert "stdio server" in message  # names the server
    assert "server_info.capabilities" in message  # and the fix
    assert method not in methods(received(record))


def test_a_modern_set_logging_level_without_logging_asks_for_no_logs(tmp_path: Path) -> None:
    """Modern era: the level would ride every later request's ``_meta``; without the
    server's ``logging`` capability it is refused and later requests carry no level."""
    record = tmp_path / "received.jsonl"
    replies = {"tools/call": [{"result": {"content": []}}]}
    plan = {"version": MODERN, "capabilities": {"tools": {}}, "replies": replies}
    with MCPConnection.stdio(peer(record, plan), era=MODERN, timeout=WAIT) as conn:
        client = conn.client()
        with pytest.raises(ConfigurationError, match="set_logging_level not sent"):
            client.set_logging_level("debug")
        client.call_tool("t", {})
    (sent,) = [m for m in received(record) if m.get("method") == "tools/call"]
    assert "io.modelcontextprotocol/logLevel" not in sent["params"]["_meta"]


def test_list_tools_without_the_tools_capability_is_empty_without_asking(
    tmp_path: Path,
) -> None:
    """Like ``list_resources`` and ``list_prompts`` (issue 21): a loop over servers needs
    no special case for a server without tools."""
    record = tmp_path / "received.jsonl"
    plan = {"version": LEGACY, "capabilities": {"prompts": {}}, "replies": {}}
    with MCPConnection.stdio(peer(record, plan), era=LEGACY, timeout=WAIT) as conn:
        client = conn.client()
        assert client.list_tools() == []
        assert client.list_resources() == []
        client.ping()
    assert "tools/list" not in methods(received(record))


def test_declared_capabilities_are_still_used(tmp_path: Path) -> None:
    """The check lets through what the server declared (``resources.subscribe: true``,
    ``logging``, ``completions``)."""
    record = tmp_path / "received.jsonl"
    replies = {
        "resources/subscribe": [{"result": {}}],
        "resources/unsubscribe": [{"result": {}}],
        "logging/setLevel": [{"result": {}}],
        "completion/complete": [{"result": {"completion": {"values": ["Paris"]}}}],
    }
    capabilities = {"resources": {"subscribe": True}, "logging": {}, "completions": {}}
    plan = {"version": LEGACY, "capabilities": capabilities, "replies": replies}
    with MCPConnection.stdio(peer(record, plan), era=LEGACY, timeout=WAIT) as conn:
        client = conn.client()
        client.subscribe_resource("file:///a.txt")
        client.unsubscribe_resource("file:///a.txt")
        client.set_logging_level("info")
        assert client.complete(PromptReference(name="p"), "a", "P").values == ("Paris",)
    sent = methods(received(record))
    for method in replies:
        assert method in sent
