"""Request handlers: the A2A operations over a task store and an agent executor.

The WSGI application decodes each call into an :class:`~a2a_sync.a2a.methods.Operation`
and a parameter model, then asks a handler:

* :class:`RequestHandler` — ``dispatch(operation, params, call)`` returns the result
  model of a unary operation (Task, Message, ListTasksResult, PushNotificationConfig ...).
* :class:`StreamingRequestHandler` — ``dispatch_stream(operation, params, call)`` returns
  an iterator of stream events for SendStreamingMessage and SubscribeToTask.

:class:`DefaultRequestHandler` implements both over a :class:`TaskStore` and an
:class:`~a2a_sync.server.executor.AgentExecutor`. Write your own handler (both methods,
plain Python) to produce events yourself; raise :class:`~a2a_sync.errors.RPCError`
subclasses for protocol errors.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Final, Protocol

import attrs

from ..a2a.methods import Operation
from ..a2a.types import (
    AgentCard,
    GetTaskParams,
    ListPushConfigsParams,
    ListPushConfigsResult,
    ListTasksParams,
    ListTasksResult,
    Message,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageParams,
    StreamEvent,
    Task,
    TaskIdParams,
)
from ..errors import (
    ExtendedAgentCardNotConfigured,
    InvalidParams,
    MethodNotFound,
    TaskNotFound,
    UnsupportedOperation,
)
from ._intake import MessageIntake
from ._push_configs import PushNotifier, Webhooks
from .cancel import REMOTE_CANCEL_TIMEOUT, TaskCanceller  # noqa: F401 - the constant lived here
from .context import CallContext
from .executor import AgentExecutor, ExecuteFunction, FunctionExecutor
from .inline import InlinePolicy
from .pool import DEFAULT_WORKERS, WorkerPool
from .push_policy import PushSettings
from .runs import (
    EventStream,
    RunScheduler,
    TaskSubscriptionStream,
    follow_until,
)
from .stores.base import MAX_PAGE_SIZE, StoredTask, TaskStore, is_final
from .stores.memory import InMemoryTaskStore

__all__ = [
    "DEFAULT_BLOCKING_TIMEOUT",
    "DefaultRequestHandler",
    "ExtendedCard",
    "PushNotifier",
    "RequestHandler",
    "StreamingRequestHandler",
]

logger = logging.getLogger(__name__)

#: Longest a blocking SendMessage waits for the task to settle before answering with
#: the task as it is (still working). Below the 60 s read timeout common in clients
#: (a2a_sync's default), so a slow agent yields a task to poll, not a client timeout.
DEFAULT_BLOCKING_TIMEOUT: Final = 50.0

#: How long close() waits for cancel requests from other workers still being handled.
_CANCEL_JOIN: Final = 2.0

#: The extended card, or a function choosing it per caller.
ExtendedCard = AgentCard | Callable[[CallContext], AgentCard | None]


class RequestHandler(Protocol):
    """Answers unary operations (everything but the two streaming ones)."""

    def dispatch(self, operation: Operation, params: Any, call: CallContext) -> Any:
        """Run ``operation`` and return its result model.

        ``params`` is the operation's model: :class:`~a2a_sync.types.SendMessageParams`,
        :class:`~a2a_sync.types.GetTaskParams`, :class:`~a2a_sync.types.ListTasksParams`,
        :class:`~a2a_sync.types.TaskIdParams` (cancel),
        :class:`~a2a_sync.types.PushNotificationConfig` (create),
        :class:`~a2a_sync.types.PushConfigParams` (get/delete),
        :class:`~a2a_sync.types.ListPushConfigsParams`, or ``None`` (extended card).

        Raises:
            RPCError: A protocol error for the client (its code and message are sent).
        """


class StreamingRequestHandler(Protocol):
    """Answers SendStreamingMessage and SubscribeToTask with a stream of events."""

    def dispatch_stream(
        self, operation: Operation, params: Any, call: CallContext
    ) -> Iterator[StreamEvent]:
        """Start ``operation`` and return its events.

        Validate before returning (raise :class:`~a2a_sync.errors.RPCError`): errors
        raised here become a plain JSON-RPC error response, errors raised while
        iterating become one error event that ends the stream. An iterator with a
        ``poll(timeout) -> event | None`` method (like :class:`EventStream`) lets the
        server send heartbeats while it waits; ``close()`` is called when the client
        goes away.
        """


class DefaultRequestHandler:
    """Every A2A operation over a task store and an agent executor.

    Thread-safe: one instance serves all request threads. Agents run on a bounded pool
    of daemon threads (:class:`~a2a_sync.server.pool.WorkerPool`), or a blocking send's
    own thread for an agent that is quick (:mod:`~a2a_sync.server.inline`); messages for
    one task run one after another.

    Args:
        card: The agent card (its capabilities decide what is allowed).
        executor: The agent: an :class:`AgentExecutor` or an ``execute(context, updater)``
            function.
        task_store: Where tasks live (a new in-memory store by default, closed with the
            handler).
        push_sender: Delivers push notifications (required to honour push configs).
        extended_card: The card for authenticated callers, or a function of the call
            returning it.
        workers: Most agent runs at once.
        blocking_timeout: Longest a blocking send waits for the task to settle.
        push: Limits and secret handling of push configs (defaults: see
            :class:`~a2a_sync.server.push_policy.PushSettings`).

    Raises:
        ConfigurationError: ``push.encryption_keys`` unusable (or ``cryptography``
            missing).
        deduplicate_messages: Answer a resent message (same ``messageId``, task,
            conversation and parts, from the same caller) with the task its first
            delivery started instead of running the agent again (A2A 1.0 §3.3.1). A
            message that reuses an id for another task or other content is a new message.
    """

    def __init__(
        self,
        card: AgentCard,
        executor: AgentExecutor | ExecuteFunction,
        *,
        task_store: TaskStore | None = None,
        push_sender: PushNotifier | None = None,
        extended_card: ExtendedCard | None = None,
        workers: int = DEFAULT_WORKERS,
        blocking_timeout: float = DEFAULT_BLOCKING_TIMEOUT,
        push: PushSettings | None = None,
        deduplicate_messages: bool = True,
    ) -> None:
        self.card = card
        self.executor = (
            executor if isinstance(executor, AgentExecutor) else FunctionExecutor(executor)
        )
        self._owns_store = task_store is None
        self.store: TaskStore = task_store if task_store is not None else InMemoryTaskStore()
        self._webhooks = Webhooks(  # first: unusable settings raise before anything starts
            self.store,
            push_sender,
            enabled=bool(card.capabilities.push_notifications),
            settings=push if push is not None else PushSettings(),
        )
        self._extended_card = extended_card
        self._blocking_timeout = blocking_timeout
        self._inline = InlinePolicy(self.executor, blocking_timeout=blocking_timeout)
        self._runs = RunScheduler(self._inline.executor, WorkerPool(workers))
        capabilities = card.capabilities
        self._streaming = bool(capabilities.streaming)
        self._extended = bool(capabilities.extended_agent_card)
        self._canceller = TaskCanceller(self.store, self._runs, self.executor, self._on_event)
        self._intake = MessageIntake(
            self.store,
            self._runs,
            self._webhooks,
            # Without a push sender no event is pushed: runs skip the call per event.
            self._on_event if push_sender is not None else None,
            required_extensions=frozenset(e.uri for e in capabilities.extensions if e.required),
            deduplicate=deduplicate_messages,
        )
        # A store shared with other worker processes forwards their cancel requests here.
        self.store.add_cancel_listener(self._canceller.on_remote_cancel)

    # -- dispatch ----------------------------------------------------------------------------

    def dispatch(self, operation: Operation, params: Any, call: CallContext) -> Any:
        """Run a unary operation (see :class:`RequestHandler`)."""
        method = self._UNARY.get(operation)
        if method is None:
            raise MethodNotFound()
        return method(self, params, call)

    def dispatch_stream(self, operation: Operation, params: Any, call: CallContext) -> EventStream:
        """Start a streaming operation (see :class:`StreamingRequestHandler`)."""
        if operation not in (Operation.SEND_STREAMING_MESSAGE, Operation.SUBSCRIBE_TO_TASK):
            raise MethodNotFound()
        if not self._streaming:
            raise UnsupportedOperation("streaming is not supported by this agent")
        if operation is Operation.SEND_STREAMING_MESSAGE:
            return self.stream_message(params, call)
        return self.subscribe(params, call)

    # -- messages ----------------------------------------------------------------------------

    def send_message(self, params: SendMessageParams, call: CallContext) -> Task | Message:
        """SendMessage: run the agent; answer when the task settles (or at once when
        ``return_immediately``), bounded by the blocking timeout."""
        config = params.configuration
        history_length = config.history_length if config is not None else None
        immediate = config is not None and config.return_immediately
        inline = not immediate and self._inline.allows()
        run, _, existing = self._intake.accept(params, call, streaming=False, inline=inline)
        if run is None:
            assert existing is not None
            task = existing.task
            if not immediate and not is_final(task):
                # The first delivery's run is on another worker, or queued here and not
                # started yet: a blocking resend waits for it as for its own run (it used
                # to answer the task as it stood, e.g. still working, when the run was not
                # registered as running elsewhere yet).
                deadline = time.monotonic() + self._blocking_timeout
                task = follow_until(self.store, existing, deadline, is_final).task
            return _trim(task, history_length)
        (run.created if immediate else run.settled).wait(self._blocking_timeout)
        result = run.outcome()
        return _trim(result, history_length) if isinstance(result, Task) else result

    def stream_message(self, params: SendMessageParams, call: CallContext) -> EventStream:
        """SendStreamingMessage: the run's events until the task settles."""
        _, stream, existing = self._intake.accept(params, call, streaming=True)
        if stream is None:
            assert existing is not None
            return self._intake.follow(existing)
        return stream

    # -- tasks -------------------------------------------------------------------------------

    def get_task(self, params: GetTaskParams, call: CallContext) -> Task:
        """GetTask, with the history cut to ``history_length``."""
        if params.history_length is not None and params.history_length < 0:
            raise InvalidParams("historyLength must not be negative")
        return _trim(self._owned(params.id, call).task, params.history_length)

    def list_tasks(self, params: ListTasksParams, call: CallContext) -> ListTasksResult:
        """ListTasks: the caller's tasks, newest first, without artifacts unless asked."""
        if params.page_size is not None and not 1 <= params.page_size <= MAX_PAGE_SIZE:
            raise InvalidParams(f"pageSize must be between 1 and {MAX_PAGE_SIZE}")
        if params.history_length is not None and params.history_length < 0:
            raise InvalidParams("historyLength must not be negative")
        result = self.store.list_tasks(params, principal=call.principal.name)
        tasks = [
            _trim(
                task if params.include_artifacts else attrs.evolve(task, artifacts=[]),
                params.history_length,
            )
            for task in result.tasks
        ]
        return attrs.evolve(result, tasks=tasks)

    def cancel_task(self, params: TaskIdParams, call: CallContext) -> Task:
        """CancelTask. Repeating it on a canceled task answers the task again (1.0 only)."""
        return self._canceller.cancel(self._owned(params.id, call), call)

    def subscribe(self, params: TaskIdParams, call: CallContext) -> EventStream:
        """SubscribeToTask: the current task, then its updates until it reaches a terminal
        state (an interrupted task keeps the stream open: A2A 1.0 §3.1.6)."""
        stored = self._owned(params.id, call)
        if stored.task.status.state.is_terminal:
            raise UnsupportedOperation(f"task is {stored.task.status.state.value}")
        sub = self.store.subscribe(stored.task.id, after_seq=stored.seq)
        return TaskSubscriptionStream(stored.task, sub)

    # -- push notification configs ---------------------------------------------------------------

    def create_push_config(
        self, params: PushNotificationConfig, call: CallContext
    ) -> PushNotificationConfig:
        """CreateTaskPushNotificationConfig (0.3: tasks/pushNotificationConfig/set).
        Answered without the token and credentials (see :mod:`.push_policy`)."""
        self._webhooks.require()
        if not params.task_id:
            raise InvalidParams("taskId is required")
        self._owned(params.task_id, call)
        self._webhooks.check_config(params)
        return self._webhooks.save(
            params, params.task_id, principal=call.principal.name, revision=call.revision
        )

    def get_push_config(
        self, params: PushConfigParams, call: CallContext
    ) -> PushNotificationConfig:
        """GetTaskPushNotificationConfig (0.3 may omit the config id: the first one)."""
        self._webhooks.require()
        self._owned(params.task_id, call)
        return self._webhooks.get(params.task_id, params.config_id)

    def list_push_configs(
        self, params: ListPushConfigsParams, call: CallContext
    ) -> ListPushConfigsResult:
        """ListTaskPushNotificationConfigs."""
        self._webhooks.require()
        self._owned(params.task_id, call)
        return self._webhooks.list(params.task_id)

    def delete_push_config(self, params: PushConfigParams, call: CallContext) -> None:
        """DeleteTaskPushNotificationConfig (deleting a missing config is not an error)."""
        self._webhooks.require()
        self._owned(params.task_id, call)
        if params.config_id:
            self.store.delete_push_config(params.task_id, params.config_id)

    def _on_event(self, stored: StoredTask, event: StreamEvent) -> None:
        self._webhooks.on_event(stored, event)

    # -- extended card ---------------------------------------------------------------------------

    def get_extended_card(self, params: Any, call: CallContext) -> AgentCard:
        """GetExtendedAgentCard (the application has checked the caller authenticated)."""
        if not self._extended:
            raise UnsupportedOperation("this agent has no extended card")
        card = self._extended_card
        if callable(card):
            card = card(call)
        if card is None:
            raise ExtendedAgentCardNotConfigured()
        return card

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self, timeout: float = 10.0) -> bool:
        """Refuse new runs, wait up to ``timeout`` for running agents, close an owned store.

        Returns:
            True when every agent thread ended in time.
        """
        self.store.remove_cancel_listener(self._canceller.on_remote_cancel)
        finished = self._runs.close(timeout)
        self._canceller.join(_CANCEL_JOIN)
        if self._owns_store:
            self.store.close()
        return finished

    # -- helpers ---------------------------------------------------------------------------------

    def _owned(self, task_id: str, call: CallContext) -> StoredTask:
        stored = self.store.get_task(task_id, principal=call.principal.name)
        if stored is None:
            raise TaskNotFound()
        return stored

    _UNARY: Final[dict[Operation, Callable[[Any, Any, CallContext], Any]]] = {
        Operation.SEND_MESSAGE: send_message,
        Operation.GET_TASK: get_task,
        Operation.LIST_TASKS: list_tasks,
        Operation.CANCEL_TASK: cancel_task,
        Operation.CREATE_PUSH_CONFIG: create_push_config,
        Operation.GET_PUSH_CONFIG: get_push_config,
        Operation.LIST_PUSH_CONFIGS: list_push_configs,
        Operation.DELETE_PUSH_CONFIG: delete_push_config,
        Operation.GET_EXTENDED_CARD: get_extended_card,
    }


def _trim(task: Task, history_length: int | None) -> Task:
    """``task`` with at most ``history_length`` most recent messages (None: all)."""
    if history_length is None or len(task.history) <= history_length:
        return task
    return attrs.evolve(task, history=task.history[len(task.history) - history_length :])
