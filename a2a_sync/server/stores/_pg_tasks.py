"""How the PostgreSQL task store writes and reads tasks and their event logs.

Internal to :mod:`a2a_sync.server.stores.postgres` (which keeps the cache and decides
what to write). A task is a row of ``a2a_tasks`` (its snapshot as of ``snapshot_seq``,
the latest sequence number, state, status time and running worker) plus its events in
``a2a_events``. Writes are single prepared statements (see :mod:`._pg_db`); reads fold
the events stored after the snapshot.
"""

from __future__ import annotations

import threading
from typing import Final

import attrs

from ..._net.jsonrpc import decode_json, encode
from ...a2a.accumulate import accumulate
from ...a2a.codec import V1_0
from ...a2a.types import StreamEvent, Task
from ..events import LogEntry
from ._encode import event_blob, task_blob
from ._pg_claims import CLAIM_STATEMENTS
from ._pg_db import Database, Param
from ._pg_group import GROUP_STATEMENTS, Creation, Creations
from ._pg_listen import event_payload, task_channel
from .base import micros_of, status_time

__all__ = [
    "ASYNC_COMMIT",
    "PENDING",
    "SNAPSHOT_INTERVAL",
    "STATEMENTS",
    "Record",
    "Row",
    "TaskRows",
    "Unsaved",
    "fold",
    "load_event",
    "load_task",
]

#: ``synchronous_commit`` of appends that are not final (and of claims): they return
#: before their WAL is flushed to disk. The next durable commit (a task's creation, a
#: final state) flushes them too, WAL being written in order, so a crash can only lose a
#: suffix of a running task's events (its agent died with the crash anyway), never leave
#: a gap, and never lose what a client was told is done. The SQLite store makes the same
#: promise.
ASYNC_COMMIT: Final = "off"
#: The stored snapshot is rewritten with every final event and at least every this many
#: events; between, appends only insert the event. Streaming a long artifact then costs an
#: insert per chunk, not a rewrite of the ever larger task; reads fold at most this many.
SNAPSHOT_INTERVAL: Final = 32

