"""What an attempt's result means to :class:`~a2a_sync.client.ResilientA2AClient`.

Pure decisions, no I/O: whether a failed request may have reached the agent (then a
message is not resent unless the caller opted in), how long to wait before sending a
message again (L1), whether another agent may be tried (L4), and what a settled task
means for the caller — the completed task, or the typed error of its state (L3).
"""

from __future__ import annotations

from typing import Final

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
from ...policies import ResilienceConfig
from ._progress import NOT_PROCESSED_STATUSES, resumable

__all__ = [
    "NO_FALLBACK",
    "outcome_unknown",
    "resend_delay",
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


def resend_delay(
    config: ResilienceConfig, exc: A2ASyncError, *, resend: bool, sends: int
) -> float | None:
    """L1 for messages: the wait before sending a message again after ``sends``
    attempts failed with ``exc``, or ``None`` when it must not be sent again.

    "Not processed" answers (429, 503) allow it always; failures after which the
    agent may have acted only with ``resend`` (the caller opted in). The budget is
    ``max_transport_retries``; a ``Retry-After`` beyond ``retry_after_max`` ends it.
    """
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
