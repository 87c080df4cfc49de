"""A pure, incremental Server-Sent Events decoder (WHATWG HTML §9.2.6).

Bytes go in, :class:`ServerSentEvent` values come out; there is no I/O here. The
threaded reader in ``a2a_sync._net.sse`` feeds it whatever the socket delivers::

    decoder = SSEDecoder()
    for chunk in chunks:                 # any split: 1 byte, inside CRLF, inside UTF-8
        for event in decoder.feed(chunk):
            handle(event)
    decoder.finish()                     # end of stream: the unterminated event is dropped

The parser follows the spec text literally ("Event stream interpretation",
https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation);
the quoted sentences below are from it. It works on bytes and decodes only field values,
which is equivalent to decoding the whole stream first: CR, LF, ``:`` and space are ASCII
and cannot occur inside a multibyte UTF-8 sequence, and a replacement character never
equals them. Decoding per complete line also means a character split across chunks is
never turned into U+FFFD.

Deliberate differences from sseclient-py 1.9.0 (which the tests pin): an unterminated final
event is discarded, LF+CRLF ends an event, the last event id persists across events, id-only
and retry-only blocks update the decoder state, ``retry`` must be all digits and becomes
seconds, ids containing NUL are ignored, invalid UTF-8 becomes U+FFFD, a leading BOM is
stripped.
"""

from __future__ import annotations

import logging
from typing import Any, Final, NoReturn

import attrs

from ..errors import EXCERPT_LIMIT, ConfigurationError, ResponseTooLarge
from .jsonrpc import decode_json

logger = logging.getLogger(__name__)

#: RFC 7464's record separator; some servers (VoltAgent) put it before each event's JSON.
_RECORD_SEPARATOR: Final = "\x1e"

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SSEDecoder", "ServerSentEvent"]

#: Largest event accepted, in bytes. 16 MiB: an A2A artifact may carry a file inline as
#: base64 (~12 MiB of file), while one hostile stream still cannot take unbounded memory.
DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"
_LF = 10
_CR = 13
_COLON = 0x3A


