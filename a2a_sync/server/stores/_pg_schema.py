"""The PostgreSQL task store's schema and its versioned migrations.

Internal to :mod:`a2a_sync.server.stores.postgres`. :data:`MIGRATIONS` lists every schema
version in order; :func:`migrate` applies the ones a database lacks, in one transaction,
under an advisory lock, so workers starting together migrate once and never see a half
made schema. A database written by a newer a2a_sync (a version this code does not know) is
refused rather than guessed at.

Never edit a released migration: add the next version.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from ...errors import ConfigurationError

__all__ = ["LATEST_VERSION", "MIGRATIONS", "migrate"]

logger = logging.getLogger(__name__)

#: ``pg_advisory_xact_lock`` key serializing migrations (arbitrary, fixed forever).
_MIGRATION_LOCK: Final = 0x0A2A5716

#: ``(version, SQL)`` in order. Version 1 is the initial schema.
MIGRATIONS: Final[tuple[tuple[int, str], ...]] = (
    (
        1,
        """
        CREATE TABLE a2a_tasks (
            id text PRIMARY KEY,
            principal text NOT NULL,
            context_id text,
            state text NOT NULL,
            status_micros bigint NOT NULL,
            seq integer NOT NULL,
            -- the worker running an agent for the task; NULL once it is final
            worker text,
            -- the task folded up to snapshot_seq (later events are in a2a_events)
            snapshot bytea NOT NULL,
            snapshot_seq integer NOT NULL
        );
        CREATE INDEX a2a_tasks_by_principal
            ON a2a_tasks (principal, status_micros DESC, id DESC);
        CREATE INDEX a2a_tasks_by_worker ON a2a_tasks (worker) WHERE worker IS NOT NULL;
        CREATE TABLE a2a_events (
            task_id text NOT NULL,
            seq integer NOT NULL,
            event bytea NOT NULL,
            PRIMARY KEY (task_id, seq)
        );
        CREATE TABLE a2a_claims (
            principal text NOT NULL,
            message_id text NOT NULL,
            task_id text NOT NULL,
            worker text,
            PRIMARY KEY (principal, message_id)
        );
        CREATE TABLE a2a_contexts (
            context_id text PRIMARY KEY,
            principal text NOT NULL
        );
        CREATE TABLE a2a_push_configs (
            task_id text NOT NULL,
            id text NOT NULL,
            revision text NOT NULL,
            config bytea NOT NULL,
            created bigint GENERATED ALWAYS AS IDENTITY,
            PRIMARY KEY (task_id, id)
        );
        CREATE TABLE a2a_workers (
            id text PRIMARY KEY,
            host text NOT NULL,
            pid integer NOT NULL,
            started timestamptz NOT NULL DEFAULT now(),
            heartbeat timestamptz NOT NULL DEFAULT now()
        );
        """,
    ),
)

#: The schema version this code writes.
LATEST_VERSION: Final = MIGRATIONS[-1][0]


def migrate(conn: Any) -> int:
    """Bring the database at ``conn`` (a psycopg connection) to :data:`LATEST_VERSION`.

    Returns:
        The version the database was at before.

    Raises:
        ConfigurationError: The database has a newer schema than this code knows.
        psycopg.Error: The database refused (the caller translates it).
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        # Look before creating: a role without CREATE may use a schema made by its owner.
        found = conn.execute("SELECT to_regclass('a2a_schema') IS NOT NULL").fetchone()
        current = 0
        if found[0]:
            row = conn.execute("SELECT coalesce(max(version), 0) FROM a2a_schema").fetchone()
            current = int(row[0])
        elif MIGRATIONS:
            conn.execute("CREATE TABLE a2a_schema (version integer PRIMARY KEY)")
        if current > LATEST_VERSION:
            raise ConfigurationError(
                f"the task database has schema version {current}; this a2a_sync knows "
                f"up to {LATEST_VERSION}: upgrade a2a_sync"
            )
        for version, sql in MIGRATIONS:
            if version > current:
                logger.info("task store: migrating the schema to version %d", version)
                conn.execute(sql)
                conn.execute("INSERT INTO a2a_schema (version) VALUES (%s)", (version,))
    return current