# Prepared on every pooled connection (see _pg_db): the statements of every request.
_CREATE: Final = "a2a_create"
_APPEND: Final = "a2a_append"
_APPEND_SNAPSHOT: Final = "a2a_append_snapshot"
_APPEND_SNAPSHOT_IF_WORKER: Final = "a2a_append_snapshot_if_worker"
_FETCH: Final = "a2a_fetch"
# An append: the task's row, the event and the notification in one statement (one round
# trip, one transaction), applied only if the task is still at the sequence number the
# event was folded onto ($3 - 1). Three forms: without the snapshot (the log has the
# event), with it, and with it while the task is still run by a given worker (orphans).
# $9 'off' commits without waiting for the WAL flush (intermediate events: see
# ASYNC_COMMIT); NULL keeps the server's synchronous_commit.
_APPEND_SQL: Final = (
    "WITH t AS (UPDATE a2a_tasks SET state = $1::text, status_micros = $2::bigint,"
    " seq = $3::integer, worker = $4::text{snapshot}"
    " WHERE id = $5::text AND seq = $3::integer - 1{condition} RETURNING id),"
    " e AS (INSERT INTO a2a_events (task_id, seq, event) SELECT id, $3::integer, $6::bytea"
    " FROM t RETURNING task_id)"
    " SELECT pg_notify($7::text, $8::text), set_config('synchronous_commit',"
    " coalesce($9::text, current_setting('synchronous_commit')), true) FROM e"
)
_SNAPSHOT: Final = ", snapshot = $10::bytea, snapshot_seq = $3::integer"
STATEMENTS: Final = {
    _CREATE: (
        "WITH t AS (INSERT INTO a2a_tasks (id, principal, context_id, state, status_micros,"
        " seq, worker, snapshot, snapshot_seq) VALUES ($1::text, $2::text, $3::text,"
        " $4::text, $5::bigint, 1, $6::text, $7::bytea, 1) ON CONFLICT (id) DO NOTHING"
        " RETURNING id),"
        " e AS (INSERT INTO a2a_events (task_id, seq, event) SELECT id, 1, $8::bytea FROM t"
        " RETURNING task_id)"
        " SELECT pg_notify($9::text, $10::text) FROM e"
    ),
    # A task created unreported (TaskStore.create_unreported_task), written when it is
    # first shown or reaches its final state: its row and whole log in one statement, one
    # durable commit, one notification; concurrent ones grouped (see _pg_group).
    **GROUP_STATEMENTS,
    _APPEND: _APPEND_SQL.format(snapshot="", condition=""),
    _APPEND_SNAPSHOT: _APPEND_SQL.format(snapshot=_SNAPSHOT, condition=""),
    _APPEND_SNAPSHOT_IF_WORKER: _APPEND_SQL.format(
        snapshot=_SNAPSHOT, condition=" AND worker = $11::text"
    ),
    # A task as of now, given the seq of the copy cached here ($2, -1: none): first its row
    # (key 0) with the stored snapshot only if the cached copy is older, then one row per
    # event to fold onto whichever is newer (key: its seq), all from one MVCC snapshot.
    # Values arrive in binary form (see TaskRows.fetch).
    _FETCH: (
        "SELECT 0, t.seq, t.principal, t.worker, t.snapshot_seq,"
        " CASE WHEN t.snapshot_seq <= $2::integer THEN NULL ELSE t.snapshot END"
        " FROM a2a_tasks t WHERE t.id = $1::text"
        " UNION ALL SELECT e.seq, NULL, NULL, NULL, NULL, e.event"
        " FROM a2a_tasks t JOIN a2a_events e ON e.task_id = t.id"
        " WHERE t.id = $1::text AND t.seq > $2::integer"
        " AND e.seq > greatest(t.snapshot_seq, $2::integer) ORDER BY 1"
    ),
    **CLAIM_STATEMENTS,
}
# ListTasks: snapshots and the events not folded into them yet.
PENDING: Final = (
    "CASE WHEN seq = snapshot_seq THEN NULL ELSE (SELECT array_agg(e.event ORDER BY e.seq)"
    " FROM a2a_events e WHERE e.task_id = a2a_tasks.id AND e.seq > a2a_tasks.snapshot_seq) END"
)
_EVENTS: Final = "SELECT seq, event FROM a2a_events WHERE task_id = %s AND seq > %s ORDER BY seq"


#: An event of a task not written yet: its seq, the event and its stored form.
Unsaved = tuple[int, StreamEvent, bytes]


class Record:
    """A task cached by this process: ``state`` is ``(task, seq)``, replaced as one tuple;
    ``lock`` orders this process's appends to the task; ``stored_seq`` is where the stored
    snapshot was known to be (never ahead of it). ``unsaved``: the log of a task created
    unreported and not written yet (from event 1, the creation), else None."""

    __slots__ = ("lock", "principal", "state", "stored_seq", "unsaved")

    def __init__(self, task: Task, seq: int, principal: str, stored_seq: int) -> None:
        self.state = (task, seq)
        self.principal = principal
        self.stored_seq = stored_seq
        self.lock = threading.Lock()
        self.unsaved: list[Unsaved] | None = None


@attrs.frozen
class Row:
    """A task read from the database (folded up to ``seq``)."""

    task: Task
    seq: int
    principal: str
    worker: str | None
    stored_seq: int


