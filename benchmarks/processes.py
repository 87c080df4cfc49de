"""Server processes for the benchmarks, without guessing ports.

A server child binds port 0 (or a socket it bound to port 0 itself) and says which port it
got with one stdout line, ``ready <port>`` (:func:`report_ready`; a child that runs
a2a_sync's ``serve`` installs :func:`report_serve_url`, which turns serve's log line into
that). The parent starts it with :func:`spawn_server` and reads the port from that line:
no port is free between a probe and the server's bind, so nothing else can take it.
"""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Final

__all__ = ["bound_socket", "report_ready", "report_serve_url", "spawn_server"]

#: What a server child prints once it is bound.
READY_LINE: Final = re.compile(r"^ready (\d+)$")
#: What a2a_sync's ``serve`` logs (INFO) once it listens.
_SERVE_URL: Final = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")
#: Longest a server may take to start.
START_TIMEOUT: Final = 60.0


def report_ready(port: int) -> None:
    """Child side: tell the parent the port (call once the server is bound)."""
    print(f"ready {port}", flush=True)


class _ServeURLReporter(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        match = _SERVE_URL.search(record.getMessage())
        if match is not None:
            report_ready(int(match.group(1)))


def report_serve_url() -> None:
    """Child side, before ``serve(..., port=0)``: report the port serve logs it listens on."""
    logger = logging.getLogger("a2a_sync.server.serving")
    logger.addHandler(_ServeURLReporter(logging.INFO))
    logger.setLevel(logging.INFO)


def bound_socket(port: int = 0, host: str = "127.0.0.1") -> socket.socket:
    """Child side: a TCP socket bound to ``port`` (0: one the OS chooses), for servers that
    take a socket (uvicorn ``sockets=``) and need the port before they start (their card)."""
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only for
    # sockets that say they are TCP.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind((host, port))
    return sock


def spawn_server(
    argv: list[str], *, env: Mapping[str, str] | None = None, quiet: bool = False
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a server child that reports its port (see the module docstring) and wait
    until it accepts connections; returns the process and the port.

    Raises:
        RuntimeError: The child exited, or printed something else, before reporting.
        OSError: The reported port did not accept connections within the start bound.
    """
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
        env=None if env is None else dict(env),
    )
    assert process.stdout is not None
    line = process.stdout.readline().decode(errors="replace").strip()
    match = READY_LINE.match(line)
    if match is None:
        process.kill()
        process.wait(10)
        raise RuntimeError(f"{argv[:4]} did not report its port (got {line!r})")
    port = int(match.group(1))
    deadline = time.monotonic() + START_TIMEOUT
    while True:  # bound is not listening yet for servers that listen when they run
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise
            time.sleep(0.05)  # polling a starting subprocess
