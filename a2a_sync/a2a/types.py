"""The A2A data model: one set of Python objects for both wire revisions (1.0 and 0.3).

Everything here is a plain attrs class with snake_case attributes and no knowledge of
JSON: camelCase, enum spellings, ``kind`` tags, base64 and the differences between
A2A 1.0 (ProtoJSON) and 0.3 (``kind``-tagged JSON-RPC objects) live in
:mod:`a2a_sync.a2a.codec`. A Task read from a 0.3 agent and one read from a 1.0 agent are
equal objects.

Value objects are **frozen** (``attrs.frozen``): a :class:`Task` snapshot handed from a
stream-reader thread to the caller can never change under the caller's feet, and
updating one is explicit: ``attrs.evolve(task, status=TaskStatus(state=...))``. Freezing
is shallow: list and dict attributes are plain lists and dicts for speed and easy
construction, and must be treated as read-only once the object is built (build a new
object with :func:`attrs.evolve` instead). Instances are therefore safe to share across
threads as long as nobody mutates those containers.

Absent means default: optional attributes default to ``None`` (not sent) or an empty
list, exactly like the wire, where unset values are omitted.

Named constructors cover the common cases::

    Message.user("What is the weather in Paris?")
    Message.user("Describe this", Part.file_url("https://example.com/a.png"))
    Part.file_bytes(b"%PDF-1.7...", media_type="application/pdf", filename="report.pdf")
    Part.from_data({"city": "Paris"})
"""

from __future__ import annotations

from .card_types import (
    DEFAULT_PROTOCOL_BINDING,
    DEFAULT_PROTOCOL_VERSION,
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    MutualTLSSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlow,
    OAuthFlows,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)
from .content import Message, Part, Role, TaskState
from .params import (
    AuthenticationInfo,
    GetTaskParams,
    ListPushConfigsParams,
    ListPushConfigsResult,
    ListTasksParams,
    ListTasksResult,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageConfiguration,
    SendMessageParams,
    TaskIdParams,
)
from .task import (
    Artifact,
    SendResult,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = [
    "TaskState",
    "Role",
    "Part",
    "Message",
    "TaskStatus",
    "Artifact",
    "Task",
    "TaskStatusUpdateEvent",
    "TaskArtifactUpdateEvent",
    "StreamEvent",
    "SendResult",
    "AuthenticationInfo",
    "PushNotificationConfig",
    "SendMessageConfiguration",
    "SendMessageParams",
    "GetTaskParams",
    "TaskIdParams",
    "ListTasksParams",
    "ListTasksResult",
    "PushConfigParams",
    "ListPushConfigsParams",
    "ListPushConfigsResult",
    "AgentInterface",
    "AgentProvider",
    "AgentExtension",
    "AgentCapabilities",
    "AgentSkill",
    "AgentCardSignature",
    "OAuthFlow",
    "OAuthFlows",
    "APIKeySecurityScheme",
    "HTTPAuthSecurityScheme",
    "OAuth2SecurityScheme",
    "OpenIdConnectSecurityScheme",
    "MutualTLSSecurityScheme",
    "SecurityScheme",
    "AgentCard",
    "DEFAULT_PROTOCOL_BINDING",
    "DEFAULT_PROTOCOL_VERSION",
]
