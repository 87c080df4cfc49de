"""Issue 18 item 2, third step: the SQLite task path writes less and encodes once.

A blocking send's creation is kept with its task's record (nothing queued) and rides in
the task's next durable write, or is queued by whoever looks first; task and conversation
ids are time-ordered UUIDs (v7), so a new task's rows land on each index's last page; the
stores encode JSON with one encoder built once (the same text as the wire codec).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_sync._net.json_text import compact_tree as _json_text
from a2a_sync._net.jsonrpc import encode
from a2a_sync.a2a.accumulate import accumulate
from a2a_sync.a2a.codec import V1_0
from a2a_sync.errors import InternalError
from a2a_sync.server import _ids
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.stores import SQLiteTaskStore
from a2a_sync.server.stores._encode import event_blob, task_blob
from a2a_sync.server.stores._sqlite_schema import SNAPSHOT_EVERY
from a2a_sync.server.stores._sqlite_wires import Wires
from a2a_sync.types import (
    Artifact,
    ListTasksParams,
    Message,
    Part,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.issues.test_18_unreported_creation import Worker, _row, _send
from tests.server.agents import WAIT, card
from tests.server.stores.test_stores import T0, new_task, status


def _queued(store: SQLiteTaskStore) -> int:
    return len(store._writer._queue)


def _log(path: Path, task_id: str) -> list[int]:
    with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db:
        rows = db.execute(
            "SELECT seq FROM a2a_events WHERE task_id = ? ORDER BY seq", (task_id,)
        ).fetchall()
    return [int(seq) for (seq,) in rows]


# -- ids ---------------------------------------------------------------------------------------


def test_new_id_is_a_version_7_uuid_holding_the_millisecond(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Canonical text, version 7, RFC variant; the first 48 bits are the Unix time in ms,
    the rest random (74 bits): ids of one millisecond differ, later ones sort after."""
    now = [1_767_000_000_123_456_789]
    monkeypatch.setattr(_ids.time, "time_ns", lambda: now[0])
    same_ms = {_ids.new_id() for _ in range(1000)}
    assert len(same_ms) == 1000
    for text in same_ms:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 7
        assert parsed.variant == uuid.RFC_4122
        assert parsed.int >> 80 == now[0] // 1_000_000
    now[0] += 1_000_000  # one millisecond later
    later = _ids.new_id()
    assert all(later > earlier for earlier in same_ms)


def test_a_new_task_and_conversation_get_time_ordered_ids(tmp_path: Path) -> None:
    store = SQLiteTaskStore(str(tmp_path / "t.db"))
    handler = DefaultRequestHandler(card(), Worker(), task_store=store, blocking_timeout=WAIT)
    try:
        task = _send(handler, "work")
        assert task.context_id is not None
        assert uuid.UUID(task.id).version == 7
        assert uuid.UUID(task.context_id).version == 7
    finally:
        assert handler.close(WAIT)
        store.close()


# -- the encoder -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wire",
    [
        {"a": "é ü ☃ 😀", "b": [1, 2.5, -0.0, 1e300, True, False, None], "c": {}},
        {"nested": {"list": [{"x": '\u2028"\\/\n\t'}], "empty": []}},
        ["top", "level", 3],
        "just text",
    ],
)
def test_the_store_encoder_writes_the_wire_codecs_text(wire: Any) -> None:
    assert _json_text(wire).encode("utf-8") == encode(wire)


def test_the_store_encoder_refuses_what_the_wire_codec_refuses() -> None:
    for bad in ({"x": math.nan}, {"x": math.inf}):
        with pytest.raises(ValueError, match="not JSON compliant"):
            _json_text(bad)
    with pytest.raises(TypeError, match="not JSON serializable"):
        _json_text({"x": object()})
    event = TaskStatusUpdateEvent(
        task_id="t1",
        context_id="c1",
        status=new_task().status,
        metadata={"bad": "\ud800"},
    )
    with pytest.raises(InternalError, match="lone surrogate"):
        event_blob(event)


# -- the unreported creation is kept, not queued --------------------------------------------------


def test_an_unreported_creation_and_its_events_queue_nothing_until_the_final_state(
    tmp_path: Path,
) -> None:
    """Creation and working event are kept with the record (old: the creation was queued
    at once); the final state writes them all in one op, one commit."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        store.append_event("t1", status("t1", TaskState.working))
        assert _queued(store) == 0
        assert _row(path, "t1") is None
        done = store.append_event("t1", status("t1", TaskState.completed))
        assert done.seq == 3
        assert _row(path, "t1") == (TaskState.completed.value, 3)
        assert _log(path, "t1") == [1, 2, 3]
        with store.subscribe("t1", after_seq=0) as sub:
            assert [seq for seq, _ in sub.poll(WAIT)] == [1, 2, 3]
    finally:
        store.close()


def test_a_long_unreported_run_gets_its_creation_written_meanwhile(tmp_path: Path) -> None:
    """After SNAPSHOT_EVERY kept events the creation (with them) is queued: a long blocking
    run does not keep everything for its last write."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        for i in range(SNAPSHOT_EVERY - 2):
            store.append_event("t1", status("t1", TaskState.working, text=str(i)))
        assert _queued(store) == 0
        store.append_event("t1", status("t1", TaskState.working, text="last kept"))
        assert _queued(store) == 1
        store._writer.flush()
        assert _row(path, "t1") == (TaskState.submitted.value, 1)  # the log has the rest
        assert _log(path, "t1") == list(range(1, SNAPSHOT_EVERY + 1))
        store.append_event("t1", status("t1", TaskState.completed))
        assert _row(path, "t1") == (TaskState.completed.value, SNAPSHOT_EVERY + 1)
    finally:
        store.close()


