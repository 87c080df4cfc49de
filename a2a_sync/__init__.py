"""a2a_sync — a blocking, thread-based SDK for A2A (Agent2Agent) and MCP.

For notebooks, scripts and synchronous services (WSGI, Flask, Django, Celery) that
cannot run an asyncio event loop: plain blocking calls, threads you can stop, timeouts
that always hold, and one exception hierarchy (:mod:`a2a_sync.errors`).

A2A client::

    from a2a_sync import A2AClient
    with A2AClient.from_url("http://127.0.0.1:8000") as client:
        print(client.send_message("hello").text)

MCP client::

    from a2a_sync import MCPConnection
    with MCPConnection.stdio(["python", "server.py"]) as conn:
        print(conn.client().call_tool("add", {"a": 1, "b": 2}).structured_content)

A2A server (a WSGI app; ``serve`` runs it on waitress)::

    from a2a_sync import A2AApplication, AgentExecutor, serve

    class Echo(AgentExecutor):
        def execute(self, context, updater):
            updater.add_artifact(f"echo: {context.text}")
            updater.complete()

    serve(Echo(), card=card, port=8000)

Every public name is imported on first use (PEP 562), so ``import a2a_sync`` loads
nothing but the version; ``import a2a_sync.types`` and the server load the models without
requests, which only what sends HTTP requests (the clients) imports.
"""

from __future__ import annotations

import importlib

from ._version import __version__

# Not typing.TYPE_CHECKING: importing typing would be most of this module's cost
# (type checkers treat any constant of this name alike).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .a2a.signing import sign_card, verify_card
    from .a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentExtension,
        AgentInterface,
        AgentProvider,
        AgentSkill,
        Artifact,
        AuthenticationInfo,
        ListPushConfigsResult,
        ListTasksResult,
        Message,
        Part,
        PushNotificationConfig,
        Role,
        SendMessageConfiguration,
        SendResult,
        StreamEvent,
        Task,
        TaskArtifactUpdateEvent,
        TaskState,
        TaskStatus,
        TaskStatusUpdateEvent,
    )
    from .client import (
        A2AClient,
        APIKey,
        BearerToken,
        Credentials,
        ResilientA2AClient,
        ResilientTaskStream,
        TaskStream,
    )
    from .errors import (
        A2AError,
        A2ASyncError,
        AllAgentsFailed,
        AuthRequired,
        Cancelled,
        ConfigurationError,
        ConnectError,
        ConnectionClosed,
        ConnectionLost,
        ConnectTimeout,
        ContentTypeNotSupported,
        DeadlineExceeded,
        EmptyToolContent,
        ExtendedAgentCardNotConfigured,
        ExtensionSupportRequired,
        HeaderMismatch,
        HTTPStatusError,
        InputRequired,
        InternalError,
        InvalidAgentResponse,
        InvalidParams,
        InvalidRequest,
        MCPError,
        MethodNotFound,
        MissingRequiredClientCapability,
        NoTextContent,
        OutcomeUnknown,
        ParseError,
        ProtocolError,
        PushNotificationNotSupported,
        ReadTimeout,
        RedirectRefused,
        RequestTimeout,
        ResourceNotFound,
        ResponseTooLarge,
        RPCError,
        ServerProcessError,
        SessionExpired,
        SignatureError,
        StreamInterrupted,
        TaskCanceled,
        TaskError,
        TaskFailed,
        TaskNotCancelable,
        TaskNotFound,
        TaskRejected,
        TaskWaitTimeout,
        ToolOutputError,
        ToolOutputParseError,
        TransportError,
        UnsupportedOperation,
        UnsupportedProtocolVersion,
        URLElicitationRequired,
        VersionNotSupported,
    )
    from .mcp import MCPClient, MCPConnection, Subscription, ToolCall
    from .policies import (
        PollPolicy,
        ReconnectPolicy,
        ResilienceConfig,
        RetryPolicy,
        Timeout,
    )
    from .server import (
        A2AApplication,
        AgentExecutor,
        InMemoryTaskStore,
        RequestContext,
        SQLiteTaskStore,
        TaskUpdater,
        serve,
        serve_in_thread,
    )
    from .server.stores import PostgresTaskStore as PostgresTaskStore  # lazy, not in __all__

