"""Folding stream events into a task snapshot (the rules a2a-sdk's task store applies too;
the peer interop tests check the folded task against GetTask)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_sync.a2a.accumulate import accumulate, apply_artifact
from a2a_sync.errors import ProtocolError
from a2a_sync.types import (
    Artifact,
    Message,
    Part,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

QUESTION = Message.agent("which city?", message_id="q1", task_id="t1")
TASK = Task(
    id="t1",
    context_id="c1",
    status=TaskStatus(state=TaskState.submitted),
    history=[Message.user("hi", message_id="u1", task_id="t1")],
)


def status(state: TaskState, message: Message | None = None, **kw: object) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(
        task_id="t1",
        context_id="c1",
        status=TaskStatus(state=state, message=message),
        **kw,  # type: ignore[arg-type]
    )


def piece(
    text: str, *, artifact_id: str = "a1", append: bool = False, last: bool = False, **kw: object
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id="t1",
        context_id="c1",
        artifact=Artifact(artifact_id=artifact_id, parts=[Part.from_text(text)], **kw),  # type: ignore[arg-type]
        append=append,
        last_chunk=last,
    )


def fold(*events: StreamEvent, start: Task | None = TASK) -> Task:
    snapshot = start
    for event in events:
        snapshot = accumulate(snapshot, event)
    assert snapshot is not None
    return snapshot


def test_a_task_event_replaces_the_snapshot() -> None:
    newer = Task(id="t1", status=TaskStatus(state=TaskState.working))
    assert accumulate(TASK, newer) is newer
    assert accumulate(None, TASK) is TASK


def test_status_update_replaces_status_and_keeps_the_old_message_in_history() -> None:
    asked = fold(status(TaskState.input_required, QUESTION))
    assert asked.status.state is TaskState.input_required
    assert asked.history == TASK.history
    done = fold(status(TaskState.completed), start=asked)
    assert done.status.state is TaskState.completed
    assert done.history == [*TASK.history, QUESTION]


def test_status_update_metadata_merges_into_the_task() -> None:
    start = Task(id="t1", status=TaskStatus(state=TaskState.working), metadata={"a": 1, "b": 1})
    folded = fold(status(TaskState.working, metadata={"b": 2, "c": 3}), start=start)
    assert folded.metadata == {"a": 1, "b": 2, "c": 3}


def test_chunks_with_append_extend_one_artifact() -> None:
    folded = fold(
        piece("Hel"),
        piece("lo, ", append=True),
        piece("world", append=True, last=True),
        status(TaskState.completed),
    )
    (artifact,) = folded.artifacts
    assert artifact.text == "Hello, world"
    assert len(artifact.parts) == 3


def test_an_update_without_append_replaces_the_artifact_in_place() -> None:
    folded = fold(piece("first", artifact_id="a1"), piece("other", artifact_id="a2"), piece("new"))
    assert [(a.artifact_id, a.text) for a in folded.artifacts] == [("a1", "new"), ("a2", "other")]


def test_append_merges_artifact_metadata() -> None:
    folded = fold(piece("x", metadata={"a": 1}), piece("y", append=True, metadata={"b": 2}))
    assert folded.artifacts[0].metadata == {"a": 1, "b": 2}


def test_message_for_the_task_goes_to_history_after_the_status_message() -> None:
    answer = Message.user("Paris", message_id="u2", task_id="t1")
    folded = fold(status(TaskState.input_required, QUESTION), answer)
    assert folded.history == [*TASK.history, QUESTION, answer]
    assert folded.status.message is None
    unbound = Message.user("no task id", message_id="u3")
    assert fold(unbound).history[-1] == unbound


def test_folding_never_changes_earlier_snapshots() -> None:
    before = fold(piece("a"))
    parts_before = list(before.artifacts[0].parts)
    after = fold(piece("b", append=True), status(TaskState.completed, QUESTION), start=before)
    assert before.artifacts[0].parts == parts_before
    assert before.status.state is TaskState.submitted
    assert after is not before


OTHER_STATUS = TaskStatusUpdateEvent(
    task_id="t2", context_id="c1", status=TaskStatus(state=TaskState.working)
)
OTHER_ARTIFACT = TaskArtifactUpdateEvent(
    task_id="t2", context_id="c1", artifact=Artifact(artifact_id="a")
)


@pytest.mark.parametrize(
    ("start", "event"),
    [
        (None, status(TaskState.working)),
        (None, piece("x")),
        (TASK, OTHER_STATUS),
        (TASK, OTHER_ARTIFACT),
        (TASK, Message.agent("x", message_id="m", task_id="t2")),
        (TASK, piece("never created", append=True)),
    ],
    ids=[
        "status-first",
        "artifact-first",
        "status-other-task",
        "artifact-other-task",
        "message-other-task",
        "append-unknown",
    ],
)
def test_impossible_orders_are_protocol_errors(start: Task | None, event: StreamEvent) -> None:
    with pytest.raises(ProtocolError):
        accumulate(start, event)


def test_a_client_collecting_notes_takes_an_unknown_append_as_the_first_chunk() -> None:
    notes: list[str] = []
    folded = accumulate(TASK, piece("first", append=True), notes=notes)
    assert [a.artifact_id for a in folded.artifacts] == ["a1"]
    assert folded.artifacts[0].parts == piece("first").artifact.parts
    assert len(notes) == 1
    assert "'a1'" in notes[0]
    assert "first chunk" in notes[0]


def test_apply_artifact_keeps_order_and_leaves_the_input_alone() -> None:
    artifacts = [Artifact(artifact_id="a"), Artifact(artifact_id="b")]
    updated = apply_artifact(artifacts, piece("x", artifact_id="c"))
    assert [a.artifact_id for a in updated] == ["a", "b", "c"]
    assert [a.artifact_id for a in artifacts] == ["a", "b"]


@given(
    text=st.text(min_size=1, max_size=60),
    cuts=st.lists(st.integers(min_value=1, max_value=59), max_size=10, unique=True),
)
def test_any_chunking_folds_back_to_the_whole_text(text: str, cuts: list[int]) -> None:
    bounds = [0, *sorted(c for c in cuts if c < len(text)), len(text)]
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    events = [piece(p, append=i > 0, last=i == len(pieces) - 1) for i, p in enumerate(pieces)]
    assert fold(*events).artifacts[0].text == text
