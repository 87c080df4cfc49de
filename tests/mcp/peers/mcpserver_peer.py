"""An official-SDK ``MCPServer`` (mcp 2.3.0), exercising what the client speaks.

Speaks both eras (python-sdk pins a stdio connection's era on its first message; over
HTTP the ``MCP-Protocol-Version`` header routes each request). Tools cover structured
output, progress, logging, sampling / elicitation / roots (through ``Resolve``, which the
SDK turns into server→client requests in the legacy era and ``input_required`` rounds in
the modern era), a slow tool for cancellation, an ``x-mcp-header`` argument, and a tool
that cuts its own response stream (resumption).

Run ``python mcpserver_peer.py`` for stdio, or with ``http`` (Streamable HTTP at ``/mcp``)
or ``sse`` (HTTP+SSE at ``/sse``) to serve 127.0.0.1 on a free port, printed first on
stdout as ``PORT <n>``. ``http`` options: ``--json`` (JSON responses), ``--resumable``
(an in-memory event store, priming events and ``retry: 100``). ``--ttl MS`` (any mode)
sends ``ttlMs`` MS on ``tools/list`` results (2026-07-28 caching hints).
"""

from __future__ import annotations

import socket
import sys
from typing import Annotated, Any

import anyio
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.server.mcpserver.utilities.types import Image
from mcp.server.streamable_http import EventMessage, EventStore
from mcp_types import (
    Completion,
    CreateMessageResult,
    ListRootsResult,
    PromptReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field

#: ``--ttl MS``: the ``ttlMs`` hint on ``tools/list`` results.
_TTL_MS = int(sys.argv[sys.argv.index("--ttl") + 1]) if "--ttl" in sys.argv else 0
mcp = MCPServer(
    "Peer",
    instructions="A test peer.",
    cache_hints={"tools/list": CacheHint(ttl_ms=_TTL_MS)} if _TTL_MS else None,
)
#: Tags of ``slow`` calls that were cancelled (observed through the ``cancelled`` tool).
CANCELLED: list[str] = []
#: Per tag, set once that ``slow`` call is cancelled (what ``cancelled(wait_for=...)`` awaits).
_CANCEL_SEEN: dict[str, anyio.Event] = {}


class Point(BaseModel):
    x: int
    y: int


class Person(BaseModel):
    name: str


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@mcp.tool()
def point(x: int, y: int) -> Point:
    """A structured point."""
    return Point(x=x, y=y)


@mcp.tool()
def picture() -> Image:
    """A tiny image."""
    return Image(data=b"\x89PNG fake", format="png")


@mcp.tool()
async def long_task(steps: int, ctx: Context) -> str:
    """Report progress for each step."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"done {steps}"


@mcp.tool()
async def slow(seconds: float, ctx: Context, tag: str = "") -> str:
    """Sleep, then answer (cancellation target; a cancelled call records its tag). Reports
    progress 0 once running, so a client can cancel a call the server surely has."""
    await ctx.report_progress(0, 1, "started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        CANCELLED.append(tag)
        _cancel_seen(tag).set()
        raise
    return "finished"


def _cancel_seen(tag: str) -> anyio.Event:
    if tag not in _CANCEL_SEEN:
        _CANCEL_SEEN[tag] = anyio.Event()
    return _CANCEL_SEEN[tag]


@mcp.tool()
async def cancelled(wait_for: str = "", timeout: float = 0.0) -> list[str]:
    """Tags of the slow calls that were cancelled so far. With ``wait_for``, first wait up
    to ``timeout`` seconds for the call with that tag to be cancelled: the server learns of
    a cancel asynchronously, and this spares the client a polling loop."""
    if wait_for:
        with anyio.move_on_after(timeout):
            await _cancel_seen(wait_for).wait()
    return list(CANCELLED)


@mcp.tool()
def regional(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Echo a region that modern HTTP clients also mirror into the Mcp-Param-Region header."""
    return f"region {region}"


@mcp.tool()
async def interrupted(ctx: Context) -> str:
    """Report progress, cut its own response stream, keep working, then answer: a client
    must resume with GET + Last-Event-ID to see the rest (needs ``--resumable``)."""
    await ctx.report_progress(1, 3, "before the cut")
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    await ctx.report_progress(2, 3, "after the cut")
    await anyio.sleep(0.1)
    return "resumed"


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Logs at two levels, then answers."""
    await ctx.debug("debug detail")
    await ctx.warning("careful")
    return "said things"


@mcp.tool()
async def change(ctx: Context) -> str:
    """Announces that the tool list and a resource changed."""
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated("config://app")
    return "changed"


@mcp.tool()
def grow(name: str) -> str:
    """Adds a tool ``name`` without announcing it (no list_changed)."""
    mcp.add_tool(lambda: name, name=name, description="added by grow")
    return name


@mcp.tool()
def fail() -> str:
    """Always raises: the SDK answers with an isError result."""
    raise ValueError("this tool always fails")


def _ask_name() -> Elicit[Person]:
    return Elicit("What is your name?", Person)


@mcp.tool()
def greet(person: Annotated[Person, Resolve(_ask_name)]) -> str:
    """Greets whoever the user says they are (elicitation)."""
    return f"Hello, {person.name}!"


def _ask_model() -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text="Say hi"))],
        max_tokens=20,
    )


@mcp.tool()
def sampled(reply: Annotated[CreateMessageResult, Resolve(_ask_model)]) -> str:
    """Returns what the client's model said (sampling)."""
    content = reply.content
    return content.text if isinstance(content, TextContent) else "?"


def _roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
def roots(found: Annotated[ListRootsResult, Resolve(_roots)]) -> list[str]:
    """The client's roots."""
    return [str(root.uri) for root in found.roots]


@mcp.resource("config://app")
def config() -> str:
    """Static configuration."""
    return "debug=true"


@mcp.resource("data://bytes", mime_type="application/octet-stream")
def raw_bytes() -> bytes:
    """Binary data."""
    return b"\x00\x01\x02"


@mcp.resource("greeting://{name}")
def greeting(name: str) -> str:
    """A personal greeting."""
    return f"Hello, {name}!"


@mcp.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a code review."""
    return f"Please review this {language}:\n{code}"


@mcp.completion()
async def complete(ref, argument, context):  # type: ignore[no-untyped-def]
    if isinstance(ref, PromptReference) and argument.name == "language":
        options = ["python", "perl", "php", "rust"]
        return Completion(values=[o for o in options if o.startswith(argument.value)])
    return None


class MemoryEventStore(EventStore):
    """Keeps every event so a client can resume any stream with Last-Event-ID."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(len(self.events) + 1)
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: Any) -> str | None:
        index = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        for event_id, stream, message in self.events[index + 1 :]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def serve(app: Any) -> None:
    """Serve ``app`` on 127.0.0.1, on a port bound here first (no race), printed first."""
    import uvicorn

    # proto=IPPROTO_TCP, as uvicorn's own sockets have: asyncio sets TCP_NODELAY only on
    # those, and without it Nagle holds every keep-alive answer back ~40 ms.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        resumable = "--resumable" in sys.argv
        serve(
            mcp.streamable_http_app(
                json_response="--json" in sys.argv,
                event_store=MemoryEventStore() if resumable else None,
                retry_interval=100 if resumable else None,
            )
        )
    elif mode == "sse":
        serve(mcp.sse_app())
    else:
        mcp.run()
