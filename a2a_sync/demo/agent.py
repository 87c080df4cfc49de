"""The demo agent: an A2A server whose skill calls an MCP tool.

"Factorizer" takes a message such as ``factor 360 1001 65537``, and for each number calls
the ``factorize`` tool of the bundled MCP stdio server (:mod:`a2a_sync.demo.mcp_tools`),
reporting progress in the task's status and streaming one artifact chunk per number. The
agent counts the JSON-RPC calls it answers, so the demo can show that a client that lost
its stream resubscribed instead of sending the message again.

::

    with DemoAgent(database="tasks.sqlite3") as agent, serve_in_thread(agent.app) as url:
        ...
"""

from __future__ import annotations

import collections
import logging
import re
import sys
import threading
from typing import Any, Final

from ..a2a.types import AgentCapabilities, AgentCard, AgentSkill
from ..errors import A2ASyncError, InternalError
from ..mcp import MCPClient, MCPConnection, StdioTransport
from ..server.app import A2AApplication
from ..server.context import CallContext
from ..server.executor import AgentExecutor, RequestContext, TaskUpdater
from ..server.handler import DefaultRequestHandler
from ..server.runs import EventStream
from ..server.serving import open_task_store
from .mcp_tools import LARGEST

__all__ = [
    "CHUNK_INTERVAL",
    "MAX_NUMBERS",
    "TOOLS_COMMAND",
    "CountingHandler",
    "DemoAgent",
    "FactorizeExecutor",
    "demo_card",
    "format_factors",
    "numbers_in",
]

logger = logging.getLogger(__name__)

#: Pause after each chunk: slow enough to watch the progress display and to cut the
#: stream mid-task, quick enough for a demo of a few seconds.
CHUNK_INTERVAL: Final = 0.35
#: Most numbers one message may ask for (keeps a task short).
MAX_NUMBERS: Final = 12
#: How the agent starts its MCP tool server (the interpreter running the demo).
TOOLS_COMMAND: Final = (sys.executable, "-m", "a2a_sync.demo.mcp_tools")
#: Per-call limit of the agent's tool calls (the tool answers in milliseconds).
TOOL_TIMEOUT: Final = 10.0

_NUMBER = re.compile(r"\d+")


def demo_card() -> AgentCard:
    """The demo agent's card (no interfaces listed: the server advertises its own URL)."""
    return AgentCard(
        name="Factorizer",
        description="Factors whole numbers with an MCP tool, streaming one result per number",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="factorize",
                name="Prime factors",
                description="Prime factors of every whole number in the message",
                tags=["math", "mcp"],
                examples=["factor 360 1001 65537"],
            )
        ],
    )


def format_factors(n: int, factors: list[int]) -> str:
    """``360 = 2^3 * 3^2 * 5`` (``7 is prime`` for a single factor); ASCII only."""
    if factors == [n]:
        return f"{n} is prime"
    counts = collections.Counter(factors)
    terms = [str(p) if k == 1 else f"{p}^{k}" for p, k in counts.items()]
    return f"{n} = {' * '.join(terms)}"


class FactorizeExecutor(AgentExecutor):
    """The skill: one ``factorize`` tool call and one artifact chunk per number.

    Shared by every request thread: the MCP client handle is thread-safe and the run
    counter is guarded by a lock.

    Args:
        tools: A client of the MCP server offering ``factorize``.
        chunk_interval: Pause after each chunk, in seconds.
    """

    def __init__(self, tools: MCPClient, chunk_interval: float = CHUNK_INTERVAL) -> None:
        self._tools = tools
        self._interval = chunk_interval
        self._lock = threading.Lock()
        self.runs = 0

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        with self._lock:
            self.runs += 1
        numbers = numbers_in(context.text)
        if not numbers:
            updater.require_input(
                f"Which whole numbers (2 .. {LARGEST}) should I factor? e.g. 'factor 360 1001'"
            )
            return
        artifact_id: str | None = None
        for index, n in enumerate(numbers):
            updater.start_work(f"factoring {n} ({index + 1}/{len(numbers)})")
            try:
                result = self._tools.call_tool("factorize", {"n": n}, timeout=TOOL_TIMEOUT)
            except A2ASyncError as exc:
                raise InternalError(f"the factorize tool failed: {exc}") from exc
            if result.is_error or not isinstance(result.structured_content, dict):
                updater.fail(f"the factorize tool refused {n}: {result.text}")
                return
            factors = [int(f) for f in result.structured_content["factors"]]
            artifact_id = updater.add_artifact(
                format_factors(n, factors) + "\n",
                artifact_id=artifact_id,
                name="factors",
                append=index > 0,
                last_chunk=index == len(numbers) - 1,
            )
            if context.wait_cancelled(self._interval):
                return
        updater.complete(f"factored {len(numbers)} numbers with the MCP tool")


