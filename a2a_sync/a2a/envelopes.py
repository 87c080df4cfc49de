"""How each revision wraps a send result or a stream item: which model a JSON object holds.

* **1.0**: a oneof by member: ``{"task": ...}`` / ``{"message": ...}`` for a send result,
  ``{"task"|"message"|"statusUpdate"|"artifactUpdate": ...}`` for a stream item (also the
  1.0 push-notification body).
* **0.3**: the object itself, tagged with ``kind`` (``task``, ``message``, ``status-update``,
  ``artifact-update``); untagged objects from hand-written agents are recognised by their
  members.

The codec (:mod:`a2a_sync.a2a.codec`) asks these functions which class to load, and where.
"""

from __future__ import annotations

from typing import Any, Final

from ..errors import ProtocolError
from .types import (
    Message,
    SendResult,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)

__all__ = ["member_v1", "send_result_class_v03", "send_result_v1", "stream_class_v03", "stream_v1"]

_STREAM_MEMBERS_V1: Final[dict[str, type[StreamEvent]]] = {
    "artifactUpdate": TaskArtifactUpdateEvent,
    "statusUpdate": TaskStatusUpdateEvent,
    "task": Task,
    "message": Message,
}
_STREAM_KEYS_V1: Final = {cls: key for key, cls in _STREAM_MEMBERS_V1.items()}
_KINDS_V03: Final[dict[str, type[StreamEvent]]] = {
    "artifact-update": TaskArtifactUpdateEvent,
    "status-update": TaskStatusUpdateEvent,
    "task": Task,
    "message": Message,
}


def member_v1(value: SendResult | StreamEvent) -> str:
    """The 1.0 member that carries ``value`` (``task``, ``message``, ``statusUpdate``...)."""
    return _STREAM_KEYS_V1[value.__class__]


def send_result_v1(obj: Any) -> tuple[str, type[SendResult]]:
    """The member of a 1.0 SendMessageResponse, and the class it holds.

    Raises:
        ProtocolError: Not exactly one of ``task``, ``message``.
    """
    if obj.__class__ is dict:
        if "task" in obj and "message" not in obj:
            return "task", Task
        if "message" in obj and "task" not in obj:
            return "message", Message
    raise ProtocolError(
        "invalid A2A 1.0 SendMessageResponse",
        details=["expected exactly one of task, message @ $"],
    )


def stream_v1(obj: Any) -> tuple[str, type[StreamEvent]]:
    """The member of a 1.0 StreamResponse, and the class it holds.

    Raises:
        ProtocolError: Not exactly one stream member.
    """
    member = None
    if obj.__class__ is dict:
        for key in obj:  # normally exactly one key
            if key in _STREAM_MEMBERS_V1:
                if member is not None:
                    member = None
                    break
                member = key
    if member is None:
        raise ProtocolError(
            "invalid A2A 1.0 StreamResponse",
            details=["expected exactly one of task, message, statusUpdate, artifactUpdate @ $"],
        )
    return member, _STREAM_MEMBERS_V1[member]


def send_result_class_v03(obj: Any) -> type[SendResult]:
    """Task or Message, as a 0.3 send result's ``kind`` says.

    Raises:
        ProtocolError: Neither.
    """
    cls = _kind_of(obj)
    if cls is Task:
        return Task
    if cls is Message:
        return Message
    raise ProtocolError(
        "invalid A2A 0.3 send result", details=['expected kind "task" or "message" @ $.kind']
    )


def stream_class_v03(obj: Any) -> type[StreamEvent]:
    """The class a 0.3 stream event's ``kind`` names.

    Raises:
        ProtocolError: No stream event kind.
    """
    cls = _kind_of(obj)
    if cls is None:
        raise ProtocolError(
            "invalid A2A 0.3 stream event",
            details=["expected kind task, message, status-update or artifact-update @ $.kind"],
        )
    return cls


def _kind_of(obj: Any) -> type[StreamEvent] | None:
    """The 0.3 class an object's ``kind`` names (inferred from members when untagged)."""
    if obj.__class__ is not dict:
        return None
    kind = obj.get("kind")
    if kind is not None:
        return _KINDS_V03.get(kind) if kind.__class__ is str else None
    # Untagged objects are not 0.3-conformant but come from hand-written agents.
    if "artifact" in obj:
        return TaskArtifactUpdateEvent
    if "status" in obj:
        return TaskStatusUpdateEvent if "taskId" in obj else Task
    return Message if "messageId" in obj else None
