"""Issue 18 item 3: what a SendMessage costs the PostgreSQL task store, in statements.

A blocking SendMessage answered with a completed Task drives the store through a claim,
the task's creation, three appends (working, artifact, completed) and the final read of
the task. Each statement is a round trip and a transaction on the database; the final
read of a terminal task needs none, since a terminal task never changes again. These
tests count the statements through the store's own connection layer (the calls go
through to the real database) and check that reads still see another worker's writes
wherever the task may still change.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from a2a_sync.types import TaskState
from tests.server.stores.test_stores import chunk, new_task, status
from tests.support.postgres import import_psycopg

import_psycopg()  # without the postgres extra: skipped (a failure under CI=true)

from a2a_sync.server.stores._pg_db import Database  # noqa: E402 - needs psycopg
from a2a_sync.server.stores._pg_tasks import SNAPSHOT_INTERVAL  # noqa: E402
from a2a_sync.server.stores.postgres import PostgresTaskStore  # noqa: E402

Workers = Callable[[], PostgresTaskStore]


@pytest.fixture
def workers(postgres_dsn: str) -> Iterator[Workers]:
    with contextlib.ExitStack() as stack:
        yield lambda: stack.enter_context(PostgresTaskStore(postgres_dsn))


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Statements run through the store's connections, by kind (they still run)."""
    counts: collections.Counter[str] = collections.Counter()
    for method in ("query", "execute_prepared", "fetch_prepared"):
        real = getattr(Database, method)

        def counted(self: Database, *args: Any, _real: Any = real, _name: str = method) -> Any:
            counts[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(Database, method, counted)
    return counts


def _send_message(store: PostgresTaskStore, task_id: str) -> None:
    """The store calls of a blocking SendMessage answered with a completed Task."""
    assert store.claim_message("alice", f"m-{task_id}", task_id) is None
    store.create_task(new_task(task_id), principal="alice")
    store.append_event(task_id, status(task_id, TaskState.working))
    store.append_event(task_id, chunk(task_id, "echo", append=False, last=True))
    store.append_event(task_id, status(task_id, TaskState.completed))
    stored = store.get_task(task_id, principal="alice")
    assert stored is not None
    assert stored.task.status.state is TaskState.completed


def test_a_send_message_costs_five_prepared_statements_and_no_other_query(
    workers: Workers, statements: collections.Counter[str]
) -> None:
    store = workers()
    _send_message(store, "warm")  # opening the store runs setup statements
    statements.clear()
    _send_message(store, "t1")
    # claim, creation, three appends; the completed task is answered from the cache.
    assert statements == {"execute_prepared": 5}


def test_a_terminal_task_is_read_from_the_cache_only_by_the_worker_that_stored_it(
    workers: Workers, statements: collections.Counter[str]
) -> None:
    a, b = workers(), workers()
    _send_message(a, "t1")
    statements.clear()
    on_b = b.get_task("t1", principal="alice")  # never seen here: read from the database
    assert statements == {"fetch_prepared": 1}
    assert on_b is not None
    assert on_b.seq == 4
    on_a = a.get_task("t1", principal="alice")
    assert on_a is not None
    assert on_b.task == on_a.task
    assert a.get_task("t1", principal="mallory") is None  # the cache checks the owner too
    assert b.get_task("t1", principal="mallory") is None


def test_a_task_that_may_still_change_is_read_from_the_database_with_the_events_since(
    workers: Workers, statements: collections.Counter[str]
) -> None:
    a, b = workers(), workers()
    a.create_task(new_task("t1"), principal="alice")
    a.append_event("t1", status("t1", TaskState.working))
    assert b.get_task("t1", principal=None) is not None  # b caches it at seq 2
    count = SNAPSHOT_INTERVAL + 3  # past a stored snapshot, and some events after it
    for i in range(count):
        a.append_event("t1", chunk("t1", f"{i};", append=i > 0))
    statements.clear()
    on_b = b.get_task("t1", principal=None)
    assert statements == {"fetch_prepared": 1}
    on_a = a.get_task("t1", principal=None)
    assert on_b is not None
    assert on_a is not None
    assert on_b.seq == on_a.seq == 2 + count
    assert on_b.task == on_a.task
    parts = on_b.task.artifacts[0].parts  # appended chunks are parts of one artifact
    assert [part.text for part in parts] == [f"{i};" for i in range(count)]
    b.append_event("t1", status("t1", TaskState.completed))  # b's cache was brought up
    final = a.get_task("t1", principal=None)  # a's copy is stale: read again
    assert final is not None
    assert final.task.status.state is TaskState.completed


def test_parked_connections_never_starve_a_caller_waiting_on_the_pool(postgres_dsn: str) -> None:
    """One pooled connection, four threads: each statement's connection is parked for the
    next one unless another thread waits on the pool, which then gets it (a parked
    connection that nobody takes would make that thread time out: InternalError)."""
    store = PostgresTaskStore(postgres_dsn, pool_size=1, pool_min=1, pool_timeout=5.0)
    errors: list[BaseException] = []

    def sender(index: int) -> None:
        try:
            for n in range(15):
                _send_message(store, f"t{index}-{n}")
        except BaseException as exc:  # reported below, with the thread's name
            errors.append(exc)

    with store:
        threads = [
            threading.Thread(target=sender, args=(i,), name=f"a2a-sync-test-sender-{i}")
            for i in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
    assert errors == []
