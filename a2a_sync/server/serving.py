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

import contextlib
import ipaddress
import logging
import os
import signal
import threading
from types import FrameType
from typing import Any, Final

from ..a2a.types import AgentCard
from ..errors import ConfigurationError, install_hint
from .announce import bind_error, say, store_location
from .app import (
    DEFAULT_GRACE_PERIOD,
    DEFAULT_MAX_BODY_BYTES,
    LOOPBACK_HOSTS,
    A2AApplication,
    host_allowed,
)
from .executor import AgentExecutor, ExecuteFunction
from .handle import ServerHandle
from .limits import DEFAULT_UNARY_THREADS, ServerLimits
from .stores.base import TaskStore
from .stores.sqlite import SQLiteTaskStore

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_PORT",
    "DEFAULT_UNARY_THREADS",
    "RunningServer",
    "ServerHandle",
    "ServerLimits",
    "open_task_store",
    "serve",
    "serve_in_thread",
]

logger = logging.getLogger(__name__)

#: Port of ``serve`` when none is given.
DEFAULT_PORT: Final = 8000
#: The task database ``serve(executor, card=...)`` creates (in the working directory).
DEFAULT_DATABASE: Final = "a2a-tasks.sqlite3"
#: Grace period of ``serve_in_thread``: tests want a prompt stop.
THREAD_GRACE: Final = 2.0
#: File descriptors kept beyond connections and threads (store, logs, wake-up pipes).
DESCRIPTOR_RESERVE: Final = 64
#: ``database`` values naming a PostgreSQL server rather than a SQLite file.
POSTGRES_SCHEMES: Final = ("postgresql://", "postgres://")


class RunningServer:
    """A waitress server for one WSGI application; stop it from any thread.

    Args:
        app: The application (an :class:`A2AApplication` is closed gracefully on stop).
        host: Address to bind.
        port: Port to bind (0: any free port).
        threads: waitress worker threads (default: the app's stream cap plus
            ``limits.unary_threads``).
        limits: Connection limit, read deadlines, idle timeout (:class:`ServerLimits`).
        **options: Further waitress settings (``trusted_proxy`` ...); they override
            what ``limits`` sets.

    Raises:
        ConfigurationError: waitress is not installed, or ``threads`` leaves no thread for
            unary calls when every stream is open.
    """

    def __init__(
        self,
        app: Any,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        *,
        threads: int | None = None,
        limits: ServerLimits | None = None,
        **options: Any,
    ) -> None:
        try:
            import waitress  # noqa: PLC0415 - optional dependency (the "server" extra)
        except ImportError as exc:
            raise ConfigurationError(f"serving needs waitress: {install_hint('server')}") from exc
        from waitress import wasyncore  # noqa: PLC0415
        from waitress.task import ThreadedTaskDispatcher  # noqa: PLC0415

        from ._waitress import install  # noqa: PLC0415 - imports waitress

        limits = ServerLimits() if limits is None else limits
        streams = app.max_streams if isinstance(app, A2AApplication) else 0
        if threads is None:
            threads = streams + limits.unary_threads
        elif threads <= streams:
            raise ConfigurationError(
                f"threads={threads} must exceed the app's max_streams={streams}, or open "
                "streams would leave no thread for other calls"
            )
        self.app = app
        wsgi = app
        if _is_loopback(host) and getattr(app, "allowed_hosts", None) is None:
            wsgi = _LoopbackOnly(app)
        max_body = app.max_body_bytes if isinstance(app, A2AApplication) else DEFAULT_MAX_BODY_BYTES
        settings = {**limits.waitress_settings(max_body), **options}
        _check_descriptors(int(settings["connection_limit"]) + threads)
        self.limits = limits
        socket_map: dict[int, Any] = {}
        dispatcher = ThreadedTaskDispatcher()
        dispatcher.set_thread_count(threads)
        try:
            self._server: Any = waitress.create_server(
                wsgi,
                host=host,
                port=port,
                threads=threads,
                map=socket_map,
                _dispatcher=dispatcher,
                **settings,
            )
        except OSError as exc:
            # Nothing of the half-made server may outlive the error: its sockets, its
            # wake-up pipe, its worker threads.
            wasyncore.close_all(socket_map)
            dispatcher.shutdown(cancel_pending=True, timeout=THREAD_GRACE)
            raise bind_error(exc, host, port) from exc
        install(_socket_map(self._server), limits)
        self.host = host
        self.port: int = self._server.effective_port
        shown = f"[{host}]" if ":" in host else host
        #: The base URL (``http://host:port``).
        self.url = f"http://{shown}:{self.port}"
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._stopping = False

    def run(self) -> None:
        """Serve until :meth:`stop` (blocks the calling thread)."""
        try:
            self._server.run()
        finally:
            self._stopped.set()

    def stop(self, grace: float = DEFAULT_GRACE_PERIOD) -> bool:
        """Stop accepting, close the app gracefully, close connections, join the threads.

        Open streams end at once; unary calls in flight and running agents get up to
        ``grace`` seconds. Idempotent.

        Returns:
            True when every thread ended in time.
        """
        with self._stop_lock:
            if self._stopping:
                return self._stopped.wait(grace)
            self._stopping = True
        from waitress import wasyncore  # noqa: PLC0415 - optional dependency
        from waitress.server import BaseWSGIServer  # noqa: PLC0415

        server = self._server
        socket_map = _socket_map(server)

        def stop_listening() -> None:
            for channel in list(socket_map.values()):
                if isinstance(channel, BaseWSGIServer):
                    channel.accepting = False
                    wasyncore.dispatcher.close(channel)

        trigger = _trigger(server, socket_map)
        _pull(trigger, stop_listening)
        clean = True
        if isinstance(self.app, A2AApplication):
            clean = self.app.close(grace)
        # Let the worker threads finish what they are writing before the connections (and
        # the loop's wake-up pipe, which finishing workers write to) are closed.
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=grace)
        left = list(server.task_dispatcher.threads)
        if left:
            logger.warning("waitress threads still running after shutdown: %d", len(left))
        _pull(trigger, lambda: wasyncore.close_all(socket_map))
        stopped = self._stopped.wait(grace + 1.0)
        return clean and stopped and not left


