"""Group commit of the PostgreSQL task store's per-message writes (:class:`Group`).

Internal to :mod:`a2a_sync.server.stores.postgres`. A blocking SendMessage writes two
statements: its message claim (before the agent runs) and, at the final state, its
task's row and whole log (``a2a_create_logged``, :class:`Creations`; durable). That
second statement notifies the task's channel, and PostgreSQL serialises the commits of
notifying transactions (one lock, held until the commit is flushed), so concurrent
writes could not share a WAL flush: each waited for a flush of its own (~1 per message).

Here concurrent writes of one worker are **grouped**: a caller finding no write in
flight writes at once (its own statement, as before); callers arriving while a write is
in flight queue up, and the first of them, when it is over, writes every queued item
(up to :data:`MAX_GROUP`) in **one** statement
(``a2a_create_logged_many``, ``a2a_claim_many``: parallel arrays; one round trip, one
transaction, one flush, one wake-up of the listening backends), then answers the others
and hands the next group to the first caller queued meanwhile. No caller is answered
before the transaction holding its write has committed (with the durability of its
statement: creations wait for the flush, claims do not).

**One failure undoes nothing else.** A statement the database refuses rolls back the
whole group (nobody was answered yet); then each item of it is written again alone, so
each caller gets the outcome of its own statement, as if there had been no group. A lost
connection (the outcome unknown) fails every caller of the group, as it failed the one
caller of a single statement; nothing is written again. A row that exists already is
skipped by the statement (``ON CONFLICT DO NOTHING``) and only its caller learns it.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Sequence
from typing import Final, Generic, TypeVar

from ...errors import InternalError
from ._pg_db import Database, Param, StatementFailed

__all__ = [
    "GROUP_STATEMENTS",
    "MAX_GROUP",
    "Creation",
    "Creations",
    "Group",
    "binary_array",
    "texts",
]

#: Tasks written by one grouped statement at most (the rest wait for the next one).
MAX_GROUP: Final = 64

CREATE_LOGGED: Final = "a2a_create_logged"
_CREATE_LOGGED_MANY: Final = "a2a_create_logged_many"
#: Prepared on every pooled connection (see :mod:`._pg_db`). The single form: one task's
#: row as of $6 and its log (events 1..$6, one bytea[]), one notification for the last
#: event (a listener reads the log from where it is). The grouped form: the same for
#: several tasks, as parallel arrays (one element per task; the events flat, each with
#: its task's id and seq); it returns the ids it inserted.
GROUP_STATEMENTS: Final = {
    CREATE_LOGGED: (
        "WITH t AS (INSERT INTO a2a_tasks (id, principal, context_id, state, status_micros,"
        " seq, worker, snapshot, snapshot_seq) VALUES ($1::text, $2::text, $3::text,"
        " $4::text, $5::bigint, $6::integer, $7::text, $8::bytea, $6::integer)"
        " ON CONFLICT (id) DO NOTHING RETURNING id),"
        " e AS (INSERT INTO a2a_events (task_id, seq, event) SELECT t.id, u.n::integer,"
        " u.event FROM t, unnest($9::bytea[]) WITH ORDINALITY AS u(event, n))"
        " SELECT pg_notify($10::text, $11::text) FROM t"
    ),
    _CREATE_LOGGED_MANY: (
        "WITH t AS (INSERT INTO a2a_tasks (id, principal, context_id, state, status_micros,"
        " seq, worker, snapshot, snapshot_seq) SELECT u.id, u.principal, u.context_id,"
        " u.state, u.micros, u.seq, u.worker, u.snapshot, u.seq FROM unnest($1::text[],"
        " $2::text[], $3::text[], $4::text[], $5::bigint[], $6::integer[], $7::text[],"
        " $8::bytea[]) AS u(id, principal, context_id, state, micros, seq, worker, snapshot)"
        " ON CONFLICT (id) DO NOTHING RETURNING id),"
        " e AS (INSERT INTO a2a_events (task_id, seq, event) SELECT u.task_id, u.seq,"
        " u.event FROM unnest($9::text[], $10::integer[], $11::bytea[])"
        " AS u(task_id, seq, event) WHERE u.task_id IN (SELECT id FROM t))"
        " SELECT t.id, pg_notify(n.channel, n.payload) FROM t JOIN unnest($1::text[],"
        " $12::text[], $13::text[]) AS n(id, channel, payload) ON n.id = t.id"
    ),
}

_TEXT_OID: Final = 25
_BYTEA_OID: Final = 17
_INT4_OID: Final = 23
_INT8_OID: Final = 20
_NULL: Final = struct.pack("!i", -1)

T = TypeVar("T")
R = TypeVar("R")


class Creation:
    """One task to write: its row, its log (the events' stored forms, from event 1) and
    its notification. ``seq`` is the last event's."""

    __slots__ = (
        "blobs",
        "channel",
        "context_id",
        "micros",
        "payload",
        "principal",
        "seq",
        "snapshot",
        "state",
        "task_id",
        "worker",
    )

    def __init__(
        self,
        task_id: str,
        principal: str,
        context_id: str | None,
        state: str,
        micros: int,
        worker: str | None,
        snapshot: bytes,
        blobs: list[bytes],
        channel: str,
        payload: str,
    ) -> None:
        self.task_id = task_id
        self.principal = principal
        self.context_id = context_id
        self.state = state
        self.micros = micros
        self.seq = len(blobs)
        self.worker = worker
        self.snapshot = snapshot
        self.blobs = blobs
        self.channel = channel
        self.payload = payload

    def params(self) -> list[Param]:
        """The single statement's parameters."""
        return [
            self.task_id,
            self.principal,
            self.context_id,
            self.state,
            self.micros,
            self.seq,
            self.worker,
            self.snapshot,
            binary_array(_BYTEA_OID, self.blobs),
            self.channel,
            self.payload,
        ]


class _Waiter(Generic[T, R]):
    """A queued item: ``done`` is set with its outcome, or to make it the writer of the
    next group (``lead``)."""

    __slots__ = ("done", "error", "item", "lead", "result")

    def __init__(self, item: T) -> None:
        self.item = item
        self.done = threading.Event()
        self.lead = False
        self.result: tuple[R] | None = None
        self.error: InternalError | None = None

    def wait(self) -> None:
        """Until the writer of the group before sets ``done`` (it does, whatever happens)."""
        self.done.wait()

    def outcome(self) -> R:
        if self.result is None:
            raise self.error or InternalError("task store statement failed")
        return self.result[0]


class Group(Generic[T, R]):
    """Runs items, concurrent ones together (see the module). Thread-safe.

    Args:
        one: Writes one item alone (its own statement and transaction).
        many: Writes several in one statement; their results in order.
    """

    def __init__(self, one: Callable[[T], R], many: Callable[[list[T]], list[R]]) -> None:
        self._one = one
        self._many = many
        self._lock = threading.Lock()  # guards the two below
        self._queue: list[_Waiter[T, R]] = []  # waiting for the next group (empty when idle)
        self._busy = False  # a write is in flight

    def run(self, item: T) -> R:
        """Write ``item``; its result once its group's transaction has committed.

        Raises:
            InternalError: The database failed (nothing of it was written, or all of it).
        """
        me: _Waiter[T, R] | None = None
        with self._lock:
            if self._busy:
                me = _Waiter(item)
                self._queue.append(me)
            else:
                self._busy = True
        if me is None:  # idle: write it at once, alone (as without groups)
            try:
                return self._one(item)
            finally:
                self._hand_on()
        me.wait()
        if not me.lead:
            return me.outcome()
        with self._lock:  # handed the next group: this caller is first in the queue
            group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
        try:
            self._write(group)
        finally:
            for waiter in group:
                if waiter is not me:
                    waiter.done.set()
            self._hand_on()
        return me.outcome()

    def _hand_on(self) -> None:
        """After a write: the first caller queued meanwhile writes the next group."""
        with self._lock:
            if self._queue:
                self._queue[0].lead = True
                self._queue[0].done.set()
            else:
                self._busy = False

    def _write(self, group: list[_Waiter[T, R]]) -> None:
        """Set every waiter's outcome (an unexpected exception leaves the rest unset:
        their callers get InternalError)."""
        if len(group) > 1:
            try:
                results = self._many([waiter.item for waiter in group])
            except StatementFailed:
                pass  # rolled back whole: write each alone below
            except InternalError as exc:  # lost connection: the outcome is unknown
                for waiter in group:
                    waiter.error = exc
                return
            else:
                for waiter, result in zip(group, results, strict=True):
                    waiter.result = (result,)
                return
        for waiter in group:
            try:
                waiter.result = (self._one(waiter.item),)
            except InternalError as exc:
                waiter.error = exc


class Creations:
    """Writes creations of unreported tasks, concurrent ones grouped. Thread-safe.

    Args:
        db: The store's connections.
    """

    def __init__(self, db: Database) -> None:
        self._db = db
        self._group: Group[Creation, bool] = Group(self._write_one, self._write_many)

    def create(self, creation: Creation) -> bool:
        """Write ``creation`` durably; False when its task exists already (nothing of it
        was written).

        Raises:
            InternalError: The database failed (nothing of it was written, or all of it).
        """
        return self._group.run(creation)

    def _write_one(self, creation: Creation) -> bool:
        return bool(self._db.execute_prepared(CREATE_LOGGED, creation.params()))

    def _write_many(self, creations: list[Creation]) -> list[bool]:
        """One statement for ``creations``; whether each was inserted."""
        event_ids: list[bytes | None] = []
        event_seqs: list[bytes | None] = []
        events: list[bytes | None] = []
        for creation in creations:
            task_id = creation.task_id.encode()
            for seq, blob in enumerate(creation.blobs, 1):
                event_ids.append(task_id)
                event_seqs.append(_int4(seq))
                events.append(blob)
        params: list[Param] = [
            texts([c.task_id for c in creations]),
            texts([c.principal for c in creations]),
            texts([c.context_id for c in creations]),
            texts([c.state for c in creations]),
            binary_array(_INT8_OID, [struct.pack("!q", c.micros) for c in creations]),
            binary_array(_INT4_OID, [_int4(c.seq) for c in creations]),
            texts([c.worker for c in creations]),
            binary_array(_BYTEA_OID, [c.snapshot for c in creations]),
            binary_array(_TEXT_OID, event_ids),
            binary_array(_INT4_OID, event_seqs),
            binary_array(_BYTEA_OID, events),
            texts([c.channel for c in creations]),
            texts([c.payload for c in creations]),
        ]
        rows = self._db.fetch_prepared(_CREATE_LOGGED_MANY, params)
        created = {row[0] for row in rows}
        return [c.task_id.encode() in created for c in creations]


def _int4(value: int) -> bytes:
    return struct.pack("!i", value)


def texts(values: Sequence[str | None]) -> bytes:
    """A ``text[]`` in binary form (None: NULL)."""
    return binary_array(_TEXT_OID, [None if v is None else v.encode() for v in values])


def binary_array(oid: int, values: Sequence[bytes | None]) -> bytes:
    """A one-dimensional array of ``values`` (each in its type's binary form, None for
    NULL) in PostgreSQL's binary form: dimensions, has-nulls flag, element type ``oid``,
    length, lower bound 1; then each element as its length (-1: NULL) and bytes."""
    has_nulls = any(value is None for value in values)
    parts = [struct.pack("!iiiii", 1, int(has_nulls), oid, len(values), 1)]
    for value in values:
        if value is None:
            parts.append(_NULL)
        else:
            parts += (struct.pack("!i", len(value)), value)
    return b"".join(parts)
