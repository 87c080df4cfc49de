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

import enum
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, TypeAlias

import attrs

from ..errors import ConfigurationError
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
    markdown_text,
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


def _to_parts(content: Sequence[str | Part]) -> list[Part]:
    parts = [Part(text=item) if isinstance(item, str) else item for item in content]
    if not parts:
        raise ConfigurationError("a message needs at least one part")
    return parts


def _join_text(parts: Sequence[Part], separator: str) -> str:
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
            parts=_to_parts(content),
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
        return _join_text(self.parts, "\n")

    def _repr_markdown_(self) -> str:
        return f"**{self.role.value}:** {markdown_text(self.text)}"


@attrs.frozen(kw_only=True)
class TaskStatus:
    """A task's state, with the agent's optional message about it.

    Attributes:
        state: The lifecycle state.
        message: What the agent says about the state (e.g. the question for
            ``input_required``, the reason for ``failed``).
        timestamp: When the state was entered (timezone-aware, UTC on the wire).
    """

    state: TaskState
    message: Message | None = None
    timestamp: datetime | None = None

    @classmethod
    def now(cls, state: TaskState, message: Message | None = None) -> TaskStatus:
        """A status stamped with the current UTC time."""
        return cls(state=state, message=message, timestamp=datetime.now(timezone.utc))


@attrs.frozen(kw_only=True)
class Artifact:
    """An output of a task (a document, an answer, an image...), made of parts.

    Attributes:
        artifact_id: Id unique within the task; streamed chunks share it.
        parts: The content.
        name: Human-readable name.
        description: Human-readable description.
        extensions: URIs of the A2A extensions used.
        metadata: Free-form extension data.
    """

    artifact_id: str
    parts: list[Part] = attrs.field(factory=list)
    name: str | None = None
    description: str | None = None
    extensions: list[str] = attrs.field(factory=list)
    metadata: dict[str, Any] | None = None

    @classmethod
    def create(
        cls,
        *content: str | Part,
        name: str | None = None,
        description: str | None = None,
        artifact_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Artifact:
        """An artifact from text and/or parts, with a fresh UUID4 id by default."""
        return cls(
            artifact_id=artifact_id if artifact_id is not None else str(uuid.uuid4()),
            parts=_to_parts(content),
            name=name,
            description=description,
            metadata=metadata,
        )

    @property
    def text(self) -> str:
        """The text parts concatenated as-is (streamed chunks join seamlessly)."""
        return _join_text(self.parts, "")


@attrs.frozen(kw_only=True)
class Task:
    """A unit of work the agent runs, with its status, outputs and history.

    Frozen so a snapshot can be handed across threads; a newer snapshot is a new object
    (``attrs.evolve(task, status=...)``).

    Attributes:
        id: Server-assigned task id.
        status: Current status.
        context_id: Conversation the task belongs to.
        artifacts: Outputs produced so far.
        history: Messages exchanged (may be trimmed by ``history_length``).
        metadata: Free-form extension data.
    """

    id: str
    status: TaskStatus
    context_id: str | None = None
    artifacts: list[Artifact] = attrs.field(factory=list)
    history: list[Message] = attrs.field(factory=list)
    metadata: dict[str, Any] | None = None

    @property
    def state(self) -> TaskState:
        """Shortcut for ``task.status.state``."""
        return self.status.state

    @property
    def is_terminal(self) -> bool:
        """True once the task reached completed, canceled, failed or rejected."""
        return self.status.state.is_terminal

    @property
    def is_interrupted(self) -> bool:
        """True while the task waits for input or authentication."""
        return self.status.state.is_interrupted

    @property
    def text(self) -> str:
        """The answer as text.

        The text of every artifact (newline-separated); when no artifact has text, the
        text of the status message (e.g. the agent's question or failure reason).
        """
        texts = [t for t in (a.text for a in self.artifacts) if t]
        if texts:
            return "\n".join(texts)
        if self.status.message is not None:
            return self.status.message.text
        return ""

    def _repr_markdown_(self) -> str:
        head = f"**Task** {markdown_text(self.id)} — *{self.status.state.value}*"
        text = self.text
        return f"{head}\n\n{markdown_text(text)}" if text else head


@attrs.frozen(kw_only=True)
class TaskStatusUpdateEvent:
    """Streamed: the task's status changed.

    Attributes:
        task_id: The task.
        context_id: Its conversation.
        status: The new status.
        final: 0.3 only: the agent marked this as the stream's last event. 1.0 agents
            end a stream by closing it; the codec sets the flag when writing 0.3 for
            terminal and interrupted states.
        metadata: Free-form extension data.
    """

    task_id: str
    context_id: str
    status: TaskStatus
    final: bool = False
    metadata: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class TaskArtifactUpdateEvent:
    """Streamed: an artifact was produced or extended.

    Attributes:
        task_id: The task.
        context_id: Its conversation.
        artifact: The artifact, or the chunk to add to it.
        append: The parts extend the artifact with the same id (else they replace it).
        last_chunk: This is the artifact's final chunk.
        metadata: Free-form extension data.
    """

    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] | None = None


