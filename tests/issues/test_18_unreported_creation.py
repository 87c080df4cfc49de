"""Issue 18 item 2: the run of a blocking send (nobody learns of its task before the final
state but through a store read) creates the task *unreported*; SQLite then commits the
creation together with the final state, one durable commit per request instead of two.

The durability rule holds: nobody is told of the task before its creation is committed
(every read commits it first; subscribers hear nothing before), a creation whose write
fails is never reported and fails no other write, and a crash loses no acknowledged state.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_sync.a2a.methods import Operation
from a2a_sync.errors import InternalError
from a2a_sync.server.auth import Principal
from a2a_sync.server.context import CallContext
from a2a_sync.server.events import LogEntry
from a2a_sync.server.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.stores import SQLiteTaskStore, TaskStore, _sqlite_claims, _sqlite_writer
from a2a_sync.server.stores._sqlite_writer import WriteOp
from a2a_sync.types import Message, SendMessageConfiguration, SendMessageParams, Task, TaskState
from tests.server.agents import WAIT, card
from tests.server.stores.test_durability import Medium, medium  # noqa: F401 - fixture
from tests.server.stores.test_stores import new_task, status

CALL = CallContext(principal=Principal("alice"))


def _row(path: Path | str, task_id: str) -> tuple[str, int] | None:
    """The task's row as the file holds it (a fresh connection: what survives a crash)."""
    with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db:
        row = db.execute("SELECT state, seq FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()
    return None if row is None else (str(row[0]), int(row[1]))


@contextlib.contextmanager
def _writer_held(store: SQLiteTaskStore) -> Iterator[threading.Event]:
    """Keep the store's writer busy inside a batch (its commit lock held) until the
    yielded event is set: nothing queued meanwhile can be committed."""
    started, release = threading.Event(), threading.Event()

    def hold(db: sqlite3.Connection) -> None:
        started.set()
        assert release.wait(WAIT * 6)

    store._writer.put(WriteOp(hold, wait=False))
    assert started.wait(WAIT)
    try:
        yield release
    finally:
        release.set()


class Worker(AgentExecutor):
    """Works, adds an artifact and completes; with text "wait", completes only once
    ``release`` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.working = threading.Event()

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        updater.start_work()
        updater.add_artifact("done", name="out", last_chunk=True)
        if context.text == "wait":
            self.working.set()
            assert self.release.wait(WAIT)
        updater.complete()


def _send(handler: DefaultRequestHandler, text: str, **config: object) -> Task:
    configuration = SendMessageConfiguration(**config) if config else None  # type: ignore[arg-type]
    message = Message.user(text, message_id="m-" + text)
    params = SendMessageParams(message=message, configuration=configuration)
    result = handler.dispatch(Operation.SEND_MESSAGE, params, CALL)
    assert isinstance(result, Task)
    return result


def test_a_blocking_send_commits_its_task_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Creation and final state share one commit (before: two); the answer is durable."""
    monkeypatch.setattr(_sqlite_writer, "LINGER", WAIT * 6)  # the writer thread commits nothing
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    statements: list[str] = []
    handler = DefaultRequestHandler(card(), Worker(), task_store=store, blocking_timeout=WAIT)
    try:
        _send(handler, "warm up")
        store._writer._db.set_trace_callback(statements.append)
        task = _send(handler, "work")
        store._writer._db.set_trace_callback(None)
        assert task.status.state is TaskState.completed
        assert statements.count("COMMIT") == 1  # (old: the creation's commit, then the final)
        # ... and the task's row is written once, by the final state (the creation's row,
        # superseded in the same transaction, is skipped).
        assert sum(s.startswith("INSERT INTO a2a_tasks") for s in statements) == 1
        assert _row(path, task.id) == (TaskState.completed.value, 4)  # durable when answered
    finally:
        assert handler.close(WAIT)
        store.close()


def test_a_caller_answered_before_the_final_state_gets_a_durable_task(tmp_path: Path) -> None:
    """The blocking timeout passes while the agent works: the answer reads the task, which
    commits its creation first; the file has the task when the caller is answered."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    agent = Worker()
    handler = DefaultRequestHandler(card(), agent, task_store=store, blocking_timeout=0.2)
    try:
        task = _send(handler, "wait")
        assert task.status.state is TaskState.working
        assert _row(path, task.id) is not None
    finally:
        agent.release.set()
        assert handler.close(WAIT)
        store.close()
    assert _row(path, task.id) == (TaskState.completed.value, 4)


def test_a_resend_answered_at_once_gets_a_durable_task(tmp_path: Path) -> None:
    """The same message sent again with returnImmediately while its first (blocking)
    delivery runs: the answer is the task, read (so committed) before it is sent."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    agent = Worker()
    handler = DefaultRequestHandler(card(), agent, task_store=store, blocking_timeout=WAIT)
    first: list[Task] = []
    sender = threading.Thread(
        target=lambda: first.append(_send(handler, "wait")), name="test-sender", daemon=True
    )
    try:
        sender.start()
        assert agent.working.wait(WAIT)
        again = _send(handler, "wait", return_immediately=True)
        assert again.status.state is TaskState.working
        assert _row(path, again.id) is not None
    finally:
        agent.release.set()
        sender.join(WAIT)
        assert handler.close(WAIT)
        store.close()
    assert first[0].id == again.id
    assert first[0].status.state is TaskState.completed


def test_reads_commit_an_unreported_creation_before_showing_it(tmp_path: Path) -> None:
    """While the creation waits in the queue, nothing of the task is in the file; a reader
    and a subscriber that look meanwhile get it only once it is committed."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    looking = threading.Event()
    commit_through = store._writer.commit_through

    def noted(op: WriteOp) -> bool:  # a reader reached the commit (and waits for the lock)
        looking.set()
        return commit_through(op)

    store._writer.commit_through = noted  # type: ignore[method-assign]
    seen: dict[str, tuple[object, tuple[str, int] | None]] = {}

    def read() -> None:
        stored = store.get_task("t1", principal="p")
        seen["get"] = (stored, _row(path, "t1"))

    def follow() -> None:
        with store.subscribe("t1", after_seq=0) as sub:
            entries: list[LogEntry] = sub.poll(WAIT)
            seen["sub"] = ([seq for seq, _ in entries], _row(path, "t1"))

    try:
        with _writer_held(store) as release:
            store.create_unreported_task(new_task("t1"), principal="p")  # returns at once
            store.append_event("t1", status("t1", TaskState.working))
            assert _row(path, "t1") is None
            readers = [
                threading.Thread(target=target, name=f"test-{target.__name__}", daemon=True)
                for target in (read, follow)
            ]
            for thread in readers:
                thread.start()
            assert looking.wait(WAIT)
            release.set()
            for thread in readers:
                thread.join(WAIT)
        stored, row = seen["get"]
        assert stored is not None
        assert row == (TaskState.submitted.value, 1)
        assert seen["sub"][1] == (TaskState.submitted.value, 1)
        assert seen["sub"][0] in ([1, 2], [1])  # (2 is not durable: it may come later)
    finally:
        store.close()


def test_an_unreported_creation_that_fails_is_never_reported(tmp_path: Path) -> None:
    """The creation's write fails in the batch (its log slot taken behind the store's
    back): its final state fails, nobody sees the task, and another task committed in
    the same batch is durable."""
    path = tmp_path / "t.db"
    store = SQLiteTaskStore(str(path))
    with contextlib.closing(sqlite3.connect(str(path), timeout=10)) as db, db:
        db.execute("INSERT INTO a2a_events (task_id, seq, event) VALUES ('t1', 1, '{}')")
    try:
        store.create_unreported_task(new_task("t1"), principal="p")
        with contextlib.suppress(InternalError):  # (refused once the failure is known)
            store.append_event("t1", status("t1", TaskState.working))
        other = store.create_task(new_task("t2"), principal="p")  # commits t1's write too
        with pytest.raises(InternalError):
            store.append_event("t1", status("t1", TaskState.completed))
        assert store.events_after("t1", 0) == []
        with store.subscribe("t1", after_seq=0) as sub:
            assert sub.poll(0) == []
        assert store.get_task("t1", principal=None) is None  # (and forgotten: the file's word)
        assert store.get_task("t2", principal=None) == other
    finally:
        store.close()
    assert _row(path, "t1") is None
    assert _row(path, "t2") == (TaskState.submitted.value, 1)


def test_a_creation_whose_final_state_fails_in_its_batch_keeps_its_row(tmp_path: Path) -> None:
    """The final state's write is refused inside the transaction that also holds the
    creation: the batch runs again op by op, and the creation (now unsuperseded) writes
    its own row, so the task that readers are then shown is in the file."""
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
        with pytest.raises(InternalError):
            store.append_event("t1", status("t1", TaskState.completed))
        served = store.get_task("t1", principal=None)
        assert served is not None
        assert served.task.status.state is TaskState.working
        assert _row(path, "t1") == (TaskState.submitted.value, 1)  # the log has the rest
    finally:
        store.close()


def test_the_unreported_creation_contract_on_every_store(medium: Medium) -> None:  # noqa: F811
    """Created unreported, then completed: read back as completed, durable on the medium.
    A read makes the creation durable first; PostgreSQL writes nothing before (the task
    is kept in the worker until its final state or a read)."""
    store: TaskStore = medium.store
    store.create_unreported_task(new_task("t0"), principal="p")
    store.append_event("t0", status("t0", TaskState.working))
    if medium.kind == "postgres":
        assert medium.durable_states(["t0"]) == {}
    assert store.get_task("t0", principal="p") is not None
    durable = medium.durable_states(["t0"])["t0"]
    assert durable in {TaskState.submitted.value, TaskState.working.value}
    created = store.create_unreported_task(new_task("t1"), principal="p")
    assert created.seq == 1
    store.append_event("t1", status("t1", TaskState.working))
    done = store.append_event("t1", status("t1", TaskState.completed))
    assert done.seq == 3
    served = store.get_task("t1", principal="p")
    assert served is not None
    assert served.task.status.state is TaskState.completed
    assert [seq for seq, _ in store.events_after("t1", 0)] == [1, 2, 3]
    store.close()
    assert medium.durable_states(["t1"]) == {"t1": TaskState.completed.value}


def test_a_crash_loses_no_acknowledged_state_of_unreported_tasks(tmp_path: Path) -> None:
    """kill -9 while a task created unreported is still working: every task acknowledged
    completed is completed in the file; the unfinished one is absent or failed on open."""
    path = tmp_path / "crash.db"
    script = textwrap.dedent(
        f"""
        import threading
        from a2a_sync.server.stores import SQLiteTaskStore
        from a2a_sync.types import TaskState
        from tests.server.stores.test_stores import new_task, status
        store = SQLiteTaskStore({str(path)!r})
        for i in range(30):
            tid = f"t{{i}}"
            store.create_unreported_task(new_task(tid), principal="p")
            store.append_event(tid, status(tid, TaskState.working))
            store.append_event(tid, status(tid, TaskState.completed))
            print(tid, flush=True)
        store.create_unreported_task(new_task("last"), principal="p")
        store.append_event("last", status("last", TaskState.working))
        print("hang", flush=True)
        threading.Event().wait(60)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=Path(__file__).parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    acknowledged = []
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() == "hang":
                break
            acknowledged.append(line.strip())
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(WAIT * 6)
        if child.stdout is not None:
            child.stdout.close()
    assert acknowledged == [f"t{i}" for i in range(30)]
    with SQLiteTaskStore(str(path)) as store:
        for task_id in acknowledged:
            stored = store.get_task(task_id, principal="p")
            assert stored is not None
            assert stored.task.status.state is TaskState.completed
        last = store.get_task("last", principal="p")
        assert last is None or last.task.status.state is TaskState.failed


