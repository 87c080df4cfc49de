"""Start MCP peer servers that listen on HTTP, for interop tests.

* :func:`mcpserver_http` runs ``mcpserver_peer.py`` (official ``MCPServer``), which binds
  127.0.0.1 port 0 itself and prints the port: no race.
* :func:`everything_http` runs ``@modelcontextprotocol/server-everything`` in
  ``streamableHttp`` mode. It has no host option (it binds every interface) and takes its
  port from ``PORT``: it gets ``PORT=0`` and a preloaded script prints the port the OS
  chose (:func:`tests.support.ports.node_port_reporter`): no race. Clients connect to
  127.0.0.1.

Both drain the server's output on named daemon threads (a full pipe would stall the
server) and keep its tail for failure messages; readiness is an Event set by the drain
thread, never a sleep.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from tests.support.ports import NODE_PORT_LINE, node_port_reporter

from . import PEERS

MCPSERVER_PEER = str(PEERS / "mcpserver_peer.py")
EVERYTHING = Path(__file__).parents[3] / "node_modules" / ".bin" / "mcp-server-everything"

START_TIMEOUT = 30.0  # node + npm packages or uvicorn start in ~1 s; generous for a busy box
STOP_TIMEOUT = 5.0


class _Server:
    """A server subprocess whose stdout and stderr are drained by daemon threads."""

    def __init__(self, argv: list[str], ready: re.Pattern[str], env: dict[str, str]) -> None:
        self._ready_pattern = ready
        #: Set by the ready line, or when both pipes ended (the server exited first).
        self.ready = threading.Event()
        self._lock = threading.Lock()
        self._open_pipes = 2
        self.match: re.Match[str] | None = None
        self.tail: collections.deque[str] = collections.deque(maxlen=40)
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        self._threads = [
            threading.Thread(
                target=self._drain, args=(pipe,), name=f"a2a-sync-test-peer-{name}", daemon=True
            )
            for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr))
        ]
        for thread in self._threads:
            thread.start()

    def _drain(self, pipe: IO[bytes] | None) -> None:
        assert pipe is not None
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip()
            self.tail.append(line)
            if not self.ready.is_set():
                match = self._ready_pattern.search(line)
                if match is not None:
                    self.match = match
                    self.ready.set()
        pipe.close()
        with self._lock:
            self._open_pipes -= 1
            if self._open_pipes == 0:
                self.ready.set()

    def wait_ready(self) -> bool:
        """True once the ready line appeared; False if the server exited first."""
        self.ready.wait(START_TIMEOUT)
        return self.match is not None

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(STOP_TIMEOUT)
        for thread in self._threads:
            thread.join(STOP_TIMEOUT)

    def failure(self, what: str) -> str:
        return f"{what} (exit {self.proc.poll()}):\n" + "\n".join(self.tail)


@contextlib.contextmanager
def mcpserver_http(*args: str) -> Iterator[str]:
    """Run the MCPServer peer (``"http"`` or ``"sse"`` plus options); yield its base URL."""
    server = _Server(
        [sys.executable, MCPSERVER_PEER, *args],
        re.compile(r"^PORT (\d+)$"),
        {**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        if not server.wait_ready():
            raise AssertionError(server.failure("the MCPServer peer did not start"))
        assert server.match is not None
        yield f"http://127.0.0.1:{server.match.group(1)}"
    finally:
        server.stop()


@contextlib.contextmanager
def everything_http() -> Iterator[str]:
    """Run server-everything over Streamable HTTP; yield ``http://127.0.0.1:<port>/mcp``.

    It starts on ``PORT=0`` and a preloaded script prints the port the OS gave it, so no
    port is guessed (no race with other processes on the machine)."""
    with tempfile.TemporaryDirectory(prefix="a2a-sync-everything-") as directory:
        server = _Server(
            [str(EVERYTHING), "streamableHttp"],
            NODE_PORT_LINE,
            {**os.environ, "PORT": "0", **node_port_reporter(Path(directory))},
        )
        try:
            if not server.wait_ready():
                raise AssertionError(server.failure("server-everything did not start"))
            assert server.match is not None
            yield f"http://127.0.0.1:{server.match.group(1)}/mcp"
        finally:
            server.stop()
