"""Tasks and their updates: status, artifacts, the task snapshot and stream events
(part of :mod:`a2a_sync.a2a.types`)."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any, TypeAlias

import attrs

from .card_types import markdown_text
from .content import Message, Part, TaskState, join_text, short_text, to_parts


def short_id(value: str) -> str:
    """A long id (a UUID) cut to its first 8 characters for a ``repr``."""
    return value if len(value) <= 12 else value[:8] + "…"


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
            parts=to_parts(content),
            name=name,
            description=description,
            metadata=metadata,
        )

    @property
    def text(self) -> str:
        """The text parts concatenated as-is (streamed chunks join seamlessly)."""
        return join_text(self.parts, "")

    def __repr__(self) -> str:
        name = f" {self.name!r}" if self.name else ""
        return f"<Artifact {self.artifact_id}{name} {short_text(self.text)}>"


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

    def __repr__(self) -> str:
        return f"<Task {self.id} {self.status.state.value} {short_text(self.text)}>"

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

    @property
    def state(self) -> TaskState:
        """Shortcut for ``event.status.state``."""
        return self.status.state

    @property
    def ends_stream(self) -> bool:
        """True when no more events follow: the state is terminal or interrupted (what
        1.0 signals by closing the stream), or a 0.3 agent set ``final``."""
        return self.final or self.state.is_terminal or self.state.is_interrupted

    @property
    def text(self) -> str:
        """The status message's text (a question, a failure reason; ``""`` if none)."""
        return self.status.message.text if self.status.message is not None else ""

    def __repr__(self) -> str:
        state = self.status.state
        meaning = (
            " (terminal)" if state.is_terminal else " (interrupted)" if state.is_interrupted else ""
        )
        return (
            f"<TaskStatusUpdateEvent task={self.task_id} {state.value}{meaning} "
            f"{short_text(self.text)}>"
        )

    def _repr_markdown_(self) -> str:
        head = f"**Task** {markdown_text(self.task_id)} → *{self.status.state.value}*"
        return f"{head}: {markdown_text(self.text)}" if self.text else head


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

    @property
    def text(self) -> str:
        """The text of this chunk (with ``append``, what it adds to the artifact)."""
        return self.artifact.text

    def __repr__(self) -> str:
        flags = (" append" if self.append else "") + (" last" if self.last_chunk else "")
        return (
            f"<TaskArtifactUpdateEvent task={self.task_id} "
            f"{short_id(self.artifact.artifact_id)}{flags} {short_text(self.text)}"
            ">"
        )

    def _repr_markdown_(self) -> str:
        return markdown_text(self.text) if self.text else f"*artifact {self.artifact.artifact_id}*"


#: One item of a message stream or task subscription.
StreamEvent: TypeAlias = Task | Message | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
#: What sending a message returns: a task, or a direct reply message.
SendResult: TypeAlias = Task | Message
