"""The PostgreSQL task store's connections: a pool for statements, fresh ones for LISTEN.

Internal to :mod:`a2a_sync.server.stores.postgres`. Every statement runs in autocommit
mode on a pooled connection held for that one round trip; database failures become
:class:`~a2a_sync.errors.InternalError` here, at one edge. The connection string may carry
a password: it is never logged, formatted into a message or shown in a repr.

**Hot statements** (the appends, task creation, claims: several per request) are
prepared on every pooled connection when it opens and run through psycopg's libpq layer
(:attr:`psycopg.Connection.pgconn`, ``exec_prepared``): a third of the client CPU of
``Connection.execute``, whose cursors, adapters and result objects these statements do
not need (they only report how many rows they produced, or return their values as bytes:
:meth:`Database.fetch_prepared`). Their parameters are text (``str``, ``int``, ``None``)
or binary ``bytes`` (bytea), with types cast in the SQL. Everything else goes through
``Connection.execute``. The libpq call releases the GIL while it waits for the database,
like psycopg's own.

**Parked connections.** A statement's connection goes back to a short list of this
store's own rather than to the pool (psycopg_pool's ``getconn``/``putconn`` pair costs
20 to 40 µs of CPU under load, several times per request); the next statement takes it
from there with one lock. The pool still opens, configures, bounds (``pool_size``) and
replaces connections: a connection that is broken or inside a transaction goes back to
it, and while any thread waits on the pool every returned connection goes to the pool,
so a parked connection never sits idle while a caller times out. Connections opened for
a burst therefore stay open (at most ``pool_size``) until the store closes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool

from ...errors import ConfigurationError, InternalError

__all__ = ["APPLICATION_NAME", "Database", "Param", "RawRows", "StatementFailed"]

#: ``application_name`` of every connection (``pg_stat_activity`` shows who is who).
APPLICATION_NAME: Final = "a2a_sync"

Rows = list[tuple[Any, ...]]
#: Rows of :meth:`Database.fetch_prepared`: each value as PostgreSQL's binary form, or None.
RawRows = list[list[bytes | None]]
#: A parameter of a prepared statement.
Param = str | int | bytes | None

_OK: Final = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)
_IDLE: Final = pq.TransactionStatus.IDLE
_CONN_OK: Final = pq.ConnStatus.OK


class StatementFailed(InternalError):
    """The database answered a prepared statement with an error: its transaction was
    rolled back, nothing of it was written (unlike a lost connection, whose outcome is
    unknown)."""


class Database:
    """A connection pool and a factory of dedicated connections. Thread-safe.

    Args:
        dsn: libpq connection string or ``postgresql://`` URL.
        pool_size: Pooled connections at most.
        pool_min: Pooled connections kept open.
        pool_timeout: Longest wait for a free pooled connection.
        connect_timeout: Longest wait to connect.
        setup: Run once on a connection of its own before the pool opens (migrations).
        prepared: Statements (name -> SQL with ``$n`` placeholders) prepared on every
            pooled connection, for :meth:`execute_prepared`.

    Raises:
        ConfigurationError: The database cannot be reached (or ``setup`` failed).
    """

    def __init__(
        self,
        dsn: str,
        *,
        pool_size: int,
        pool_min: int,
        pool_timeout: float,
        connect_timeout: float,
        setup: Callable[[psycopg.Connection[Any]], object],
        prepared: Mapping[str, str],
    ) -> None:
        self._dsn = dsn
        self._kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(2, round(connect_timeout)),  # libpq: whole seconds, >= 2
            "application_name": APPLICATION_NAME,
            "client_encoding": "UTF8",  # what execute_prepared encodes text parameters in
        }
        self._prepared = {name.encode(): sql.encode() for name, sql in prepared.items()}
        self._lock = threading.Lock()  # guards the three below
        self._parked: list[psycopg.Connection[Any]] = []
        self._pool_waiters = 0  # threads in the pool's getconn
        self._closing = False
        try:
            with self.connect() as conn:
                setup(conn)
        except psycopg.Error as exc:
            raise ConfigurationError(
                f"cannot open the PostgreSQL task store: {type(exc).__name__}"
            ) from exc
        self._pool = ConnectionPool(
            dsn,
            min_size=min(pool_min, pool_size),
            max_size=pool_size,
            kwargs=self._kwargs,
            configure=self._prepare,
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

    def _prepare(self, conn: psycopg.Connection[Any]) -> None:
        for name, sql in self._prepared.items():
            result = conn.pgconn.prepare(name, sql)
            if result.status != pq.ExecStatus.COMMAND_OK:
                raise psycopg.OperationalError(f"cannot prepare {name.decode()}")

    def _take(self) -> psycopg.Connection[Any]:
        """A parked connection, else one from the pool (waits up to ``pool_timeout``)."""
        with self._lock:
            if self._parked:
                return self._parked.pop()
            self._pool_waiters += 1
        try:
            return self._pool.getconn()
        finally:
            with self._lock:
                self._pool_waiters -= 1

    def _give(self, conn: psycopg.Connection[Any]) -> None:
        """Park a healthy idle connection, unless a thread waits on the pool for one."""
        pgconn = conn.pgconn
        if pgconn.status == _CONN_OK and pgconn.transaction_status == _IDLE:
            with self._lock:
                if not self._pool_waiters and not self._closing:
                    self._parked.append(conn)
                    return
        self._pool.putconn(conn)  # the pool hands it on, resets it or replaces it

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
            conn = self._take()
            try:
                cursor = conn.execute(sql, args, binary=binary)
                pgresult = cursor.pgresult
                if pgresult is None or pgresult.status != pq.ExecStatus.TUPLES_OK:
                    return []
                return cursor.fetchall()
            finally:
                self._give(conn)
        except psycopg.Error as exc:
            raise InternalError("task store query failed") from exc

    def execute_prepared(self, name: str, params: Sequence[Param]) -> int:
        """Run a prepared statement; returns how many rows it produced.

        Raises:
            StatementFailed: The database refused it (the SQLSTATE is in the message).
            InternalError: The database failed otherwise.
        """
        return self._exec(name, params, 0).ntuples

    def fetch_prepared(self, name: str, params: Sequence[Param]) -> RawRows:
        """Run a prepared statement; returns its rows, values in binary form (``int4``
        as 4 bytes big-endian, ``text`` as UTF-8, ``bytea`` as is).

        Raises:
            StatementFailed: The database refused it (the SQLSTATE is in the message).
            InternalError: The database failed otherwise.
        """
        result = self._exec(name, params, 1)
        columns = range(result.nfields)
        return [[result.get_value(row, col) for col in columns] for row in range(result.ntuples)]

    def _exec(self, name: str, params: Sequence[Param], result_format: int) -> pq.abc.PGresult:
        values: list[bytes | None] = []
        formats: list[int] = []
        for param in params:
            if isinstance(param, bytes):
                values.append(param)
                formats.append(1)  # binary: bytea as is
            else:
                values.append(None if param is None else str(param).encode())
                formats.append(0)
        try:
            conn = self._take()
            try:
                # None is SQL NULL (libpq takes a null pointer; the stub omits it).
                result = conn.pgconn.exec_prepared(
                    name.encode(),
                    values,  # type: ignore[arg-type]
                    formats,
                    result_format=result_format,
                )
                alive = conn.pgconn.status == _CONN_OK
            finally:
                self._give(conn)
        except psycopg.Error as exc:
            raise InternalError("task store statement failed") from exc
        if result.status not in _OK:
            state = result.error_field(pq.DiagnosticField.SQLSTATE)
            message = f"task store statement failed (SQLSTATE {(state or b'?').decode()})"
            # The server's error on a live connection: rolled back. Otherwise: unknown.
            raise StatementFailed(message) if state and alive else InternalError(message)
        return result

    def run(self, work: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        """Call ``work(connection)`` on a pooled connection.

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
        with self._lock:
            self._closing = True
            parked, self._parked = self._parked, []
        for conn in parked:
            self._pool.putconn(conn)
        self._pool.close(timeout)

    def __repr__(self) -> str:
        return "<Database (a2a_sync task store)>"
