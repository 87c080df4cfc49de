"""A resilient A2A client: four layers of fault tolerance over :class:`A2AClient`.

- **L1 — transport retry.** Transient failures (connect errors, timeouts, 5xx, 429 with
  ``Retry-After``) are retried on the same agent with capped exponential backoff and
  jitter, by the urllib3 ``Retry`` of each agent's transport (configured from
  :class:`~a2a_sync.policies.ResilienceConfig`). JSON-RPC error answers are never
  retried: the agent answered, it refused. Unlike the seed (lc-a2a), a message send whose
  outcome is unknown — the request may have reached the agent — is never re-sent unless
  the caller opted into idempotent sending, and then the identical message (same
  ``message_id``) is sent.
- **L2 — stream re-establishment.** A dropped stream is resumed by resubscribing to the
  task (``SubscribeToTask`` / ``tasks/resubscribe``), never by posting the message again.
  The subscription's first event (the task's current state) is compared with what was
  already delivered, and only the difference is delivered, so no event is seen twice and
  chunked artifacts reassemble correctly. After the reconnect budget, L3 takes over.
- **L3 — task recovery.** :meth:`ResilientA2AClient.wait_for_task` polls ``GetTask``
  until the task settles and maps each outcome to a result or a typed error; a timeout
  raises :class:`~a2a_sync.errors.TaskWaitTimeout` carrying the task id so the wait can
  be resumed.
- **L4 — fallback agents.** When an agent cannot serve a request (it is unreachable, or
  answers with an error another agent might not give), the next agent is tried, in
  order. Never after parse or signature errors or an input request; never for a send
  that may already have reached an agent (unless idempotent sending was opted into);
  operations on an existing task stay with the agent that owns it; every agent keeps its
  own credentials. When all fail, :class:`~a2a_sync.errors.AllAgentsFailed` lists each.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from ..._redact import redact_url
from ...a2a.types import (
    AgentCard,
    ListTasksResult,
    Message,
    PushNotificationConfig,
    SendResult,
    Task,
)
from ...errors import (
    A2ASyncError,
    AllAgentsFailed,
    Cancelled,
    ConfigurationError,
    HTTPStatusError,
    OutcomeUnknown,
    TaskWaitTimeout,
    TransportError,
)
from ...policies import ResilienceConfig
from .._message import MessageInput, as_message
from ..bindings.jsonrpc import TimeoutArg
from ..client import A2AClient
from ._outcomes import Recovery, outcome_unknown, should_fall_back, task_outcome
from ._progress import NOT_PROCESSED_STATUSES, diff_events, resumable, settled
from .stream import ResilientTaskStream

__all__ = ["ResilientA2AClient", "ResilientTaskStream", "diff_events"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How many task → agent ownerships are remembered (oldest forgotten first).
_OWNER_MEMORY: Final = 10_000


class ResilientA2AClient:
    """An A2A client that absorbs transient failures and degrades to backup agents.

    Wrap the agents you already built (each with its own URL, revision and
    credentials)::

        client = ResilientA2AClient(
            A2AClient.from_url("https://primary.example"),
            ResilienceConfig(task_timeout=120),
            fallbacks=[A2AClient.from_url("https://backup.example")],
        )
        task = client.send_and_wait("Summarize the report")

    It offers the operations of :class:`A2AClient` plus :meth:`wait_for_task` and
    :meth:`send_and_wait`. The wrapped clients are used through
    :meth:`A2AClient.with_options` copies carrying the config's retry policy; closing
    the resilient client closes them.

    **Threads:** safe to share between threads; the config is immutable, the agents are
    thread-safe, and the task-ownership table is guarded by a lock.

    Args:
        primary: The preferred agent.
        config: Budgets and delays of the four layers.
        fallbacks: Agents tried in order when the current one cannot serve.
        sleep: Called to wait between resubscribes and polls; tests inject a recorder.
            By default the wait ends early when the client (or the stream) is closed.
            Retries of single calls (L1) wait in the agents' transports (their own
            ``sleep``).
        clock: Monotonic clock for deadlines; tests inject a fake.
    """

    def __init__(
        self,
        primary: A2AClient,
        config: ResilienceConfig | None = None,
        *,
        fallbacks: Sequence[A2AClient] = (),
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config if config is not None else ResilienceConfig()
        self._originals: tuple[A2AClient, ...] = (primary, *fallbacks)
        retry = self.config.retry_policy()
        self._agents: tuple[A2AClient, ...] = tuple(
            agent.with_options(retry=retry) for agent in self._originals
        )
        self._sleep = sleep
        self._clock = clock
        self._closing = threading.Event()
        self._owners: collections.OrderedDict[str, A2AClient] = collections.OrderedDict()
        self._lock = threading.Lock()  # guards _owners

    def with_fallback(self, fallback: A2AClient) -> ResilientA2AClient:
        """A resilient client with one more fallback agent (tried after the others)."""
        return ResilientA2AClient(
            self._originals[0],
            self.config,
            fallbacks=[*self._originals[1:], fallback],
            sleep=self._sleep,
            clock=self._clock,
        )

    @property
    def agents(self) -> tuple[A2AClient, ...]:
        """The agents in the order they are tried (primary first)."""
        return self._agents

    # -- card -----------------------------------------------------------------------------------

    def get_agent_card(self, *, timeout: TimeoutArg = None) -> AgentCard:
        """The first reachable agent's (revalidated) card."""

        def fetch(agent: A2AClient) -> AgentCard:
            if agent.card is None:
                raise ConfigurationError(
                    f"{redact_url(agent.url)}: no card (client built without one)"
                )
            try:
                return agent.refresh_card(timeout=timeout)
            except ConfigurationError:
                return agent.card

        return self._run(fetch, self._agents, send=False)[0]

    # -- messages ---------------------------------------------------------------------------------

    def send_message(
        self, message: MessageInput, *, idempotent: bool | None = None, **kwargs: Any
    ) -> SendResult:
        """Send a message (L1 + L4). Keyword arguments as :meth:`A2AClient.send_message`.

        Args:
            message: What to send; a :class:`Message` keeps its ``message_id``.
            idempotent: Resend after an ambiguous failure (same ``message_id``); defaults
                to the config's ``idempotent_send``.

        Raises:
            OutcomeUnknown: The send may have reached an agent and was not resent.
            AllAgentsFailed: Every agent failed (each failure listed).
        """
        msg = self._fix_message(message, kwargs)
        resend = self.config.idempotent_send if idempotent is None else idempotent
        agents = self._agents_for(msg.task_id) if msg.task_id else self._agents

        def send(agent: A2AClient) -> SendResult:
            return self._send_on(agent, msg, resend=resend, **kwargs)

        result, agent = self._run(
            send,
            agents,
            send=True,
            message=msg,
            resend=resend,
            # Continuing a task of unknown owner: "not found" means "ask the next agent".
            task_bound=msg.task_id is not None and len(agents) > 1,
        )
        self._remember(result, agent)
        return result

    def reply(self, task: Task | str, message: MessageInput, **kwargs: Any) -> SendResult:
        """Answer a task that asks for input (on the agent that owns it)."""
        if isinstance(task, Task):
            kwargs.setdefault("context_id", task.context_id)
            task = task.id
        return self.send_message(message, task_id=task, **kwargs)

    def send_and_wait(
        self,
        message: MessageInput,
        *,
        timeout: float | None = None,
        idempotent: bool | None = None,
        **kwargs: Any,
    ) -> SendResult:
        """Send a message and wait until its task settles (L1/L4 + L3).

        The message is sent with ``return_immediately`` so the task id is known at once;
        the wait then polls that task on the agent that owns it — the message is never
        sent again to wait for it.

        Returns:
            The completed task, or the agent's reply message.

        Raises:
            InputRequired: The agent asks a question (``err.task_id``, ``err.prompt``);
                answer with :meth:`reply` and wait again.
            AuthRequired, TaskFailed, TaskCanceled, TaskRejected: The task settled so.
            TaskWaitTimeout: Still running at the deadline; resume with
                :meth:`wait_for_task` (``err.task_id``).
        """
        result = self.send_message(
            message, idempotent=idempotent, return_immediately=True, **kwargs
        )
        if isinstance(result, Message):
            return result
        if settled(result):
            return task_outcome(result)
        return self.wait_for_task(result.id, timeout=timeout)

    def stream_message(
        self, message: MessageInput, *, idempotent: bool | None = None, **kwargs: Any
    ) -> ResilientTaskStream:
        """Send a message and stream its task, resubscribing when the stream drops (L2)
        and polling when it cannot be re-established (L3).

        Agents whose card declares no streaming get a send followed by polling; the
        stream then delivers the task and its changes as they are observed.
        """
        msg = self._fix_message(message, kwargs)
        resend = self.config.idempotent_send if idempotent is None else idempotent
        agents = self._agents_for(msg.task_id) if msg.task_id else self._agents
        return ResilientTaskStream(
            self, agents, message=msg, resend=resend, send_kwargs=kwargs, task_id=None
        )

    # -- tasks ------------------------------------------------------------------------------------

    def get_task(
        self, task_id: str, *, history_length: int | None = None, timeout: TimeoutArg = None
    ) -> Task:
        """Fetch a task from the agent that owns it (idempotent; L1 + L4 when unknown)."""
        return self._on_task(
            task_id,
            lambda agent: agent.get_task(task_id, history_length=history_length, timeout=timeout),
        )

    def cancel_task(
        self, task_id: str, *, metadata: Mapping[str, Any] | None = None, timeout: TimeoutArg = None
    ) -> Task:
        """Cancel a task on the agent that owns it (idempotent)."""
        return self._on_task(
            task_id, lambda agent: agent.cancel_task(task_id, metadata=metadata, timeout=timeout)
        )

    def list_tasks(self, **filters: Any) -> ListTasksResult:
        """List tasks of the first agent that answers (see :meth:`A2AClient.list_tasks`)."""
        return self._run(lambda agent: agent.list_tasks(**filters), self._agents, send=False)[0]

    def subscribe(self, task_id: str) -> ResilientTaskStream:
        """Re-attach to a running task's stream, re-establishing it when it drops (L2)."""
        return ResilientTaskStream(
            self,
            self._agents_for(task_id),
            message=None,
            resend=False,
            send_kwargs={},
            task_id=task_id,
        )

    def wait_for_task(
        self, task_id: str, *, timeout: float | None = None, history_length: int | None = None
    ) -> Task:
        """L3: poll the task until it settles; never re-create it.

        Polls the owning agent with a short first interval growing to a cap (the
        config's ``poll``). A transient failure of one poll does not end the wait.

        Returns:
            The completed task.

        Raises:
            InputRequired: The agent asks for input (``err.prompt``; answer with
                :meth:`reply`).
            AuthRequired: The agent needs authentication first.
            TaskFailed, TaskCanceled, TaskRejected: The task settled in that state.
            TaskWaitTimeout: ``timeout`` (default: the config's ``task_timeout``) passed;
                the task still exists — call again with ``err.task_id``.
            TaskNotFound: No agent knows the task.
        """
        limit = self.config.task_timeout if timeout is None else timeout
        deadline = self._clock() + limit
        polls = 0
        recovery = Recovery()
        task: Task | None = None
        while True:
            recovery.polls += 1
            try:
                task = self.get_task(task_id, history_length=history_length)
            except (TransportError, HTTPStatusError, AllAgentsFailed) as exc:
                if isinstance(exc, Cancelled):
                    raise  # closed: stop waiting
                recovery.last_error = exc
                logger.debug("poll of task %s failed: %s", task_id, exc)
            else:
                recovery.answered += 1
                if settled(task):
                    return task_outcome(task)
            polls += 1
            remaining = deadline - self._clock()
            if remaining <= 0:
                agents = [redact_url(agent.url) for agent in self._agents_for(task_id)]
                raise TaskWaitTimeout(
                    f"{recovery.timeout_headline(task_id, limit)} "
                    f"(last state: {task.state.value if task else 'unknown'}; "
                    f"{recovery.summary(task_id, agents)}); "
                    f"call wait_for_task({task_id!r}) again to keep waiting",
                    task_id=task_id,
                    timeout=limit,
                    task=task,
                ) from recovery.last_error
            self._wait(min(self.config.poll.interval(polls), remaining))
            if self._closing.is_set():
                raise Cancelled(f"the client was closed while waiting for task {task_id}")

    # -- push notifications ---------------------------------------------------------------------

    def create_push_config(
        self, task_id: str, config: PushNotificationConfig
    ) -> PushNotificationConfig:
        """Register a webhook on the agent that owns the task."""
        return self._on_task(task_id, lambda agent: agent.create_push_config(task_id, config))

    def get_push_config(self, task_id: str, config_id: str) -> PushNotificationConfig:
        """Fetch a webhook registration from the agent that owns the task."""
        return self._on_task(task_id, lambda agent: agent.get_push_config(task_id, config_id))

    def list_push_configs(self, task_id: str, **kwargs: Any) -> Any:
        """List a task's webhook registrations on the agent that owns it."""
        return self._on_task(task_id, lambda agent: agent.list_push_configs(task_id, **kwargs))

    def delete_push_config(self, task_id: str, config_id: str) -> None:
        """Remove a webhook registration on the agent that owns the task."""
        self._on_task(task_id, lambda agent: agent.delete_push_config(task_id, config_id))

    def get_extended_card(self) -> AgentCard:
        """The first agent's authenticated extended card that answers."""
        return self._run(lambda agent: agent.get_extended_card(), self._agents, send=False)[0]

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every agent's client (cancelling calls in flight) and end waits between
        polls. Idempotent."""
        self._closing.set()
        for agent in self._originals:
            agent.close()

    def __enter__(self) -> ResilientA2AClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        urls = ", ".join(redact_url(agent.url) for agent in self._agents)
        return f"<ResilientA2AClient [{urls}]>"

    # -- the layers -------------------------------------------------------------------------------

    def _fix_message(self, message: MessageInput, kwargs: dict[str, Any]) -> Message:
        """Build the message once, so every attempt and every agent gets the same id.

        ``task_id``/``context_id`` move from ``kwargs`` into the message.
        """
        return as_message(
            message, task_id=kwargs.pop("task_id", None), context_id=kwargs.pop("context_id", None)
        )

    def _send_on(
        self, agent: A2AClient, message: Message, *, resend: bool, **kwargs: Any
    ) -> SendResult:
        """``SendMessage`` on one agent, resent there after "not processed" answers."""
        sends = 1
        while True:
            try:
                return agent.send_message(message, idempotent=resend, **kwargs)
            except HTTPStatusError as exc:
                # The transport resends only opted-in messages; "not processed" (429/503)
                # is safe to resend regardless, after the agent's wait.
                delay = None if resend else self._resend_delay(exc, resend=False, sends=sends)
                if delay is None:
                    raise
            sends += 1
            self._wait(delay)

    def _resend_delay(self, exc: A2ASyncError, *, resend: bool, sends: int) -> float | None:
        """L1 for messages: the wait before sending a message again after ``sends``
        attempts failed with ``exc``, or ``None`` when it must not be sent again.

        "Not processed" answers (429, 503) allow it always; failures after which the
        agent may have acted only with ``resend`` (the caller opted in). The budget is
        ``max_transport_retries``; a ``Retry-After`` beyond ``retry_after_max`` ends it.
        """
        config = self.config
        if sends > config.max_transport_retries:
            return None
        retry_after = exc.retry_after if isinstance(exc, HTTPStatusError) else None
        if isinstance(exc, HTTPStatusError) and exc.status_code in NOT_PROCESSED_STATUSES:
            pass
        elif not (resend and resumable(exc)):
            return None
        if retry_after is not None and retry_after > config.retry_after_max:
            return None
        return config.retry_policy().delay(sends, retry_after or None)

    def _wait(self, delay: float, cancelled: threading.Event | None = None) -> None:
        """Wait ``delay`` seconds (the injected ``sleep``, or until closed)."""
        if self._sleep is not None:
            self._sleep(delay)
        else:
            (cancelled or self._closing).wait(delay)

    def _owner_of(self, task_id: str) -> A2AClient:
        """The agent that owns the task (the first agent when unknown)."""
        return self._agents_for(task_id)[0]

    def _remember_owner(self, task_id: str, agent: A2AClient | None) -> None:
        if agent is not None:
            with self._lock:
                self._owners[task_id] = agent
                self._owners.move_to_end(task_id)
                while len(self._owners) > _OWNER_MEMORY:
                    self._owners.popitem(last=False)

    def _agents_for(self, task_id: str) -> tuple[A2AClient, ...]:
        with self._lock:
            owner = self._owners.get(task_id)
        return (owner,) if owner is not None else self._agents

    def _remember(self, result: Any, agent: A2AClient) -> None:
        """Record which agent owns the task ``result`` belongs to."""
        task_id = result.id if isinstance(result, Task) else getattr(result, "task_id", None)
        if task_id:
            self._remember_owner(task_id, agent)

    def _on_task(self, task_id: str, call: Callable[[A2AClient], T]) -> T:
        return self._on_task_with_agent(task_id, call)[0]

    def _on_task_with_agent(
        self, task_id: str, call: Callable[[A2AClient], T]
    ) -> tuple[T, A2AClient]:
        with self._lock:
            owner = self._owners.get(task_id)
        if owner is not None:
            return self._run(call, (owner,), send=False)
        # Unknown owner: ask each agent; "not found" means "maybe the next one".
        return self._run(call, self._agents, send=False, task_bound=True)

    def _run(
        self,
        call: Callable[[A2AClient], T],
        agents: Sequence[A2AClient],
        *,
        send: bool,
        message: Message | None = None,
        resend: bool = False,
        task_bound: bool = False,
    ) -> tuple[T, A2AClient]:
        """Try ``call`` on each agent in turn (L4); L1 happens inside each call.

        Returns the result and the agent that produced it.
        """
        failures: list[tuple[str, BaseException]] = []
        for index, agent in enumerate(agents):
            try:
                result = call(agent)
            except A2ASyncError as exc:
                if send and message is not None and outcome_unknown(exc) and not resend:
                    raise OutcomeUnknown(
                        f"sending message {message.message_id} to {redact_url(agent.url)} "
                        "failed after "
                        f"the request may have reached the agent ({exc}); it was not resent. "
                        "Look the task up, or resend with idempotent=True if the agent "
                        "deduplicates by message id",
                        message_id=message.message_id,
                    ) from exc
                if not should_fall_back(exc, send=send, resend=resend, task_bound=task_bound):
                    raise
                if index + 1 < len(agents):
                    logger.info(
                        "agent %s failed (%s); trying the next agent", redact_url(agent.url), exc
                    )
                failures.append((agent.url, exc))
                continue
            if isinstance(result, Task):
                self._remember(result, agent)
            return result, agent
        if len(failures) == 1:
            raise failures[0][1]
        raise AllAgentsFailed(failures)
