"""Issue 18.2: the SQLite writer runs a batch without a savepoint per op (two statements
each) and only when an op fails runs it again with savepoints, so the failing op still
fails alone; and a caller waiting for its write commits the queue on its own thread."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_sync.errors import InternalError
from a2a_sync.server.stores import _sqlite_writer
from a2a_sync.server.stores._sqlite_writer import BatchWriter, WriteOp


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[tuple[BatchWriter, list[str], str]]:
    path = str(tmp_path / "w.db")
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    writer = BatchWriter(db)
    try:
        yield writer, statements, path
    finally:
        writer.close(10)


def _insert(key: str) -> WriteOp:
    def apply(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO t (k) VALUES (?)", (key,))

    return WriteOp(apply, wait=True)


def _rows(path: str) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [k for (k,) in db.execute("SELECT k FROM t ORDER BY k")]


def _queue_behind_a_held_op(writer: BatchWriter, ops: list[WriteOp]) -> None:
    """Queue ``ops`` while the writer is busy, so they form one batch."""
    started, release = threading.Event(), threading.Event()

    def hold(db: sqlite3.Connection) -> None:
        started.set()
        assert release.wait(30)

    held = writer.put(WriteOp(hold, wait=True))
    assert started.wait(30)
    for op in ops:
        writer.put(op)
    release.set()
    held.wait()


def test_a_batch_commits_once_without_savepoints(
    traced: tuple[BatchWriter, list[str], str],
) -> None:
    writer, statements, path = traced
    ops = [_insert(f"k{i}") for i in range(5)]
    _queue_behind_a_held_op(writer, ops)
    for op in ops:
        op.wait()
    begin = max(i for i, s in enumerate(statements) if s == "BEGIN")
    batch = statements[begin:]
    assert batch.count("COMMIT") == 1
    assert not [s for s in batch if "SAVEPOINT" in s]  # old code: one per op
    assert _rows(path) == [f"k{i}" for i in range(5)]


def test_a_failing_op_in_a_batch_fails_alone(traced: tuple[BatchWriter, list[str], str]) -> None:
    writer, statements, path = traced
    ops = [_insert("a"), _insert("b"), _insert("a"), _insert("c")]  # the second "a" fails
    _queue_behind_a_held_op(writer, ops)
    for i, op in enumerate(ops):
        if i == 2:
            with pytest.raises(InternalError):
                op.wait()
        else:
            op.wait()
    assert _rows(path) == ["a", "b", "c"]
    assert "ROLLBACK" in statements  # the plain run was undone, then run with savepoints
    assert "ROLLBACK TO op" in statements


def test_a_waited_write_is_committed_on_the_callers_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No hand-off to the writer thread and back for a durable write: the waiting caller
    commits the queue itself, the fire-and-forget op queued before it included."""
    monkeypatch.setattr(_sqlite_writer, "LINGER", 30.0)  # the writer thread would wait
    path = str(tmp_path / "w.db")
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
    commits: list[str] = []
    db.set_trace_callback(
        lambda sql: commits.append(threading.current_thread().name) if sql == "COMMIT" else None
    )
    writer = BatchWriter(db)
    try:

        def forget(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO t (k) VALUES ('x')")

        writer.put(WriteOp(forget, wait=False))
        writer.put(_insert("y")).wait()
        assert commits == [threading.current_thread().name]  # old code: the writer thread
        assert _rows(path) == ["x", "y"]
    finally:
        assert writer.close(10)
    assert not writer.alive
