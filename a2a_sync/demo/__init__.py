"""The end-to-end demo: ``a2a-sync demo`` (``make demo``) runs :func:`run_demo`.

* :mod:`~a2a_sync.demo.agent` — the demo agent "Factorizer": an
  :class:`~a2a_sync.server.AgentExecutor` whose skill calls the ``factorize`` tool of an
  MCP stdio server through :class:`~a2a_sync.mcp.MCPConnection`, streaming one artifact
  chunk per number (:class:`DemoAgent` bundles it with its store and app).
* :mod:`~a2a_sync.demo.mcp_tools` — that MCP server, shipped in the package
  (``python -m a2a_sync.demo.mcp_tools``).
* :mod:`~a2a_sync.demo.relay` — a TCP relay that cuts the first stream on purpose.
* :mod:`~a2a_sync.demo.run` — the story: agent, relay, resilient client, recovery,
  result, cleanup.

``a2a-sync serve --demo`` serves the same agent until Ctrl-C.
"""

from __future__ import annotations

from .agent import DemoAgent, FactorizeExecutor, demo_card
from .run import DEMO_MESSAGE, run_demo

__all__ = ["DEMO_MESSAGE", "DemoAgent", "FactorizeExecutor", "demo_card", "run_demo"]
