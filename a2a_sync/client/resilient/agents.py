"""The agents of a resilient client, shared by the client and its streams.

An :class:`AgentSet` holds what :class:`~a2a_sync.client.ResilientA2AClient` and
:class:`~a2a_sync.client.ResilientTaskStream` both need, so neither holds the other: the
agents in the order they are tried, the table of which agent owns which task, the
per-agent operations that use them (try each agent in turn, L4; resend a message on one
agent, L1) and the waits between attempts (the injected ``sleep`` and ``clock``).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from ..._redact import redact_url
from ...a2a.types import Message, SendResult, Task
from ...errors import A2ASyncError, AllAgentsFailed, HTTPStatusError, OutcomeUnknown
from ...policies import ResilienceConfig
from ..client import A2AClient
from ._outcomes import outcome_unknown, resend_delay, should_fall_back

__all__ = ["OWNER_MEMORY", "AgentSet", "OwnerTable"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: How many task → agent ownerships are remembered (oldest forgotten first): enough for
#: every task a long-lived client follows at once, bounded so the table cannot grow forever.
OWNER_MEMORY: Final = 10_000


class OwnerTable:
    """Which agent owns which task, for the most recently remembered ``capacity`` tasks.

    Remembering a task (again) makes it the newest; when the table is full, the task
    remembered longest ago is forgotten. Looking a task up does not refresh it.

    **Threads:** safe to share; one lock guards the table.
    """

    def __init__(self, capacity: int = OWNER_MEMORY) -> None:
        self._capacity = capacity
        self._owners: collections.OrderedDict[str, A2AClient] = collections.OrderedDict()
        self._lock = threading.Lock()  # guards _owners

    def remember(self, task_id: str, agent: A2AClient) -> None:
        with self._lock:
            self._owners[task_id] = agent
            self._owners.move_to_end(task_id)
            while len(self._owners) > self._capacity:
                self._owners.popitem(last=False)

    def get(self, task_id: str) -> A2AClient | None:
        """The agent that owns the task, or ``None`` when it is not (or no longer) known."""
        with self._lock:
            return self._owners.get(task_id)

    def task_ids(self) -> list[str]:
        """The remembered tasks, oldest first."""
        with self._lock:
            return list(self._owners)

    def __len__(self) -> int:
        with self._lock:
            return len(self._owners)


class AgentSet:
    """The agents of a resilient client, their task ownerships and the attempts on them.

    The agents are :meth:`A2AClient.with_options` copies of the given clients carrying
    the config's retry policy (L1 inside each call); :meth:`close` closes the originals.

    **Threads:** safe to share between threads; the config is immutable, the agents are
    thread-safe and the owner table has its own lock.

    Args:
        originals: The agents as given, primary first.
        config: Budgets and delays of the four layers.
        sleep: Called to wait between attempts; ``None`` waits on an event instead, so
            the wait ends early when the set (or the caller's stream) is closed.
        clock: Monotonic clock for deadlines.
        owner_memory: How many task ownerships are remembered.
    """

    def __init__(
        self,
        originals: Sequence[A2AClient],
        config: ResilienceConfig,
        *,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        owner_memory: int = OWNER_MEMORY,
    ) -> None:
        self.config = config
        self._originals = tuple(originals)
        retry = config.retry_policy()
        self._agents = tuple(agent.with_options(retry=retry) for agent in self._originals)
        self._sleep = sleep
        self._clock = clock
        self._closing = threading.Event()
        self._owners = OwnerTable(owner_memory)

    @property
    def agents(self) -> tuple[A2AClient, ...]:
        """The agents in the order they are tried (primary first)."""
        return self._agents

    @property
    def closing(self) -> threading.Event:
        """Set by :meth:`close`; waits without an event of their own end on it."""
        return self._closing

    def now(self) -> float:
        """The (injected) monotonic clock's time."""
        return self._clock()

    def wait(self, delay: float, cancelled: threading.Event | None = None) -> None:
        """Wait ``delay`` seconds: the injected ``sleep``, or until ``cancelled`` (by
        default :attr:`closing`) is set."""
        if self._sleep is not None:
            self._sleep(delay)
        else:
            (cancelled or self._closing).wait(delay)

    def close(self) -> None:
        """Close every agent's client and end the waits on :attr:`closing`. Idempotent."""
        self._closing.set()
        for agent in self._originals:
            agent.close()

    # -- task ownership -------------------------------------------------------------------

    def for_task(self, task_id: str) -> tuple[A2AClient, ...]:
        """The agents to ask about a task: its owner when known, else all in order."""
        owner = self._owners.get(task_id)
        return (owner,) if owner is not None else self._agents

    def owner_of(self, task_id: str) -> A2AClient:
        """The agent that owns the task (the first agent when unknown)."""
        return self.for_task(task_id)[0]

    def remember(self, task_id: str, agent: A2AClient | None) -> None:
        """Record that ``agent`` owns the task (nothing when ``agent`` is ``None``)."""
        if agent is not None:
            self._owners.remember(task_id, agent)

    def remember_result(self, result: Any, agent: A2AClient) -> None:
        """Record which agent owns the task ``result`` (a task or a message) belongs to."""
        task_id = result.id if isinstance(result, Task) else getattr(result, "task_id", None)
        if task_id:
            self.remember(task_id, agent)

    # -- attempts -------------------------------------------------------------------------

    def on_task(self, task_id: str, call: Callable[[A2AClient], T]) -> tuple[T, A2AClient]:
        """``call`` on the agent that owns the task; when the owner is unknown, on each
        agent in turn ("not found" then means "maybe the next one")."""
        owner = self._owners.get(task_id)
        if owner is not None:
            return self.run(call, (owner,), send=False)
        return self.run(call, self._agents, send=False, task_bound=True)

    def send_on(
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
                delay = (
                    None if resend else resend_delay(self.config, exc, resend=False, sends=sends)
                )
                if delay is None:
                    raise
            sends += 1
            self.wait(delay)

    def run(
        self,
        call: Callable[[A2AClient], T],
        agents: Sequence[A2AClient],
        *,
        send: bool,
        message: Message | None = None,
        resend: bool = False,
        task_bound: bool = False,
    ) -> tuple[T, A2AClient]:
        """Try ``call`` on each of ``agents`` in turn (L4); L1 happens inside each call.

        Returns the result and the agent that produced it (a task result's owner is
        remembered).

        Raises:
            OutcomeUnknown: A send may have reached an agent and is not resent.
            AllAgentsFailed: Every agent failed (each failure listed); a single agent's
                failure is raised as it is.
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
                self.remember_result(result, agent)
            return result, agent
        if len(failures) == 1:
            raise failures[0][1]
        raise AllAgentsFailed(failures)