__all__ = [
    "__version__",
    # A2A client
    "A2AClient",
    "ResilientA2AClient",
    "TaskStream",
    "ResilientTaskStream",
    "Credentials",
    "BearerToken",
    "APIKey",
    # policies
    "Timeout",
    "RetryPolicy",
    "ReconnectPolicy",
    "PollPolicy",
    "ResilienceConfig",
    # A2A models
    "AgentCard",
    "AgentInterface",
    "AgentCapabilities",
    "AgentSkill",
    "AgentProvider",
    "AgentExtension",
    "Message",
    "Part",
    "Role",
    "Task",
    "TaskState",
    "TaskStatus",
    "Artifact",
    "TaskStatusUpdateEvent",
    "TaskArtifactUpdateEvent",
    "StreamEvent",
    "SendResult",
    "SendMessageConfiguration",
    "PushNotificationConfig",
    "AuthenticationInfo",
    "ListTasksResult",
    "ListPushConfigsResult",
    # card signing (lazy)
    "sign_card",
    "verify_card",
    # A2A server (lazy; more in a2a_sync.server)
    "A2AApplication",
    "AgentExecutor",
    "RequestContext",
    "TaskUpdater",
    "InMemoryTaskStore",
    "SQLiteTaskStore",
    "serve",
    "serve_in_thread",
    # MCP client (lazy; the models live in a2a_sync.mcp)
    "MCPConnection",
    "MCPClient",
    "ToolCall",
    "Subscription",
    # errors
    "A2ASyncError",
    "TransportError",
    "ConnectError",
    "ConnectionLost",
    "RequestTimeout",
    "ConnectTimeout",
    "ReadTimeout",
    "DeadlineExceeded",
    "RedirectRefused",
    "ResponseTooLarge",
    "StreamInterrupted",
    "Cancelled",
    "HTTPStatusError",
    "ProtocolError",
    "SignatureError",
    "ToolOutputError",
    "EmptyToolContent",
    "NoTextContent",
    "ToolOutputParseError",
    "RPCError",
    "ParseError",
    "InvalidRequest",
    "MethodNotFound",
    "InvalidParams",
    "InternalError",
    "A2AError",
    "TaskNotFound",
    "TaskNotCancelable",
    "PushNotificationNotSupported",
    "UnsupportedOperation",
    "ContentTypeNotSupported",
    "InvalidAgentResponse",
    "ExtendedAgentCardNotConfigured",
    "ExtensionSupportRequired",
    "VersionNotSupported",
    "MCPError",
    "ResourceNotFound",
    "HeaderMismatch",
    "MissingRequiredClientCapability",
    "UnsupportedProtocolVersion",
    "URLElicitationRequired",
    "TaskError",
    "TaskFailed",
    "TaskCanceled",
    "TaskRejected",
    "InputRequired",
    "AuthRequired",
    "TaskWaitTimeout",
    "AllAgentsFailed",
    "OutcomeUnknown",
    "ConnectionClosed",
    "SessionExpired",
    "ServerProcessError",
    "ConfigurationError",
]

#: Public names whose modules load on first access (name -> module).
_LAZY = {
    **dict.fromkeys(
        [
            "AgentCapabilities",
            "AgentCard",
            "AgentExtension",
            "AgentInterface",
            "AgentProvider",
            "AgentSkill",
            "Artifact",
            "AuthenticationInfo",
            "ListPushConfigsResult",
            "ListTasksResult",
            "Message",
            "Part",
            "PushNotificationConfig",
            "Role",
            "SendMessageConfiguration",
            "SendResult",
            "StreamEvent",
            "Task",
            "TaskArtifactUpdateEvent",
            "TaskState",
            "TaskStatus",
            "TaskStatusUpdateEvent",
        ],
        ".a2a.types",
    ),
    **dict.fromkeys(
        [
            "A2AError",
            "A2ASyncError",
            "AllAgentsFailed",
            "AuthRequired",
            "Cancelled",
            "ConfigurationError",
            "ConnectError",
            "ConnectionClosed",
            "ConnectionLost",
            "ConnectTimeout",
            "ContentTypeNotSupported",
            "DeadlineExceeded",
            "EmptyToolContent",
            "ExtendedAgentCardNotConfigured",
            "ExtensionSupportRequired",
            "HeaderMismatch",
            "HTTPStatusError",
            "InputRequired",
            "InternalError",
            "InvalidAgentResponse",
            "InvalidParams",
            "InvalidRequest",
            "MCPError",
            "MethodNotFound",
            "MissingRequiredClientCapability",
            "NoTextContent",
            "OutcomeUnknown",
            "ParseError",
            "ProtocolError",
            "PushNotificationNotSupported",
            "ReadTimeout",
            "RedirectRefused",
            "RequestTimeout",
            "ResourceNotFound",
            "ResponseTooLarge",
            "RPCError",
            "ServerProcessError",
            "SessionExpired",
            "SignatureError",
            "StreamInterrupted",
            "TaskCanceled",
            "TaskError",
            "TaskFailed",
            "TaskNotCancelable",
            "TaskNotFound",
            "TaskRejected",
            "TaskWaitTimeout",
            "ToolOutputError",
            "ToolOutputParseError",
            "TransportError",
            "UnsupportedOperation",
            "UnsupportedProtocolVersion",
            "URLElicitationRequired",
            "VersionNotSupported",
        ],
        ".errors",
    ),
    **dict.fromkeys(
        ["PollPolicy", "ReconnectPolicy", "ResilienceConfig", "RetryPolicy", "Timeout"], ".policies"
    ),
    # The client pulls in requests (~70 ms): models, errors and the server do not need it.
    "A2AClient": ".client",
    "ResilientA2AClient": ".client",
    "TaskStream": ".client",
    "ResilientTaskStream": ".client",
    "Credentials": ".client",
    "BearerToken": ".client",
    "APIKey": ".client",
    "sign_card": ".signing",
    "verify_card": ".signing",
    "A2AApplication": ".server",
    "AgentExecutor": ".server",
    "RequestContext": ".server",
    "TaskUpdater": ".server",
    "InMemoryTaskStore": ".server",
    "SQLiteTaskStore": ".server",
    # Not in __all__: it needs the postgres extra, and ``import *`` must work without it.
    "PostgresTaskStore": ".server.stores",
    "serve": ".server",
    "serve_in_thread": ".server",
    "MCPConnection": ".mcp",
    "MCPClient": ".mcp",
    "ToolCall": ".mcp",
    "Subscription": ".mcp",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'a2a_sync' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
