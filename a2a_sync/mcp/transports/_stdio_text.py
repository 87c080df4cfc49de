"""Text handling around a stdio server's pipes: stderr lines, stdout noise, probe bursts.

* :class:`LineSplitter` turns raw pipe chunks into whole text lines with an incremental
  UTF-8 decoder, so a line longer than one read (or a character split across two reads)
  arrives as one line, intact; lines longer than a bound are cut (with a marker) at a
  character boundary, never split into several lines.
* :class:`NoiseLimiter` rate-limits the warning about stdout lines that are not JSON (a
  server that logs to stdout writes hundreds a second): the first few are logged, then a
  count at most every :data:`NOISE_SUMMARY_INTERVAL` seconds.
* :class:`StderrRelay` forwards stderr lines to their target, and can *hold* them while
  the era probe runs: servers on the older SDK generation answer the unknown
  ``server/discover`` with a long error report on stderr (mcp 1.x: 94 lines of
  validation errors); once the probe is judged, held lines that mention the probe are
  collapsed into one summary line (the lines themselves go to DEBUG), anything else is
  forwarded as usual.
"""

from __future__ import annotations

import codecs
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from json.encoder import encode_basestring
from typing import Any, Final

from ..._net import jsonrpc as _jsonrpc
from ..._net.json_text import compact
from ...errors import A2ASyncError, ConnectionClosed, ResponseTooLarge, excerpt

__all__ = [
    "MAX_STDERR_LINE_BYTES",
    "NOISE_SUMMARY_INTERVAL",
    "LineSplitter",
    "NoiseLimiter",
    "StderrRelay",
    "discard",
    "encode_line",
    "loads_line",
    "read_messages",
    "scan_json",
]

#: The stdio transport's logger: these messages are about its pipes.
logger = logging.getLogger("a2a_sync.mcp.transports.stdio")

#: Longest stderr line forwarded (bytes); longer lines are cut with a marker.
MAX_STDERR_LINE_BYTES: Final = 1024 * 1024
#: Longest line kept in the stderr tail quoted by error messages (characters).
TAIL_LINE_CHARS: Final = 2000
#: stdout lines that are not JSON logged one by one before summarising.
NOISE_FIRST_LINES: Final = 3
#: Seconds between two summaries of suppressed stdout noise.
NOISE_SUMMARY_INTERVAL: Final = 10.0
#: Lines held while the era probe runs; beyond this holding stops (all are forwarded).
HELD_LINES: Final = 500


