"""A blocking, thread-based MCP (Model Context Protocol) client.

Start here::

    from a2a_sync.mcp import MCPConnection

    with MCPConnection.stdio(["python", "server.py"]) as conn:
        client = conn.client()                 # cheap; share it between threads
        tools = client.list_tools()            # every page
        result = client.call_tool("add", {"a": 1, "b": 2})
        print(result.structured_content, result.text)

    # or over HTTP: Streamable HTTP, falling back to the 2024-11-05 HTTP+SSE transport
    with MCPConnection.http("http://127.0.0.1:8000/mcp", auth=token) as conn:
        ...

Both protocol eras are spoken: the legacy ``initialize`` handshake (2024-11-05 ..
2025-11-25) and the 2026-07-28 per-request envelope, detected automatically
(``era="auto"``) or pinned. Server→client features (sampling, elicitation, roots, logs,
progress, list-changed) reach plain callbacks on a dispatcher thread.
"""

from __future__ import annotations

from ._callbacks_era import CallbackUnavailableWarning
from .client import MCPClient, Subscription, SubscriptionEvent, ToolCall
from .config import HTTPServerConfig, StdioServerConfig, load_servers
from .connection import DEFAULT_TIMEOUT, MCPConnection
from .eras import HANDSHAKE_VERSIONS, MODERN_VERSIONS
from .group import GroupTool, MCPGroup, MCPGroupError
from .options import HTTPOptions, MCPOptions, StdioOptions
from .transports import Transport
from .transports.http import StreamableHTTPTransport
from .transports.legacy_sse import LegacySSETransport
from .transports.stdio import StdioTransport
from .types import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ClientCapabilities,
    Completion,
    ContentBlock,
    CreateMessageRequest,
    CreateMessageResult,
    ElicitRequest,
    ElicitResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    Implementation,
    LoggingLevel,
    LoggingMessage,
    Progress,
    Prompt,
    PromptArgument,
    PromptMessage,
    PromptReference,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    ResourceTemplateReference,
    Role,
    Root,
    SamplingMessage,
    ServerCapabilities,
    ServerInfo,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
    UnknownContent,
)

__all__ = [
    # connection and handles
    "DEFAULT_TIMEOUT",
    "MCPConnection",
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
    # lower layers
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
]
