"""The SQLite store's tables and the two writes of its hot path.

Internal to :mod:`a2a_sync.server.stores.sqlite`. A task's row holds a snapshot that may
lag its event log: the log is written for every event, the snapshot only at the task's
creation, at every terminal or interrupted state, every :data:`SNAPSHOT_EVERY` events, and
when the store lists tasks, evicts the task from its cache or closes. Readers fold the
log entries after the snapshot's ``seq`` onto it (:func:`load_task_row`).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from ..._net.jsonrpc import decode_json
from ...a2a.accumulate import accumulate
from ...a2a.codec import V1_0
from ...a2a.types import Message, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from ...errors import ConfigurationError
from ._encode import task_wire_blob
from .base import micros_of, status_time

__all__ = [
    "MAX_SEQ",
    "ORPHANS_SQL",
    "SCHEMA",
    "SNAPSHOT_EVERY",
    "insert_events",
    "load_task_row",
    "orphan_failure",
    "save_snapshot",
]

#: Events of a running task between two snapshot writes at most (the log has them all).
SNAPSHOT_EVERY: Final = 64
MAX_SEQ: Final = 2**62

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS a2a_tasks (
    id TEXT PRIMARY KEY,
    principal TEXT NOT NULL,
    context_id TEXT,
    state TEXT NOT NULL,
    status_micros INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    snapshot BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS a2a_tasks_by_principal
    ON a2a_tasks (principal, status_micros DESC, id DESC);
CREATE TABLE IF NOT EXISTS a2a_events (
    task_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    event BLOB NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_claims (
    principal TEXT NOT NULL,
    message_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    PRIMARY KEY (principal, message_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_contexts (
    context_id TEXT PRIMARY KEY,
    principal TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS a2a_push_configs (
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    revision TEXT NOT NULL,
    config BLOB NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (task_id, id)
);
"""

#: Tasks a previous process left running: their snapshot says so, or their log goes on
#: past the snapshot (only non-final events are written without a snapshot).
ORPHANS_SQL: Final = (
    "SELECT id FROM a2a_tasks t WHERE state IN (?, ?) OR EXISTS"
    " (SELECT 1 FROM a2a_events e WHERE e.task_id = t.id AND e.seq > t.seq)"
)

_UPSERT: Final = (
    "INSERT INTO a2a_tasks (id, principal, context_id, state, status_micros, seq, snapshot)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET state = excluded.state,"
    " status_micros = excluded.status_micros, seq = excluded.seq,"
    " snapshot = excluded.snapshot WHERE excluded.seq > a2a_tasks.seq"
)


_INSERT_EVENT: Final = "INSERT INTO a2a_events (task_id, seq, event) VALUES (?, ?, ?)"


def insert_events(db: sqlite3.Connection, task_id: str, rows: list[tuple[int, bytes]]) -> None:
    """Append log entries ``(seq, blob)``, in order, in one statement.

    Raises:
        ConfigurationError: The entries start with the creation (seq 1) and the task
            exists already.
        sqlite3.Error: The write failed.
    """
    try:
        if len(rows) == 1:
            db.execute(_INSERT_EVENT, (task_id, *rows[0]))
        else:
            db.executemany(_INSERT_EVENT, [(task_id, seq, blob) for seq, blob in rows])
    except sqlite3.IntegrityError as exc:
        if (
            rows[0][0] == 1
            and db.execute("SELECT 1 FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()
        ):
            raise ConfigurationError(f"task {task_id!r} exists already") from exc
        raise


def save_snapshot(db: sqlite3.Connection, task: Task, seq: int, principal: str, wire: Any) -> None:
    """Write the task's row unless the file has a newer snapshot; ``wire`` is the task
    dumped (``V1_0.dump_task(task)``), encoded here, on the committing thread: its strings
    were checked when their events were encoded."""
    db.execute(
        _UPSERT,
        (
            task.id,
            principal,
            task.context_id,
            task.status.state.value,
            micros_of(status_time(task)),
            seq,
            task_wire_blob(wire, task),
        ),
    )


def load_task_row(db: sqlite3.Connection, task_id: str) -> tuple[Task, str, int, int] | None:
    """The task as the file has it: ``(task, principal, seq, snapshot_seq)``, the log
    entries after the snapshot folded onto it; None when there is no such task."""
    row = db.execute(
        "SELECT snapshot, principal, seq FROM a2a_tasks WHERE id = ?", (task_id,)
    ).fetchone()
    if row is None:
        return None
    blob, principal, saved = row
    task = V1_0.load_task(decode_json(blob))
    seq = saved
    for logged, event in db.execute(
        "SELECT seq, event FROM a2a_events WHERE task_id = ? AND seq > ? ORDER BY seq",
        (task_id, saved),
    ):
        task = accumulate(task, V1_0.load_stream_event(decode_json(event)))
        seq = logged
    return task, str(principal), int(seq), int(saved)


def orphan_failure(task: Task) -> TaskStatusUpdateEvent:
    """The event that fails a task a previous process left running."""
    note = Message.agent(
        "The server restarted while this task was running.",
        task_id=task.id,
        context_id=task.context_id,
    )
    return TaskStatusUpdateEvent(
        task_id=task.id,
        context_id=task.context_id or "",
        status=TaskStatus.now(TaskState.failed, note),
    )
