"""Issue 18 item 2: the SQLite task path queues fewer writes per request.

A blocking send's task is created unreported (hidden until committed), so its events
before the final state are kept with the task's record and written by its next write (the
final state's, in one statement) instead of one queued write each; a request's claim and
context share one queued write. Failure isolation holds: a batch that runs again op by
op writes them again, and entries whose carrier failed are written on their own.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from pathlib import Path

import pytest

from a2a_sync.errors import InternalError
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.stores import SQLiteTaskStore, _sqlite_writer
from a2a_sync.server.stores._sqlite_writer import WriteOp
from a2a_sync.types import TaskState
from tests.issues.test_18_unreported_creation import Worker, _send, _writer_held
from tests.server.agents import WAIT, card
from tests.server.stores.test_stores import new_task, status


def _log(path: Path, task_id: str) -> list[int]:
    """The seqs of the task's log rows in the file (a fresh connection)."""
    with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db:
        rows = db.execute(
            "SELECT seq FROM a2a_events WHERE task_id = ? ORDER BY seq", (task_id,)
        ).fetchall()
    return [int(seq) for (seq,) in rows]


def _count(path: Path, sql: str) -> int:
    with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db:
        return int(db.execute(sql).fetchone()[0])


def test_a_blocking_send_queues_two_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Claim, and the final state carrying the creation (before: five, one per claim and
    event; then three, the creation queued on its own); the file has every log entry when
    the caller is answered."""
    monkeypatch.setattr(_sqlite_writer, "LINGER", WAIT * 6)  # the writer thread commits nothing
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    handler = DefaultRequestHandler(card(), Worker(), task_store=store, blocking_timeout=WAIT)
    queued: list[WriteOp] = []
    put = store._writer.put

    def counted(op: WriteOp) -> WriteOp:
        queued.append(op)
        return put(op)

    try:
        _send(handler, "warm up")
        store._writer.put = counted  # type: ignore[method-assign]
        store._claims._put = counted
        task = _send(handler, "work")
        store._writer.put = store._claims._put = put  # type: ignore[method-assign]
        assert task.status.state is TaskState.completed
        assert len(queued) == 2
        assert _log(path, task.id) == [1, 2, 3, 4]
        assert _count(path, "SELECT COUNT(*) FROM a2a_claims") == 2
    finally:
        assert handler.close(WAIT)
        store.close()


def test_events_kept_while_hidden_are_written_once_the_creation_is_committed(
    tmp_path: Path,
) -> None:
    """No final state yet: a reader commits the creation; the events kept meanwhile are
    then queued, in order, and published to a subscriber."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    try:
        with _writer_held(store) as release:
            store.create_unreported_task(new_task("t1"), principal="p")
            store.append_event("t1", status("t1", TaskState.working))
            store.append_event("t1", status("t1", TaskState.working, text="more"))
            release.set()
        stored = store.get_task("t1", principal="p")  # commits the creation
        assert stored is not None
        assert stored.seq == 3
        with store.subscribe("t1", after_seq=0) as sub:
            assert [seq for seq, _ in sub.poll(WAIT)] == [1, 2, 3]
        store._writer.flush()
        assert _log(path, "t1") == [1, 2, 3]
        store.append_event("t1", status("t1", TaskState.completed))
        assert _log(path, "t1") == [1, 2, 3, 4]
    finally:
        store.close()


def test_entries_whose_final_state_failed_are_written_on_their_own(tmp_path: Path) -> None:
    """The final state (carrying the kept events) is refused in the batch: it fails
    alone; the creation and the events before it still reach the file's log."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db, db:
        for verb in ("INSERT", "UPDATE"):
            db.execute(
                f"CREATE TRIGGER refuse_{verb} BEFORE {verb} ON a2a_tasks"
                " WHEN NEW.state = 'completed' BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        store.append_event("t1", status("t1", TaskState.working))
        store.append_event("t1", status("t1", TaskState.working, text="more"))
        with pytest.raises(InternalError):
            store.append_event("t1", status("t1", TaskState.completed))
        store._writer.flush()
        assert _log(path, "t1") == [1, 2, 3]
        served = store.get_task("t1", principal=None)
        assert served is not None
        assert served.seq == 3
    finally:
        store.close()


def test_claims_sharing_a_write_survive_a_batch_that_runs_again(tmp_path: Path) -> None:
    """Another write of the batch fails: the batch runs again op by op, and the shared
    claim-and-context write writes both rows again (the first run was rolled back)."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))

    def refused(db: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("refused")

    try:
        with _writer_held(store):
            assert store.claim_message("p", "m1", "t1") is None
            store.bind_context("c1", "p")
            failing = store._writer.put(WriteOp(refused, wait=True))
            store.bind_context("c2", "p")  # (queued after the shared write: rides with it)
        with pytest.raises(InternalError):
            failing.wait()
        store._writer.flush()
        assert _count(path, "SELECT COUNT(*) FROM a2a_claims") == 1
        assert _count(path, "SELECT COUNT(*) FROM a2a_contexts") == 2
    finally:
        store.close()
    with SQLiteTaskStore(str(path)) as again:
        assert again.claim_message("p", "m1", "t2") == "t1"


def test_a_kept_event_never_overtakes_the_creation(tmp_path: Path) -> None:
    """Events appended from another thread while the creation's commit runs are written
    after it, in seq order, with nothing lost."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        appender = threading.Thread(
            target=lambda: [
                store.append_event("t1", status("t1", TaskState.working, text=str(i)))
                for i in range(50)
            ],
            name="test-appender",
            daemon=True,
        )
        appender.start()
        assert store.get_task("t1", principal="p") is not None
        appender.join(WAIT)
        store.append_event("t1", status("t1", TaskState.completed))
        assert _log(path, "t1") == list(range(1, 53))
    finally:
        store.close()