def _socket_map(server: Any) -> dict[int, Any]:
    return server._map if hasattr(server, "_map") else server.map  # type: ignore[no-any-return]


def _check_descriptors(needed: int) -> None:
    """Make sure the process may open ``needed`` file descriptors (connections, threads'
    pipes, the store): raise the soft ``ulimit -n`` up to the hard one if it is lower (as
    the Go runtime does), else warn with the fix."""
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - Windows
        return
    needed += DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        logger.info("raised the soft file-descriptor limit from %d to %d", soft, target)
        soft = target
    if soft < needed:
        logger.warning(
            "ulimit -n is %d but the connection limit and threads need about %d file "
            "descriptors: raise ulimit -n or lower ServerLimits.connection_limit",
            soft,
            needed,
        )


def _pull(trigger: Any, thunk: Any) -> None:
    """Run ``thunk`` on the loop thread (nothing to do if the loop already ended)."""
    if getattr(trigger, "_closed", False):
        return
    try:
        trigger.pull_trigger(thunk)
    except OSError:
        logger.debug("waitress loop already closed")


def _trigger(server: Any, socket_map: dict[int, Any]) -> Any:
    trigger = getattr(server, "trigger", None)
    if trigger is not None:
        return trigger
    from waitress.trigger import trigger as trigger_class  # noqa: PLC0415

    for channel in socket_map.values():
        if isinstance(channel, trigger_class):
            return channel
    raise ConfigurationError("waitress server without a trigger")  # pragma: no cover


class _LoopbackOnly:
    """WSGI middleware: 421 unless ``Host`` names a loopback host (DNS rebinding)."""

    def __init__(self, app: Any) -> None:
        self._app = app
        self._allowed = frozenset(LOOPBACK_HOSTS)
        self.max_streams = getattr(app, "max_streams", 0)

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        if not host_allowed(environ.get("HTTP_HOST", ""), self._allowed):
            body = b"unknown host\n"
            start_response(
                "421 Misdirected Request",
                [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
            )
            return [body]
        return self._app(environ, start_response)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


def serve(  # noqa: PLR0913 - keyword-only; app_options/**options already take the rest
    app: Any,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    card: AgentCard | None = None,
    database: str | None = None,
    task_store: TaskStore | None = None,
    threads: int | None = None,
    limits: ServerLimits | None = None,
    grace: float = DEFAULT_GRACE_PERIOD,
    app_options: dict[str, Any] | None = None,
    quiet: bool = False,
    grpc_port: int | None = None,
    **options: Any,
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
        threads: waitress worker threads (default: stream cap + ``limits.unary_threads``).
        limits: Connection limit, read deadlines, idle timeout (:class:`ServerLimits`;
            the defaults are documented in ``docs/server.md``).
        grace: Seconds unary calls and agents get to finish on shutdown.
        app_options: Further :class:`A2AApplication` arguments for the executor case.
        quiet: Print nothing (by default one line on stderr at start, with the URL, where
            tasks are kept and how to stop, and one at stop).
        grpc_port: Also serve the gRPC binding on this port (0: a free one), beside the
            HTTP app, on the same handler, stores and limits (the ``grpc`` extra); the
            card lists it. It stops after the HTTP server (whose shutdown ends its streams).
        **options: Further waitress settings (override ``limits``).

    Raises:
        ConfigurationError: waitress is missing, the port is in use, or the settings
            conflict.
    """
    creates = (
        card is not None
        and task_store is None
        and not (database or "").startswith(POSTGRES_SCHEMES)
        and not os.path.exists(database or DEFAULT_DATABASE)
    )
    application, opened = _application(app, card, database, task_store, dict(app_options or {}))
    extra: Any = None
    try:
        if grpc_port is not None:
            extra = grpc_server(application, host, grpc_port).start()
        server = RunningServer(application, host, port, threads=threads, limits=limits, **options)
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
    if not quiet:
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
        if not quiet:
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
