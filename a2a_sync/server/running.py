"""A waitress server for one WSGI application (:class:`RunningServer`), stoppable from any
thread: what :func:`~a2a_sync.server.serving.serve` and ``serve_in_thread`` run.

The thread count is the application's stream cap plus ``limits.unary_threads``; a loopback
server protects an app without its own ``allowed_hosts`` against DNS rebinding.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Final

from .._net.secure import is_loopback
from ..errors import ConfigurationError, install_hint
from .announce import bind_error
from .app import (
    DEFAULT_GRACE_PERIOD,
    DEFAULT_MAX_BODY_BYTES,
    LOOPBACK_HOSTS,
    A2AApplication,
    host_allowed,
)
from .limits import ServerLimits

__all__ = ["DEFAULT_PORT", "THREAD_GRACE", "RunningServer"]

logger = logging.getLogger(__name__)

#: Port of ``serve`` when none is given.
DEFAULT_PORT: Final = 8000
#: Grace period of ``serve_in_thread``: tests want a prompt stop.
THREAD_GRACE: Final = 2.0
#: File descriptors kept beyond connections and threads (store, logs, wake-up pipes).
DESCRIPTOR_RESERVE: Final = 64


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
        if is_loopback(host) and getattr(app, "allowed_hosts", None) is None:
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
