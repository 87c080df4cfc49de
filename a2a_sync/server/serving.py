"""Run an application on waitress (the ``server`` extra): ``serve`` and ``serve_in_thread``.

waitress is the supported server: pure Python, buffers whole requests before a worker
thread sees them (slow clients cannot pin threads), streams chunked responses with an
immediate flush, and notices a client that went away on the next write. Every open
stream holds one of its threads, so the thread count is the application's stream cap
plus :data:`DEFAULT_UNARY_THREADS` for everything else.

::

    a2a_sync.serve(app, port=8000)                    # blocks; Ctrl-C / SIGTERM stop it

    with a2a_sync.serve_in_thread(app) as url:        # tests and notebooks
        client = A2AClient.from_url(url)

    server = a2a_sync.serve_in_thread(app)            # or a handle: server.url,
    server.stop()                                     # server.stop(), stopped at exit

Connections, read deadlines and idle time are set by a :class:`ServerLimits` (``limits=``):
a client that sends its request slowly, or not at all, is answered 408 after
``header_timeout`` however it drips, and never holds a thread.

An :class:`A2AApplication` checks ``Host`` itself (``allowed_hosts``). Another WSGI app
served on a loopback address gets the same DNS-rebinding protection here: requests must
name ``localhost``, ``127.0.0.1`` or ``[::1]`` in ``Host``.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType
from typing import Any, Final

from ..a2a.types import AgentCard
from ..errors import ConfigurationError, install_hint
from .announce import say, store_location
from .app import A2AApplication
from .executor import AgentExecutor, ExecuteFunction
from .handle import ServerHandle
from .limits import DEFAULT_UNARY_THREADS, ServerLimits
from .running import DEFAULT_PORT, THREAD_GRACE, RunningServer
from .serve_options import ServeOptions
from .stores.base import TaskStore
from .stores.sqlite import SQLiteTaskStore

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_PORT",
    "DEFAULT_UNARY_THREADS",
    "THREAD_GRACE",
    "RunningServer",
    "ServeOptions",
    "ServerHandle",
    "ServerLimits",
    "open_task_store",
    "serve",
    "serve_in_thread",
]

logger = logging.getLogger(__name__)

#: The task database ``serve(executor, card=...)`` creates (in the working directory).
DEFAULT_DATABASE: Final = "a2a-tasks.sqlite3"
#: ``database`` values naming a PostgreSQL server rather than a SQLite file.
POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")


def open_task_store(database: str | None) -> TaskStore:
    """The task store ``database`` names: a ``postgresql://`` URL opens a
    :class:`~a2a_sync.server.stores.postgres.PostgresTaskStore` (shared by several worker
    processes; the ``postgres`` extra), anything else a SQLite file (default
    :data:`DEFAULT_DATABASE`; one process).

    Raises:
        ConfigurationError: The store cannot be opened (or psycopg is not installed).
    """
    if database is not None and database.startswith(POSTGRES_SCHEMES):
        try:
            from .stores.postgres import PostgresTaskStore  # noqa: PLC0415 - optional extra
        except ImportError as exc:
            raise ConfigurationError(
                f"a PostgreSQL task store needs psycopg: {install_hint('postgres')}"
            ) from exc
        return PostgresTaskStore(database)
    return SQLiteTaskStore(database or DEFAULT_DATABASE)


def _application(
    app: Any,
    card: AgentCard | None,
    database: str | None,
    task_store: TaskStore | None,
    options: dict[str, Any],
) -> tuple[Any, TaskStore | None]:
    """``app`` itself, or an A2AApplication for an executor + card, and the store that
    ``serve`` opened for it (closed when serving ends)."""
    if card is None:
        return app, None
    if not isinstance(app, AgentExecutor) and not callable(app):
        raise ConfigurationError("with card=, the first argument is the agent executor")
    if database is not None and task_store is not None:
        raise ConfigurationError("give database= or task_store=, not both")
    executor: AgentExecutor | ExecuteFunction = app
    opened = open_task_store(database) if task_store is None else None
    store = task_store if task_store is not None else opened
    return A2AApplication(card, executor, task_store=store, **options), opened


def grpc_server(app: Any, host: str = "127.0.0.1", port: int = 0, **options: Any) -> Any:
    """A :class:`~a2a_sync.server.bindings.grpc.GRPCServer` for ``app`` (not started; use
    it as a context manager). Needs the ``grpc`` extra, imported only here.

    Raises:
        ConfigurationError: The extra is missing, or ``app`` is no A2AApplication.
    """
    if not isinstance(app, A2AApplication):
        raise ConfigurationError("gRPC serves an A2AApplication (or an executor with card=)")
    try:
        from .bindings.grpc import GRPCServer  # noqa: PLC0415 - optional extra
    except ImportError as exc:
        raise ConfigurationError(
            f"serving gRPC needs the grpc extra: {install_hint('grpc')}"
        ) from exc
    return GRPCServer(app, host, port, **options)


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    card: AgentCard | None = None,
    database: str | None = None,
    task_store: TaskStore | None = None,
    options: ServeOptions | None = None,
    **overrides: Any,
) -> None:
    """Serve until interrupted (Ctrl-C, SIGTERM), then shut down gracefully.

    Args:
        app: An :class:`A2AApplication` (or any WSGI app); or, with ``card``, the agent
            executor, served with a durable task store (SQLite, or PostgreSQL when
            ``database`` is a ``postgresql://`` URL).
        host: Address to bind; loopback by default (and then protected against DNS
            rebinding).
        port: Port to bind.
        card: The agent card, when ``app`` is an executor.
        database: For that case: a SQLite file (default :data:`DEFAULT_DATABASE`; one
            process), or a ``postgresql://user:password@host/dbname`` URL (several worker
            processes share it: see ``docs/scale-out.md``). The store is closed when
            serving ends.
        task_store: For that case, a store of your own instead (not closed here).
        options: How to serve (:class:`ServeOptions`: threads, limits, grace period,
            quiet, gRPC port, application arguments, waitress settings).
        **overrides: Any :class:`ServeOptions` attribute by name (``threads=``,
            ``limits=``, ``grace=``, ``quiet=``, ``grpc_port=``, ``app_options=``),
            applied onto ``options``; any other name is a waitress setting (overrides
            ``limits``).

    Raises:
        ConfigurationError: waitress is missing, the port is in use, or the settings
            conflict.
    """
    opts = (ServeOptions() if options is None else options).merge(overrides)
    grace = opts.grace
    creates = (
        card is not None
        and task_store is None
        and not (database or "").startswith(POSTGRES_SCHEMES)
        and not os.path.exists(database or DEFAULT_DATABASE)
    )
    application, opened = _application(app, card, database, task_store, dict(opts.app_options))
    extra: Any = None
    try:
        if opts.grpc_port is not None:
            extra = grpc_server(application, host, opts.grpc_port).start()
        server = RunningServer(
            application, host, port, threads=opts.threads, limits=opts.limits, **opts.waitress
        )
    except BaseException:
        if extra is not None:
            extra.stop(0)
        if opened is not None:
            opened.close()
        raise
    stopper: list[threading.Thread] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if not stopper:
            logger.info("signal %d: shutting down", signum)
            thread = threading.Thread(
                target=server.stop, args=(grace,), name="a2a-sync-shutdown", daemon=True
            )
            stopper.append(thread)
            thread.start()

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for which in (signal.SIGINT, signal.SIGTERM):
            previous[which] = signal.signal(which, on_signal)
    logger.info("serving %r on %s", application, server.url)
    if not opts.quiet:
        say(
            f"a2a-sync: serving {server.url} ({store_location(application, creates)}); "
            "Ctrl-C stops it"
        )
    try:
        server.run()
    finally:
        for which, handler in previous.items():
            signal.signal(which, handler)
        if stopper:
            stopper[0].join(grace + 5.0)
        else:
            server.stop(grace)
        if extra is not None:
            extra.stop(grace)
        if opened is not None:
            opened.close()
        if not opts.quiet:
            say(f"a2a-sync: stopped serving {server.url}")


def serve_in_thread(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    threads: int | None = None,
    limits: ServerLimits | None = None,
    grace: float = THREAD_GRACE,
    **options: Any,
) -> ServerHandle:
    """Serve ``app`` on a background thread; returns a :class:`ServerHandle` at once.

    ``server.url`` is the base URL (``http://127.0.0.1:<port>``; port 0 picks a free
    one), ``server.stop()`` stops it gracefully and joins its threads; ``with
    serve_in_thread(app) as url`` stops it when the block ends. A server still running
    at interpreter exit is stopped then. Leave the card's ``supported_interfaces`` empty
    and the card advertises this URL.

    Raises:
        ConfigurationError: waitress is missing, the port is in use, or the settings
            conflict.
    """
    server = RunningServer(app, host, port, threads=threads, limits=limits, **options)
    return ServerHandle(server, grace)
