"""Issue 18 item 3: concurrent durable task writes of one PostgreSQL worker share a commit.

A blocking send's task is written once, with its log, in one durable statement that also
notifies the task's channel; PostgreSQL serialises notifying commits until they are
flushed, so before, every such write waited for a WAL flush of its own (~1 per message).
Now writes arriving while one is in flight queue up and the next writer stores them all in
one statement (one transaction, one flush). These tests hold the first write at the door
so that others queue behind it, then check what the database holds, what each caller was
answered, and that one refused task undoes nobody else's.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from a2a_sync.errors import ConfigurationError, InternalError
from a2a_sync.types import TaskState
from tests.server.agents import WAIT
from tests.server.stores.test_stores import new_task, status
from tests.support.postgres import import_psycopg

psycopg = import_psycopg()  # without the postgres extra: skipped (a failure under CI=true)

from a2a_sync.server.stores import _pg_group  # noqa: E402 - needs psycopg
from a2a_sync.server.stores._pg_db import Database, StatementFailed  # noqa: E402
from a2a_sync.server.stores.postgres import PostgresTaskStore  # noqa: E402

Workers = Callable[[], PostgresTaskStore]
SINGLE = "a2a_create_logged"
MANY = "a2a_create_logged_many"


@pytest.fixture
def workers(postgres_dsn: str) -> Iterator[Workers]:
    with contextlib.ExitStack() as stack:

        def open_store() -> PostgresTaskStore:
            store = PostgresTaskStore(postgres_dsn)
            stack.callback(store.close)
            return store

        yield open_store


class Door:
    """Holds the first single write until ``open()``; counts writes queued behind it;
    records the creation statements run (they still run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.queued = threading.Semaphore(0)
        self.statements: list[tuple[str, int]] = []  # (name, tasks in it)
        self.fail_many: InternalError | None = None
        self._held = False
        real_exec, real_fetch = Database.execute_prepared, Database.fetch_prepared
        door = self

        def execute_prepared(db: Database, name: str, params: Any) -> int:
            if name == SINGLE:
                door.statements.append((name, 1))
                if not door._held:
                    door._held = True
                    door.entered.set()
                    assert door.release.wait(WAIT * 4)
            return real_exec(db, name, params)

        def fetch_prepared(db: Database, name: str, params: Any) -> Any:
            if name == MANY:
                door.statements.append((name, int.from_bytes(params[0][12:16], "big")))
                if door.fail_many is not None:
                    raise door.fail_many
            return real_fetch(db, name, params)

        real_wait = _pg_group._Waiter.wait

        def wait(waiter: Any) -> None:
            door.queued.release()
            real_wait(waiter)

        monkeypatch.setattr(Database, "execute_prepared", execute_prepared)
        monkeypatch.setattr(Database, "fetch_prepared", fetch_prepared)
        monkeypatch.setattr(_pg_group._Waiter, "wait", wait)


@pytest.fixture
def door(monkeypatch: pytest.MonkeyPatch) -> Door:
    return Door(monkeypatch)


def _complete_together(
    store: PostgresTaskStore, door: Door, first: str, rest: list[str]
) -> dict[str, Any]:
    """Complete ``first`` (held at the door), then ``rest`` while it is held; returns what
    each caller got (a StoredTask or the exception)."""
    results: dict[str, Any] = {}

    def complete(task_id: str) -> None:
        try:
            results[task_id] = store.append_event(task_id, status(task_id, TaskState.completed))
        except (InternalError, ConfigurationError) as exc:
            results[task_id] = exc

    threads = [threading.Thread(target=complete, args=(first,), name="test-first", daemon=True)]
    threads[0].start()
    try:
        assert door.entered.wait(WAIT)
        for task_id in rest:
            thread = threading.Thread(
                target=complete, args=(task_id,), name="test-next", daemon=True
            )
            threads.append(thread)
            thread.start()
        for _ in rest:
            assert door.queued.acquire(timeout=WAIT)  # all of them wait behind the first
    finally:
        door.release.set()
        for thread in threads:
            thread.join(WAIT * 4)
    assert not any(thread.is_alive() for thread in threads)
    return results


def _unreported(store: PostgresTaskStore, task_ids: list[str], principal: str = "p") -> None:
    for task_id in task_ids:
        store.create_unreported_task(new_task(task_id), principal=principal)
        store.append_event(task_id, status(task_id, TaskState.working))


def _sql(dsn: str, sql: str, *args: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        cursor = conn.execute(sql, args)
        return list(cursor.fetchall()) if cursor.description else []


def _stored(dsn: str, task_id: str) -> tuple[tuple[Any, ...] | None, list[int]]:
    rows = _sql(dsn, "SELECT state, seq, worker, principal FROM a2a_tasks WHERE id = %s", task_id)
    seqs = _sql(dsn, "SELECT seq FROM a2a_events WHERE task_id = %s ORDER BY seq", task_id)
    return (rows[0] if rows else None), [int(s) for (s,) in seqs]


def _refuse_principal(dsn: str, principal: str) -> None:
    _sql(
        dsn,
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS"
        " $$BEGIN RAISE EXCEPTION 'refused'; END$$",
    )
    _sql(
        dsn,
        "CREATE TRIGGER refuse BEFORE INSERT ON a2a_tasks FOR EACH ROW"
        f" WHEN (NEW.principal = '{principal}') EXECUTE FUNCTION refuse()",
    )


COMPLETED = (TaskState.completed.value, 3, None, "p")


def test_writes_queued_behind_one_in_flight_share_one_statement(
    workers: Workers, door: Door, postgres_dsn: str
) -> None:
    store = workers()
    rest = ["t1", "t2", "t3", "t4"]
    _unreported(store, ["t0", *rest])
    results = _complete_together(store, door, "t0", rest)
    assert door.statements == [(SINGLE, 1), (MANY, 4)]  # before: five single statements
    for task_id in ["t0", *rest]:
        assert results[task_id].seq == 3
        assert results[task_id].task.status.state is TaskState.completed
        assert _stored(postgres_dsn, task_id) == (COMPLETED, [1, 2, 3])
        stored = store.get_task(task_id, principal="p")
        assert stored is not None
        assert stored.seq == 3


def test_a_refused_task_in_a_group_undoes_nobody_elses_write(
    workers: Workers, door: Door, postgres_dsn: str
) -> None:
    """The grouped statement is rolled back whole; each task is then written alone, and
    only the refused one's caller gets the error (its task is forgotten)."""
    store = workers()  # (creates the tables)
    _refuse_principal(postgres_dsn, "refused")
    _unreported(store, ["t0", "t1"])
    _unreported(store, ["bad"], principal="refused")
    _unreported(store, ["t2"])
    results = _complete_together(store, door, "t0", ["t1", "bad", "t2"])
    assert door.statements[:2] == [(SINGLE, 1), (MANY, 3)]
    assert sorted(door.statements[2:]) == [(SINGLE, 1)] * 3  # each alone after the refusal
    assert isinstance(results["bad"], InternalError)
    assert _stored(postgres_dsn, "bad") == (None, [])
    assert store.get_task("bad", principal=None) is None
    for task_id in ["t0", "t1", "t2"]:
        assert results[task_id].task.status.state is TaskState.completed
        assert _stored(postgres_dsn, task_id) == (COMPLETED, [1, 2, 3])


def test_a_task_id_taken_in_the_database_fails_only_its_own_caller(
    workers: Workers, door: Door, postgres_dsn: str
) -> None:
    a, b = workers(), workers()
    b.create_task(new_task("dup"), principal="q")  # written by another worker already
    _unreported(a, ["t0", "t1", "dup", "t2"])
    results = _complete_together(a, door, "t0", ["t1", "dup", "t2"])
    assert door.statements == [(SINGLE, 1), (MANY, 3)]
    assert isinstance(results["dup"], ConfigurationError)
    assert _stored(postgres_dsn, "dup") == ((TaskState.submitted.value, 1, b.worker_id, "q"), [1])
    for task_id in ["t0", "t1", "t2"]:
        assert _stored(postgres_dsn, task_id) == (COMPLETED, [1, 2, 3])


def test_a_group_whose_outcome_is_unknown_fails_every_caller_and_retries_nothing(
    workers: Workers, door: Door, postgres_dsn: str
) -> None:
    """A lost connection (not a refusal): the statement may have committed, so nothing is
    written again; every caller of the group gets the error, as one caller did before."""
    store = workers()
    _unreported(store, ["t0", "t1", "t2"])
    door.fail_many = InternalError("task store statement failed")
    results = _complete_together(store, door, "t0", ["t1", "t2"])
    assert door.statements == [(SINGLE, 1), (MANY, 2)]
    assert results["t0"].task.status.state is TaskState.completed
    assert isinstance(results["t1"], InternalError)
    assert isinstance(results["t2"], InternalError)
    assert _stored(postgres_dsn, "t1") == (None, [])


def test_another_worker_hears_of_every_task_of_a_group(
    workers: Workers, door: Door, postgres_dsn: str
) -> None:
    """The grouped statement notifies each task's channel: b's followers of the ids (a
    resend waiting on a claim follows its task so) get all of their events."""
    a, b = workers(), workers()
    _unreported(a, ["t0", "t1", "t2"])
    with b.subscribe("t1", after_seq=0) as sub1, b.subscribe("t2", after_seq=0) as sub2:
        assert sub1.poll(0) == []
        assert sub2.poll(0) == []
        _complete_together(a, door, "t0", ["t1", "t2"])
        for sub in (sub1, sub2):
            seen: list[int] = []
            for _ in range(20):
                seen += [seq for seq, _ in sub.poll(WAIT)]
                if seen and seen[-1] == 3:
                    break
            assert seen == [1, 2, 3]
    assert door.statements == [(SINGLE, 1), (MANY, 2)]


def test_a_refusal_and_a_lost_connection_are_told_apart(
    workers: Workers, postgres_dsn: str
) -> None:
    """Only the server's error on a live connection is a refusal (rolled back for sure);
    a connection killed under the statement is an unknown outcome."""
    store = workers()
    db = store._db
    with pytest.raises(StatementFailed):
        db.execute_prepared("a2a_claim", (None, "m", "t", "w"))  # NOT NULL principal
    pids = [conn.pgconn.backend_pid for conn in db._parked]
    assert pids
    _sql(postgres_dsn, "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", pids)
    with pytest.raises(InternalError) as caught:
        db.execute_prepared("a2a_claim", ("p", "m", "t", "w"))
    assert not isinstance(caught.value, StatementFailed)


def test_concurrent_claims_share_one_statement_and_one_message_is_claimed_once(
    workers: Workers, monkeypatch: pytest.MonkeyPatch, postgres_dsn: str
) -> None:
    """Claims queued behind one in flight are inserted by one statement; of two
    deliveries of one message in that group exactly one claims it, the other is told the
    winner's task (this worker runs it), as when they came one after the other."""
    store = workers()
    entered, release, queued = threading.Event(), threading.Event(), threading.Semaphore(0)
    many: list[int] = []
    real_exec, real_fetch = Database.execute_prepared, Database.fetch_prepared

    def execute_prepared(db: Database, name: str, params: Any) -> int:
        if name == "a2a_claim" and params[1] == "m0":
            entered.set()
            assert release.wait(WAIT * 4)
        return real_exec(db, name, params)

    def fetch_prepared(db: Database, name: str, params: Any) -> Any:
        if name == "a2a_claim_many":
            many.append(int.from_bytes(params[0][12:16], "big"))
        return real_fetch(db, name, params)

    real_wait = _pg_group._Waiter.wait

    def wait(waiter: Any) -> None:
        queued.release()
        real_wait(waiter)

    monkeypatch.setattr(Database, "execute_prepared", execute_prepared)
    monkeypatch.setattr(Database, "fetch_prepared", fetch_prepared)
    monkeypatch.setattr(_pg_group._Waiter, "wait", wait)
    claims = [("m0", "t0"), ("m1", "t1"), ("dup", "t2"), ("dup", "t3"), ("m4", "t4")]
    results: dict[str, str | None] = {}

    def claim(message_id: str, task_id: str) -> None:
        results[task_id] = store.claim_message("p", message_id, task_id)

    threads = [
        threading.Thread(target=claim, args=pair, name="test-claim", daemon=True) for pair in claims
    ]
    threads[0].start()
    try:
        assert entered.wait(WAIT)
        for thread in threads[1:]:
            thread.start()
        for _ in threads[1:]:
            assert queued.acquire(timeout=WAIT)
    finally:
        release.set()
        for thread in threads:
            thread.join(WAIT * 4)
    assert not any(thread.is_alive() for thread in threads)
    assert many == [4]
    winner = "t2" if results["t2"] is None else "t3"
    loser = "t3" if winner == "t2" else "t2"
    assert results[loser] == winner
    assert {k: v for k, v in results.items() if k != loser} == dict.fromkeys(
        ["t0", "t1", "t4", winner]
    )
    stored = _sql(postgres_dsn, "SELECT message_id, task_id, worker FROM a2a_claims ORDER BY 1")
    assert stored == [
        ("dup", winner, store.worker_id),
        ("m0", "t0", store.worker_id),
        ("m1", "t1", store.worker_id),
        ("m4", "t4", store.worker_id),
    ]


def test_a_group_whose_writer_breaks_answers_every_caller_and_the_next_group_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not a database error (a bug in the writing code): the writer's caller gets it, the
    others of its group an InternalError (never a silent success), and the queue moves on."""
    entered, release, queued = threading.Event(), threading.Event(), threading.Semaphore(0)

    def one(item: str) -> str:
        if item == "first":
            entered.set()
            assert release.wait(WAIT * 4)
        return item.upper()

    def many(items: list[str]) -> list[str]:
        raise RuntimeError("broken")

    group: _pg_group.Group[str, str] = _pg_group.Group(one, many)
    real_wait = _pg_group._Waiter.wait

    def wait(waiter: Any) -> None:
        queued.release()
        real_wait(waiter)

    monkeypatch.setattr(_pg_group._Waiter, "wait", wait)
    results: dict[str, object] = {}

    def run(item: str) -> None:
        try:
            results[item] = group.run(item)
        except (InternalError, RuntimeError) as exc:
            results[item] = exc

    threads = [
        threading.Thread(target=run, args=(item,), name="test-run", daemon=True)
        for item in ("first", "a", "b")
    ]
    threads[0].start()
    try:
        assert entered.wait(WAIT)
        for thread in threads[1:]:
            thread.start()
        for _ in threads[1:]:
            assert queued.acquire(timeout=WAIT)
    finally:
        release.set()
        for thread in threads:
            thread.join(WAIT * 4)
    assert results["first"] == "FIRST"
    errors = [results["a"], results["b"]]
    assert sum(isinstance(e, RuntimeError) for e in errors) == 1  # the group's writer
    assert sum(type(e) is InternalError for e in errors) == 1  # the other one
    assert group.run("later") == "LATER"  # not stuck
