"""MCP data model: attrs value objects, snake_case, independent of the wire format.

camelCase, ``_meta`` and the ``type`` tags of content blocks live only in
:mod:`a2a_sync.mcp._codec`. Every model is frozen (hashable where its fields are) and
safe to share between threads. Binary payloads (image/audio ``data``, resource ``blob``)
are decoded ``bytes``; the codec base64-encodes them on the way out.

Fields the peer sends that a model does not know are ignored; absent optional fields
take the defaults shown. Open-ended protocol objects (JSON Schemas, capability
sub-objects, ``_meta``) stay plain ``dict`` values.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from ._content import (
    Annotations,
    AudioContent,
    BlobResourceContents,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    Role,
    TextContent,
    TextResourceContents,
    UnknownContent,
)
from ._features import (
    CreateMessageRequest,
    CreateMessageResult,
    ElicitRequest,
    ElicitResult,
    LoggingLevel,
    LoggingMessage,
    Progress,
    Root,
    SamplingMessage,
)
from ._html import tool_html, tool_result_html

__all__ = [
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


# --- identity and capabilities -----------------------------------------------------------


@attrs.frozen
class Implementation:
    """Name and version of an MCP client or server (``clientInfo`` / ``serverInfo``)."""

    name: str
    version: str = ""
    title: str | None = None
    description: str | None = None
    website_url: str | None = None


@attrs.frozen
class ServerCapabilities:
    """What the server offers. Each member is the capability object, or ``None`` if absent.

    ``"tools" in caps`` style checks are spelled ``caps.tools is not None``.
    """

    experimental: dict[str, Any] | None = None
    logging: dict[str, Any] | None = None
    completions: dict[str, Any] | None = None
    prompts: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None
    tasks: dict[str, Any] | None = None
    extensions: dict[str, Any] | None = None


@attrs.frozen
class ClientCapabilities:
    """What this client offers; derived from the callbacks given to the connection."""

    experimental: dict[str, Any] | None = None
    roots: dict[str, Any] | None = None
    sampling: dict[str, Any] | None = None
    elicitation: dict[str, Any] | None = None
    tasks: dict[str, Any] | None = None
    extensions: dict[str, Any] | None = None


@attrs.frozen
class ServerInfo:
    """The outcome of era negotiation: the ``initialize`` or ``server/discover`` result.

    Attributes:
        protocol_version: The negotiated revision (``"2025-11-25"``, ``"2026-07-28"``...).
        era: ``"legacy"`` (initialize handshake) or ``"modern"`` (per-request envelope).
        capabilities: The server's capabilities.
        implementation: The server's ``serverInfo`` (name, version), when it sent one.
        instructions: Usage hints for a model, when the server sent them.
        supported_versions: Modern era only: every revision the server speaks.
    """

    protocol_version: str
    era: Literal["legacy", "modern"]
    capabilities: ServerCapabilities = ServerCapabilities()
    implementation: Implementation | None = None
    instructions: str | None = None
    supported_versions: tuple[str, ...] = ()

    @property
    def name(self) -> str | None:
        """The server's name, if it told us."""
        return self.implementation.name if self.implementation else None

    @property
    def version(self) -> str | None:
        """The server's version, if it told us."""
        return self.implementation.version if self.implementation else None


# --- tools ------------------------------------------------------------------------------------


@attrs.frozen
class ToolAnnotations:
    """Untrusted hints about a tool's behaviour."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


@attrs.frozen
class Tool:
    """A tool the server offers. ``input_schema``/``output_schema`` are JSON Schemas."""

    name: str
    input_schema: dict[str, Any] = attrs.field(factory=dict, hash=False)
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = attrs.field(default=None, hash=False)
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, hash=False)

    def _repr_html_(self) -> str:
        """Jupyter: name, description, parameters and hints (escaped)."""
        return tool_html(self)


@attrs.frozen
class CallToolResult:
    """The result of ``tools/call``.

    A tool that failed reports ``is_error=True`` with the failure in ``content``; that is
    a result, not an exception (protocol errors raise :class:`~a2a_sync.errors.RPCError`).
    """

    content: tuple[ContentBlock, ...] = ()
    structured_content: Any = attrs.field(default=None, hash=False)
    is_error: bool = False
    meta: dict[str, Any] | None = attrs.field(default=None, hash=False)

    @property
    def text(self) -> str:
        """All text blocks joined with newlines (``""`` when there are none)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    def _repr_html_(self) -> str:
        """Jupyter: the content blocks and structured content (escaped, cut when long)."""
        return tool_result_html(self)


# --- resources ------------------------------------------------------------------------------


@attrs.frozen
class Resource:
    """A concrete resource the server can read."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, hash=False)


@attrs.frozen
class ResourceTemplate:
    """A parameterised resource (RFC 6570 URI template)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, hash=False)


# --- prompts and completion --------------------------------------------------------------------


@attrs.frozen
class PromptArgument:
    """One argument a prompt accepts."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False


@attrs.frozen
class Prompt:
    """A prompt template the server offers."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()
    meta: dict[str, Any] | None = attrs.field(default=None, hash=False)


@attrs.frozen
class PromptMessage:
    """One message of a rendered prompt."""

    role: Role
    content: ContentBlock


@attrs.frozen
class GetPromptResult:
    """A rendered prompt."""

    messages: tuple[PromptMessage, ...] = ()
    description: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, hash=False)


@attrs.frozen
class PromptReference:
    """Completion target: an argument of the named prompt."""

    type: ClassVar[str] = "ref/prompt"
    name: str


@attrs.frozen
class ResourceTemplateReference:
    """Completion target: a variable of the resource template ``uri``."""

    type: ClassVar[str] = "ref/resource"
    uri: str


@attrs.frozen
class Completion:
    """Suggested values for an argument (at most 100)."""

    values: tuple[str, ...] = ()
    total: int | None = None
    has_more: bool = False