class CountingHandler(DefaultRequestHandler):
    """The default handler, counting the JSON-RPC methods it answers (thread-safe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._count_lock = threading.Lock()
        self._counts: collections.Counter[str] = collections.Counter()

    @property
    def received(self) -> dict[str, int]:
        """JSON-RPC calls answered so far, by method name (``SendStreamingMessage`` ...)."""
        with self._count_lock:
            return dict(self._counts)

    def _count(self, call: CallContext) -> None:
        with self._count_lock:
            self._counts[call.method] += 1

    def dispatch(self, operation: Any, params: Any, call: CallContext) -> Any:
        self._count(call)
        return super().dispatch(operation, params, call)

    def dispatch_stream(self, operation: Any, params: Any, call: CallContext) -> EventStream:
        self._count(call)
        return super().dispatch_stream(operation, params, call)


class DemoAgent:
    """The whole demo agent: its MCP tool server, task store, handler and WSGI app.

    Starts the tool server subprocess when created; :meth:`close` (after the WSGI server
    stopped) closes the store and stops the tool server. Serve :attr:`app` with
    :func:`~a2a_sync.server.serve_in_thread` or :func:`~a2a_sync.server.serve`.

    Args:
        database: The task store: a SQLite file (or a ``postgresql://`` URL).
        chunk_interval: Pause after each chunk, in seconds.

    Attributes:
        app: The :class:`~a2a_sync.server.A2AApplication`.
        handler: Its :class:`CountingHandler` (``handler.received``).
        executor: The :class:`FactorizeExecutor` (``executor.runs``).
        tools_pid: Process id of the MCP tool server.

    Raises:
        ServerProcessError: The tool server did not start.
    """

    def __init__(self, database: str, *, chunk_interval: float = CHUNK_INTERVAL) -> None:
        self.tools = MCPConnection.stdio(list(TOOLS_COMMAND), timeout=TOOL_TIMEOUT)
        try:
            transport = self.tools.transport
            self.tools_pid = transport.pid if isinstance(transport, StdioTransport) else None
            self.tool_names = [tool.name for tool in self.tools.client().list_tools()]
            self.executor = FactorizeExecutor(self.tools.client(), chunk_interval)
            self.store = open_task_store(database)
        except BaseException:
            self.tools.close()
            raise
        card = demo_card()
        self.handler = CountingHandler(card, self.executor, task_store=self.store)
        self.app = A2AApplication(card, handler=self.handler)

    @property
    def tools_returncode(self) -> int | None:
        """The tool server's exit status once it has exited (after :meth:`close`)."""
        transport = self.tools.transport
        return transport.returncode if isinstance(transport, StdioTransport) else None

    def close(self) -> None:
        """Close the task store and stop the tool server (waits for it to exit)."""
        try:
            self.store.close()
        finally:
            self.tools.close()

    def __enter__(self) -> DemoAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def numbers_in(text: str) -> list[int]:
    """The whole numbers the agent factors in ``text`` (at most :data:`MAX_NUMBERS`)."""
    found = (int(match) for match in _NUMBER.findall(text))
    return [n for n in found if 2 <= n <= LARGEST][:MAX_NUMBERS]
