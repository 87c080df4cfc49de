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

__all__ = ["AnswerText", "progress", "text_chunks"]


class AnswerText:
    """Turns events into the answer's new text, once: it remembers what each artifact
    already gave, so a task snapshot after chunks (or chunks after a snapshot) adds only
    what is new."""

    def __init__(self) -> None:
        self._sent: dict[str, str] = {}

    def new_text(self, event: StreamEvent) -> str:
        """The text ``event`` adds to the answer (``""`` for status updates)."""
        if isinstance(event, TaskArtifactUpdateEvent):
            return self._artifact(event.artifact, append=event.append)
        if isinstance(event, Task):
            return "".join(self._artifact(a, append=False) for a in event.artifacts)
        if isinstance(event, Message):
            return event.text
        return ""

    def _artifact(self, artifact: Artifact, *, append: bool) -> str:
        before = self._sent.get(artifact.artifact_id)
        text = artifact.text
        if append and before is not None:
            self._sent[artifact.artifact_id] = before + text
            return text
        if before is not None and text.startswith(before):  # a snapshot of what was sent
            self._sent[artifact.artifact_id] = text
            return text[len(before) :]
        if not text:
            return ""
        separator = "\n" if before is None and any(self._sent.values()) else ""
        self._sent[artifact.artifact_id] = text
        return separator + text


def text_chunks(events: Iterable[StreamEvent]) -> Iterator[str]:
    """Yield the answer's text as it arrives: each artifact chunk's text (artifacts after
    the first start on a new line), the new text of a task snapshot, a direct reply's
    text. Joined, the chunks are the final ``Task.text`` for artifacts streamed in order.
    """
    answer = AnswerText()
    for event in events:
        text = answer.new_text(event)
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
