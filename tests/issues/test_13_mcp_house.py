"""Issue 13 (MCP part): one frozen options value, a pinned public surface, an injectable
MRTR back-off, and the connection's options reaching every layer."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import attrs
import pytest

import a2a_sync.mcp
from a2a_sync.errors import ConfigurationError
from a2a_sync.mcp import HTTPOptions, MCPConnection, MCPOptions, StdioOptions
from a2a_sync.mcp.session import MCPSession
from tests.mcp.fake import FakeTransport, result

EXPECTED_MCP_ALL = {
    # connection and handles
    "MCPConnection",
    "DEFAULT_TIMEOUT",
    "MCPClient",
    "MCPOptions",
    "HTTPOptions",
    "StdioOptions",
    "ToolCall",
    "Subscription",
    "SubscriptionEvent",
    # several servers
    "MCPGroup",
    "MCPGroupError",
    "GroupTool",
    "HTTPServerConfig",
    "StdioServerConfig",
    "load_servers",
    # eras
    "HANDSHAKE_VERSIONS",
    "MODERN_VERSIONS",
    "CallbackUnavailableWarning",
    # transports (the seam and the three real ones)
    "Transport",
    "StdioTransport",
    "StreamableHTTPTransport",
    "LegacySSETransport",
    # models
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "ClientCapabilities",
    "Completion",
    "ContentBlock",
    "CreateMessageRequest",
    "CreateMessageResult",
    "ElicitRequest",
    "ElicitResult",
    "EmbeddedResource",
    "GetPromptResult",
    "ImageContent",
    "Implementation",
    "LoggingLevel",
    "LoggingMessage",
    "Progress",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "PromptReference",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "ResourceTemplateReference",
    "Role",
    "Root",
    "SamplingMessage",
    "ServerCapabilities",
    "ServerInfo",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolAnnotations",
    "UnknownContent",
}


def test_mcp_all_is_exactly_the_public_surface() -> None:
    assert set(a2a_sync.mcp.__all__) == EXPECTED_MCP_ALL
    assert len(a2a_sync.mcp.__all__) == len(EXPECTED_MCP_ALL)  # no duplicates
    for name in a2a_sync.mcp.__all__:
        assert hasattr(a2a_sync.mcp, name), name


def test_internals_are_not_exported_but_stay_importable_from_their_modules() -> None:
    for name in ("ERA_CACHE", "EraCache", "MCPSession", "PendingRequest", "MessageSink"):
        assert name not in a2a_sync.mcp.__all__
    from a2a_sync.mcp._correlator import PendingRequest
    from a2a_sync.mcp.eras import ERA_CACHE, EraCache
    from a2a_sync.mcp.session import MCPSession as Session
    from a2a_sync.mcp.session import PendingRequest as SessionPending
    from a2a_sync.mcp.transports import MessageSink, Outgoing

    assert isinstance(ERA_CACHE, EraCache)
    assert SessionPending is PendingRequest
    assert Session is MCPSession
    assert MessageSink is not None
    assert Outgoing is not None


def test_star_import_of_the_mcp_package_works() -> None:
    code = "from a2a_sync.mcp import *; print(MCPOptions().timeout)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "None"


# --- options -------------------------------------------------------------------------------


def test_options_are_frozen_and_evolve_routes_each_keyword_to_where_it_lives() -> None:
    base = MCPOptions(timeout=5)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        base.timeout = 6  # type: ignore[misc]
    changed = base.evolve(era="legacy", headers={"X-A": "1"}, auth="tok", env={"K": "v"})
    assert changed.era == "legacy"
    assert changed.timeout == 5
    assert changed.http == HTTPOptions(headers={"X-A": "1"}, auth="tok")
    assert changed.stdio == StdioOptions(env={"K": "v"})
    assert base.era == "auto"
    assert base.http == HTTPOptions()
    # a whole sub-value and one of its fields together: the field wins on top of it
    both = base.evolve(http=HTTPOptions(verify=False), connect_timeout=1.5)
    assert both.http == HTTPOptions(verify=False, connect_timeout=1.5)


def test_an_unknown_keyword_is_a_typed_error_naming_it_and_the_closest_option() -> None:
    with pytest.raises(ConfigurationError) as caught:
        MCPOptions().evolve(timout=5)
    assert "'timout'" in str(caught.value)
    assert "'timeout'" in str(caught.value)
    with pytest.raises(ConfigurationError, match="'elicitation_callbak'"):
        MCPConnection.stdio([sys.executable, "-c", "pass"], elicitation_callbak=print)
    with pytest.raises(ConfigurationError, match="'header'"):
        MCPConnection.http("http://127.0.0.1:9/mcp", header={})


def _legacy(tr: FakeTransport, m: dict[str, Any]) -> None:
    if m.get("method") == "initialize":
        tr.deliver(
            result(
                m,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": {"name": "fake", "version": "1"},
                },
            )
        )


def test_the_simple_call_and_options_reach_the_connection() -> None:
    made: list[FakeTransport] = []

    def factory() -> FakeTransport:
        made.append(FakeTransport(_legacy))
        return made[-1]

    opts = MCPOptions(timeout=7, validate_output=False)
    with MCPConnection(factory, options=opts, era="legacy") as conn:
        assert conn.timeout == 7
        assert conn.options == opts.evolve(era="legacy")
        assert conn.client().timeout == 7
    with MCPConnection(factory, era="legacy") as conn:
        assert conn.timeout == 30.0
        assert conn.options == MCPOptions(era="legacy")


# --- the MRTR back-off ---------------------------------------------------------------------


MODERN = a2a_sync.mcp.ServerInfo(protocol_version="2026-07-28", era="modern")


def test_the_state_only_mrtr_backoff_waits_through_the_injected_sleep() -> None:
    rounds: list[dict[str, Any]] = []

    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        rounds.append(m["params"])
        if len(rounds) < 4:
            state = {"resultType": "input_required", "requestState": f"s{len(rounds)}"}
            tr.deliver(result(m, state))
        else:
            tr.deliver(result(m, {"resultType": "complete", "content": []}))

    waits: list[float] = []
    transport = FakeTransport(reply)
    session = MCPSession(transport, sleep=waits.append)
    transport.start(session)
    session.adopt(MODERN)
    try:
        out = session.request_with_input("tools/call", {"name": "slow"}, timeout=5)
    finally:
        transport.close()
        session.join_dispatcher()
    assert out["resultType"] == "complete"
    assert waits == [0.05, 0.1, 0.2]  # doubling, no real sleep
    assert [r.get("requestState") for r in rounds] == [None, "s1", "s2", "s3"]


def test_the_connection_options_sleep_reaches_the_session() -> None:
    waits: list[float] = []
    calls = 0

    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        nonlocal calls
        if m.get("method") == "server/discover":
            tr.deliver(
                result(
                    m,
                    {
                        "resultType": "complete",
                        "supportedVersions": ["2026-07-28"],
                        "capabilities": {"tools": {}},
                    },
                )
            )
        elif m.get("method") == "tools/call":
            calls += 1
            if calls == 1:
                tr.deliver(result(m, {"resultType": "input_required", "requestState": "x"}))
            else:
                tr.deliver(result(m, {"resultType": "complete", "content": []}))

    with MCPConnection(
        lambda: FakeTransport(reply), era="modern", validate_output=False, sleep=waits.append
    ) as conn:
        assert conn.client().call_tool("t", {}).is_error is False
    assert waits == [0.05]
