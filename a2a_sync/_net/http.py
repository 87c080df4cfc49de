"""The HTTP seam every a2a_sync client uses: one ``requests.Session``, safe retries,
timeouts that hold, no redirects, capped bodies, and one place where requests/urllib3
exceptions become :mod:`a2a_sync.errors`.

How the guarantees are made:

* **Retries** ride on urllib3's ``Retry``, mounted on the session's ``HTTPAdapter``.
  Each call gets its own ``Retry`` (through :class:`CallRetry`): connect failures are
  retried for every call, because the request never left; read failures and the
  statuses of :attr:`RetryPolicy.statuses` only for calls marked ``idempotent``, because
  after the bytes left the peer may have acted on them (RFC 9110 §9.2.2). The delays come
  from the immutable :class:`~a2a_sync.policies.RetryPolicy`; ``Retry-After`` is parsed by
  :func:`~a2a_sync.policies.parse_retry_after` (malformed values fall back to backoff,
  never raise) and a wait that would outlast the call's deadline fails the call at once.
* **Timeouts**: connect and read (idle between bytes) as in requests, plus a wall-clock
  deadline per call. Every socket wait is capped by what is left of the deadline
  (:class:`DeadlineTimeout` for connecting, and a reader under http.client for every
  ``recv`` of the status line, headers and body, so a peer dripping bytes cannot stretch
  a call), and a call never waits for a pooled connection (the pool does not block: when
  all pooled connections are busy a new one is opened and closed afterwards). A stream's
  deadline covers opening it; afterwards only its idle timeout applies.
* **Redirects** are never followed for RPC or stream requests: requests strips only
  ``Authorization`` on a cross-host redirect and forwards every other credential header
  (and replays the body on 307/308). A 3xx raises :class:`RedirectRefused` naming the
  ``Location``.
* **Cancellation**: :meth:`HTTPTransport.close` (from any thread) shuts down the sockets
  of calls in flight, so they fail at once with :class:`Cancelled` instead of waiting
  out their read timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Final

import attrs
import requests
import requests.adapters
import requests.exceptions as rex
import requests.structures
import requests.utils
import urllib3
import urllib3.connection
import urllib3.connectionpool
import urllib3.exceptions as uex

from .. import _constants as C
from .._redact import has_secrets, redact_url, scrub
from .._version import __version__
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
    RedirectRefused,
    ResponseTooLarge,
)
from ..policies import RetryPolicy, Timeout
from .adapter import Adapter
from .pool import (
    BudgetExhausted,
    Call,
    CallRetry,
    DeadlineTimeout,
    local,
    wait_before_retry,
)
from .sender import SessionSender

__all__ = ["HTTPResult", "HTTPTransport", "StreamResponse", "USER_AGENT"]

logger = logging.getLogger(__name__)

USER_AGENT: Final = f"a2a-sync/{__version__} python-requests/{requests.__version__}"

#: Statuses that carry a Location we refuse to follow. (304 Not Modified is not one.)
_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})

#: Piece size for reading bodies: big enough that a typical JSON-RPC answer is one read.
_READ_CHUNK: Final = 256 * 1024

# --- results ----------------------------------------------------------------------------------


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
        transport: HTTPTransport,
        idle_timeout: float | None,
    ) -> None:
        self._response = response
        self._raw: urllib3.BaseHTTPResponse = response.raw
        self._call = call
        self._transport = transport
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
        with self._transport._translate(self.url, self._call):
            data = self._raw.read1(amt, decode_content=True)
            if not data and self._call.cancelled:
                # A shut-down socket reads as EOF: on a close-delimited body that would
                # pass for the end of the stream.
                raise BudgetExhausted("cancelled")
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
        return self._transport._read_body(self._raw, self.url, self._call, limit)

    def abort(self) -> None:
        """Unblock a reader in another thread; the stream then reads as cancelled/ended."""
        self._call.cancel()

    def close(self) -> None:
        """Release the connection (discarded if the body was not fully read). Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._call.detach()
        self._transport._forget(self._call)
        self._response.close()

    def __enter__(self) -> StreamResponse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the transport -----------------------------------------------------------------------------