def test_listing_commits_kept_creations_first(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        listed = store.list_tasks(ListTasksParams(), principal="p")
        assert [t.id for t in listed.tasks] == ["t1"]
        assert _row(path, "t1") == (TaskState.submitted.value, 1)
    finally:
        store.close()


def test_closing_writes_kept_creations_which_the_next_start_fails(tmp_path: Path) -> None:
    """A blocking run still going when the store closes: its creation and events reach
    the file (as when they were queued at once), and the next start fails the task."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    store.create_unreported_task(new_task("t1"), principal="p")
    store.append_event("t1", status("t1", TaskState.working))
    store.close()
    assert _log(path, "t1") == [1, 2]
    with SQLiteTaskStore(str(path)) as again:
        stored = again.get_task("t1", principal="p")
        assert stored is not None
        assert stored.task.status.state is TaskState.failed


def test_a_reader_waits_for_a_final_state_that_carries_the_creation(tmp_path: Path) -> None:
    """The final state's op, queued, carries the creation: a reader commits that op (no
    second creation write) and sees the completed task."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    statements: list[str] = []
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        record = store._cache.peek("t1")
        assert record is not None
        with store._lock:  # queue the final state as append_event does, without waiting
            final = status("t1", TaskState.completed)
            op = store._enqueue_event(
                record,
                accumulate(record.task, final),
                2,
                event_blob(final),
                wait=True,
                snapshot=True,
            )
        assert record.creation is op
        store._writer._db.set_trace_callback(statements.append)
        seen = store.get_task("t1", principal="p")
        store._writer._db.set_trace_callback(None)
        assert seen is not None  # (the final event itself is published by its appender)
        assert statements.count("COMMIT") == 1
        assert sum(s.startswith("INSERT INTO a2a_tasks") for s in statements) == 1
        assert _row(path, "t1") == (TaskState.completed.value, 2)
        assert not record.hidden
    finally:
        store.close()


def test_a_message_bound_to_a_kept_task_rides_too(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        store.append_event("t1", Message.agent("thinking", task_id="t1", context_id="c1"))
        assert _queued(store) == 0
        store.append_event("t1", status("t1", TaskState.input_required))
        assert _log(path, "t1") == [1, 2, 3]
        assert _row(path, "t1") == (TaskState.input_required.value, 3)
    finally:
        store.close()


# -- snapshots built from the events' wires -------------------------------------------------------

_STATES = [TaskState.working, TaskState.input_required, TaskState.auth_required]


def _event(kind: int, n: int, task: Task) -> StreamEvent:
    """One event for ``task`` (kinds: status, status with a message, status with
    metadata, new artifact, replaced artifact, appended chunk, message)."""
    text = f"e{n} ☃"
    if kind <= 2:
        message = Message.agent(text, task_id=task.id, context_id="c1") if kind == 1 else None
        return TaskStatusUpdateEvent(
            task_id=task.id,
            context_id="c1",
            status=TaskStatus(state=_STATES[n % 3], message=message, timestamp=T0),
            metadata={"n": n} if kind == 2 else None,
        )
    if kind <= 5:
        known = [a.artifact_id for a in task.artifacts]
        artifact_id = known[n % len(known)] if kind > 3 and known else f"a{n}"
        return TaskArtifactUpdateEvent(
            task_id=task.id,
            context_id="c1",
            artifact=Artifact(artifact_id=artifact_id, parts=[Part.from_text(text)]),
            append=kind == 5 and artifact_id in known,
        )
    return Message.agent(text, task_id=task.id, context_id="c1")


@settings(max_examples=150, deadline=None)
@given(
    kinds=st.lists(st.integers(min_value=0, max_value=6), max_size=12),
    prune_at=st.sets(st.integers(min_value=0, max_value=12)),
    context=st.booleans(),
)
def test_a_snapshot_built_from_event_wires_is_the_codecs_text(
    kinds: list[int], prune_at: set[int], context: bool
) -> None:
    """Byte for byte ``V1_0.dump_task`` (encoded), after every event, whether or not
    earlier snapshots pruned the noted wires; the creation's snapshot (not pruning) too."""
    created = new_task("t1")
    if not context:
        created = Task(id="t1", status=created.status, history=created.history)
    wires = Wires()
    wires.note(created, V1_0.dump_stream_event(created))
    task = created
    for n, kind in enumerate(kinds):
        event = _event(kind, n, task)
        wires.note(event, V1_0.dump_stream_event(event))
        task = accumulate(task, event)
        if n in prune_at:
            assert encode(wires.snapshot(task)) == encode(V1_0.dump_task(task))
        assert encode(wires.snapshot(created, prune=False)) == encode(V1_0.dump_task(created))
    assert encode(wires.snapshot(task)) == encode(V1_0.dump_task(task))


def test_the_files_snapshot_is_the_codecs_text(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    handler = DefaultRequestHandler(card(), Worker(), task_store=store, blocking_timeout=WAIT)
    try:
        task = _send(handler, "work")
        with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db:
            (blob,) = db.execute(
                "SELECT snapshot FROM a2a_tasks WHERE id = ?", (task.id,)
            ).fetchone()
        assert blob == task_blob(task)
    finally:
        assert handler.close(WAIT)
        store.close()
