"""Issue 18.1/18.2: the SQLite store appends a streamed event as one log row instead of
rewriting the task's whole, growing snapshot for every event; the snapshot row is written
at creation, at final states and every SNAPSHOT_EVERY events, and every read folds the
log after it. These tests check the file's contents and that nothing a reader or a
restart sees changes."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.server.stores import SQLiteTaskStore
from a2a_sync.server.stores._sqlite_schema import SNAPSHOT_EVERY
from a2a_sync.types import ListTasksParams, TaskState
from tests.server.stores.test_stores import chunk, new_task, status

CHUNKS = 150  # more than two snapshot intervals


def _row(path: Path, task_id: str) -> tuple[str, int, int]:
    """(state, snapshot seq, log length) as the file holds them."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        state, seq = db.execute(
            "SELECT state, seq FROM a2a_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        (events,) = db.execute(
            "SELECT count(*) FROM a2a_events WHERE task_id = ?", (task_id,)
        ).fetchone()
    return str(state), int(seq), int(events)


def _stream(store: SQLiteTaskStore, task_id: str = "t1") -> None:
    store.create_task(new_task(task_id), principal="p")
    store.append_event(task_id, status(task_id, TaskState.working))
    for i in range(CHUNKS):
        store.append_event(task_id, chunk(task_id, f"{i};", append=i > 0))


def test_a_streamed_event_does_not_rewrite_the_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteTaskStore(str(path))
    with store:
        _stream(store)
        store._writer.flush()  # every log row committed (no snapshot written by this)
        _, saved, events = _row(path, "t1")
        assert events == CHUNKS + 2
        # Old code: the snapshot followed every event (saved == events).
        assert saved < events
        assert events - saved < SNAPSHOT_EVERY
        # A reader of the store sees every event at once ...
        stored = store.get_task("t1", principal="p")
        assert stored is not None
        assert stored.seq == CHUNKS + 2
        assert stored.task.artifacts[0].text == "".join(f"{i};" for i in range(CHUNKS))
        # ... and a listing (read from the file) the current snapshot.
        listed = store.list_tasks(ListTasksParams(), principal="p").tasks
        assert listed == [stored.task]
        assert _row(path, "t1")[1] == events
        store.append_event("t1", status("t1", TaskState.completed))
        assert _row(path, "t1") == (TaskState.completed.value, events + 1, events + 1)


def test_a_crash_mid_stream_keeps_every_committed_event_and_fails_the_task(
    tmp_path: Path,
) -> None:
    """The process dies with the snapshot behind the log: reopening folds the log onto
    it, finds the task running (its agent is gone) and fails it after the last event."""
    path = tmp_path / "crash.db"
    script = textwrap.dedent(
        f"""
        import os
        from a2a_sync.server.stores import SQLiteTaskStore
        from tests.issues.test_18_sqlite_snapshots import _stream
        store = SQLiteTaskStore({str(path)!r})
        _stream(store)
        store._writer.flush()
        os._exit(0)  # no close(): the snapshot row lags the log
        """
    )
    subprocess.run(
        [sys.executable, "-c", script], check=True, cwd=Path(__file__).parents[2], timeout=60
    )
    _, saved, events = _row(path, "t1")
    assert saved < events == CHUNKS + 2
    with SQLiteTaskStore(str(path)) as store:
        stored = store.get_task("t1", principal="p")
        assert stored is not None
        assert stored.task.status.state is TaskState.failed
        assert stored.seq == CHUNKS + 3
        assert stored.task.artifacts[0].text == "".join(f"{i};" for i in range(CHUNKS))
        assert [seq for seq, _ in store.events_after("t1", 0)] == list(range(1, CHUNKS + 4))
    assert _row(path, "t1") == (TaskState.failed.value, CHUNKS + 3, CHUNKS + 3)


def test_an_evicted_task_with_a_lagging_snapshot_is_written_then_read_back(
    tmp_path: Path,
) -> None:
    path = tmp_path / "evict.db"
    store = SQLiteTaskStore(str(path), cache_size=1)
    with store:
        _stream(store, "t1")
        for i in range(2, 6):  # push t1 out of the cache
            store.create_task(new_task(f"t{i}"), principal="p")
        store._writer.flush()
        for i in range(2, 6):
            store.get_task(f"t{i}", principal="p")
        store._writer.flush()
        assert "t1" not in store._cache
        assert _row(path, "t1")[1] == CHUNKS + 2  # written before it left
        store.append_event("t1", chunk("t1", "end", append=True, last=True))
        stored = store.get_task("t1", principal="p")
        assert stored is not None
        assert stored.seq == CHUNKS + 3
        assert stored.task.artifacts[0].text.endswith("149;end")


def test_creating_a_task_that_is_only_in_the_file_is_refused(tmp_path: Path) -> None:
    """The existence check moved from a lookup before every creation into the write."""
    path = str(tmp_path / "dup.db")
    with SQLiteTaskStore(path) as store:
        store.create_task(new_task("t1"), principal="p")
        store.append_event("t1", status("t1", TaskState.completed))
    with SQLiteTaskStore(path) as store:
        with pytest.raises(ConfigurationError, match="exists already"):
            store.create_task(new_task("t1"), principal="p")
        stored = store.get_task("t1", principal="p")
        assert stored is not None
        assert stored.task.status.state is TaskState.completed
        store.create_task(new_task("t2"), principal="p")  # the store goes on
        assert store.get_task("t2", principal="p") is not None
