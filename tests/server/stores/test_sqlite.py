"""SQLiteTaskStore specifics: durability across restarts and crashes, cache misses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.server.stores import SQLiteTaskStore
from a2a_sync.types import ListTasksParams, TaskState
from tests.server.stores.test_stores import chunk, new_task, run_events, status


def test_finished_task_and_its_log_survive_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "tasks.db")
    with SQLiteTaskStore(path) as store:
        store.create_task(new_task(), principal="alice")
        run_events(store)
        store.claim_message("alice", "m1", "t1")
        before = store.get_task("t1", principal="alice")
        log = store.events_after("t1", 0)
    with SQLiteTaskStore(path) as store:
        after = store.get_task("t1", principal="alice")
        assert after == before
        assert store.events_after("t1", 0) == log
        assert store.claim_message("alice", "m1", "t9") == "t1"
        assert [t.id for t in store.list_tasks(ListTasksParams(), principal="alice").tasks] == [
            "t1"
        ]


def test_terminal_state_is_durable_without_a_clean_close(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    script = textwrap.dedent(
        f"""
        import os
        from a2a_sync.server.stores import SQLiteTaskStore
        from tests.server.stores.test_stores import new_task, run_events
        store = SQLiteTaskStore({str(path)!r})
        store.create_task(new_task(), principal="")
        run_events(store)
        os._exit(0)  # no close(): only what was made durable is on disk
        """
    )
    subprocess.run(
        [sys.executable, "-c", script], check=True, cwd=Path(__file__).parents[3], timeout=30
    )
    with SQLiteTaskStore(str(path)) as store:
        stored = store.get_task("t1", principal="")
        assert stored is not None
        assert stored.task.status.state is TaskState.completed
        assert stored.task.artifacts[0].text == "Hello"


def test_tasks_left_running_by_a_previous_process_are_failed_on_open(tmp_path: Path) -> None:
    path = str(tmp_path / "orphans.db")
    with SQLiteTaskStore(path) as store:
        store.create_task(new_task("running"), principal="")
        store.append_event("running", status("running", TaskState.working))
        store.create_task(new_task("waiting"), principal="")
        store.append_event("waiting", status("waiting", TaskState.input_required, text="which?"))
    with SQLiteTaskStore(path) as store:
        running = store.get_task("running", principal=None)
        waiting = store.get_task("waiting", principal=None)
        assert running is not None
        assert waiting is not None
        assert running.task.status.state is TaskState.failed
        assert waiting.task.status.state is TaskState.input_required


def test_evicted_tasks_are_read_back_and_their_logs_joined(tmp_path: Path) -> None:
    with SQLiteTaskStore(str(tmp_path / "small.db"), cache_size=2) as store:
        store.create_task(new_task("t1"), principal="")
        store.append_event("t1", chunk("t1", "a", append=False))
        for i in range(2, 8):
            store.create_task(new_task(f"t{i}"), principal="")
        store.list_tasks(ListTasksParams(), principal="")  # flushes: everything committed
        for i in range(2, 8):
            store.get_task(f"t{i}", principal="")
        assert "t1" not in store._cache
        store.append_event("t1", chunk("t1", "b", append=True))  # reloaded, appended in memory
        log = store.events_after("t1", 0)
        assert [seq for seq, _ in log] == [1, 2, 3]
        stored = store.get_task("t1", principal="")
        assert stored is not None
        assert stored.task.artifacts[0].text == "ab"


def test_in_memory_path_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        SQLiteTaskStore(":memory:")


def test_close_is_idempotent_and_joins_the_writer(tmp_path: Path) -> None:
    store = SQLiteTaskStore(str(tmp_path / "c.db"))
    store.close()
    store.close()
    assert not store._writer.alive


def test_context_owners_survive_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "ctx.db")
    with SQLiteTaskStore(path) as store:
        assert store.bind_context("ctx", "alice")
    with SQLiteTaskStore(path) as store:
        assert store.bind_context("ctx", "bob") is True  # per caller (issue 20.7)
        assert store.bind_context("ctx", "alice") is True
