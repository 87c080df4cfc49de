"""A stdio server's stderr: drained on its own thread as whole lines, forwarded (to logging,
a file-like object or nowhere), the last lines kept for error messages, and held while
the era probe runs (:class:`~._stdio_text.StderrRelay`)."""

from __future__ import annotations

import collections
import io
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from typing import IO, Any, Final

from ._stdio_text import READ_BYTES, LineSplitter, StderrRelay, discard, tail_line

__all__ = ["LOG", "StderrChannel", "drain_lines"]

logger = logging.getLogger("a2a_sync.mcp.transports.stdio")
#: Where ``stderr="log"`` sends the server's stderr lines (INFO level).
stderr_logger = logging.getLogger("a2a_sync.mcp.transports.stdio.stderr")

#: ``stderr=LOG``: the server's stderr lines go to :data:`stderr_logger`.
LOG: Final = "log"
#: Lines of stderr kept for error messages.
TAIL_LINES: Final = 20
#: How long releasing held stderr lines waits for what is still in the pipe.
SETTLE_TIMEOUT: Final = 0.5


class StderrChannel:
    """The stderr side of one server process. Thread-safe.

    Args:
        target: ``LOG``, a file-like object (anything with ``write``) or ``None``.
        name: The server, for log messages.
        pid: Returns the server's pid (for the log lines).
    """

    def __init__(self, target: Any, name: str, pid: Callable[[], int | None]) -> None:
        self._target = target
        self._name = name
        self._pid = pid
        self._tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self._relay = StderrRelay(self._forward, stderr_logger, name, collapsible=target == LOG)
        self._idle = threading.Event()

    @property
    def tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return "\n".join(self._tail)

    def drain(self, stream: IO[bytes]) -> None:
        """Read ``stream`` to EOF (the top of the drain thread)."""
        drain_lines(cast_reader(stream), self._line, self._idle, self._name)

    def hold(self) -> None:
        """Hold lines until :meth:`release`."""
        self._relay.hold()

    def release(self, collapse: str | None, stream: IO[bytes] | None) -> None:
        """Forward the held lines, or summarise them (``collapse``) after reading what is
        still in ``stream`` (bounded by :data:`SETTLE_TIMEOUT`)."""
        if collapse is not None and stream is not None:
            wait_settled(stream, self._idle, SETTLE_TIMEOUT)
        self._relay.release(collapse)

    def _line(self, text: str) -> None:
        self._tail.append(tail_line(text))  # held lines too: error messages quote them
        self._relay.line(text)

    def _forward(self, text: str) -> None:
        if self._target == LOG:
            stderr_logger.info("[%s] %s", self._pid(), text)
        else:
            self._target.write(text + "\n")


def cast_reader(stream: IO[bytes]) -> io.BufferedReader:
    """A subprocess pipe is a ``BufferedReader`` (``read1`` returns what is there)."""
    assert isinstance(stream, io.BufferedReader)
    return stream


#: Polling step while waiting for the stderr pipe to settle.
_SETTLE_POLL_INTERVAL: Final = 0.01


def drain_lines(
    stream: io.BufferedReader, on_line: Callable[[str], None], idle: threading.Event, name: str
) -> None:
    """Read ``stream`` (a server's stderr) to EOF and hand every whole line to ``on_line``;
    ``idle`` is set while waiting for more. Never leaves the server blocked on a full pipe:
    if ``on_line`` fails, the rest is read and discarded. The top of a drain thread."""
    splitter = LineSplitter()
    read = stream.read1
    try:
        while True:
            idle.set()
            chunk = read(READ_BYTES)
            idle.clear()
            if not chunk:
                break
            for text in splitter.feed(chunk):
                on_line(text)
        for text in splitter.finish():
            on_line(text)
        idle.set()
    except (OSError, ValueError) as exc:
        logger.debug("stderr of %s: %s", name, exc)
    except Exception:  # top of the drain thread: never block the server on a full pipe
        logger.exception("forwarding stderr of %s failed; discarding the rest", name)
        discard(stream.readline)


def wait_settled(stream: IO[bytes], idle: threading.Event, timeout: float) -> None:
    """Wait (at most ``timeout``) until the drain thread of ``stream`` waits for data and
    the pipe has none for it: what the server wrote before its last answer is read."""
    deadline = time.monotonic() + timeout
    while not _settled(stream, idle) and time.monotonic() < deadline:
        time.sleep(_SETTLE_POLL_INTERVAL)


def _settled(stream: IO[bytes], idle: threading.Event) -> bool:
    if not idle.is_set():
        return False
    if os.name != "posix":
        return True
    try:
        readable, _, _ = select.select([stream], [], [], 0)
    except (OSError, ValueError):
        return True  # closed
    return not readable
