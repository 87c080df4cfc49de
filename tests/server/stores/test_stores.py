"""The TaskStore contract, run against every store (in-memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from a2a_sync.a2a.accumulate import accumulate
from a2a_sync.errors import InvalidParams, ProtocolError, TaskNotFound, UnsupportedOperation
from a2a_sync.server.stores import InMemoryTaskStore, SQLiteTaskStore, TaskStore
from a2a_sync.types import (
    Artifact,
    AuthenticationInfo,
    ListTasksParams,
    Message,
    PushNotificationConfig,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

WAIT = 5.0
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    made: TaskStore
    if request.param == "memory":
        made = InMemoryTaskStore()
    elif request.param == "sqlite":
        made = SQLiteTaskStore(str(tmp_path / "t.db"))
    else:  # a fresh database on the session's throwaway cluster (tests/support/postgres.py)
        dsn = request.getfixturevalue("postgres_dsn")  # skips, or fails under CI, first
        from a2a_sync.server.stores.postgres import PostgresTaskStore

        made = PostgresTaskStore(dsn)
    with made:
        yield made


def new_task(task_id: str = "t1", *, context_id: str = "c1", at: datetime = T0) -> Task:
    return Task(
        id=task_id,
        context_id=context_id,
        status=TaskStatus(state=TaskState.submitted, timestamp=at),
        history=[Message.user("hello", task_id=task_id, context_id=context_id, message_id="m1")],
    )


def status(
    task_id: str, state: TaskState, *, at: datetime = T0, text: str | None = None
) -> TaskStatusUpdateEvent:
    message = (
        Message.agent(text, task_id=task_id, context_id="c1", message_id=f"a-{text}")
        if text
        else None
    )
    return TaskStatusUpdateEvent(
        task_id=task_id,
        context_id="c1",
        status=TaskStatus(state=state, timestamp=at, message=message),
    )


def chunk(task_id: str, text: str, *, append: bool, last: bool = False) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id="c1",
        artifact=Artifact.create(text, artifact_id="a1"),
        append=append,
        last_chunk=last,
    )


def run_events(store: TaskStore, task_id: str = "t1") -> list[StreamEvent]:
    events: list[StreamEvent] = [
        status(task_id, TaskState.working, text="on it"),
        chunk(task_id, "Hel", append=False),
        chunk(task_id, "lo", append=True, last=True),
        status(task_id, TaskState.completed, at=T0 + timedelta(seconds=1), text="done"),
    ]
    for event in events:
        store.append_event(task_id, event)
    return events


def test_created_task_is_event_one_and_readable_by_its_owner(store: TaskStore) -> None:
    created = store.create_task(new_task(), principal="alice")
    assert created.seq == 1
    stored = store.get_task("t1", principal="alice")
    assert stored is not None
    assert stored.task == new_task()
    assert stored.seq == 1
    assert store.events_after("t1", 0) == [(1, new_task())]


def test_another_principals_task_does_not_exist_for_them(store: TaskStore) -> None:
    store.create_task(new_task(), principal="alice")
    assert store.get_task("t1", principal="bob") is None
    assert store.get_task("t1", principal=None) is not None
    assert store.list_tasks(ListTasksParams(), principal="bob").tasks == []


def test_snapshot_equals_the_fold_of_the_log(store: TaskStore) -> None:
    store.create_task(new_task(), principal="")
    events = run_events(store)
    stored = store.get_task("t1", principal="")
    assert stored is not None
    assert stored.seq == 5
    folded = None
    for _, event in store.events_after("t1", 0):
        folded = accumulate(folded, event)
    assert folded == stored.task
    assert stored.task.artifacts[0].text == "Hello"
    assert stored.task.status.state is TaskState.completed
    assert [e for _, e in store.events_after("t1", 1)] == events
    assert [seq for seq, _ in store.events_after("t1", 3)] == [4, 5]


def test_append_to_a_missing_task_is_task_not_found(store: TaskStore) -> None:
    with pytest.raises(TaskNotFound):
        store.append_event("nope", status("nope", TaskState.working))


def test_an_impossible_event_is_refused_and_leaves_the_task_unchanged(store: TaskStore) -> None:
    store.create_task(new_task(), principal="")
    with pytest.raises(ProtocolError):
        store.append_event("t1", chunk("t1", "x", append=True))
    stored = store.get_task("t1", principal="")
    assert stored is not None
    assert stored.seq == 1
    assert stored.task == new_task()


def test_subscriber_sees_every_event_in_order_even_if_subscribed_late(store: TaskStore) -> None:
    store.create_task(new_task(), principal="")
    store.append_event("t1", status("t1", TaskState.working))
    with store.subscribe("t1", after_seq=1) as sub:
        store.append_event("t1", chunk("t1", "a", append=False))
        got = []
        while len(got) < 2:
            batch = sub.poll(WAIT)
            assert batch
            got += batch
        assert [seq for seq, _ in got] == [2, 3]


def test_subscription_before_the_task_exists_receives_its_creation(store: TaskStore) -> None:
    with store.subscribe("t1", after_seq=0) as sub:
        store.create_task(new_task(), principal="")
        batch = sub.poll(WAIT)
        assert batch == [(1, new_task())]


def test_many_subscribers_get_identical_sequences_while_one_leaves(store: TaskStore) -> None:
    store.create_task(new_task(), principal="")
    subs = [store.subscribe("t1", after_seq=1) for _ in range(3)]
    store.append_event("t1", status("t1", TaskState.working))
    subs[1].close()
    for i in range(10):
        store.append_event("t1", chunk("t1", str(i), append=i > 0))
    results = []
    for sub in (subs[0], subs[2]):
        got: list[int] = []
        while len(got) < 11:
            batch = sub.poll(WAIT)
            assert batch
            got += [seq for seq, _ in batch]
        results.append(got)
        sub.close()
    assert results[0] == results[1] == list(range(2, 13))


def test_a_slow_subscriber_overflowing_its_buffer_still_gets_everything(tmp_path: Path) -> None:
    with InMemoryTaskStore(subscriber_buffer=4) as small:
        small.create_task(new_task(), principal="")
        with small.subscribe("t1", after_seq=0) as sub:
            for i in range(50):
                small.append_event("t1", chunk("t1", str(i), append=i > 0))
            got: list[int] = []
            while len(got) < 51:
                batch = sub.poll(WAIT)
                assert batch
                got += [seq for seq, _ in batch]
            assert got == list(range(1, 52))


def test_interrupt_wakes_a_waiting_subscriber(store: TaskStore) -> None:
    sub = store.subscribe("t1", after_seq=0)
    woke = threading.Event()

    def reader() -> None:
        assert sub.poll(None) == []
        woke.set()

    thread = threading.Thread(target=reader)
    thread.start()
    sub.interrupt()
    assert woke.wait(WAIT)
    thread.join(WAIT)
    assert sub.interrupted
    sub.close()


def test_close_interrupts_subscribers(tmp_path: Path) -> None:
    store = InMemoryTaskStore()
    sub = store.subscribe("t1", after_seq=0)
    store.close()
    assert sub.poll(WAIT) == []
    assert sub.interrupted


def test_claim_is_atomic_per_principal_and_message(store: TaskStore) -> None:
    results: list[str | None] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def claim(i: int) -> None:
        start.wait(WAIT)
        got = store.claim_message("alice", "m1", f"t{i}")
        with lock:
            results.append(got)

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert results.count(None) == 1
    winners = {r for r in results if r is not None}
    assert len(winners) == 1
    assert store.claim_message("alice", "m1", "other") in winners
    assert store.claim_message("bob", "m1", "tb") is None


def test_list_is_newest_first_filtered_and_paged(store: TaskStore) -> None:
    for i in range(7):
        store.create_task(
            new_task(f"t{i}", context_id="odd" if i % 2 else "even", at=T0 + timedelta(minutes=i)),
            principal="p",
        )
    store.create_task(new_task("other", at=T0), principal="q")
    store.append_event("t0", status("t0", TaskState.completed, at=T0 + timedelta(hours=1)))

    first = store.list_tasks(ListTasksParams(page_size=3), principal="p")
    assert [t.id for t in first.tasks] == ["t0", "t6", "t5"]
    assert first.total_size == 7
    assert first.page_size == 3
    second = store.list_tasks(
        ListTasksParams(page_size=3, page_token=first.next_page_token), principal="p"
    )
    assert [t.id for t in second.tasks] == ["t4", "t3", "t2"]
    third = store.list_tasks(
        ListTasksParams(page_size=3, page_token=second.next_page_token), principal="p"
    )
    assert [t.id for t in third.tasks] == ["t1"]
    assert third.next_page_token == ""

    odd = store.list_tasks(ListTasksParams(context_id="odd"), principal="p")
    assert [t.id for t in odd.tasks] == ["t5", "t3", "t1"]
    done = store.list_tasks(ListTasksParams(status=TaskState.completed), principal="p")
    assert [t.id for t in done.tasks] == ["t0"]
    recent = store.list_tasks(
        ListTasksParams(status_timestamp_after=T0 + timedelta(minutes=4)), principal="p"
    )
    assert [t.id for t in recent.tasks] == ["t0", "t6", "t5"]


def test_a_forged_page_token_is_invalid_params(store: TaskStore) -> None:
    with pytest.raises(InvalidParams):
        store.list_tasks(ListTasksParams(page_token="not-a-token"), principal="p")


def test_push_configs_crud_keeps_revision_and_credentials(store: TaskStore) -> None:
    config = PushNotificationConfig(
        url="https://hooks.example/a",
        id="c1",
        task_id="t1",
        token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
    )
    store.set_push_config(config, revision="0.3")
    store.set_push_config(
        PushNotificationConfig(url="https://hooks.example/b", id="c2", task_id="t1"), revision="1.0"
    )
    got = store.get_push_config("t1", "c1")
    assert got is not None
    assert got.config == config
    assert got.revision == "0.3"
    assert [c.config.id for c in store.list_push_configs("t1")] == ["c1", "c2"]
    replaced = PushNotificationConfig(url="https://hooks.example/c", id="c1", task_id="t1")
    store.set_push_config(replaced, revision="1.0")
    assert [c.config.url for c in store.list_push_configs("t1")] == [
        "https://hooks.example/c",
        "https://hooks.example/b",
    ]
    assert store.delete_push_config("t1", "c1") is True
    assert store.delete_push_config("t1", "c1") is False
    assert store.get_push_config("t1", "c1") is None
    assert store.list_push_configs("t2") == []


def test_concurrent_appenders_lose_no_update(store: TaskStore) -> None:
    store.create_task(new_task(), principal="")
    store.append_event("t1", chunk("t1", "", append=False))
    start = threading.Barrier(8)

    def writer(i: int) -> None:
        start.wait(WAIT)
        for j in range(20):
            store.append_event("t1", chunk("t1", f"{i}.{j};", append=True))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    stored = store.get_task("t1", principal="")
    assert stored is not None
    assert stored.seq == 2 + 160
    pieces = stored.task.artifacts[0].text.split(";")[:-1]
    assert sorted(pieces) == sorted(f"{i}.{j}" for i in range(8) for j in range(20))
    for i in range(8):  # each writer's chunks keep their order
        mine = [p for p in pieces if p.startswith(f"{i}.")]
        assert mine == [f"{i}.{j}" for j in range(20)]


def test_no_event_is_accepted_after_a_terminal_state(store: TaskStore) -> None:
    store.create_task(new_task(), principal="")
    run_events(store)
    with pytest.raises(UnsupportedOperation):
        store.append_event("t1", status("t1", TaskState.working))
    stored = store.get_task("t1", principal="")
    assert stored is not None
    assert stored.task.status.state is TaskState.completed


def test_context_ids_are_per_caller(store: TaskStore) -> None:
    """Issue 20.7: the same contextId from two callers names two conversations."""
    assert store.bind_context("ctx", "alice") is True
    assert store.bind_context("ctx", "alice") is True
    assert store.bind_context("ctx", "bob") is True
    assert store.bind_context("other", "bob") is True