class HTTPTransport:
    """Sends HTTP requests for a2a_sync clients with the guarantees listed in the module.

    One transport owns one ``requests.Session`` and its connection pool. It is safe to
    share between threads: per-call state lives in the calling thread, the pool is
    urllib3's thread-safe one, and the session's configuration is not changed after
    construction. :meth:`close` may be called from any thread; calls in flight then fail
    with :class:`~a2a_sync.errors.Cancelled`.

    Args:
        timeout: Default limits per call (:class:`~a2a_sync.policies.Timeout`, a number,
            or a ``(connect, read)`` tuple).
        retry: Default retry policy.
        max_response_bytes: Largest body read into memory.
        pool_maxsize: Connections kept per host.
        headers: Headers sent with every request (validated once, here).
        verify: TLS verification, as in requests (``True``, ``False`` or a CA bundle path).
        cert: Client certificate, as in requests.
        trust_env: Take proxies and a CA bundle from the environment, as requests does
            (``.netrc`` credentials are never used).
        sleep: Called to wait between retries; tests inject a recorder. By default the
            wait ends early when :meth:`close` cancels the call.
    """

    def __init__(
        self,
        *,
        timeout: Timeout | float | tuple[float | None, float | None] | None = None,
        retry: RetryPolicy | None = None,
        max_response_bytes: int = C.DEFAULT_MAX_RESPONSE_BYTES,
        pool_maxsize: int = C.DEFAULT_POOL_MAXSIZE,
        headers: Mapping[str, str] | None = None,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        trust_env: bool = True,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.timeout = Timeout() if timeout is None else Timeout.coerce(timeout)
        self.retry = retry if retry is not None else RetryPolicy()
        if max_response_bytes <= 0:
            raise ConfigurationError("max_response_bytes must be positive")
        self.max_response_bytes = max_response_bytes
        self._sleep = sleep
        self._trust_env = trust_env
        self._cert = cert
        self._verify: bool | str = verify
        if verify is True and trust_env:
            bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
            if bundle:
                self._verify = bundle
        session = requests.Session()
        # Environment handling (proxies, CA bundle) is done here, once; requests' own would
        # also read ~/.netrc and attach its credentials to any host (CVE-2024-47081).
        session.trust_env = False
        session.headers = requests.structures.CaseInsensitiveDict(
            {"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate", "Accept": "*/*"}
        )
        for name, value in (headers or {}).items():
            _check_header(name, value)
            session.headers[name] = value
        adapter = Adapter(
            pool_connections=C.DEFAULT_POOL_MAXSIZE,
            pool_maxsize=pool_maxsize,
            max_retries=0,
            pool_block=False,
        )
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        self._session = session
        self._sender = SessionSender(session)
        self._adapter = adapter
        self._proxies: dict[str, dict[str, str]] = {}
        self._inflight: weakref.WeakSet[Call] = weakref.WeakSet()
        self._lock = threading.Lock()  # guards _inflight, _proxies and _closed
        self._closed = False

    # -- public --------------------------------------------------------------------------

    @property
    def session(self) -> requests.Session:
        """The underlying session (for cookies or extra adapters; do not mount over
        ``http://``/``https://``, that would remove the retry and cancellation layer)."""
        return self._session

    def request(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        timeout: Timeout | float | tuple[float | None, float | None] | None = None,
        retry: RetryPolicy | None = None,
        max_response_bytes: int | None = None,
    ) -> HTTPResult:
        """Send one request and read the whole response body.

        Args:
            method: HTTP method.
            url: Absolute ``http(s)`` URL.
            body: Request body bytes.
            headers: Extra headers for this request.
            idempotent: The operation is safe to repeat after it may have reached the
                server; enables retries of read failures and retryable statuses.
            timeout: Overrides the transport's default for this call.
            retry: Overrides the transport's retry policy for this call.
            max_response_bytes: Overrides the body cap for this call.

        Returns:
            The response, whatever its status (except redirects).

        Raises:
            TransportError: Connect, read, timeout, cancellation, size or redirect
                failures (see :mod:`a2a_sync.errors`).
        """
        limit = self.max_response_bytes if max_response_bytes is None else max_response_bytes
        policy = self.retry if retry is None else retry
        call: Call | None = None
        while True:
            response, call = self._send(
                method,
                url,
                body=body,
                headers=headers,
                idempotent=idempotent,
                timeout=timeout,
                retry=policy,
                call=call,
            )
            try:
                content = self._read_body(response.raw, url, call, limit)
            except (ConnectionLost, ReadTimeout):
                response.close()  # discards the connection: its state is unknown
                # urllib3 retries only until the headers arrive; a body that broke off is
                # retried here, on the same budget and deadline, for idempotent calls only.
                if not idempotent or call.attempts > policy.max_retries:
                    raise
                with self._translate(url, call):
                    wait_before_retry(policy, call, self._sleep, call.attempts)
                logger.debug("%s %s: body broke off, sending again", method, redact_url(url))
                call.attempts += 1
                continue
            except BaseException:
                response.close()  # discards the connection: its state is unknown
                raise
            finally:
                call.detach()
                self._forget(call)
            response.raw.release_conn()  # fully read: the connection goes back to the pool
            return HTTPResult(response.status_code, response.headers, content, url, call.attempts)

    def open_stream(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        idempotent: bool = False,
        timeout: Timeout | float | tuple[float | None, float | None] | None = None,
        idle_timeout: float | None = C.DEFAULT_STREAM_IDLE_TIMEOUT,
        retry: RetryPolicy | None = None,
        on_start: Callable[[Call], None] | None = None,
    ) -> StreamResponse:
        """Send a request and return once the response headers arrived.

        The call's deadline covers connecting and waiting for the headers; afterwards
        only ``idle_timeout`` applies between received bytes. ``retry`` overrides the
        transport's retry policy for the opening (a reconnect loop passes its own).

        ``on_start`` gets the call's handle before anything is sent, so another thread
        can abandon the opening with ``handle.cancel()`` (it then raises
        :class:`~a2a_sync.errors.Cancelled`).
        """
        response, call = self._send(
            method,
            url,
            body=body,
            headers=headers,
            idempotent=idempotent,
            timeout=timeout,
            retry=retry,
            on_start=on_start,
        )
        return StreamResponse(response, call, self, idle_timeout)

    def close(self) -> None:
        """Cancel calls in flight (from any thread) and close the pool. Idempotent."""
        with self._lock:
            self._closed = True
            calls = list(self._inflight)
        for call in calls:
            call.cancel()
        self._session.close()

    def __enter__(self) -> HTTPTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<HTTPTransport timeout={self.timeout!r} retry={self.retry!r}>"

    # -- internals ---------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        url: str,
        *,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        idempotent: bool,
        timeout: Timeout | float | tuple[float | None, float | None] | None,
        retry: RetryPolicy | None,
        call: Call | None = None,
        on_start: Callable[[Call], None] | None = None,
    ) -> tuple[requests.Response, Call]:
        """Send until the response headers arrive; ``call`` continues an earlier attempt."""
        limits = self.timeout if timeout is None else Timeout.coerce(timeout)
        if call is None:
            call = Call(None if limits.total is None else time.monotonic() + limits.total)
            if on_start is not None:
                on_start(call)
        with self._lock:
            if self._closed:
                raise Cancelled("the transport is closed", url=url)
            self._inflight.add(call)
        local.retry = CallRetry.for_call(
            self.retry if retry is None else retry,
            idempotent=idempotent,
            call=call,
            sleep=self._sleep,
        )
        local.call = call
        try:
            with self._translate(url, call):
                response = self._sender.send(
                    method,
                    url,
                    body,
                    headers,
                    timeout=DeadlineTimeout(limits.connect, limits.read, call.deadline),
                    verify=self._verify,
                    cert=self._cert,
                    proxies=self._proxies_for(url),
                )
        except BaseException:
            call.detach()
            self._forget(call)
            raise
        finally:
            local.retry = None
            local.call = None
        if response.status_code in _REDIRECT_STATUSES:
            location = response.headers.get("Location")
            call.detach()
            self._forget(call)
            response.close()
            raise RedirectRefused(
                f"{method} {url} answered {response.status_code} redirecting to "
                f"{redact_url(location) if location else location!r}; redirects are not "
                "followed (credentials must not reach "
                "another origin): configure the target URL directly",
                url=url,
                location=location,
            )
        return response, call

    def _read_body(self, raw: urllib3.BaseHTTPResponse, url: str, call: Call, limit: int) -> bytes:
        declared = raw.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(
                f"response of {declared} bytes exceeds the {limit}-byte limit", url=url, limit=limit
            )
        # A body sent as is, with a length, is complete once that many bytes arrived:
        # no further read (and its EOF bookkeeping in urllib3) is needed to know it.
        expected = (
            int(declared)
            if declared is not None
            and declared.isdigit()
            and not raw.headers.get("Content-Encoding")
            else None
        )
        chunks: list[bytes] = []
        size = 0
        with self._translate(url, call):
            while True:
                # Each socket read is capped by the deadline underneath (_DeadlineReader);
                # this also stops a peer whose bytes inflate slowly.
                remaining = call.remaining()
                if remaining is not None and remaining <= 0:
                    raise BudgetExhausted("the call's deadline passed while reading")
                data = raw.read1(_READ_CHUNK, decode_content=True)
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
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def _forget(self, call: Call) -> None:
        with self._lock:
            self._inflight.discard(call)

    def _proxies_for(self, url: str) -> dict[str, str]:
        if not self._trust_env:
            return {}
        origin = url.split("/", 3)[:3]
        key = "/".join(origin)
        proxies = self._proxies.get(key)
        if proxies is None:
            proxies = requests.utils.get_environ_proxies(url)
            with self._lock:
                self._proxies[key] = proxies
        return proxies

    def _translate(self, url: str, call: Call) -> _Translating:
        """The one edge where requests/urllib3/socket exceptions become ours."""
        return _Translating(url, call)


