"""``a2a-sync mcp ...``: list and call an MCP server's tools, resources and prompts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ConfigurationError
from ..mcp import MCPConnection
from ..mcp._codec import unstructure
from .exits import EXIT_OK, EXIT_PEER_ERROR
from .oauth import oauth_for
from .output import Output

__all__ = ["cmd_mcp"]


def _mcp_connection(args: argparse.Namespace) -> Any:
    if args.stdio:
        return MCPConnection.stdio(args.stdio, timeout=args.timeout)  # bounds the connect too
    if args.url:
        http = getattr(MCPConnection, "http", None)
        if http is None:  # pragma: no cover - until the HTTP transport lands
            raise ConfigurationError("MCP over HTTP is not available in this version")
        headers = {"Authorization": f"Bearer {args.token}"} if args.token else None
        oauth = oauth_for(args)
        if oauth is not None and headers is not None:
            raise ConfigurationError("give --token or --oauth, not both")
        return http(
            args.url,
            headers=headers,
            auth=oauth,
            timeout=args.timeout,
            allow_insecure_credentials=args.allow_insecure_credentials,
        )
    raise ConfigurationError("give the server with --stdio CMD... or --url URL")


def _json_argument(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigurationError(f"{what} must be JSON: {exc}") from exc


def _mcp_dump(value: Any) -> Any:
    if isinstance(value, list):
        return [unstructure(item) for item in value]
    return unstructure(value)


def cmd_mcp(args: argparse.Namespace, out: Output) -> int:
    with _mcp_connection(args) as connection:
        client = connection.client()
        action = args.mcp_action
        result: Any
        if action == "tools":
            result = client.list_tools()
            lines = [f"{tool.name}: {tool.description or ''}".rstrip(": ") for tool in result]
        elif action == "call":
            result = client.call_tool(args.name, _json_argument(args.arguments, "arguments"))
            lines = [_tool_text(result)]
        elif action == "resources":
            result = client.list_resources()
            lines = [f"{r.uri}  {r.name}" for r in result]
        elif action == "read":
            result = client.read_resource(args.uri)
            lines = [
                getattr(c, "text", None) or f"<{len(getattr(c, 'blob', ''))} base64 chars>"
                for c in result
            ]
        elif action == "prompts":
            result = client.list_prompts()
            lines = [f"{p.name}: {p.description or ''}".rstrip(": ") for p in result]
        else:  # get-prompt
            arguments = _json_argument(args.arguments, "arguments") or {}
            result = client.get_prompt(args.name, arguments)
            lines = [f"{m.role}: {getattr(m.content, 'text', m.content)}" for m in result.messages]
        if out.as_json:
            out.json(_mcp_dump(result))
        else:
            for line in lines:
                out.line(line)
        if action == "call" and getattr(result, "is_error", False):
            return EXIT_PEER_ERROR
    return EXIT_OK


def _tool_text(result: Any) -> str:
    texts = [block.text for block in result.content if getattr(block, "text", None)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return ""