class LineSplitter:
    """Splits a byte stream into text lines; not thread-safe (one reader thread).

    Args:
        max_line_bytes: A line longer than this is cut and marked ``… [N more bytes]``.
    """

    def __init__(self, max_line_bytes: int = MAX_STDERR_LINE_BYTES) -> None:
        self._max = max_line_bytes
        self._buffer = bytearray()
        self._dropped = 0  # bytes of the current line beyond the bound

    def feed(self, chunk: bytes) -> Iterator[str]:
        """Take one chunk; yield the lines it completes."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                self._keep(chunk[start:])
                return
            self._keep(chunk[start:end])
            yield self._take()
            start = end + 1

    def finish(self) -> Iterator[str]:
        """End of stream: yield the last line if it had no newline."""
        if self._buffer or self._dropped:
            yield self._take()

    def _keep(self, part: bytes) -> None:
        room = self._max - len(self._buffer)
        if len(part) <= room:
            self._buffer += part
        else:
            self._buffer += part[: max(room, 0)]
            self._dropped += len(part) - max(room, 0)

    def _take(self) -> str:
        # Not final: a character cut by the bound is left out, not replaced.
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(bytes(self._buffer), final=self._dropped == 0)
        cut = self._dropped + len(decoder.getstate()[0])
        self._buffer.clear()
        self._dropped = 0
        text = text.rstrip("\r")
        return f"{text} … [{cut} more bytes]" if cut else text


def tail_line(line: str) -> str:
    """``line`` shortened for the stderr tail of error messages."""
    if len(line) <= TAIL_LINE_CHARS:
        return line
    return f"{line[:TAIL_LINE_CHARS]} … [{len(line) - TAIL_LINE_CHARS} more characters]"


class NoiseLimiter:
    """Logs stdout noise (lines that are not JSON-RPC) without flooding the log.

    Thread-safe. The first line is also kept for error messages (:attr:`first`).
    """

    def __init__(
        self,
        logger: logging.Logger,
        name: str,
        *,
        clock: Callable[[], float] = time.monotonic,
        interval: float = NOISE_SUMMARY_INTERVAL,
    ) -> None:
        self._logger = logger
        self._name = name
        self._clock = clock
        self._interval = interval
        self._lock = threading.Lock()
        self.first: str | None = None
        self.count = 0
        self._suppressed = 0
        self._last_summary = 0.0

    def noise(self, what: str, line: str) -> None:
        """Record one bad line (``what``: how it is bad); log it or count it."""
        with self._lock:
            self.count += 1
            if self.first is None:
                self.first = line
            if self.count <= NOISE_FIRST_LINES:
                self._last_summary = self._clock()
                suppressed = 0
            else:
                self._suppressed += 1
                now = self._clock()
                if now - self._last_summary < self._interval:
                    return
                suppressed, self._suppressed, self._last_summary = self._suppressed, 0, now
        if suppressed:
            self._logger.warning(
                "%s wrote %d more stdout lines that are not JSON-RPC (latest: %s); MCP stdio "
                "servers must log to stderr",
                self._name,
                suppressed,
                line,
            )
        else:
            self._logger.warning(
                "%s wrote %s: %s (MCP stdio servers must log to stderr%s)",
                self._name,
                what,
                line,
                "; further lines are counted" if self.count == NOISE_FIRST_LINES else "",
            )


class StderrRelay:
    """Forwards a server's stderr lines, optionally holding them during the era probe.

    Thread-safe: the stderr thread calls :meth:`line`, negotiation calls :meth:`hold`
    and :meth:`release`.

    Args:
        forward: Sends one line to the configured target (logger, file, or nowhere).
        logger: Where a collapsed burst is summarised (INFO) and its lines logged (DEBUG).
        name: The server, for messages.
        collapsible: Whether bursts may be collapsed (not when stderr goes to a file).
    """

    def __init__(
        self,
        forward: Callable[[str], None],
        logger: logging.Logger,
        name: str,
        *,
        collapsible: bool = True,
    ) -> None:
        self._forward = forward
        self._collapsible = collapsible
        self._logger = logger
        self._name = name
        self._lock = threading.Lock()
        self._held: list[str] | None = None

    def line(self, text: str) -> None:
        """One stderr line from the server."""
        with self._lock:  # held in forwarding too: lines keep their order
            held = self._held
            if held is not None and len(held) < HELD_LINES:
                held.append(text)
                return
            self._held = None  # more than a probe's complaint: stop holding
            for early in held or ():
                self._forward(early)
            self._forward(text)

    def hold(self) -> None:
        """Hold lines from now on (until :meth:`release`)."""
        with self._lock:
            if self._held is None:
                self._held = []

    def release(self, collapse: str | None) -> None:
        """Stop holding. With ``collapse`` (a method the server refused), held lines that
        mention it are the server's complaint about it: they are logged at DEBUG and
        summarised in one INFO line. Otherwise (or when the lines go to a file the user
        gave, which gets everything) they are forwarded as usual."""
        with self._lock:
            held, self._held = self._held, None
            if not held:
                return
            if collapse is None or not self._collapsible or not any(collapse in x for x in held):
                for text in held:
                    self._forward(text)
                return
        for text in held:
            self._logger.debug("[%s] %s", self._name, text)
        self._logger.info(
            "%s wrote %d stderr lines about %s, which it does not know (a server on an older "
            "SDK refusing the era probe; lines logged at DEBUG)",
            self._name,
            len(held),
            collapse,
        )


#: Bytes read from a pipe at a time (lines are reassembled across reads).
READ_BYTES: Final = 64 * 1024


def discard(readline: Callable[[int], bytes]) -> None:
    """Read and drop everything until EOF (or until the pipe is closed under us)."""
    try:
        while readline(READ_BYTES):
            pass
    except (OSError, ValueError):
        return


def read_messages(
    readline: Callable[[int], bytes],
    max_line: int,
    deliver: Callable[[dict[str, Any]], None],
    noise: NoiseLimiter,
    name: str,
) -> A2ASyncError | None:
    """Read JSON lines from a server's stdout until EOF and ``deliver`` every object; a
    line that is not a JSON object is noise (counted, never fatal). The top of a reader
    thread.

    Returns:
        ``None`` at EOF (or when the pipe was closed under us), else the error that ends
        the connection: ``ResponseTooLarge`` for a line over ``max_line`` bytes,
        ``ConnectionClosed`` if reading failed unexpectedly.
    """
    limit = max_line + 1
    loads = json.loads
    try:
        while True:
            line = readline(limit)
            if not line:
                return None
            if len(line) == limit and not line.endswith(b"\n"):
                return ResponseTooLarge(
                    f"{name} wrote a line over {max_line} bytes", url=name, limit=max_line
                )
            try:
                message = loads(line)
            except ValueError:
                if line.strip():
                    noise.noise("a stdout line that is not JSON", excerpt(line))
                continue
            if type(message) is dict:
                deliver(message)
            else:
                noise.noise("JSON that is not an object", excerpt(line))
    except (OSError, ValueError) as exc:  # pipe closed under us by close()
        logger.debug("stdout of %s: %s", name, exc)
        return None
    except Exception:  # top of the reader thread: keep the session from hanging
        logger.exception("MCP stdio reader for %s failed", name)
        return ConnectionClosed(f"reading from {name} failed")


#: json's C scanner, as ``json.loads`` uses it (without its two Python frames per line).
scan_json: Final[Callable[[str, int], tuple[Any, int]]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def loads_line(text: str) -> Any:
    """``json.loads(text)``: a line that is exactly one JSON value is scanned directly;
    anything else (surrounding whitespace, a BOM, invalid JSON) goes to ``json.loads``,
    which decodes it or raises as always."""
    try:
        value, end = scan_json(text, 0)
    except (StopIteration, ValueError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def encode_line(message: dict[str, Any]) -> bytes:
    """``_jsonrpc.encode(message) + b"\\n"``: one JSON-RPC message as a stdio line.

    A request (``jsonrpc``, an int ``id``, a string ``method``, ``params``: what the
    session sends) has its envelope written directly and only ``params`` serialized:
    the same members in the same order, the same text for ``params`` (and the same
    errors for what JSON cannot hold)."""
    if len(message) == 4:
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params")
        if (
            type(request_id) is int
            and type(method) is str
            and type(params) is dict
            and message.get("jsonrpc") == "2.0"
        ):
            body = compact(params)
            return (
                f'{{"jsonrpc":"2.0","id":{request_id},"method":{encode_basestring(method)},'
                f'"params":{body}}}\n'
            ).encode()
    return _jsonrpc.encode(message) + b"\n"
