"""What an HTTP call returns: a whole answer (:class:`HTTPResult`) or an open stream
(:class:`StreamResponse`), and :func:`read_body`, which reads a body within the call's
deadline and size limit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Final

import attrs
import requests
import urllib3

from ..errors import ResponseTooLarge
from .pool import BudgetExhausted, Call
from .translate import translated

__all__ = ["HTTPResult", "StreamResponse", "read_body"]

#: Piece size for reading bodies: big enough that a typical JSON-RPC answer is one read.
_READ_CHUNK: Final = 256 * 1024


@attrs.frozen
class HTTPResult:
    """A complete HTTP answer: status, headers and the whole (capped) body."""

    status: int
    headers: Mapping[str, str] = attrs.field(repr=False)
    content: bytes = attrs.field(repr=False)
    url: str
    attempts: int = 1

    @property
    def content_type(self) -> str:
        """The media type, lower-cased, without parameters (``""`` when absent)."""
        return _media_type(self.headers.get("Content-Type"))

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


def _media_type(value: str | None) -> str:
    if not value:
        return ""
    return value.split(";", 1)[0].strip().lower()


class StreamResponse:
    """An open streaming HTTP response (used by the SSE reader).

    Read it from one thread; :meth:`abort` may be called from any other thread and makes
    a blocked :meth:`read1` return at once. Always :meth:`close` it.
    """

    def __init__(
        self,
        response: requests.Response,
        call: Call,
        forget: Callable[[Call], None],
        idle_timeout: float | None,
    ) -> None:
        self._response = response
        self._raw: urllib3.BaseHTTPResponse = response.raw
        self._call = call
        self._forget = forget  # the transport stops tracking the call
        self.status: int = response.status_code
        self.headers: Mapping[str, str] = response.headers
        self.url: str = response.url
        self._closed = False
        self._idle_timeout = idle_timeout
        self._streaming = False

    @property
    def content_type(self) -> str:
        return _media_type(self.headers.get("Content-Type"))

    def read1(self, amt: int = 65536) -> bytes:
        """Return the bytes available now (at least one, blocking), or ``b""`` at EOF.

        The opening deadline no longer applies from the first call on: a stream lives on
        with only its idle timeout between received bytes.
        """
        if not self._streaming:
            self._streaming = True
            self._call.deadline = None
            sock = self._call.sock
            if sock is not None:
                with contextlib.suppress(OSError):  # already shut down: the read says so
                    sock.settimeout(self._idle_timeout)
        try:
            data = self._raw.read1(amt, decode_content=True)
            if not data and self._call.cancelled:
                # A shut-down socket reads as EOF: on a close-delimited body that would
                # pass for the end of the stream.
                raise BudgetExhausted("cancelled")
        except BaseException as exc:
            # Translating's rule in an except block (no context manager made per read).
            error = translated(exc, self.url, self._call)
            if error is None:
                raise
            raise error[0] from error[1]
        return data

    def set_idle_timeout(self, seconds: float | None) -> None:
        """Change the longest silence tolerated between received bytes, from now on
        (e.g. a short drain once the awaited answer arrived). Safe from any thread."""
        self._idle_timeout = seconds
        if self._streaming:
            sock = self._call.sock
            if sock is not None:
                with contextlib.suppress(OSError):  # already shut down: the read says so
                    sock.settimeout(seconds)

    def read_body(self, limit: int) -> bytes:
        """Read the rest of the body (e.g. a JSON error instead of an event stream)."""
        return read_body(self._raw, self.url, self._call, limit)

    def abort(self) -> None:
        """Unblock a reader in another thread; the stream then reads as cancelled/ended."""
        self._call.cancel()

    def close(self) -> None:
        """Release the connection (discarded if the body was not fully read). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._call.detach()
        self._forget(self._call)
        self._response.close()

    def __enter__(self) -> StreamResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_body(raw: urllib3.BaseHTTPResponse, url: str, call: Call, limit: int) -> bytes:
    """Read a whole body within ``call``'s deadline, at most ``limit`` bytes."""
    declared = raw.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ResponseTooLarge(
            f"response of {declared} bytes exceeds the {limit}-byte limit", url=url, limit=limit
        )
    # (A membership test, not .get(): a lookup of an absent header raises inside urllib3.)
    encoded = "Content-Encoding" in raw.headers
    # A body sent as is, with a length, is complete once that many bytes arrived:
    # no further read (and its EOF bookkeeping in urllib3) is needed to know it.
    expected = (
        int(declared) if declared is not None and declared.isdigit() and not encoded else None
    )
    chunks: list[bytes] = []
    size = 0
    try:
        while True:
            # Each socket read is capped by the deadline underneath (_DeadlineReader);
            # this also stops a peer whose bytes inflate slowly.
            deadline = call.deadline  # (Call.remaining, inline: once per read)
            if deadline is not None and deadline <= time.monotonic():
                raise BudgetExhausted("the call's deadline passed while reading")
            # Without Content-Encoding there is nothing to decode: urllib3's decoding
            # step (a decoder lookup and a buffer the bytes pass through) is skipped.
            data = raw.read1(_READ_CHUNK, decode_content=encoded)
            if not data:
                if call.cancelled:  # a shut-down socket reads as EOF: not the end
                    raise BudgetExhausted("cancelled")
                break
            size += len(data)
            if size > limit:
                raise ResponseTooLarge(
                    f"response exceeds the {limit}-byte limit", url=url, limit=limit
                )
            chunks.append(data)
            if expected is not None and size >= expected:
                break
    except BaseException as exc:
        # Translating's rule in an except block (no context manager made per body).
        error = translated(exc, url, call)
        if error is None:
            raise
        raise error[0] from error[1]
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