class _Translating:
    """Context manager of :meth:`HTTPTransport._translate` (a class: it wraps every read
    of every call, and a generator-based one costs several times more)."""

    __slots__ = ("_call", "_url")

    def __init__(self, url: str, call: Call) -> None:
        self._url = url
        self._call = call

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, traceback: object) -> None:
        if exc is None or isinstance(exc, A2ASyncError):
            return
        url, call = self._url, self._call
        if isinstance(exc, BudgetExhausted):
            if call.cancelled:
                raise Cancelled("the call was cancelled", url=url, attempts=call.attempts) from exc
            raise DeadlineExceeded(
                f"{url}: {exc}", url=url, attempts=call.attempts, timeout=None
            ) from exc
        if isinstance(exc, (rex.RequestException, uex.HTTPError, OSError, ValueError)):
            # The chain keeps only the root OS/TLS error, without urllib3's frames and
            # wrappers (the traceback stops at this edge); a foreign message that may
            # quote the URL's secrets does not ride along.
            cause: BaseException | None = _edge_cause(exc)
            if has_secrets(url) and (cause is exc or scrub(str(cause), url) != str(cause)):
                cause = None
            raise _translate_exception(exc, url, call) from cause


def _check_header(name: str, value: str) -> None:
    try:
        requests.utils.check_header_validity((name, value))
    except rex.InvalidHeader as exc:
        raise ConfigurationError(f"invalid header {name!r}: not a valid HTTP header") from exc


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


def _translate_exception(exc: BaseException, url: str, call: Call) -> A2ASyncError:
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
