"""How ``a2a-sync`` prints: human text or JSON documents on stdout, a progress display on
stderr that never garbles streamed text."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import IO, Any

from ..a2a.card_codec import dump_card
from ..a2a.codec import V1_0
from ..a2a.types import AgentCard, Message, Task, TaskStatusUpdateEvent
from ..client.chunks import AnswerText
from ..client.display import progress_bar

__all__ = ["Output", "StreamPrinter", "dump", "print_after_stream", "print_result"]


class Output:
    """Where and how results are printed (human text, or one JSON document per result)."""

    def __init__(self, as_json: bool, stream: IO[str] | None = None) -> None:
        self.as_json = as_json
        self.stream = stream if stream is not None else sys.stdout

    def json(self, value: Any) -> None:
        self.stream.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
        self.stream.flush()

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def text(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


def dump(value: Any) -> Any:
    """The A2A 1.0 JSON of a card, task, message or stream event."""
    if isinstance(value, AgentCard):
        return dump_card(value)
    if isinstance(value, (Task, Message)):
        return V1_0.dump(value)
    return V1_0.dump_stream_event(value)


def print_result(result: Any, out: Output) -> None:
    if out.as_json:
        out.json(dump(result))
        return
    if isinstance(result, Message):
        out.line(result.text)
        return
    out.line(f"task {result.id}: {result.state.value}")
    text = result.text
    if text:
        out.line(text)


def print_after_stream(result: Any, out: Output) -> None:
    """The answer was printed as it streamed; end with the outcome only."""
    if out.as_json:
        return
    if isinstance(result, Message):
        out.line(result.text)
        return
    out.line()
    out.line(f"task {result.id}: {result.state.value}")
    if result.is_interrupted and result.status.message is not None:
        out.line(result.status.message.text)


class StreamPrinter:
    """Prints a stream: one ``StreamResponse`` JSON object per line, or the answer's text
    as it arrives (a task snapshot first replays the text the task already has).

    The progress display (stderr, terminals only) shows the task's state until the
    answer starts, then clears itself: a bar redrawn between text chunks on the same
    terminal would garble them.
    """

    def __init__(self, out: Output, description: str = "streaming") -> None:
        self.out = out
        self.task_id: str | None = None
        self._answer = AnswerText()
        self._bar = None if out.as_json else progress_bar(None, description)

    def show(self, events: Iterator[Any]) -> None:
        try:
            for event in events:
                self._show(event)
        finally:
            self._close_bar()

    def _show(self, event: Any) -> None:
        self.task_id = (
            self.task_id
            or getattr(event, "task_id", None)
            or (event.id if isinstance(event, Task) else None)
        )
        if self.out.as_json:  # one A2A 1.0 StreamResponse per line: {"task": ...} ...
            self.out.line(json.dumps(V1_0.dump_stream_event(event), ensure_ascii=False))
            return
        if isinstance(event, Message):
            return  # a direct reply is printed with the outcome
        text = self._answer.new_text(event)
        if text:
            self._close_bar()
            self.out.text(text)
        elif self._bar is not None:
            if isinstance(event, (Task, TaskStatusUpdateEvent)):
                self._bar.set_description(event.status.state.value)
            self._bar.update(1)

    def _close_bar(self) -> None:
        if self._bar is not None:
            self._bar.close()  # leave=False: the line is cleared
            self._bar = None
