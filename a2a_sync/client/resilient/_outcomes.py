"""What an attempt's result means to :class:`~a2a_sync.client.ResilientA2AClient`.

Pure decisions, no I/O: whether a failed request may have reached the agent (then a
message is not resent unless the caller opted in), whether another agent may be tried
(L4), and what a settled task means for the caller — the completed task, or the typed
error of its state (L3).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import attrs

from ...a2a.types import Task, TaskState
from ...errors import (
    A2ASyncError,
    AllAgentsFailed,
    AuthRequired,
    Cancelled,
    ConfigurationError,
    ConnectError,
    HTTPStatusError,
    InputRequired,
    InvalidParams,
    InvalidRequest,
    OutcomeUnknown,
    ParseError,
    ProtocolError,
    RedirectRefused,
    ResponseTooLarge,
    RPCError,
    TaskCanceled,
    TaskError,
    TaskFailed,
    TaskNotFound,
    TaskRejected,
    TransportError,
)
from ._progress import NOT_PROCESSED_STATUSES

__all__ = [
    "NO_FALLBACK",
    "Recovery",
    "describe",
    "explain_rpc_error",
    "outcome_unknown",
    "should_fall_back",
    "task_outcome",
]

#: Errors that are intrinsic to the request or the caller: another agent would fail the
#: same way, so they are never a reason to fall back (seed: parse, signature, input).
NO_FALLBACK: Final = (
    ProtocolError,
    ConfigurationError,
    TaskError,
    OutcomeUnknown,
    InvalidParams,
    InvalidRequest,
    ParseError,
    Cancelled,
    ResponseTooLarge,
    RedirectRefused,
)


def outcome_unknown(exc: BaseException) -> bool:
    """Did the request fail after it may have reached the agent (its outcome is unknown)?"""
    if isinstance(exc, TransportError):
        return exc.outcome_unknown and not isinstance(exc, Cancelled)
    if isinstance(exc, HTTPStatusError):
        return exc.status_code >= 500 and exc.status_code not in NOT_PROCESSED_STATUSES
    return False


def should_fall_back(exc: BaseException, *, send: bool, resend: bool, task_bound: bool) -> bool:
    """L4: could a different agent plausibly succeed where this one failed?"""
    if isinstance(exc, NO_FALLBACK):
        return False
    if isinstance(exc, TaskNotFound):
        return task_bound  # unknown owner: the task may live on another agent
    if isinstance(exc, ConnectError):
        return True  # the request never left
    if send and not resend and outcome_unknown(exc):
        return False
    return isinstance(exc, (TransportError, HTTPStatusError, RPCError, AllAgentsFailed))


def task_outcome(task: Task) -> Task:
    """Map a settled task to the seed's outcomes: completed → the task, else an error."""
    state = task.state
    why = task.status.message.text if task.status.message is not None else ""
    if state is TaskState.completed:
        return task
    if state is TaskState.input_required:
        raise InputRequired(
            f"task {task.id} needs input: {why or 'the agent asked for input'}",
            task_id=task.id,
            prompt=why,
            task=task,
        )
    if state is TaskState.auth_required:
        raise AuthRequired(
            f"task {task.id} requires authentication" + (f": {why}" if why else ""),
            task_id=task.id,
            task=task,
        )
    error: type[TaskError] = {
        TaskState.failed: TaskFailed,
        TaskState.canceled: TaskCanceled,
        TaskState.rejected: TaskRejected,
    }.get(state, TaskFailed)
    raise error(
        f"task {task.id} {state.value}" + (f": {why}" if why else ""), task_id=task.id, task=task
    )


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