def test_claims_are_known_without_a_lookup_only_while_all_fit_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new message id needs no file lookup while the cache holds every claim of the file
    (loaded on opening); once one was forgotten, older claims are found in the file."""
    monkeypatch.setattr(_sqlite_claims, "CLAIM_CACHE_SIZE", 2)
    path = str(tmp_path / "t.db")
    with SQLiteTaskStore(path) as store:
        assert store.claim_message("p", "m1", "t1") is None
    # Loaded on opening: m1 is known, m2 is new without a lookup.
    with contextlib.closing(SQLiteTaskStore(path)) as store:
        statements: list[str] = []
        store._reader_db.set_trace_callback(statements.append)
        assert store.claim_message("p", "m1", "t-again") == "t1"
        assert store.claim_message("p", "m2", "t2") is None
        assert statements == []
        assert store.claim_message("p", "m3", "t3") is None  # m1 forgotten now
        assert store.claim_message("p", "m1", "t-again") == "t1"  # read from the file
        assert len(statements) == 1
    for row in range(3):
        with contextlib.closing(sqlite3.connect(path)) as db, db:
            db.execute("INSERT INTO a2a_claims VALUES ('p', ?, 't')", (f"x{row}",))
    # More claims than fit: every new id is looked up.
    with contextlib.closing(SQLiteTaskStore(path)) as store:
        statements = []
        store._reader_db.set_trace_callback(statements.append)
        assert store.claim_message("p", "m9", "t9") is None
        assert store.claim_message("p", "m2", "t-again") == "t2"
        assert len(statements) == 2


@pytest.mark.slow
def test_the_store_benchmark_runs() -> None:
    """``benchmarks.a2a_server --stores`` (the figures of decisions §15) runs: it had lost
    its memory-store server in a merge. Not timed: only that every variant ran."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.a2a_server", "--stores", "--reps", "1", "--n", "20"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(root)},
        cwd=root,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "server CPU sqlite-task / mem-task" in done.stdout
