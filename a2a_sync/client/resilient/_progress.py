"""Which events move a delivered task forward: the diff and repeat filter of resumed streams.

Pure functions and a small per-subscription filter, used by
:class:`~a2a_sync.client.resilient.stream.ResilientTaskStream` after a reconnect or a poll.
Comparison is by position, not by content: an agent view whose artifact is a prefix of
the delivered one is behind (already seen), one that extends it contributes only its new
parts. The one content rule is :class:`ReplayFilter`'s, for the repeats a2a-sdk 1.3 sends
right after a subscription's snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import attrs

from ...a2a.types import (
    Artifact,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from ...errors import (
    Cancelled,
    HTTPStatusError,
    RedirectRefused,
    ResponseTooLarge,
    TransportError,
)

__all__ = [
    "NOT_PROCESSED_STATUSES",
    "ReplayFilter",
    "diff_events",
    "lagging_append",
    "resumable",
    "same_progress",
    "settled",
]

logger = logging.getLogger(__name__)

#: Statuses with which an agent says it did not process the request at all.
NOT_PROCESSED_STATUSES: Final = frozenset({429, 503})


def settled(task: Task) -> bool:
    """Terminal or interrupted: the task will not change until the client acts."""
    return task.is_terminal or task.is_interrupted


def diff_events(previous: Task | None, current: Task) -> list[StreamEvent]:
    """The events that move what was delivered (``previous``) forward to ``current``.

    Used after a resubscribe or a poll, so a consumer never sees an event twice: a new
    artifact comes as an artifact update, an artifact that grew as an ``append`` chunk of
    just the new parts, a replaced one as a replacement, and a changed status as a status
    update. Whatever ``current`` is behind on (an artifact that is a prefix of the
    delivered one, an older status) yields nothing. Once the task is settled, artifact
    updates carry ``last_chunk``.
    """
    if previous is None:
        return [current]
    events: list[StreamEvent] = []
    context_id = current.context_id or previous.context_id or ""
    done = settled(current)
    seen = {artifact.artifact_id: artifact for artifact in previous.artifacts}
    for artifact in current.artifacts:
        before = seen.get(artifact.artifact_id)
        if before == artifact:
            continue
        if before is not None and _is_prefix(before.parts, artifact.parts):
            if len(artifact.parts) == len(before.parts):
                continue  # same parts, other names or metadata: nothing new to read
            chunk: Artifact = attrs.evolve(artifact, parts=artifact.parts[len(before.parts) :])
            events.append(
                TaskArtifactUpdateEvent(
                    task_id=current.id,
                    context_id=context_id,
                    artifact=chunk,
                    append=True,
                    last_chunk=done,
                )
            )
        elif before is not None and _is_prefix(artifact.parts, before.parts):
            continue  # behind what was delivered: already seen
        else:
            events.append(
                TaskArtifactUpdateEvent(
                    task_id=current.id, context_id=context_id, artifact=artifact, last_chunk=done
                )
            )
    if current.status != previous.status and not _status_behind(current.status, previous.status):
        events.append(
            TaskStatusUpdateEvent(
                task_id=current.id, context_id=context_id, status=current.status, final=done
            )
        )
    return events


def lagging_append(view: Task | None, delivered: Task | None, update: StreamEvent) -> str | None:
    """The artifact an append is for, when the subscription's snapshot (``view``) lacks it
    but the consumer has seen it: the snapshot is older than its stream, which then
    cannot be folded onto it. ``None`` otherwise."""
    if not isinstance(update, TaskArtifactUpdateEvent) or not update.append:
        return None
    artifact_id = update.artifact.artifact_id
    in_view = view is not None and any(a.artifact_id == artifact_id for a in view.artifacts)
    seen = delivered is not None and any(a.artifact_id == artifact_id for a in delivered.artifacts)
    return artifact_id if seen and not in_view else None


def _is_prefix(shorter: Sequence[Any], longer: Sequence[Any]) -> bool:
    return len(shorter) <= len(longer) and list(longer[: len(shorter)]) == list(shorter)


def _status_behind(status: TaskStatus, delivered: TaskStatus) -> bool:
    """True if ``status`` is older than what was delivered (a replayed status)."""
    if status.timestamp is not None and delivered.timestamp is not None:
        return status.timestamp < delivered.timestamp
    if delivered.state.is_terminal:
        return True  # nothing follows a terminal state
    return status.state is TaskState.submitted and delivered.state is not TaskState.submitted


def same_progress(a: Task, b: Task) -> bool:
    return a.status == b.status and a.artifacts == b.artifacts


def resumable(exc: BaseException) -> bool:
    """Stream failures after which re-establishing the stream can help."""
    if isinstance(exc, TransportError):
        return not isinstance(exc, (Cancelled, ResponseTooLarge, RedirectRefused))
    return isinstance(exc, HTTPStatusError) and (
        exc.status_code >= 500 or exc.status_code in NOT_PROCESSED_STATUSES
    )


class ReplayFilter:
    """Drops the updates a subscription repeats from its own first-event snapshot.

    a2a-sdk 1.3 attaches a subscriber to the task's event queue *before* it reads the
    snapshot it sends first, so updates applied in between arrive twice: in the snapshot
    and right after it (verified with a fast "chunks" task). Such repeats are exactly the
    snapshot's latest parts of an artifact, in order, ending where the snapshot ends. The
    filter holds appends while they match a run of the snapshot's parts; a run that
    reaches the snapshot's end is dropped as a repeat, anything else releases what was held
    (in order) and the filter steps aside. The snapshot's status repeated is dropped too.

    Not thread-safe: one per subscription, fed by the thread consuming it.
    """

    def __init__(self, snapshot: Task) -> None:
        self._parts = {a.artifact_id: a.parts for a in snapshot.artifacts}
        self._status = snapshot.status
        self._held: list[StreamEvent] = []
        self._artifact: str | None = None
        self._ends: set[int] = set()  # where the held run may end in the snapshot's parts
        self._open = bool(self._parts)

    def feed(self, event: StreamEvent) -> list[StreamEvent]:
        """The events to pass on now (possibly none while a possible repeat is held)."""
        if not self._open:
            return [event]
        if isinstance(event, TaskStatusUpdateEvent) and event.status == self._status:
            return []  # the snapshot's own status (timestamp included) again
        if (
            isinstance(event, TaskArtifactUpdateEvent)
            and event.append
            and event.artifact.artifact_id in self._parts
            and self._artifact in (None, event.artifact.artifact_id)
        ):
            parts = self._parts[event.artifact.artifact_id]
            chunk = event.artifact.parts
            starts = self._ends if self._held else set(range(len(parts) - len(chunk) + 1))
            ends = {s + len(chunk) for s in starts if parts[s : s + len(chunk)] == chunk}
            if len(parts) in ends:
                logger.debug(
                    "dropping %d update(s) repeated from the snapshot", len(self._held) + 1
                )
                self._held.clear()
                self._open = False
                return []
            if ends:
                self._held.append(event)
                self._artifact = event.artifact.artifact_id
                self._ends = ends
                return []
        return [*self.flush(), event]

    def flush(self) -> list[StreamEvent]:
        """Release whatever is held; the filter steps aside."""
        held, self._held = self._held, []
        self._open = False
        return held
