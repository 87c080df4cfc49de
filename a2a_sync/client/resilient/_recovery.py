"""L3, task recovery: polling a task until it settles, and what recovery tried.

:class:`TaskPoll` reads a task with ``GetTask`` on the agent that owns it until it
settles, its deadline passes or its caller stops it; :meth:`ResilientA2AClient.wait_for_task`
and a resilient stream that cannot be re-established both use it. :class:`Recovery`
counts what was tried (resubscribes, polls, the failures), so the final error can say it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence

import attrs

from ...a2a.types import Task
from ...errors import (
    A2ASyncError,
    AllAgentsFailed,
    Cancelled,
    HTTPStatusError,
    RPCError,
    TransportError,
)
from ._progress import settled
from .agents import AgentSet

__all__ = ["Recovery", "TaskPoll", "describe", "explain_rpc_error"]

logger = logging.getLogger(__name__)


def describe(exc: BaseException) -> str:
    """``Type: message`` of an underlying error, for the message of the error it causes."""
    return f"{type(exc).__name__}: {exc}"


@attrs.define
class Recovery:
    """What a resilient stream tried after its stream dropped, for its final error."""

    drop: BaseException | None = None  # the failure that dropped the stream
    resubscribes: int = 0
    polls: int = 0
    answered: int = 0  # polls the agent answered
    last_error: BaseException | None = None

    def dropped(self, exc: BaseException) -> None:
        self.drop = self.last_error = exc

    def timeout_headline(self, task_id: str | None, timeout: float) -> str:
        if self.polls and not self.answered and self.last_error is not None:
            return f"task {task_id} could not be read within {timeout} s: no poll reached the agent"
        return f"task {task_id} did not settle within {timeout} s of polling"

    def summary(self, task_id: str | None, agents: Sequence[str]) -> str:
        """What was tried, e.g. "after the stream dropped (...), tried 3 resubscribe(s)
        and 5 poll(s) of task t on http://a, last error: ConnectError: ..."."""
        parts = []
        if self.drop is not None:
            parts.append(f"after the stream dropped ({describe(self.drop)})")
        tried = [f"{self.polls} poll(s)"]
        if self.resubscribes or self.drop is not None:
            tried.insert(0, f"{self.resubscribes} resubscribe(s)")
        text = f"tried {' and '.join(tried)} of task {task_id}"
        if agents:
            text += " on " + ", ".join(agents)
        parts.append(text)
        if self.last_error is not None and self.last_error is not self.drop:
            parts.append(f"last error: {describe(self.last_error)}")
        return ", ".join(parts)


def explain_rpc_error(exc: RPCError, context: str) -> A2ASyncError:
    """The same refusal (same class, code and data) with ``context`` in its message;
    the caller chains it to ``exc``."""
    return type(exc)(f"{exc.message} ({context})", code=exc.code, data=exc.data)


class TaskPoll:
    """Iterates the answers of ``GetTask`` polls of one task until it settles.

    Polls the owning agent (all agents in turn while the owner is unknown) with a short
    first interval growing to a cap (the config's ``poll``). A transient failure of one
    poll is counted in ``recovery`` and does not end the polling. The iteration ends after
    the settled task, when the deadline passed (:attr:`timed_out` is then set) or after a
    wait that ``stop`` ended; the caller turns the last two into its error.

    The deadline starts when the poll is created. Iterate once, from one thread.
    """

    def __init__(
        self,
        agents: AgentSet,
        task_id: str,
        *,
        timeout: float,
        recovery: Recovery,
        stop: threading.Event,
        history_length: int | None = None,
    ) -> None:
        self._agents = agents
        self._task_id = task_id
        self._recovery = recovery
        self._stop = stop
        self._history_length = history_length
        self._deadline = agents.now() + timeout
        self.timed_out = False

    def __iter__(self) -> Iterator[Task]:
        agents, task_id, recovery = self._agents, self._task_id, self._recovery
        polls = 0
        while True:
            recovery.polls += 1
            try:
                task = agents.on_task(
                    task_id,
                    lambda agent: agent.get_task(
                        task_id, history_length=self._history_length, timeout=None
                    ),
                )[0]
            except (TransportError, HTTPStatusError, AllAgentsFailed) as exc:
                if isinstance(exc, Cancelled):
                    raise  # closed: stop polling
                recovery.last_error = exc
                logger.debug("poll of task %s failed: %s", task_id, exc)
            else:
                recovery.answered += 1
                yield task
                if settled(task):
                    return
            polls += 1
            remaining = self._deadline - agents.now()
            if remaining <= 0:
                self.timed_out = True
                return
            agents.wait(min(agents.config.poll.interval(polls), remaining), self._stop)
            if self._stop.is_set():
                return
