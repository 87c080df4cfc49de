"""Ports for test servers without the bind-close-reuse race.

Binding port 0, closing the socket and starting a server on that number leaves a window in
which another process on a busy machine takes the port. Instead:

* :func:`listening_socket` binds port 0 and keeps the socket open: the server gets the
  socket itself (its file descriptor inherited through ``pass_fds``: gunicorn
  ``--bind fd://N``, uvicorn ``fd=N``), so the port is never free in between.
* A server that binds by itself starts on port 0 and reports the port it got: a2a_sync's
  ``serve`` logs its URL (:data:`SERVE_URL_LINE`), and any Node.js server prints it when
  started with :func:`node_port_reporter` (:data:`NODE_PORT_LINE`).
* A port that refuses connections (:func:`refused_port`) is held by a socket bound to it
  that never listens: connecting is refused at once, and nothing else can take the port
  (binding it and closing the socket again would leave it free for anyone).
* PostgreSQL can do neither (no port 0, no inherited socket): :func:`probe_port` names a
  port that was free a moment ago, and the caller must retry when the server reports
  that the address is in use (``tests/support/postgres.py`` does).
"""

from __future__ import annotations

import functools
import os
import re
import socket
from pathlib import Path
from typing import Final

__all__ = [
    "NODE_PORT_LINE",
    "SERVE_URL_LINE",
    "listening_socket",
    "node_port_reporter",
    "probe_port",
    "refused_port",
    "refused_url",
]

#: Connections the kernel queues for a listening socket before the server accepts.
_BACKLOG: Final = 128
#: What a2a_sync's ``serve`` logs once it listens (INFO): the URL, port included.
SERVE_URL_LINE: Final = re.compile(r"serving .* on (http://127\.0\.0\.1:(\d+))")
#: What :func:`node_port_reporter` makes a Node.js server print on stderr.
NODE_PORT_LINE: Final = re.compile(r"^A2A_SYNC_TEST_PORT (\d+)$")

_NODE_REPORTER: Final = """\
// Preloaded with --require: print the port every TCP server got (for PORT=0 starts).
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") {
      process.stderr.write(`A2A_SYNC_TEST_PORT ${address.port}\\n`);
    }
  });
  return listen.apply(this, args);
};
"""


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """A TCP socket bound to a port the OS chose, listening and inheritable: pass it to
    the server (``pass_fds=(sock.fileno(),)``) and close it once the server runs.
    ``sock.getsockname()[1]`` is the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, 0))
        sock.listen(_BACKLOG)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def node_port_reporter(directory: Path) -> dict[str, str]:
    """Environment entries that make a Node.js server print :data:`NODE_PORT_LINE` when it
    listens (a preload script written to ``directory``); start it with ``PORT=0``."""
    script = directory / "a2a_sync_report_port.js"
    script.write_text(_NODE_REPORTER, encoding="utf-8")
    options = os.environ.get("NODE_OPTIONS", "")
    return {"NODE_OPTIONS": f"{options} --require {script}".strip()}


def probe_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago, for servers that can neither take a socket nor
    bind port 0 (PostgreSQL). Racy by nature: retry when the server reports the address
    in use."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


@functools.cache
def _refusing_socket(host: str) -> socket.socket:
    # Held for the whole run (one per host): bound, never listening.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    return sock


def refused_port(host: str = "127.0.0.1") -> int:
    """A port where connecting is refused at once, for the rest of the run (a socket is
    bound to it and never listens, so no other server can take it meanwhile)."""
    port: int = _refusing_socket(host).getsockname()[1]
    return port


def refused_url(path: str = "/", host: str = "127.0.0.1") -> str:
    """``http://host:port/path`` on :func:`refused_port`."""
    return f"http://{host}:{refused_port(host)}{path}"
