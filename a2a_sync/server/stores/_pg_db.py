"""The PostgreSQL task store's connections: a pool for statements, fresh ones for LISTEN.

Internal to :mod:`a2a_sync.server.stores.postgres`. Every statement runs in autocommit
mode on a pooled connection held for that one round trip; database failures become
:class:`~a2a_sync.errors.InternalError` here, at one edge. The connection string may carry
a password: it is never logged, formatted into a message or shown in a repr.
"""

from __future__ import annotations

from typing import Any, Final

import psycopg
from psycopg_pool import ConnectionPool

from ...errors import ConfigurationError, InternalError

__all__ = ["APPLICATION_NAME", "Database"]

#: ``application_name`` of every connection (``pg_stat_activity`` shows who is who).
APPLICATION_NAME: Final = "a2a_sync"

Rows = list[tuple[Any, ...]]


class Database:
    """A connection pool and a factory of dedicated connections. Thread-safe.

    Args:
        dsn: libpq connection string or ``postgresql://`` URL.
        pool_size: Pooled connections at most.
        pool_min: Pooled connections kept open.
        pool_timeout: Longest wait for a free pooled connection.
        connect_timeout: Longest wait to connect.

    Raises:
        ConfigurationError: The database cannot be reached.
    """

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int,
        pool_min: int,
        pool_timeout: float,
        connect_timeout: float,
    ) -> None:
        self._dsn = dsn
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, round(connect_timeout)),  # libpq: whole seconds, >= 2
            "application_name": APPLICATION_NAME,
        }
        self._pool = ConnectionPool(
            dsn,
            min_size=min(pool_min, pool_size),
            max_size=pool_size,
            kwargs=self._kwargs,
            timeout=pool_timeout,
            open=False,
            name="a2a-sync-pg",
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except psycopg.Error as exc:
            self._pool.close()
            raise ConfigurationError(
                f"cannot connect to the PostgreSQL task store: {type(exc).__name__}"
            ) from exc

    def query(self, sql: Any, args: Any = (), *, binary: bool = False) -> Rows:
        """Run one statement (autocommit) and return its rows (none for commands).

        Args:
            sql: The statement, ``%s`` placeholders.
            args: Its parameters.
            binary: Ask for binary results (bytea arrives as bytes without hex decoding).

        Raises:
            InternalError: The database failed or no connection was free in time.
        """
        try:
            with self._pool.connection() as conn:
                cursor = conn.execute(sql, args, binary=binary)
                return cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as exc:
            raise InternalError("task store query failed") from exc

    def run(self, work: Any) -> Any:
        """Call ``work(connection)`` on a pooled connection (migrations).

        Raises:
            psycopg.Error: As ``work`` raised it (the caller translates).
        """
        with self._pool.connection() as conn:
            return work(conn)

    def notify(self, channel: str, payload: str = "") -> None:
        """``NOTIFY channel, payload`` (committed at once)."""
        self.query("SELECT pg_notify(%s, %s)", (channel, payload))

    def connect(self) -> psycopg.Connection[Any]:
        """A new autocommit connection outside the pool (the caller closes it).

        Raises:
            psycopg.Error: The connection failed.
        """
        return psycopg.Connection.connect(self._dsn, **self._kwargs)

    def close(self, timeout: float) -> None:
        """Close the pool (connections in use are closed when returned)."""
        self._pool.close(timeout)

    def __repr__(self) -> str:
        return "<Database (a2a_sync task store)>"
