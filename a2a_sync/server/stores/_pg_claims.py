"""Idempotency claims and conversation owners for the PostgreSQL task store.

Internal to :mod:`a2a_sync.server.stores.postgres`. A claim binds ``(principal, message
id)`` to a task id under a primary key, so of two deliveries of one message (a client's
resend landing on another worker, say) exactly one inserts it and runs the agent. The
claim names the worker that made it; the other delivery then answers from the task, or,
when the first delivery has not created its task yet, waits for it:

* the claiming worker is alive: wait (bounded by ``claim_wait``) until the task exists;
* the claiming worker is dead (its lease expired) and no task exists: take the claim
  over and run the agent here (the first delivery never produced anything);
* the first run ended without a task (a direct reply): it released the claim, so the
  resend claims anew and runs, as on a single process.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Final

from ...errors import InternalError
from ..events import Subscription
from ._pg_db import Database
from ._pg_group import Group, texts
from .base import context_key

__all__ = ["CLAIM_STATEMENTS", "CONTEXT_CACHE_SIZE", "Claims"]

#: Conversation owners cached per process (they never change once bound).
CONTEXT_CACHE_SIZE: Final = 65536
#: How often a waiting resend re-checks a claim held by another worker (the task's
#: creation wakes it earlier).
CLAIM_POLL: Final = 0.25

_CLAIM: Final = "a2a_claim"
_CLAIM_MANY: Final = "a2a_claim_many"
_BIND: Final = "a2a_bind"
#: Prepared on every pooled connection (one of each per new task). Both commit without
#: waiting for the WAL flush: the task's creation, durable, flushes them with it; a crash
#: before that loses a claim whose run produced nothing. Concurrent claims of this worker
#: are grouped (:mod:`._pg_group`): ``a2a_claim_many`` inserts several (parallel arrays)
#: and returns the task ids of those it inserted (task ids are new uuids).
CLAIM_STATEMENTS: Final = {
    _CLAIM_MANY: (
        "WITH c AS (INSERT INTO a2a_claims (principal, message_id, task_id, worker)"
        " SELECT u.principal, u.message_id, u.task_id, $4::text FROM unnest($1::text[],"
        " $2::text[], $3::text[]) AS u(principal, message_id, task_id)"
        " ON CONFLICT DO NOTHING RETURNING task_id)"
        " SELECT c.task_id, set_config('synchronous_commit', 'off', true) FROM c"
    ),
    _CLAIM: (
        "WITH c AS (INSERT INTO a2a_claims (principal, message_id, task_id, worker)"
        " VALUES ($1::text, $2::text, $3::text, $4::text) ON CONFLICT DO NOTHING RETURNING 1)"
        " SELECT set_config('synchronous_commit', 'off', true) FROM c"
    ),
    _BIND: (
        "WITH b AS (INSERT INTO a2a_contexts (context_id, principal)"
        " VALUES ($1::text, $2::text) ON CONFLICT DO NOTHING RETURNING 1)"
        " SELECT set_config('synchronous_commit', 'off', true) FROM b"
    ),
}
_CLAIM_STATE: Final = (
    "SELECT c.task_id, c.worker, EXISTS (SELECT 1 FROM a2a_tasks t WHERE t.id = c.task_id),"
    " w.heartbeat >= now() - make_interval(secs => %s)"
    " FROM a2a_claims c LEFT JOIN a2a_workers w ON w.id = c.worker"
    " WHERE c.principal = %s AND c.message_id = %s"
)
_TAKE_OVER: Final = (
    "UPDATE a2a_claims SET task_id = %s, worker = %s WHERE principal = %s AND message_id = %s"
    " AND task_id = %s AND worker IS NOT DISTINCT FROM %s RETURNING 1"
)
_RELEASE: Final = "DELETE FROM a2a_claims WHERE principal = %s AND message_id = %s AND worker = %s"
_OWNER: Final = "SELECT principal FROM a2a_contexts WHERE context_id = %s"


class Claims:
    """Message claims and conversation owners. Thread-safe.

    Args:
        db: The store's connections.
        subscribe: The store's ``subscribe`` (to wait for a task's creation).
        worker_id: This worker.
        lease_timeout: Heartbeat age after which a worker counts as dead.
        claim_wait: Longest wait for another worker's run to create its task.
    """

    def __init__(
        self,
        db: Database,
        subscribe: Callable[[str, int], Subscription],
        *,
        worker_id: str,
        lease_timeout: float,
        claim_wait: float,
    ) -> None:
        self._db = db
        self._query = db.query
        self._subscribe = subscribe
        self._worker_id = worker_id
        self._lease_timeout = lease_timeout
        self._claim_wait = claim_wait
        self._lock = threading.Lock()
        self._contexts: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._group: Group[tuple[str, str, str], bool] = Group(self._claim_one, self._claim_many)

    def claim(self, principal: str, message_id: str, task_id: str) -> str | None:
        """Claim a message (see ``TaskStore.claim_message``).

        Raises:
            InternalError: Another live worker has run the message for ``claim_wait``
                without creating its task (the client may look it up later).
        """
        me = self._worker_id
        deadline = time.monotonic() + self._claim_wait
        waiting: Subscription | None = None
        try:
            while True:
                if self._group.run((principal, message_id, task_id)):
                    return None
                rows = self._query(_CLAIM_STATE, (self._lease_timeout, principal, message_id))
                if not rows:
                    continue  # released between the two statements: claim it again
                claimed, worker, exists, alive = rows[0]
                if exists or worker == me:
                    return str(claimed)
                if not alive:
                    took = (task_id, me, principal, message_id, claimed, worker)
                    if self._query(_TAKE_OVER, took):
                        return None
                    continue  # another resend took it first: look again
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise InternalError(
                        "this message is still being processed by another worker; "
                        "look its task up later"
                    )
                if waiting is None or waiting.task_id != claimed:
                    if waiting is not None:
                        waiting.close()
                    waiting = self._subscribe(str(claimed), 0)
                waiting.poll(min(remaining, CLAIM_POLL))
        finally:
            if waiting is not None:
                waiting.close()

    def _claim_one(self, claim: tuple[str, str, str]) -> bool:
        return bool(self._db.execute_prepared(_CLAIM, (*claim, self._worker_id)))

    def _claim_many(self, claims: list[tuple[str, str, str]]) -> list[bool]:
        """Several claims in one statement; whether each was inserted (of two claims of
        one message, only one is)."""
        params = (
            texts([principal for principal, _, _ in claims]),
            texts([message_id for _, message_id, _ in claims]),
            texts([task_id for _, _, task_id in claims]),
            self._worker_id,
        )
        inserted = {row[0] for row in self._db.fetch_prepared(_CLAIM_MANY, params)}
        return [task_id.encode() in inserted for _, _, task_id in claims]

    def release(self, principal: str, message_id: str) -> None:
        """Drop this worker's claim of a message whose run created no task."""
        self._query(_RELEASE, (principal, message_id, self._worker_id))

    def bind_context(self, context_id: str, principal: str) -> bool:
        """Own a conversation (see ``TaskStore.bind_context``)."""
        context_id = context_key(principal, context_id)  # conversations are per caller
        with self._lock:
            owner = self._contexts.get(context_id)
        if owner is None:
            if self._db.execute_prepared(_BIND, (context_id, principal)):
                owner = principal
            else:  # bound before (or concurrently): read the owner
                owner = str(self._query(_OWNER, (context_id,))[0][0])
            with self._lock:
                self._contexts[context_id] = owner
                if len(self._contexts) > CONTEXT_CACHE_SIZE:
                    self._contexts.popitem(last=False)
        return owner == principal
