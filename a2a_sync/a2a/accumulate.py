"""Fold A2A stream events into a task snapshot — the same rules on client and server.

A streamed task folded with :func:`accumulate` equals what ``GetTask`` returns for it,
because the server's task store applies events with this very function (and a2a-sdk's
``TaskManager`` applies the same rules): a status update moves the previous status
message into the history and replaces the status; an artifact update with ``append``
extends the artifact's parts, without it creates or replaces the artifact; a message
bound to the task is appended to the history.

A client may tolerate one deviation, because it cannot change meaning: an ``append``
chunk for an artifact the snapshot does not hold creates it (fasta2a behind pydantic-ai
sets ``append`` on the very first chunk; a resubscribe snapshot may lag the live stream).
The client asks for this by passing ``notes``: the deviation is logged at DEBUG and
recorded there, so it can confirm the result with ``GetTask`` (the snapshot may lack the
chunks before it). Without ``notes`` (the server's task stores, which apply their own
executors' events) such an append is refused.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs

from ..errors import ProtocolError
from .types import (
    Artifact,
    Message,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["accumulate", "apply_artifact"]

logger = logging.getLogger(__name__)


def accumulate(
    snapshot: Task | None, event: StreamEvent, *, notes: list[str] | None = None
) -> Task:
    """Return the snapshot after ``event`` (snapshots are immutable; this builds a new one).

    Args:
        snapshot: The task so far.
        event: The next stream event.
        notes: Tolerate an append to an unknown artifact and record it here (see the
            module doc); ``None`` refuses it.

    Raises:
        ProtocolError: The events arrive in an impossible order (an update before any
            task, an update for another task, without ``notes`` an append to an unknown
            artifact).
    """
    if isinstance(event, Task):
        return event
    if snapshot is None:
        raise ProtocolError(
            f"unexpected event order: {type(event).__name__} before the task it belongs to"
        )
    if isinstance(event, TaskStatusUpdateEvent):
        _check_task(snapshot, event.task_id)
        history = snapshot.history
        if snapshot.status.message is not None:
            history = [*history, snapshot.status.message]
        metadata = snapshot.metadata
        if event.metadata:
            metadata = {**(metadata or {}), **event.metadata}
        return _task_with(snapshot, snapshot.artifacts, event.status, history, metadata)
    if isinstance(event, TaskArtifactUpdateEvent):
        _check_task(snapshot, event.task_id)
        artifacts = apply_artifact(snapshot.artifacts, event, notes=notes)
        return _task_with(snapshot, artifacts, snapshot.status, snapshot.history, snapshot.metadata)
    if isinstance(event, Message):
        if event.task_id is not None and event.task_id != snapshot.id:
            raise ProtocolError(
                f"message for task {event.task_id!r} in the stream of {snapshot.id!r}"
            )
        history = list(snapshot.history)
        status = snapshot.status
        if status.message is not None:
            history.append(status.message)
            status = attrs.evolve(status, message=None)
        history.append(event)
        return attrs.evolve(snapshot, history=history, status=status)
    raise ProtocolError(f"unknown stream event {type(event).__name__}")  # pragma: no cover


def apply_artifact(
    artifacts: list[Artifact], event: TaskArtifactUpdateEvent, *, notes: list[str] | None = None
) -> list[Artifact]:
    """Return ``artifacts`` with one artifact-update event applied (with ``notes``, an
    ``append`` to an unknown artifact creates it and is recorded; without, it is refused)."""
    new = event.artifact
    for index, existing in enumerate(artifacts):
        if existing.artifact_id == new.artifact_id:
            if event.append:
                metadata = existing.metadata
                if new.metadata:
                    metadata = {**(metadata or {}), **new.metadata}
                merged = attrs.evolve(
                    existing, parts=[*existing.parts, *new.parts], metadata=metadata
                )
            else:
                merged = new
            return [*artifacts[:index], merged, *artifacts[index + 1 :]]
    if event.append:
        if notes is None:
            raise ProtocolError(
                f"append to artifact {new.artifact_id!r}, which was never created "
                "(the first chunk must not have append set)"
            )
        note = (
            f"task {event.task_id}: append to artifact {new.artifact_id!r}, which the "
            "snapshot does not hold; taken as its first chunk"
        )
        logger.debug("tolerated: %s", note)
        notes.append(note)
    return [*artifacts, new]


def _task_with(
    snapshot: Task,
    artifacts: list[Artifact],
    status: TaskStatus,
    history: list[Message],
    metadata: dict[str, Any] | None,
) -> Task:
    """``attrs.evolve(snapshot, ...)`` of the fields an event changes, at half the cost
    (a task store folds every event it stores; tests/a2a checks every field is copied)."""
    return Task(
        id=snapshot.id,
        status=status,
        context_id=snapshot.context_id,
        artifacts=artifacts,
        history=history,
        metadata=metadata,
    )


def _check_task(snapshot: Task, task_id: str) -> None:
    if task_id != snapshot.id:
        raise ProtocolError(f"update for task {task_id!r} in the stream of {snapshot.id!r}")