class TaskRows:
    """The task and event-log statements of one worker. Thread-safe.

    Args:
        db: The store's connections.
        worker_id: This worker (named in notifications and as the tasks' runner).
    """

    def __init__(self, db: Database, worker_id: str) -> None:
        self._db = db
        self._worker_id = worker_id
        self._creations = Creations(db)

    def create(self, task: Task, principal: str, worker: str | None) -> bool:
        """Insert a new task as event 1 (durably); False when the id exists.

        Raises:
            InternalError: The task holds text that is not Unicode (nothing was written),
                or the database failed.
        """
        snapshot = task_blob(task)  # refuses bad text before anything is written
        return bool(
            self._db.execute_prepared(
                _CREATE,
                (
                    task.id,
                    principal,
                    task.context_id,
                    task.status.state.value,
                    micros_of(status_time(task)),
                    worker,
                    snapshot,
                    b'{"task":' + snapshot + b"}",  # the StreamResponse form of the Task
                    task_channel(task.id),
                    event_payload(1, self._worker_id, task.id),
                ),
            )
        )

    def create_logged(
        self, folded: Task, principal: str, log: list[Unsaved], worker: str | None
    ) -> bool:
        """Insert a task created unreported, as ``folded`` (its state after the last event
        of ``log``, which runs from event 1), and its whole log, durably, in one
        statement (grouped with concurrent ones: :mod:`._pg_group`); False when the id
        exists (nothing was written).

        Raises:
            InternalError: The database failed (nothing was written, or all of it).
        """
        seq = log[-1][0]
        return self._creations.create(
            Creation(
                folded.id,
                principal,
                folded.context_id,
                folded.status.state.value,
                micros_of(status_time(folded)),
                worker,
                task_blob(folded),
                [blob for _, _, blob in log],
                task_channel(folded.id),
                event_payload(seq, self._worker_id, folded.id),
            )
        )

    def write(
        self,
        folded: Task,
        event: StreamEvent,
        *,
        seq: int,
        worker: str | None,
        snapshot: bool,
        only_if_worker: str | None = None,
    ) -> bool:
        """Run one conditional append statement; True when it appended.

        Raises:
            InternalError: The event holds text that is not Unicode (nothing was written),
                or the database failed.
        """
        blob = event_blob(event)  # refuses bad text before anything is written
        params: list[Param] = [
            folded.status.state.value,
            micros_of(status_time(folded)),
            seq,
            worker,
            folded.id,
            blob,
            task_channel(folded.id),
            event_payload(seq, self._worker_id, folded.id),
            None if worker is None else ASYNC_COMMIT,  # final events wait for durability
        ]
        name = _APPEND
        if snapshot or only_if_worker is not None:
            params.append(encode(V1_0.dump_task(folded)))
            name = _APPEND_SNAPSHOT
            if only_if_worker is not None:
                params.append(only_if_worker)
                name = _APPEND_SNAPSHOT_IF_WORKER
        return bool(self._db.execute_prepared(name, params))

    def fetch(self, task_id: str, cached: tuple[Task, int] | None) -> Row | None:
        """The task as stored now (one query); what is cached here is not sent again."""
        have = cached[1] if cached is not None else -1
        rows = self._db.fetch_prepared(_FETCH, (task_id, have))
        if not rows:
            return None
        _, seq, principal, worker, stored_seq, blob = rows[0]
        if blob is not None:
            task = load_task(blob)
        elif cached is not None and _int(seq) >= have:
            task = cached[0]
        else:  # the cached copy is ahead of the database (never expected): read it all
            return self.fetch(task_id, None)
        pending = [event for *_, event in rows[1:] if event is not None]
        return Row(
            fold(task, pending),
            _int(seq),
            (principal or b"").decode(),  # NOT NULL
            None if worker is None else worker.decode(),
            _int(stored_seq),
        )

    def events_after(self, task_id: str, after_seq: int) -> list[LogEntry]:
        """The log after ``after_seq``, in order."""
        rows = self._db.query(_EVENTS, (task_id, after_seq), binary=True)
        return [(seq, load_event(blob)) for seq, blob in rows]


def _int(value: bytes | None) -> int:
    """An ``integer`` (int4, NOT NULL) in PostgreSQL's binary form."""
    return int.from_bytes(value or b"", "big", signed=True)


def load_task(blob: bytes) -> Task:
    return V1_0.load_task(decode_json(blob))


def load_event(blob: bytes) -> StreamEvent:
    return V1_0.load_stream_event(decode_json(blob))


def fold(task: Task, pending: list[bytes] | None) -> Task:
    """``task`` with the stored events not folded into its snapshot yet."""
    for blob in pending or ():
        task = accumulate(task, load_event(blob))
    return task
