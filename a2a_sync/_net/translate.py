"""The one edge where requests/urllib3/socket exceptions become a2a_sync errors.

:class:`Translating` wraps every send and read of :class:`~a2a_sync._net.http.HTTPTransport`;
:func:`translate_exception` picks the typed error (connect, TLS, timeouts, a lost
connection...), with a message naming the operation's URL (secrets redacted) and the fix.
"""

from __future__ import annotations

import socket
import time

import requests.exceptions as rex
import urllib3.exceptions as uex

from .._redact import has_secrets, scrub
from ..errors import (
    A2ASyncError,
    Cancelled,
    ConfigurationError,
    ConnectError,
    ConnectionLost,
    ConnectTimeout,
    DeadlineExceeded,
    ProtocolError,
    ReadTimeout,
)
from .pool import BudgetExhausted, Call

__all__ = ["Translating", "translated", "translate_exception"]


class Translating:
    """Translates the exceptions raised in its block (a class, not a generator-based
    context manager: it wraps every read of every call, and one of those costs several
    times more)."""

    __slots__ = ("_call", "_url")

    def __init__(self, url: str, call: Call) -> None:
        self._url = url
        self._call = call

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        if exc is not None:
            error = translated(exc, self._url, self._call)
            if error is not None:
                raise error[0] from error[1]


def translated(
    exc: BaseException, url: str, call: Call
) -> tuple[A2ASyncError, BaseException | None] | None:
    """What :class:`Translating` raises for ``exc`` (the error and its ``__cause__``), or
    None when ``exc`` passes through unchanged (ours already, or not a transport error).

    For hot paths that translate in an ``except`` block instead of a ``with`` block:
    ``raise error from cause`` there chains exactly as ``Translating`` does.
    """
    if isinstance(exc, A2ASyncError):
        return None
    if isinstance(exc, BudgetExhausted):
        if call.cancelled:
            return Cancelled("the call was cancelled", url=url, attempts=call.attempts), exc
        return DeadlineExceeded(f"{url}: {exc}", url=url, attempts=call.attempts, timeout=None), exc
    if isinstance(exc, (rex.RequestException, uex.HTTPError, OSError, ValueError)):
        # The chain keeps only the root OS/TLS error, without urllib3's frames and
        # wrappers (the traceback stops at this edge); a foreign message that may
        # quote the URL's secrets does not ride along.
        cause: BaseException | None = _edge_cause(exc)
        if has_secrets(url) and (cause is exc or scrub(str(cause), url) != str(cause)):
            cause = None
        return translate_exception(exc, url, call), cause
    return None


def _root_reason(exc: BaseException) -> BaseException:
    """Dig through requests' and urllib3's wrappers to the informative exception."""
    seen = 0
    current: BaseException = exc
    while seen < 6:
        seen += 1
        inner: BaseException | None = None
        if isinstance(current, uex.MaxRetryError) and current.reason is not None:
            inner = current.reason
        elif isinstance(current, rex.RequestException) and current.args:
            first = current.args[0]
            if isinstance(first, BaseException):
                inner = first
        elif isinstance(current, uex.ProtocolError) and len(current.args) > 1:
            second = current.args[1]
            if isinstance(second, BaseException):
                inner = second
        if inner is None:
            break
        current = inner
    return current


def _edge_cause(exc: BaseException) -> BaseException:
    """The innermost OS/TLS error under requests' and urllib3's wrappers, with its frames
    dropped (they are urllib3's), or ``exc`` when there is none."""
    current: BaseException | None = _root_reason(exc)
    for _ in range(6):
        if current is None or (
            isinstance(current, OSError) and not isinstance(current, uex.HTTPError)
        ):
            break
        current = current.__cause__ or current.__context__
    if not isinstance(current, OSError):
        return exc
    current.__cause__ = None
    current.__suppress_context__ = True
    return current.with_traceback(None)


def _tls_hint(url: str, root: BaseException) -> str:
    """For a TLS failure that looks like a plain-HTTP peer: the fix."""
    text = str(root).lower()
    plain = ("wrong version number", "http request", "record layer failure", "packet length")
    if url.startswith("https://") and any(marker in text for marker in plain):
        return f"; the server seems to speak plain HTTP: use http://{url[len('https://') :]}"
    if isinstance(root, ConnectionRefusedError) or "refused" in text:
        return "; nothing listens there: is the server running, and are host and port right?"
    return ""


def _describe(error: BaseException) -> str:
    """A short reason: urllib3 prefixes connection errors with the connection's repr
    (``_TrackedHTTPConnection(host=..., port=...): Failed to establish ...``), which says
    nothing the URL does not already say."""
    if isinstance(error, uex.NewConnectionError):
        reason = str(error).split(": ", 1)[-1]
        reason = reason.removeprefix("Failed to establish a new connection: ")
        return reason
    return f"{type(error).__name__}: {error}"


def translate_exception(exc: BaseException, url: str, call: Call) -> A2ASyncError:
    attempts = call.attempts
    if call.cancelled:
        return Cancelled(f"{url}: the call was cancelled", url=url, attempts=attempts)
    root = _root_reason(exc)
    detail = _describe(root)
    deadline_passed = call.deadline is not None and time.monotonic() >= call.deadline
    if isinstance(exc, (rex.InvalidURL, rex.MissingSchema, rex.InvalidSchema, rex.InvalidHeader)):
        return ConfigurationError(scrub(f"invalid request for {url!r}: {exc}", url))
    if isinstance(root, uex.ConnectTimeoutError) and not isinstance(root, uex.NewConnectionError):
        return ConnectTimeout(f"{url}: connect timed out", url=url, attempts=attempts)
    if isinstance(
        root, (uex.NewConnectionError, uex.NameResolutionError, uex.ProxyError, uex.SSLError)
    ) or isinstance(exc, (rex.SSLError, rex.ProxyError)):
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return ConnectError(
            f"{url}: could not connect{tries} ({detail}){_tls_hint(url, root)}",
            url=url,
            attempts=attempts,
        )
    if url.startswith("https://") and "handshake operation timed out" in str(_edge_cause(exc)):
        # Still connecting (the handshake is bounded by the connect timeout): a peer that
        # speaks plain HTTP waits for a request line and never answers the TLS hello.
        return ConnectTimeout(
            f"{url}: the TLS handshake timed out; if the server speaks plain HTTP, use "
            f"http://{url[len('https://') :]}",
            url=url,
            attempts=attempts,
        )
    if isinstance(root, (uex.ReadTimeoutError, TimeoutError, socket.timeout)) or isinstance(
        exc, rex.ReadTimeout
    ):
        if deadline_passed:
            return DeadlineExceeded(
                f"{url}: the call's deadline passed while waiting for the peer",
                url=url,
                attempts=attempts,
            )
        return ReadTimeout(f"{url}: read timed out", url=url, attempts=attempts)
    if isinstance(root, uex.DecodeError) or isinstance(exc, rex.ContentDecodingError):
        return ProtocolError(scrub(f"{url}: undecodable response body ({detail})", url))
    return ConnectionLost(
        f"{url}: connection lost after the request was sent ({detail})",
        url=url,
        attempts=attempts,
    )