#: One item of a message stream or task subscription.
StreamEvent: TypeAlias = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
#: What sending a message returns: a task, or a direct reply message.
SendResult: TypeAlias = Task | Message


# --- push notifications and request parameters -------------------------------------------------


@attrs.frozen(kw_only=True)
class AuthenticationInfo:
    """How the agent authenticates its webhook calls: ``Authorization: {scheme} {credentials}``.

    Attributes:
        scheme: HTTP auth scheme, e.g. ``"Bearer"`` (0.3's ``schemes`` list: the first).
        credentials: The credentials. Never shown in reprs.
    """

    scheme: str
    credentials: str | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class PushNotificationConfig:
    """Where and how an agent posts task updates (a webhook), optionally bound to a task.

    Attributes:
        url: The webhook URL.
        id: Config id (several configs per task are allowed).
        task_id: The task it belongs to (set when read back from an agent).
        token: Opaque token the agent echoes so the receiver can authenticate the
            call. Never shown in reprs.
        authentication: Credentials the agent sends with each call.
        tenant: 1.0 multi-tenancy selector.
    """

    url: str
    id: str | None = None
    task_id: str | None = None
    token: str | None = attrs.field(default=None, repr=False)
    authentication: AuthenticationInfo | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class SendMessageConfiguration:
    """Options for sending a message.

    Attributes:
        accepted_output_modes: MIME types the client accepts in the answer.
        history_length: Most recent messages to include in the returned task
            (``None``: agent default; ``0``: none).
        push_notification_config: Webhook to register for this task.
        return_immediately: Return at once instead of waiting for a terminal or
            interrupted state (0.3: ``blocking: false``).
    """

    accepted_output_modes: list[str] = attrs.field(factory=list)
    history_length: int | None = None
    push_notification_config: PushNotificationConfig | None = None
    return_immediately: bool = False


@attrs.frozen(kw_only=True)
class SendMessageParams:
    """Parameters of SendMessage / SendStreamingMessage (0.3: message/send, message/stream)."""

    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class GetTaskParams:
    """Parameters of GetTask (0.3: tasks/get)."""

    id: str
    history_length: int | None = None
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class TaskIdParams:
    """Parameters of CancelTask and SubscribeToTask (0.3: tasks/cancel, tasks/resubscribe)."""

    id: str
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListTasksParams:
    """Parameters of ListTasks (1.0 only).

    Attributes:
        context_id: Only tasks of this conversation.
        status: Only tasks in this state.
        page_size: Tasks per page (agent default and cap apply).
        page_token: ``next_page_token`` of the previous page.
        history_length: Messages of history per task.
        status_timestamp_after: Only tasks whose status changed after this instant.
        include_artifacts: Include artifacts in the listed tasks.
        tenant: 1.0 multi-tenancy selector.
    """

    context_id: str | None = None
    status: TaskState | None = None
    page_size: int | None = None
    page_token: str | None = None
    history_length: int | None = None
    status_timestamp_after: datetime | None = None
    include_artifacts: bool | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListTasksResult:
    """One page of ListTasks; ``next_page_token`` is ``""`` on the last page."""

    tasks: list[Task] = attrs.field(factory=list)
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


@attrs.frozen(kw_only=True)
class PushConfigParams:
    """Names one push config of a task (get / delete). 0.3 get may omit ``config_id``."""

    task_id: str
    config_id: str | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListPushConfigsParams:
    """Parameters of ListTaskPushNotificationConfigs (0.3 ignores paging)."""

    task_id: str
    page_size: int | None = None
    page_token: str | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListPushConfigsResult:
    """The push configs of a task; 0.3 has no paging (``next_page_token`` stays ``""``)."""

    configs: list[PushNotificationConfig] = attrs.field(factory=list)
    next_page_token: str = ""
