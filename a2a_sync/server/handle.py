"""``ServerHandle``: a server running on a background thread (what ``serve_in_thread`` returns).

Usable three ways::

    server = serve_in_thread(app)            # a script or a notebook cell
    client = A2AClient.from_url(server.url)
    server.stop()                            # or leave it: stopped at interpreter exit

    with serve_in_thread(app) as url:        # a block (the value is the URL string)
        ...

A handle still running when the interpreter exits is stopped by an ``atexit`` hook, so
its threads never run into the interpreter's teardown.
"""

from __future__ import annotations

import atexit
import threading
from types import TracebackType
from typing import Protocol

__all__ = ["ServerHandle"]


class _Server(Protocol):
    url: str
    port: int

    def run(self) -> None: ...

    def stop(self, grace: float) -> bool: ...


class ServerHandle:
    """A started server: its :attr:`url`, :meth:`stop`, and ``with`` use.

    ``with serve_in_thread(app) as url`` binds the URL string (as before handles
    existed); the block's end stops the server.
    """

    def __init__(self, server: _Server, grace: float) -> None:
        self._server = server
        self._grace = grace
        #: The base URL, ``http://127.0.0.1:<port>``.
        self.url: str = server.url
        #: The bound port (useful with ``port=0``).
        self.port: int = server.port
        self._lock = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(
            target=server.run, name=f"a2a-sync-serve-{server.port}", daemon=True
        )
        self._thread.start()
        atexit.register(self._stop_at_exit)

    @property
    def running(self) -> bool:
        """True until :meth:`stop` (or the server's loop ended)."""
        return not self._stopped and self._thread.is_alive()

    def stop(self, grace: float | None = None) -> bool:
        """Stop gracefully (``grace`` seconds for running agents; default the one given to
        ``serve_in_thread``) and join the server's threads. Idempotent.

        Returns:
            True when every thread ended in time.
        """
        with self._lock:
            if self._stopped:
                return not self._thread.is_alive()
            self._stopped = True
        atexit.unregister(self._stop_at_exit)
        wait = self._grace if grace is None else grace
        clean = self._server.stop(wait)
        self._thread.join(wait + 5.0)
        return clean and not self._thread.is_alive()

    def _stop_at_exit(self) -> None:
        self.stop()

    def __enter__(self) -> str:
        return self.url

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<ServerHandle {self.url} {state}>"
