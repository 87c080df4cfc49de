"""An official-SDK ``MCPServer`` (mcp 2.3.0) over stdio, exercising what the client speaks.

Speaks both eras (python-sdk pins a connection's era on its first message). Tools cover
structured output, progress, logging, sampling / elicitation / roots (through ``Resolve``,
which the SDK turns into server→client requests in the legacy era and ``input_required``
rounds in the modern era) and a slow tool for cancellation.
"""

from __future__ import annotations

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import (
    Completion,
    CreateMessageResult,
    ListRootsResult,
    PromptReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel

mcp = MCPServer("Peer", instructions="A test peer.")


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
async def slow(seconds: float) -> str:
    """Sleep, then answer (cancellation target)."""
    await anyio.sleep(seconds)
    return "finished"


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


if __name__ == "__main__":
    mcp.run()
