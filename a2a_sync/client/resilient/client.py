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

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..._redact import redact_url
from ...a2a.types import (
    AgentCard,
    ListTasksResult,
    Message,
    PushNotificationConfig,
    SendResult,
    Task,
)
from ...errors import Cancelled, ConfigurationError, TaskWaitTimeout
from ...policies import ResilienceConfig
from .._message import MessageInput, as_message
from ..bindings.jsonrpc import TimeoutArg
from ..client import A2AClient
from ._outcomes import task_outcome
from ._progress import settled
from ._recovery import Recovery, TaskPoll
from .agents import AgentSet
from .stream import ResilientTaskStream

__all__ = ["ResilientA2AClient", "ResilientTaskStream"]

T = TypeVar("T")


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

    **Threads:** safe to share between threads; the config is immutable, and the agents
    and their task-ownership table (an :class:`~a2a_sync.client.resilient.agents.AgentSet`,
    shared with the client's streams) are thread-safe.

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
        self._sleep = sleep
        self._clock = clock
        self._agent_set = AgentSet(self._originals, self.config, sleep=sleep, clock=clock)

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
        return self._agent_set.agents

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

        return self._agent_set.run(fetch, self._agent_set.agents, send=False)[0]

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
        agents = self._candidates(msg.task_id)

        def send(agent: A2AClient) -> SendResult:
            return self._agent_set.send_on(agent, msg, resend=resend, **kwargs)

        result, agent = self._agent_set.run(
            send,
            agents,
            send=True,
            message=msg,
            resend=resend,
            # Continuing a task of unknown owner: "not found" means "ask the next agent".
            task_bound=msg.task_id is not None and len(agents) > 1,
        )
        self._agent_set.remember_result(result, agent)
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
        return ResilientTaskStream(
            self._agent_set,
            self.config,
            self._candidates(msg.task_id),
            message=msg,
            resend=resend,
            send_kwargs=kwargs,
            task_id=None,
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
        return self._agent_set.run(
            lambda agent: agent.list_tasks(**filters), self._agent_set.agents, send=False
        )[0]

    def subscribe(self, task_id: str) -> ResilientTaskStream:
        """Re-attach to a running task's stream, re-establishing it when it drops (L2)."""
        return ResilientTaskStream(
            self._agent_set,
            self.config,
            self._agent_set.for_task(task_id),
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
        recovery = Recovery()
        poll = TaskPoll(
            self._agent_set,
            task_id,
            timeout=limit,
            recovery=recovery,
            stop=self._agent_set.closing,
            history_length=history_length,
        )
        task: Task | None = None
        for task in poll:
            if settled(task):
                return task_outcome(task)
        if not poll.timed_out:
            raise Cancelled(f"the client was closed while waiting for task {task_id}")
        agents = [redact_url(agent.url) for agent in self._agent_set.for_task(task_id)]
        raise TaskWaitTimeout(
            f"{recovery.timeout_headline(task_id, limit)} "
            f"(last state: {task.state.value if task else 'unknown'}; "
            f"{recovery.summary(task_id, agents)}); "
            f"call wait_for_task({task_id!r}) again to keep waiting",
            task_id=task_id,
            timeout=limit,
            task=task,
        ) from recovery.last_error

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
        return self._agent_set.run(
            lambda agent: agent.get_extended_card(), self._agent_set.agents, send=False
        )[0]

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every agent's client (cancelling calls in flight) and end waits between
        polls. Idempotent."""
        self._agent_set.close()

    def __enter__(self) -> ResilientA2AClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        urls = ", ".join(redact_url(agent.url) for agent in self._agent_set.agents)
        return f"<ResilientA2AClient [{urls}]>"

    # -- the layers -------------------------------------------------------------------------------

    def _fix_message(self, message: MessageInput, kwargs: dict[str, Any]) -> Message:
        """Build the message once, so every attempt and every agent gets the same id.

        ``task_id``/``context_id`` move from ``kwargs`` into the message.
        """
        return as_message(
            message, task_id=kwargs.pop("task_id", None), context_id=kwargs.pop("context_id", None)
        )

    def _candidates(self, task_id: str | None) -> tuple[A2AClient, ...]:
        """The agents a message goes to: the owner of the task it continues, or all."""
        return self._agent_set.for_task(task_id) if task_id else self._agent_set.agents

    def _on_task(self, task_id: str, call: Callable[[A2AClient], T]) -> T:
        return self._agent_set.on_task(task_id, call)[0]
