"""MCP content blocks (text, image, audio, resource links, embedded resources) and the
speaker ``Role``: part of the data model re-exported by :mod:`a2a_sync.mcp.types`
(split out by topic so each module stays short)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "ResourceContents",
    "ResourceLink",
    "Role",
    "TextContent",
    "TextResourceContents",
    "UnknownContent",
]

Role = Literal["user", "assistant"]

# --- content blocks -------------------------------------------------------------------------


@attrs.frozen
class Annotations:
    """Hints about a content block's audience and importance."""

    audience: tuple[Role, ...] | None = None
    priority: float | None = None
    last_modified: str | None = None


@attrs.frozen
class TextContent:
    """A text block."""

    type: ClassVar[str] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class ImageContent:
    """An image block; ``data`` is the decoded image."""

    type: ClassVar[str] = "image"
    data: bytes
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class AudioContent:
    """An audio block; ``data`` is the decoded audio."""

    type: ClassVar[str] = "audio"
    data: bytes
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class ResourceLink:
    """A link to a resource the client may read (not necessarily in ``resources/list``)."""

    type: ClassVar[str] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class TextResourceContents:
    """A text resource's contents."""

    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class BlobResourceContents:
    """A binary resource's contents; ``blob`` is decoded."""

    uri: str
    blob: bytes
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


ResourceContents = TextResourceContents | BlobResourceContents


@attrs.frozen
class EmbeddedResource:
    """A resource embedded in a tool result, prompt or sampling message."""

    type: ClassVar[str] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen
class UnknownContent:
    """A content block of a kind this SDK does not model (``tool_use``, future kinds).

    ``raw`` is the block exactly as received; it is sent back unchanged.
    """

    kind: str
    raw: dict[str, Any] = attrs.field(factory=dict, hash=False)

    @property
    def type(self) -> str:
        """The block's wire ``type`` tag."""
        return self.kind


ContentBlock = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent
)