@attrs.frozen(repr=False)
class ServerSentEvent:
    """One dispatched event. Immutable; safe to share between threads.

    Attributes:
        data: The event's data: its ``data`` lines joined by LF (the final LF removed).
            Empty for an event made of empty ``data`` lines (an MCP priming event).
        event: The event type; ``"message"`` when the server set none.
        id: The last event ID in effect when this event was dispatched. It persists
            across events until the server sends another ``id``, as the spec requires, so
            it is the value to resume with (``Last-Event-ID``). ``None`` while empty.
        retry: The reconnection time, in seconds, set by a valid ``retry`` field in this
            event's own block; ``None`` if the block had none. The decoder's
            :attr:`SSEDecoder.retry` keeps the latest value across events.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: float | None = None

    def json(self) -> Any:
        """Parse :attr:`data` as JSON.

        Returns:
            The decoded JSON value.

        Raises:
            ProtocolError: The data is not valid JSON (the message carries an escaped
                excerpt and the parser's position).
        """
        data = self.data
        if data.startswith(_RECORD_SEPARATOR):
            # A JSON text sequence's record separator (RFC 7464), as VoltAgent sends it:
            # framing, not content.
            logger.debug("tolerated: SSE event data starts with U+001E (record separator)")
            data = data[1:]
        return decode_json(data, what="SSE event data")

    def __repr__(self) -> str:
        # Long data (a whole artifact) is cut: reprs end up in logs and tracebacks.
        if len(self.data) > EXCERPT_LIMIT:
            parts = [f"data={self.data[:EXCERPT_LIMIT]!r}... ({len(self.data)} chars)"]
        else:
            parts = [f"data={self.data!r}"]
        if self.event != "message":
            parts.append(f"event={self.event!r}")
        if self.id is not None:
            parts.append(f"id={self.id!r}")
        if self.retry is not None:
            parts.append(f"retry={self.retry!r}")
        return f"ServerSentEvent({', '.join(parts)})"


class SSEDecoder:
    """Incremental ``text/event-stream`` parser: bytes in, events out.

    One decoder reads one stream at a time and is **not** thread-safe: a single reader
    thread owns it. :meth:`finish` ends a stream and leaves the decoder ready for the
    next one (after a reconnect) with :attr:`last_event_id` and :attr:`retry` kept, the
    way browsers carry them across reconnections.

    Args:
        max_event_bytes: Cap on one event, in bytes: on its ``data`` lines together (as
            received, one byte per line end) and on any single line, complete or not yet.
            Bounds memory whatever the peer sends, endless lines included. Whether the
            cap trips does not depend on how the stream is split into chunks.
        last_event_id: The last event ID to start from (e.g. the one a reconnect sent as
            ``Last-Event-ID``); events without an ``id`` of their own carry it.

    Raises:
        ConfigurationError: ``max_event_bytes`` is not a positive integer.
    """

    __slots__ = (
        "_at_start",
        "_block_retry",
        "_data",
        "_data_len",
        "_event_type",
        "_failed",
        "_id_buffer",
        "_last_event_id",
        "_max",
        "_pending",
        "_pending_len",
        "_retry",
        "_skip_lf",
    )

    def __init__(
        self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES, *, last_event_id: str = ""
    ) -> None:
        if isinstance(max_event_bytes, bool) or not isinstance(max_event_bytes, int):
            raise ConfigurationError("max_event_bytes must be an int")
        if max_event_bytes <= 0:
            raise ConfigurationError("max_event_bytes must be positive")
        self._max = max_event_bytes
        self._last_event_id = last_event_id
        self._retry: float | None = None
        self._failed = False  # an event exceeded the cap; sticky until finish()
        self._reset_stream()

    def _reset_stream(self) -> None:
        # "When a stream is parsed, a data buffer, an event type buffer, and a last event ID
        # buffer must be associated with it." The ID buffer starts from the last event ID
        # string rather than "" (as Chromium and Firefox do), so events after a resume
        # keep the id that was resumed from.
        self._at_start = True  # a BOM may still come
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._pending: list[bytes] = []  # the incomplete last line, in pieces
        self._pending_len = 0
        self._data: list[bytes] = []  # the data buffer: one item per data line
        self._data_len = 0  # bytes of its data lines as received, one per line end
        self._event_type = ""
        self._id_buffer = self._last_event_id
        self._block_retry: float | None = None

    @property
    def last_event_id(self) -> str:
        """The last event ID string: set when an event is dispatched, empty if never set.

        Send it as ``Last-Event-ID`` when reconnecting (if non-empty). An ``id`` in an
        event that never completed (the stream ended first) does not count.
        """
        return self._last_event_id

    @property
    def retry(self) -> float | None:
        """The reconnection time most recently set by the server, in seconds, or ``None``.

        May be very large (even ``inf``); the caller applies its own ceiling.
        """
        return self._retry

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:  # noqa: PLR0912 - the WHATWG line parser, one branch per field, as the spec reads
        """Parse the next piece of the stream.

        Args:
            chunk: The bytes that arrived, split anywhere.

        Returns:
            The events completed by this chunk, in order (often empty).

        Raises:
            ResponseTooLarge: An event or a line exceeds ``max_event_bytes``. The rest of
                the stream cannot be parsed: further calls raise again until
                :meth:`finish`. Events completed earlier in the same chunk are dropped.
        """
        if self._failed:
            raise _too_large(self._max)
        if self._at_start or self._skip_lf:
            chunk = self._resync(chunk)
        if not chunk:
            return []
        last = chunk[-1]
        if last not in (_LF, _CR) and b"\n" not in chunk and b"\r" not in chunk:
            # No line ends here: keep the pieces and join them once (linear, not quadratic).
            self._pending.append(chunk)
            self._pending_len += len(chunk)
            if self._pending_len > self._max:
                self._fail()
            return []
        if self._pending:
            self._pending.append(chunk)
            chunk = b"".join(self._pending)
            self._pending = []
            self._pending_len = 0
        # bytes.splitlines() splits exactly on CRLF, LF and CR (unlike str.splitlines, which
        # would also split on U+2028, U+0085 and friends inside data).
        lines = chunk.splitlines()
        limit = self._max
        if last == _CR:
            self._skip_lf = True
        elif last != _LF:
            tail = lines.pop()
            if len(tail) > limit:
                self._fail()
            self._pending.append(tail)
            self._pending_len = len(tail)

        # The line steps of §9.2.6, over complete lines. This loop is the hot path: the
        # common lines (`data: ...` and the blank line) take a few bytecodes each.
        events: list[ServerSentEvent] = []
        data = self._data
        data_len = self._data_len
        for line in lines:
            if not line:
                # "If the line is empty (a blank line): Dispatch the event."
                # Step 1: "Set the last event ID string of the event source to the value of
                # the last event ID buffer. The buffer does not get reset."
                self._last_event_id = self._id_buffer
                # Step 2: "If the data buffer is an empty string, set the data buffer and the
                # event type buffer to the empty string and return." A data line always adds
                # an LF, so `data:` alone (an MCP priming event) does dispatch, with "".
                if data:
                    # Step 3 (remove the last LF) is implicit: the values are joined by LF.
                    events.append(
                        ServerSentEvent(
                            (data[0] if len(data) == 1 else b"\n".join(data)).decode(
                                "utf-8", "replace"
                            ),
                            self._event_type or "message",
                            self._id_buffer or None,
                            self._block_retry,
                        )
                    )
                    data = []
                    data_len = 0
                # Step 7: "Set the data buffer and the event type buffer to the empty string."
                # (Only written when set: most streams never send `event:` or `retry:`.)
                if self._event_type:
                    self._event_type = ""
                if self._block_retry is not None:
                    self._block_retry = None
                continue
            # "If value starts with a U+0020 SPACE character, remove it from value."
            if line.startswith(b"data: "):
                value = line[6:]
            elif line.startswith(b"data:"):
                value = line[5:]
            elif line == b"data":
                # A line without a colon is a field with "the empty string as the field value".
                value = b""
            else:
                if len(line) > limit:
                    self._fail()
                # "If the line starts with a U+003A COLON character (:): Ignore the line."
                if line[0] != _COLON:
                    self._other_field(line)
                continue
            # "Append the field value to the data buffer, then append a single U+000A LINE
            # FEED (LF) character to the data buffer." The cap counts data lines as received,
            # so a single line over the cap trips it too.
            data.append(value)
            data_len += len(line) + 1
            if data_len > limit:
                self._fail()
        self._data = data
        self._data_len = data_len
        return events

    def finish(self) -> list[ServerSentEvent]:
        """End the stream: discard the incomplete event and get ready for the next stream.

        "Once the end of the file is reached, any pending data must be discarded. (If the
        file ends in the middle of an event, before the final empty line, the incomplete
        event is not dispatched.)" :attr:`last_event_id` and :attr:`retry` are kept.

        Returns:
            Always an empty list: nothing is dispatched at the end of a stream.
        """
        self._failed = False
        self._reset_stream()
        return []

    def _resync(self, chunk: bytes) -> bytes:
        """Handle the two cases where a chunk's first bytes depend on the previous ones."""
        if self._at_start:
            # The UTF-8 decode algorithm strips one leading BOM, even one split into pieces.
            head = b"".join(self._pending) + chunk if self._pending else chunk
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._pending = [head] if head else []
                self._pending_len = len(head)
                return b""
            self._at_start = False
            self._pending = []
            self._pending_len = 0
            return head[len(_BOM) :] if head.startswith(_BOM) else head
        if chunk:
            # "a single U+000D CARRIAGE RETURN (CR) character not followed by a U+000A LINE
            # FEED (LF)" ends a line, so a CR ending the last chunk ended its line at once;
            # if that CR was the first half of a CRLF, the LF ends no further line.
            self._skip_lf = False
            if chunk[0] == _LF:
                return chunk[1:]
        return chunk

    def _fail(self) -> NoReturn:
        # Drop what was buffered; the stream cannot be parsed further (sticky until finish()).
        self._failed = True
        self._pending = []
        self._data = []
        raise _too_large(self._max)

    def _other_field(self, line: bytes) -> None:
        """Process a field line other than ``data`` (event, id, retry, unknown)."""
        # "If the line contains a U+003A COLON character (:)": the field is what comes before
        # the first colon, the value what comes after. "Otherwise ... using the whole line as
        # the field name, and the empty string as the field value."
        field, _, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if field == b"event":
            # "Set the event type buffer to field value."
            self._event_type = value.decode("utf-8", "replace")
        elif field == b"id" and b"\x00" not in value:
            # "If the field value does not contain U+0000 NULL, then set the last event ID
            # buffer to the field value. Otherwise, ignore the field."
            self._id_buffer = value.decode("utf-8", "replace")
        elif field == b"retry" and value.isdigit():
            # "If the field value consists of only ASCII digits, then interpret the field
            # value as an integer in base ten, and set the event stream's reconnection time
            # to that integer. Otherwise, ignore the field." bytes.isdigit() is ASCII-only
            # and False for b""; float() of ASCII digits is exact up to 2**53 ms and, unlike
            # int(), has no digit-count limit.
            self._retry = self._block_retry = float(value) / 1000.0
        # "Otherwise: The field is ignored." (Field names are compared literally.)


def _too_large(limit: int) -> ResponseTooLarge:
    return ResponseTooLarge(f"SSE event larger than {limit} bytes", limit=limit)
