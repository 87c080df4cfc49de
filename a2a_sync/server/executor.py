"""The agent-author API: an executor, the context of one request, and the task updater.

An agent is an :class:`AgentExecutor` (or a plain function with the same signature as
:meth:`AgentExecutor.execute`). The server calls it on a worker thread for every message
it receives, with a :class:`RequestContext` (the message, the task, who is calling) and
a :class:`TaskUpdater` that publishes what the agent does::

    class Echo(AgentExecutor):
        def execute(self, context, updater):
            updater.start_work()
            updater.add_artifact(f"echo: {context.text}", name="echo")
            updater.complete()

Everything blocks; nothing is async. Publishing is synchronous: when a method of the
updater returns, the event is in the task store and on its way to every stream.

**The first-event rule** (A2A §3.1.2): a request is answered either by exactly one
direct :class:`~a2a_sync.types.Message` (:meth:`TaskUpdater.reply`) or by a task and its
updates. The updater creates the task (``submitted``, with the user's message in its
history) before the first update of a new task, so the helpers cannot break the rule;
events published raw (:meth:`TaskUpdater.publish`) are checked and a wrong one raises
:class:`~a2a_sync.errors.InvalidAgentResponse` naming the rule, as does an event after
the task finished or after a direct reply.

**Cancellation** is cooperative: CancelTask calls :meth:`AgentExecutor.cancel` (default:
mark the task canceled) and sets :attr:`RequestContext.is_cancelled`. A long-running
``execute`` should check it (or :meth:`RequestContext.wait_cancelled` instead of
sleeping); once the task is canceled every further update raises
:class:`~a2a_sync.errors.TaskCanceled`, which ends ``execute`` quietly.
"""

from __future__ import annotations

import abc
import threading
import uuid
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import attrs

from ..a2a.types import (
    Artifact,
    Message,
    Part,
    SendMessageConfiguration,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ..errors import InvalidAgentResponse, TaskCanceled
from .auth import ANONYMOUS, Principal
from .context import CallContext

__all__ = ["AgentExecutor", "ExecuteFunction", "FunctionExecutor", "RequestContext", "TaskUpdater"]

Content = str | Part | Sequence[str | Part]
MessageArg = str | Message | None


@attrs.frozen(kw_only=True)
class RequestContext:
    """Everything an executor knows about the message it is handling.

    Immutable (the cancellation flag aside) and safe to share between threads.

    Attributes:
        message: The user's message.
        task_id: The task this message runs in (new tasks get a fresh id).
        context_id: The conversation (the message's, the task's, or a fresh one).
        current_task: The task as it was before this message (``None`` for a new task;
            set when the message answers ``input_required``).
        configuration: The client's send options.
        metadata: The request's metadata.
        principal: Who sent it.
        requested_extensions: Extension URIs the client asked for.
        call: The call that delivered the message.
    """

    message: Message
    task_id: str
    context_id: str
    current_task: Task | None = None
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    principal: Principal = ANONYMOUS
    requested_extensions: frozenset[str] = frozenset()
    call: CallContext = attrs.field(factory=CallContext, repr=False)
    _cancelled: threading.Event = attrs.field(
        factory=threading.Event, repr=False, eq=False, alias="_cancelled"
    )

    @property
    def text(self) -> str:
        """The text parts of the user's message, joined with newlines."""
        return self.message.text

    @property
    def is_cancelled(self) -> bool:
        """True once a client asked to cancel the task."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on cancellation.

        Returns:
            True if the task was cancelled.
        """
        return self._cancelled.wait(timeout)

    def _cancel(self) -> None:
        self._cancelled.set()


class AgentExecutor(abc.ABC):
    """Base class of agents. Subclass it and implement :meth:`execute`.

    One executor instance serves every request, from several threads at once: keep
    per-request state on the stack, and guard shared state yourself.

    Attributes:
        run_inline: Set to True (on the class) for an agent whose ``execute`` settles the
            task and returns quickly, without waiting on models, tools or the network.
            A blocking ``SendMessage`` then runs it on the request's own thread instead
            of handing it to a worker thread and waiting (two thread switches saved; it
            still counts toward ``workers`` and falls back to a worker thread when none
            is free). Cancellation is unchanged. The blocking timeout cannot cut such a
            run short (the answer comes when ``execute`` returns), so leave it False
            for anything that may wait.
    """

    run_inline: ClassVar[bool] = False

    @abc.abstractmethod
    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Handle one message: publish the task's progress and outcome via ``updater``.

        Runs on a worker thread. Returning ends this request's stream (clients waiting
        on a blocking send get the task as it is then). Raising fails the task: an
        :class:`~a2a_sync.errors.RPCError` reaches the client with its code and
        message, anything else as "Internal error" without details (it is logged).
        """

    def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Stop the task. The default marks it canceled; ``execute`` notices through
        :attr:`RequestContext.is_cancelled`. Override to also stop outside work."""
        updater.cancel()


#: The function form of an executor: ``execute(context, updater)``.
ExecuteFunction = Callable[[RequestContext, "TaskUpdater"], None]


class FunctionExecutor(AgentExecutor):
    """An executor made from a plain function (what passing a function to the app does)."""

    def __init__(self, execute: ExecuteFunction) -> None:
        self._execute = execute

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        self._execute(context, updater)

    def __repr__(self) -> str:
        return f"FunctionExecutor({getattr(self._execute, '__qualname__', self._execute)!r})"


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
            artifact_id=artifact_id if artifact_id is not None else str(uuid.uuid4()),
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
            *content, task_id=self.task_id, context_id=self.context_id, metadata=metadata
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
