"""The stdio server's stdout as lines: the shared buffer whoever holds the pipe's token
fills from the pipe and delivers complete lines from (see :mod:`._stdio_lead`).

A holder leaves whatever it has not consumed here for the next one, so a line is read
once and never lost; an incomplete line waits for the rest of it. Each line is decoded
as one JSON object and delivered; other lines are counted as noise. A line over the
limit, EOF or a failed read is recorded in :attr:`LineBuffer.end` for the pipe to act
on.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any, Final

from ...errors import A2ASyncError, ConnectionClosed, ResponseTooLarge, excerpt
from . import Waiter
from ._stdio_text import NoiseLimiter, scan_json

__all__ = ["CHUNK", "END", "EOF", "SETTLED", "TIMEOUT", "YIELD", "LineBuffer"]

logger = logging.getLogger("a2a_sync.mcp.transports.stdio")  # the stdio transport's

#: Bytes read from the pipe at once.
CHUNK: Final = 65536
#: Why a holder stopped reading.
SETTLED, TIMEOUT, YIELD, END = range(4)
#: Recorded ends: EOF (or the pipe closed under us) and "still open".
EOF: Final = ConnectionClosed("EOF")


class LineBuffer:
    """Bytes read from the server's stdout and not yet delivered.

    Not thread-safe: only the pipe's token holder uses it (the token's hand-overs
    happen under the pipe's lock, which orders the holders' accesses).

    Args:
        fd: The stdout pipe's file descriptor (not closed here).
        max_line: Longest line accepted (bytes, without the newline).
        deliver: Takes one decoded JSON object (the session's ``deliver``).
        noise: Counts and logs lines that are not JSON objects.
        name: The server as messages name it.
    """

    def __init__(
        self,
        fd: int,
        max_line: int,
        deliver: Callable[[dict[str, Any]], None],
        noise: NoiseLimiter,
        name: str,
    ) -> None:
        self._fd = fd
        self._max = max_line
        self._deliver = deliver
        self._noise = noise
        self._name = name
        self.buf = bytearray()
        self._pos = 0
        self.end: A2ASyncError | None = None  # EOF, or the error that ends the stream

    def consume(self, waiter: Waiter | None) -> int | None:
        """Deliver the buffer's complete lines; stop early once ``waiter`` is settled.

        Returns:
            ``SETTLED``, ``END`` (a line over the limit) or ``None`` (all consumed).
        """
        buf = self.buf
        pos = self._pos
        limit = self._max
        while True:
            end = buf.find(b"\n", pos)
            if end < 0:
                break
            if end - pos > limit:
                return self._too_large()
            line = buf[pos:end]
            pos = end + 1
            self._pos = pos
            self._handle(line)
            if waiter is not None and waiter.settled():
                if pos == len(buf):  # all of it read: the next holder finds it empty
                    del buf[:]
                    self._pos = 0
                return SETTLED
        if len(buf) - pos > limit:
            return self._too_large()
        if pos:
            del buf[:pos]
            self._pos = 0
        if waiter is not None and waiter.settled():
            return SETTLED
        return None

    def fill(self) -> bool:
        """Read what the pipe has into the buffer; False at the end of the stream."""
        try:
            chunk = os.read(self._fd, CHUNK)
        except OSError as exc:  # the pipe closed under us by close()
            logger.debug("stdout of %s: %s", self._name, exc)
            self.end = EOF
            return False
        if chunk:
            self.buf += chunk
            return True
        self.end = EOF
        rest = self.buf[self._pos :]
        del self.buf[:]
        self._pos = 0
        if rest:  # a last line without its newline
            self._handle(rest)
        return False

    def _handle(self, line: bytearray) -> None:
        try:
            # str, not bytes: json skips its encoding detection (invalid UTF-8 raises
            # UnicodeDecodeError, a ValueError: noise, as before). ``loads_line`` inlined:
            # a line that is exactly one JSON value is scanned directly.
            text = line.decode()
            try:
                message, end = scan_json(text, 0)
            except (StopIteration, ValueError):
                message, end = None, -1
            if end != len(text):
                message = json.loads(text)
        except ValueError:
            if line.strip():
                self._noise.noise("a stdout line that is not JSON", excerpt(bytes(line)))
            return
        if type(message) is dict:
            self._deliver(message)
        else:
            self._noise.noise("JSON that is not an object", excerpt(bytes(line)))

    def _too_large(self) -> int:
        self.end = ResponseTooLarge(
            f"{self._name} wrote a line over {self._max} bytes", url=self._name, limit=self._max
        )
        return END
