"""MCP client-side features: roots, sampling, elicitation, log messages and progress
(what server→client requests and notifications carry). Part of the data model
re-exported by :mod:`a2a_sync.mcp.types`."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ._content import ContentBlock, Role, TextContent

__all__ = [
    "LOGGING_LEVELS",
    "CreateMessageRequest",
    "CreateMessageResult",
    "ElicitRequest",
    "ElicitResult",
    "LoggingLevel",
    "LoggingMessage",
    "Progress",
    "Root",
    "SamplingMessage",
]

#: RFC 5424 severities, least to most severe.
LoggingLevel = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
LOGGING_LEVELS: tuple[str, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


# --- client-side features ----------------------------------------------------------------------


@attrs.frozen
class Root:
    """A filesystem root the client exposes (``file://`` URI)."""

    uri: str
    name: str | None = None


@attrs.frozen
class SamplingMessage:
    """One message of a sampling conversation."""

    role: Role
    content: ContentBlock


@attrs.frozen
class CreateMessageRequest:
    """A server's ``sampling/createMessage`` request, handed to the sampling callback.

    ``tools``, ``tool_choice``, ``model_preferences`` and ``metadata`` are kept as the
    plain JSON the server sent.
    """

    messages: tuple[SamplingMessage, ...]
    max_tokens: int
    system_prompt: str | None = None
    include_context: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] | None = None
    metadata: dict[str, Any] | None = attrs.field(default=None, hash=False)
    model_preferences: dict[str, Any] | None = attrs.field(default=None, hash=False)
    tools: list[dict[str, Any]] | None = attrs.field(default=None, hash=False)
    tool_choice: dict[str, Any] | None = attrs.field(default=None, hash=False)


@attrs.frozen
class CreateMessageResult:
    """What the sampling callback returns: the model's reply."""

    content: ContentBlock
    model: str
    role: Role = "assistant"
    stop_reason: str | None = None

    @classmethod
    def from_text(
        cls, text: str, *, model: str, stop_reason: str | None = "endTurn"
    ) -> CreateMessageResult:
        """Build a plain-text assistant reply."""
        return cls(content=TextContent(text=text), model=model, stop_reason=stop_reason)


@attrs.frozen
class ElicitRequest:
    """A server's ``elicitation/create`` request, handed to the elicitation callback.

    ``mode="form"``: ask the user for the fields of ``requested_schema`` (a flat object
    schema). ``mode="url"``: send the user to ``url`` (out-of-band interaction); answer
    ``accept`` once they agreed to go, without content.
    """

    message: str
    mode: Literal["form", "url"] = "form"
    requested_schema: dict[str, Any] | None = attrs.field(default=None, hash=False)
    url: str | None = None
    elicitation_id: str | None = None


@attrs.frozen
class ElicitResult:
    """What the elicitation callback returns."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = attrs.field(default=None, hash=False)

    @classmethod
    def accept(cls, content: dict[str, Any] | None = None) -> ElicitResult:
        """The user accepted (form mode: with the filled-in ``content``)."""
        return cls(action="accept", content=content)

    @classmethod
    def decline(cls) -> ElicitResult:
        """The user explicitly said no."""
        return cls(action="decline")

    @classmethod
    def cancel(cls) -> ElicitResult:
        """The user dismissed the request without choosing."""
        return cls(action="cancel")


@attrs.frozen
class LoggingMessage:
    """A ``notifications/message`` log record from the server."""

    level: LoggingLevel
    data: Any = attrs.field(default=None, hash=False)
    logger: str | None = None


@attrs.frozen
class Progress:
    """A ``notifications/progress`` update for one request."""

    progress: float
    total: float | None = None
    message: str | None = None
