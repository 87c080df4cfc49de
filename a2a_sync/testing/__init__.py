"""Helpers for testing code that talks A2A or MCP, without real services.

* :func:`agent_server` — run an agent (an :class:`~a2a_sync.server.A2AApplication`, an
  executor, a function or a :class:`FakeAgent`) on a free local port in a background
  thread; a context manager yielding the URL.
* :class:`FakeAgent` — a scriptable agent: replies, streamed chunks, failures, questions
  and errors chosen per message text; it records what it received.
* :func:`mcp_server_command` — the argv of a scriptable MCP stdio server (canned tools,
  resources, prompts) for :meth:`~a2a_sync.mcp.MCPConnection.stdio`; also
  ``python -m a2a_sync.testing.mcp_server``.
* :func:`connect_in_memory` / :class:`InMemoryTransport` — an MCP connection to a server
  object in this process (the scripted server, or anything with
  ``handle(message) -> list of messages``): no subprocess, no port.
  ``a2a_sync.testing.mcp_sdk.SDKServerTransport`` does the same for an official ``mcp``
  server object (imported from there only: it needs the ``mcp`` package).

::

    from a2a_sync import A2AClient
    from a2a_sync.mcp import MCPConnection
    from a2a_sync.testing import FakeAgent, agent_server, mcp_server_command

    def test_my_code_reports_the_agents_answer():
        agent = FakeAgent().on("status?", artifact="all green")
        with agent_server(agent) as url:
            assert my_code(url) == "all green"

    def test_my_code_uses_the_weather_tool():
        argv = mcp_server_command(tools={"weather": "sunny in {city}"})
        with MCPConnection.stdio(argv) as conn:
            assert conn.client().call_tool("weather", {"city": "Oslo"}).text == "sunny in Oslo"

Needs the ``server`` extra (waitress) for :func:`agent_server`.
"""

from __future__ import annotations

from .agent_server import agent_server
from .fake import DEFAULT_HOLD_TIMEOUT, FakeAgent, Script, agent_card
from .mcp_memory import InMemoryTransport, JSONRPCServer, connect_in_memory
from .mcp_server import ScriptedMCPServer, mcp_server_command, recorded_messages

__all__ = [
    "DEFAULT_HOLD_TIMEOUT",
    "FakeAgent",
    "InMemoryTransport",
    "JSONRPCServer",
    "Script",
    "ScriptedMCPServer",
    "agent_card",
    "agent_server",
    "connect_in_memory",
    "mcp_server_command",
    "recorded_messages",
]
