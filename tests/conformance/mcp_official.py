"""An official ``mcp`` 2.3.0 ``MCPServer`` for the conformance cross-checks: a tool that
asks the client for sampling, a completion for a prompt argument, a tool that logs and one
that announces a changed tool list.
Importing this module needs the ``mcp`` package (the ``test`` extra)."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer, Resolve, Sample
from mcp_types import Completion, CreateMessageResult, PromptReference, SamplingMessage, TextContent

__all__ = ["official_server"]


def _ask() -> Sample:
    text = TextContent(type="text", text="Say hi")
    return Sample([SamplingMessage(role="user", content=text)], max_tokens=20)


def official_server() -> MCPServer:
    server = MCPServer("official")

    @server.tool()
    def sampled(reply: Annotated[CreateMessageResult, Resolve(_ask)]) -> str:
        content = reply.content
        return content.text if isinstance(content, TextContent) else "?"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.warning("careful")
        return "said things"

    @server.tool()
    async def change(ctx: Context) -> str:
        await ctx.notify_tools_changed()
        return "changed"

    @server.prompt()
    def review(code: str, language: str = "python") -> str:
        return f"Please review this {language}:\n{code}"

    @server.completion()  # type: ignore[no-untyped-call, untyped-decorator]
    async def complete(ref: Any, argument: Any, context: Any) -> Completion | None:
        if isinstance(ref, PromptReference) and argument.name == "language":
            options = ["python", "perl", "php", "rust"]
            return Completion(values=[o for o in options if o.startswith(argument.value)])
        return None

    return server
