"""Encoding what a store writes, refusing text that is not Unicode on the caller's thread.

Internal to the durable stores. An event is encoded by the thread appending it, before the
store changes anything: an agent that produces a lone surrogate (``"\\ud800"``) gets an
error for its own append, and no other caller's write is affected.
"""

from __future__ import annotations

from typing import Any

from ..._net.json_text import compact_tree
from ..._net.unicode import find_surrogate
from ...a2a.codec import V1_0
from ...a2a.types import StreamEvent, Task
from ...errors import InternalError

__all__ = ["dumped_event", "event_blob", "task_blob", "task_wire_blob"]


def event_blob(event: StreamEvent) -> bytes:
    """``event`` as stored (its A2A 1.0 StreamResponse JSON, UTF-8).

    Raises:
        InternalError: A string in the event is not Unicode text; nothing was stored.
    """
    return _blob(V1_0.dump_stream_event(event), event)


def dumped_event(event: StreamEvent) -> tuple[dict[str, Any], bytes]:
    """``event``'s wire (``V1_0.dump_stream_event``) and :func:`event_blob`.

    Raises:
        InternalError: A string in the event is not Unicode text; nothing was stored.
    """
    wire = V1_0.dump_stream_event(event)
    return wire, _blob(wire, event)


def task_wire_blob(wire: Any, task: Task) -> bytes:
    """A task snapshot already dumped (``wire``, as ``V1_0.dump_task(task)``) as stored.

    Raises:
        InternalError: A string in the task is not Unicode text; nothing was stored.
    """
    return _blob(wire, task)


def task_blob(task: Task) -> bytes:
    """A task snapshot as stored (A2A 1.0 JSON, UTF-8).

    Raises:
        InternalError: A string in the task is not Unicode text; nothing was stored.
    """
    return _blob(V1_0.dump_task(task), task)


def _blob(wire: Any, event: StreamEvent) -> bytes:
    try:
        return compact_tree(wire).encode("utf-8")
    except UnicodeEncodeError as exc:
        path = find_surrogate(wire) or "$"
        raise InternalError(
            f"task store: cannot store the event of task {_task_id(event)!r}: {path} is"
            " not valid Unicode text (a lone surrogate); the agent must produce UTF-8 text"
        ) from exc


def _task_id(event: StreamEvent) -> str:
    """The task an event belongs to (escaped if it is not Unicode text itself)."""
    task_id = getattr(event, "id", None) or getattr(event, "task_id", None) or ""
    return str(task_id).encode("utf-8", "backslashreplace").decode("utf-8")
