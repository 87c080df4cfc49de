"""Message content: task states, roles, parts and messages (part of :mod:`a2a_sync.a2a.types`)."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from typing import Any, Final

import attrs

from ..errors import ConfigurationError
from .card_types import markdown_text

# --- enums ------------------------------------------------------------------------------------


class TaskState(str, enum.Enum):
    """Lifecycle state of a task.

    Terminal states (:attr:`is_terminal`) never change again. Interrupted states
    (:attr:`is_interrupted`) wait for the client: more input or authentication.
    A value this package does not know is a :class:`~a2a_sync.errors.ProtocolError` when
    read from the wire, never a silent fallback; ``unknown`` is the protocol's own
    "unspecified" value.
    """

    submitted = "submitted"
    working = "working"
    input_required = "input_required"
    auth_required = "auth_required"
    completed = "completed"
    canceled = "canceled"
    failed = "failed"
    rejected = "rejected"
    unknown = "unknown"

    # Enum's own __hash__ is a Python call hashing the name; the name is the value, so
    # str's C hash gives the same number at C speed (state sets and tables, every load).
    __hash__ = str.__hash__

    def __str__(self) -> str:
        return self.value

    @property
    def is_terminal(self) -> bool:
        """True for completed, canceled, failed and rejected."""
        return self in _TERMINAL_STATES

    @property
    def is_interrupted(self) -> bool:
        """True for input_required and auth_required (the task waits for the client)."""
        return self in _INTERRUPTED_STATES


_TERMINAL_STATES = frozenset(
    {TaskState.completed, TaskState.canceled, TaskState.failed, TaskState.rejected}
)
_INTERRUPTED_STATES = frozenset({TaskState.input_required, TaskState.auth_required})


class Role(str, enum.Enum):
    """Who sent a message: the client (``user``) or the remote agent (``agent``)."""

    user = "user"
    agent = "agent"

    __hash__ = str.__hash__  # as TaskState's: the same number, at C speed

    def __str__(self) -> str:
        return self.value


# --- content ----------------------------------------------------------------------------------


def _bytes_repr(value: bytes | None) -> str:
    return "None" if value is None else f"<{len(value)} bytes>"


@attrs.frozen(kw_only=True)
class Part:
    """One piece of content: exactly one of ``text``, ``raw`` (bytes), ``url`` or ``data``.

    Build parts with the named constructors (:meth:`from_text`, :meth:`file_bytes`,
    :meth:`file_url`, :meth:`from_data`); :attr:`kind` tells which content a part holds.
    ``media_type`` and ``filename`` describe file content and may accompany any part.

    Attributes:
        text: Plain text.
        raw: Inline file content (base64 on the wire).
        url: A link to file content.
        data: Structured JSON content (1.0 allows any JSON value; 0.3 objects only).
        media_type: MIME type of the content, e.g. ``"image/png"``.
        filename: Suggested file name.
        metadata: Free-form extension data.

    Raises:
        ConfigurationError: Not exactly one content attribute is set.
    """

    text: str | None = None
    raw: bytes | None = attrs.field(default=None, repr=_bytes_repr)
    url: str | None = None
    data: Any = None
    media_type: str | None = None
    filename: str | None = None
    metadata: dict[str, Any] | None = None

    def __attrs_post_init__(self) -> None:
        count = (
            (self.text is not None)
            + (self.raw is not None)
            + (self.url is not None)
            + (self.data is not None)
        )
        if count != 1:
            raise ConfigurationError(
                f"a Part needs exactly one of text, raw, url or data (got {count})"
            )

    @property
    def kind(self) -> str:
        """Which content the part holds: ``"text"``, ``"raw"``, ``"url"`` or ``"data"``."""
        if self.text is not None:
            return "text"
        if self.raw is not None:
            return "raw"
        if self.url is not None:
            return "url"
        return "data"

    @classmethod
    def from_text(cls, text: str, *, metadata: dict[str, Any] | None = None) -> Part:
        """A text part."""
        return cls(text=text, metadata=metadata)

    @classmethod
    def file_bytes(
        cls,
        data: bytes,
        *,
        media_type: str | None = None,
        filename: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Part:
        """A file sent inline (base64-encoded on the wire)."""
        return cls(raw=bytes(data), media_type=media_type, filename=filename, metadata=metadata)

    @classmethod
    def file_url(
        cls,
        url: str,
        *,
        media_type: str | None = None,
        filename: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Part:
        """A file referenced by URL."""
        return cls(url=url, media_type=media_type, filename=filename, metadata=metadata)

    @classmethod
    def from_data(
        cls,
        data: Any,
        *,
        media_type: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Part:
        """A structured-data part (any JSON value except ``null``; 0.3 peers expect an object)."""
        return cls(data=data, media_type=media_type, metadata=metadata)


def to_parts(content: Sequence[str | Part]) -> list[Part]:
    parts = [Part(text=item) if isinstance(item, str) else item for item in content]
    if not parts:
        raise ConfigurationError("a message needs at least one part")
    return parts


#: Characters of text a ``repr`` shows before it elides the rest.
REPR_TEXT: Final = 32


def short_text(text: str, limit: int = REPR_TEXT) -> str:
    """``text`` quoted for a ``repr``, cut to ``limit`` characters with an ellipsis."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return repr(text)


