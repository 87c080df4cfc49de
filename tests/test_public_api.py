"""The public surface is a deliberate list: adding or removing a name changes this test."""

from __future__ import annotations

import subprocess
import sys

import a2a_sync

EXPECTED = {
    "__version__",
    "A2AClient",
    "ResilientA2AClient",
    "TaskStream",
    "ResilientTaskStream",
    "Credentials",
    "BearerToken",
    "APIKey",
    "Timeout",
    "RetryPolicy",
    "ReconnectPolicy",
    "PollPolicy",
    "ResilienceConfig",
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
    "sign_card",
    "verify_card",
    "A2AApplication",
    "AgentExecutor",
    "RequestContext",
    "TaskUpdater",
    "InMemoryTaskStore",
    "SQLiteTaskStore",
    "serve",
    "serve_in_thread",
    "MCPConnection",
    "MCPClient",
    "ToolCall",
    "Subscription",
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
}


def test_all_lists_exactly_the_public_names() -> None:
    assert len(a2a_sync.__all__) == len(set(a2a_sync.__all__)), "duplicate names in __all__"
    assert set(a2a_sync.__all__) == EXPECTED


def test_every_public_name_resolves() -> None:
    for name in a2a_sync.__all__:
        assert getattr(a2a_sync, name) is not None, name


def test_unknown_attributes_raise_attribute_error() -> None:
    try:
        a2a_sync.no_such_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError:
        return
    raise AssertionError("expected AttributeError")


def test_importing_the_package_does_not_import_heavy_optional_parts() -> None:
    optional = (
        "waitress",
        "a2a",
        "mcp",
        "cryptography",
        "sqlite3",
        "a2a_sync.signing",
        "a2a_sync.mcp",
        "a2a_sync.server",
        "psycopg",
    )
    code = f"import sys, a2a_sync; print([m for m in {optional!r} if m in sys.modules])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"
