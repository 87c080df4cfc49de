"""A task snapshot's wire built from the wires of its events, instead of dumped again.

Internal to :mod:`a2a_sync.server.stores.sqlite`. Each event is dumped when it is stored
(its log entry); a snapshot holds the very objects those events brought (``accumulate``
keeps them: the history's messages, the artifacts, the status), so dumping the snapshot
would dump each of them a second time. A task's record notes the wire of each such part,
by object, and the snapshot's wire is assembled from them; a part not noted (an artifact
merged from appended chunks, a task read back from the file) is dumped on its own. The
result is ``V1_0.dump_task(task)``, key for key (tests compare the text byte for byte).
"""

from __future__ import annotations

from typing import Any

from ...a2a.codec import V1_0
from ...a2a.types import (
    Message,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)

__all__ = ["Wires"]


class Wires:
    """The noted wires of one task's parts (used under the store's lock). An entry holds
    its object, so the object's ``id`` cannot be reused while it is noted."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[int, tuple[object, Any]] = {}

    def note(self, event: StreamEvent, wire: dict[str, Any]) -> None:
        """Note the parts of ``event``, dumped as ``wire`` (its A2A 1.0 StreamResponse)."""
        if isinstance(event, TaskStatusUpdateEvent):
            self._status(event.status, wire["statusUpdate"]["status"])
        elif isinstance(event, TaskArtifactUpdateEvent):
            if not event.append:  # (an appended chunk is merged into a new artifact)
                self._put(event.artifact, wire["artifactUpdate"]["artifact"])
        elif isinstance(event, Message):
            self._put(event, wire["message"])
        else:
            body = wire["task"]
            self._status(event.status, body["status"])
            for parts, wires in (
                (event.artifacts, body.get("artifacts", ())),
                (event.history, body.get("history", ())),
            ):
                if len(parts) == len(wires):  # (else they are dumped when needed)
                    for part, part_wire in zip(parts, wires, strict=True):
                        self._put(part, part_wire)

    def snapshot(self, task: Task, *, prune: bool = True) -> dict[str, Any]:
        """``V1_0.dump_task(task)``, from the noted wires. With ``prune`` (``task`` is the
        latest snapshot), only the parts it holds stay noted."""
        if task.metadata is not None:  # (merged from events: dumped whole)
            self._known = {}
            return V1_0.dump_task(task)
        known = self._known
        kept: dict[int, tuple[object, Any]] = {}

        def wire(part: object) -> Any:
            entry = known.get(id(part))
            dumped = entry[1] if entry is not None and entry[0] is part else V1_0.dump(part)
            kept[id(part)] = (part, dumped)
            return dumped

        out: dict[str, Any] = {"id": task.id, "status": wire(task.status)}
        if task.context_id is not None:
            out["contextId"] = task.context_id
        if task.artifacts:
            out["artifacts"] = [wire(artifact) for artifact in task.artifacts]
        if task.history:
            out["history"] = [wire(message) for message in task.history]
        if prune:
            message = task.status.message  # (the next status update moves it to history)
            if message is not None:
                self._put(message, out["status"]["message"], kept)
            self._known = kept
        else:
            known.update(kept)
        return out

    def _status(self, status: TaskStatus, wire: dict[str, Any]) -> None:
        self._put(status, wire)
        if status.message is not None:
            self._put(status.message, wire["message"])

    def _put(
        self, part: object, wire: Any, into: dict[int, tuple[object, Any]] | None = None
    ) -> None:
        (self._known if into is None else into)[id(part)] = (part, wire)