def join_text(parts: Sequence[Part], separator: str) -> str:
    return separator.join(p.text for p in parts if p.text is not None)


@attrs.frozen(kw_only=True)
class Message:
    """One turn of conversation between the client and an agent.

    Build with :meth:`user` / :meth:`agent`, which generate a ``message_id``.

    Attributes:
        role: Who sent it.
        parts: The content (at least one part).
        message_id: Sender-chosen unique id (a UUID from the named constructors).
        context_id: Conversation the message belongs to.
        task_id: Task the message continues (answering ``input_required``).
        reference_task_ids: Other tasks this message refers to.
        extensions: URIs of the A2A extensions the message uses.
        metadata: Free-form extension data.
    """

    role: Role
    parts: list[Part]
    message_id: str
    context_id: str | None = None
    task_id: str | None = None
    reference_task_ids: list[str] = attrs.field(factory=list)
    extensions: list[str] = attrs.field(factory=list)
    metadata: dict[str, Any] | None = None

    @classmethod
    def user(
        cls,
        *content: str | Part,
        task_id: str | None = None,
        context_id: str | None = None,
        message_id: str | None = None,
        reference_task_ids: Sequence[str] = (),
        extensions: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        """A message from the client. Strings become text parts.

        Args:
            *content: Text and/or :class:`Part` objects, in order.
            task_id: Continue this task (e.g. answering ``input_required``).
            context_id: Continue this conversation.
            message_id: Explicit id; a fresh UUID4 by default.
            reference_task_ids: Other tasks the message refers to.
            extensions: Extension URIs the message uses.
            metadata: Free-form extension data.

        Raises:
            ConfigurationError: No content was given.
        """
        return cls._build(
            Role.user,
            content,
            task_id=task_id,
            context_id=context_id,
            message_id=message_id,
            reference_task_ids=reference_task_ids,
            extensions=extensions,
            metadata=metadata,
        )

    @classmethod
    def agent(
        cls,
        *content: str | Part,
        task_id: str | None = None,
        context_id: str | None = None,
        message_id: str | None = None,
        reference_task_ids: Sequence[str] = (),
        extensions: Sequence[str] = (),
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        """A message from the agent; same arguments as :meth:`user`."""
        return cls._build(
            Role.agent,
            content,
            task_id=task_id,
            context_id=context_id,
            message_id=message_id,
            reference_task_ids=reference_task_ids,
            extensions=extensions,
            metadata=metadata,
        )

    @classmethod
    def _build(
        cls,
        role: Role,
        content: Sequence[str | Part],
        *,
        task_id: str | None,
        context_id: str | None,
        message_id: str | None,
        reference_task_ids: Sequence[str],
        extensions: Sequence[str],
        metadata: dict[str, Any] | None,
    ) -> Message:
        return cls(
            role=role,
            parts=to_parts(content),
            message_id=message_id if message_id is not None else str(uuid.uuid4()),
            context_id=context_id,
            task_id=task_id,
            reference_task_ids=list(reference_task_ids),
            extensions=list(extensions),
            metadata=metadata,
        )

    @property
    def text(self) -> str:
        """The text parts joined with newlines (``""`` when there are none)."""
        return join_text(self.parts, "\n")

    def __repr__(self) -> str:
        task = f" task={self.task_id}" if self.task_id else ""
        return f"<Message {self.role.value}{task} {short_text(self.text)}>"

    def _repr_markdown_(self) -> str:
        return f"**{self.role.value}:** {markdown_text(self.text)}"
