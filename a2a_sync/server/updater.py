"""The task updater: publishes one request's events (see :mod:`a2a_sync.server.executor`
for the first-event rule and cancellation it enforces)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..a2a.types import (
    Artifact,
    Message,
    Part,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ..errors import InvalidAgentResponse, TaskCanceled
from ._ids import new_uuid4
from .context import RequestContext

__all__ = ["Content", "MessageArg", "TaskUpdater"]

Content = str | Part | Sequence[str | Part]
MessageArg = str | Message | None


class TaskUpdater:
    """Publishes one request's events: the task, its status, artifacts, or one reply.

    Thread-safe: an executor may publish from helper threads (chunks from a pool, say);
    events keep the order in which the calls happened.

    Args:
        context: The request.
        publish: Delivers one checked event (the server's store and streams).
    """

    def __init__(self, context: RequestContext, publish: Callable[[StreamEvent], None]) -> None:
        self.context = context
        self.task_id = context.task_id
        self.context_id = context.context_id
        self._publish = publish
        self._lock = threading.RLock()
        # "task" once the task exists, "message" after a direct reply, None before either.
        self._mode: str | None = "task" if context.current_task is not None else None
        self._final_state: TaskState | None = None

    # -- status ------------------------------------------------------------------------------

    def submit(self, message: MessageArg = None) -> None:
        """Create the task (``submitted``). Optional: the other methods do it first."""
        with self._lock:
            if self._mode is None:
                self._create(message)
            else:
                self.update_status(TaskState.submitted, message)

    def start_work(self, message: MessageArg = None) -> None:
        """Mark the task ``working`` (optionally with a progress message)."""
        self.update_status(TaskState.working, message)

    def complete(self, message: MessageArg = None) -> None:
        """Mark the task ``completed``; a final message may go with it."""
        self.update_status(TaskState.completed, message)

    def fail(self, message: MessageArg = None) -> None:
        """Mark the task ``failed``; say why in ``message``."""
        self.update_status(TaskState.failed, message)

    def reject(self, message: MessageArg = None) -> None:
        """Mark the task ``rejected`` (the agent will not do it)."""
        self.update_status(TaskState.rejected, message)

    def cancel(self, message: MessageArg = None) -> None:
        """Mark the task ``canceled``."""
        self.update_status(TaskState.canceled, message)

    def require_input(self, message: MessageArg = None) -> None:
        """Ask the client for more input (``input_required``): ``message`` is the question.

        The stream ends; the client answers with a message naming this task, and the
        executor runs again with :attr:`RequestContext.current_task` set.
        """
        self.update_status(TaskState.input_required, message)

    def require_auth(self, message: MessageArg = None) -> None:
        """Ask the client to authenticate out of band (``auth_required``)."""
        self.update_status(TaskState.auth_required, message)

    def update_status(
        self,
        state: TaskState,
        message: MessageArg = None,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Publish a status change (creating the task first if needed)."""
        with self._lock:
            self._ensure_task()
            self._emit(
                TaskStatusUpdateEvent(
                    task_id=self.task_id,
                    context_id=self.context_id,
                    status=TaskStatus.now(state, self._agent_message(message)),
                    metadata=metadata,
                )
            )

    # -- artifacts ---------------------------------------------------------------------------

    def add_artifact(
        self,
        content: Content,
        *,
        artifact_id: str | None = None,
        name: str | None = None,
        description: str | None = None,
        append: bool = False,
        last_chunk: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Publish an artifact, or one chunk of it.

        Stream an artifact in pieces by passing the returned id back with ``append``::

            aid = updater.add_artifact("Hel", name="answer")
            updater.add_artifact("lo", artifact_id=aid, append=True, last_chunk=True)

        Args:
            content: Text and/or parts.
            artifact_id: The artifact's id (a fresh one by default).
            name: Human-readable name.
            description: Human-readable description.
            append: Add the parts to the artifact with this id (else create/replace it).
            last_chunk: This is the artifact's last chunk.
            metadata: Free-form data.

        Returns:
            The artifact id.
        """
        items: Sequence[str | Part] = (content,) if isinstance(content, (str, Part)) else content
        artifact = Artifact.create(
            *items,
            artifact_id=artifact_id if artifact_id is not None else new_uuid4(),
            name=name,
            description=description,
            metadata=metadata,
        )
        with self._lock:
            self._ensure_task()
            self._emit(
                TaskArtifactUpdateEvent(
                    task_id=self.task_id,
                    context_id=self.context_id,
                    artifact=artifact,
                    append=append,
                    last_chunk=last_chunk,
                )
            )
        return artifact.artifact_id

    # -- direct reply ------------------------------------------------------------------------

    def reply(self, *content: str | Part | Message) -> Message:
        """Answer with one direct message instead of a task (nothing may follow it).

        Raises:
            InvalidAgentResponse: The task was created already (use ``complete(message)``
                or ``require_input(message)`` to talk within a task).
        """
        if len(content) == 1 and isinstance(content[0], Message):
            message = content[0]
        else:
            message = self.new_agent_message(*(c for c in content if not isinstance(c, Message)))
        self.publish(message)
        return message

    def new_agent_message(
        self, *content: str | Part, metadata: dict[str, Any] | None = None
    ) -> Message:
        """An agent message bound to this task and conversation."""
        return Message.agent(
            *content,
            task_id=self.task_id,
            context_id=self.context_id,
            message_id=new_uuid4(),
            metadata=metadata,
        )

    # -- raw events --------------------------------------------------------------------------

    def publish(self, event: StreamEvent) -> None:
        """Publish an event built by hand, checking the protocol's rules.

        Raises:
            InvalidAgentResponse: The event breaks the first-event rule, names another
                task, or follows the task's end or a direct reply.
            TaskCanceled: The task was canceled (stop working).
        """
        with self._lock:
            if self._mode is None:
                if isinstance(event, Task):
                    self._check_ids(event.id, event.context_id)
                    self._mode = "task"
                    self._publish(event)
                    return
                if isinstance(event, Message):
                    self._mode = "message"
                    self._publish(event)
                    return
                raise InvalidAgentResponse(
                    f"the first event of a new task must be a Task (or one direct Message), "
                    f"not a {type(event).__name__}: call updater.submit() or "
                    "updater.start_work() first"
                )
            self._emit(event)

    # -- internals ---------------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """True once the task reached a terminal state or a direct reply was sent."""
        return self._mode == "message" or self._final_state is not None

    def _ensure_task(self) -> None:
        if self._mode is None:
            self._create(None)

    def _create(self, message: MessageArg) -> None:
        task = Task(
            id=self.task_id,
            context_id=self.context_id,
            status=TaskStatus.now(TaskState.submitted, self._agent_message(message)),
            history=[self.context.message],
        )
        self._mode = "task"
        self._publish(task)

    def _emit(self, event: StreamEvent) -> None:
        if self._mode == "message":
            raise InvalidAgentResponse("a direct Message reply must be the only event")
        if self._final_state is not None:
            if self._final_state is TaskState.canceled and self.context.is_cancelled:
                raise TaskCanceled("the task was canceled", task_id=self.task_id)
            raise InvalidAgentResponse(
                f"the task is already {self._final_state.value}; no event may follow"
            )
        if isinstance(event, Task):
            raise InvalidAgentResponse(
                "the task exists already: publish status or artifact updates, not a Task"
            )
        if isinstance(event, Message):
            raise InvalidAgentResponse(
                "a direct Message cannot follow task events: send it with the status "
                "(complete(message), require_input(message) ...)"
            )
        self._check_ids(event.task_id, event.context_id)
        self._publish(event)
        if isinstance(event, TaskStatusUpdateEvent) and event.status.state.is_terminal:
            self._final_state = event.status.state

    def _check_ids(self, task_id: str, context_id: str | None) -> None:
        if task_id != self.task_id or (context_id is not None and context_id != self.context_id):
            raise InvalidAgentResponse(
                f"event for task {task_id!r} / context {context_id!r} published in task "
                f"{self.task_id!r} / context {self.context_id!r}"
            )

    def _agent_message(self, message: MessageArg) -> Message | None:
        if message is None or isinstance(message, Message):
            return message
        return self.new_agent_message(message)

    def _mark_final(self, state: TaskState) -> None:
        """The server finished the task (a cancel it wrote itself)."""
        with self._lock:
            self._final_state = state
            if self._mode is None:
                self._mode = "task"

    def __repr__(self) -> str:
        return f"<TaskUpdater task={self.task_id!r}>"
