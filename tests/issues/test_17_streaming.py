"""Issue 17 §4: streaming ergonomics a notebook user sees: ``.text`` on every event,
``stream.text_chunks()``, ``stream.progress()``, short reprs and notebook displays."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import pytest

from a2a_sync import A2AClient, ResilientA2AClient
from a2a_sync.testing import FakeAgent, agent_server
from a2a_sync.types import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
)

LONG = "a long answer " * 40


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    agent = FakeAgent()
    agent.on("report", chunks=["part 1, ", "part 2"])
    agent.on("long", chunks=[LONG])
    agent.on("hello", reply="hi there")
    agent.on("nope", state="failed", message="cannot do that")
    with agent_server(agent) as served:
        yield served


def test_every_event_has_text(url: str) -> None:
    with A2AClient.from_url(url) as client, client.stream_message("report") as stream:
        events = list(stream)
    kinds = {type(e) for e in events}
    assert {Task, TaskStatusUpdateEvent, TaskArtifactUpdateEvent} <= kinds
    chunks = [e.text for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert chunks == ["part 1, ", "part 2"]
    assert all(isinstance(e.text, str) for e in events)
    with A2AClient.from_url(url) as client, client.stream_message("nope") as stream:
        failed = [e for e in stream if isinstance(e, TaskStatusUpdateEvent)][-1]
    assert failed.text == "cannot do that"


@pytest.mark.parametrize("resilient", [False, True])
def test_text_chunks_give_the_answer_as_it_arrives(url: str, resilient: bool) -> None:
    plain = A2AClient.from_url(url)
    client: A2AClient | ResilientA2AClient = ResilientA2AClient(plain) if resilient else plain
    with client:
        with client.stream_message("report") as stream:
            chunks = list(stream.text_chunks())
            task = stream.get_final_result()
        assert chunks == ["part 1, ", "part 2"]
        assert "".join(chunks) == task.text
        with client.stream_message("hello") as stream:
            assert list(stream.text_chunks()) == ["hi there"]


def test_progress_passes_the_events_through_and_shows_the_state(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("tqdm")
    shown = io.StringIO()
    monkeypatch.setattr(sys, "stderr", shown)
    with A2AClient.from_url(url) as client:
        with client.stream_message("report") as stream:
            plain = [type(e) for e in stream]
        with client.stream_message("report") as stream:
            events = list(stream.progress())
    assert [type(e) for e in events] == plain
    assert "events" in shown.getvalue()


def test_reprs_are_short_and_a_completed_update_reads_as_done(url: str) -> None:
    with A2AClient.from_url(url) as client, client.stream_message("long") as stream:
        events = list(stream)
        task = stream.get_final_task()
    for item in [*events, task, *task.history, *task.artifacts]:
        assert len(repr(item)) <= 120, repr(item)
    last = [e for e in events if isinstance(e, TaskStatusUpdateEvent)][-1]
    assert "completed (terminal)" in repr(last)
    assert "final=False" not in repr(last)
    assert last.ends_stream
    artifact = next(e for e in events if isinstance(e, TaskArtifactUpdateEvent))
    assert repr(artifact).startswith(f"<TaskArtifactUpdateEvent task={task.id} ")
    assert "a long answer" in repr(artifact)


def test_events_display_as_markdown_in_a_notebook(url: str) -> None:
    with A2AClient.from_url(url) as client, client.stream_message("report") as stream:
        events = list(stream)
    for event in events:
        assert isinstance(event._repr_markdown_(), str)  # what Jupyter calls
    status = [e for e in events if isinstance(e, TaskStatusUpdateEvent)][-1]
    assert "completed" in status._repr_markdown_()
    chunk = next(e for e in events if isinstance(e, TaskArtifactUpdateEvent))
    assert chunk._repr_markdown_() == "part 1, "
    assert repr(Message.user("hi")) == "<Message user 'hi'>"
