"""What a stream's consumer usually wants: the answer's text as it arrives, and a
progress display while it runs.

``stream.text_chunks()`` and ``stream.progress()`` on :class:`~a2a_sync.client.TaskStream`
and :class:`~a2a_sync.client.ResilientTaskStream` are these functions::

    with client.stream_message("factor 360") as stream:
        for chunk in stream.text_chunks():
            print(chunk, end="", flush=True)
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator

from ..a2a.types import (
    Artifact,
    Message,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)

__all__ = ["progress", "text_chunks"]


class _Answer:
    """The text already given out per artifact, so snapshots and chunks are not doubled."""

    def __init__(self) -> None:
        self.sent: dict[str, str] = {}

    def artifact(self, artifact: Artifact, *, append: bool) -> str:
        before = self.sent.get(artifact.artifact_id)
        text = artifact.text
        if append and before is not None:
            self.sent[artifact.artifact_id] = before + text
            return text
        if before is not None and text.startswith(before):  # a snapshot of what was sent
            self.sent[artifact.artifact_id] = text
            return text[len(before) :]
        if not text:
            return ""
        separator = "\n" if any(self.sent.values()) and before is None else ""
        self.sent[artifact.artifact_id] = text
        return separator + text


def text_chunks(events: Iterable[StreamEvent]) -> Iterator[str]:
    """Yield the answer's text as it arrives: each artifact chunk's text (artifacts after
    the first start on a new line), the new text of a task snapshot, a direct reply's
    text. Joined, the chunks are the final ``Task.text`` for artifacts streamed in order.
    """
    answer = _Answer()
    for event in events:
        if isinstance(event, TaskArtifactUpdateEvent):
            text = answer.artifact(event.artifact, append=event.append)
        elif isinstance(event, Task):
            text = "".join(answer.artifact(a, append=False) for a in event.artifacts)
        elif isinstance(event, Message):
            text = event.text
        else:
            text = ""
        if text:
            yield text


def progress(
    events: Iterable[StreamEvent], description: str = "streaming"
) -> Iterator[StreamEvent]:
    """Yield ``events`` unchanged while a progress bar (``tqdm.auto``: a widget in a
    notebook, text in a terminal) shows their count and the task's state. Without tqdm
    (``pip install tqdm``), the events pass through with no display."""
    if importlib.util.find_spec("tqdm") is None:
        yield from events
        return
    from tqdm.auto import tqdm  # noqa: PLC0415 - optional, slow to import

    with tqdm(desc=description, unit=" events", leave=False) as bar:
        for event in events:
            if isinstance(event, (TaskStatusUpdateEvent, Task)):
                bar.set_description(event.status.state.value, refresh=False)
            bar.update(1)
            yield event
