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

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Final

import requests
import requests.adapters
import requests.exceptions as rex
import requests.structures
import requests.utils

from .. import _constants as C
from .._redact import redact_url
from .._version import __version__
from ..errors import (
    Cancelled,
    ConfigurationError,
    ConnectionLost,
    ReadTimeout,
    RedirectRefused,
)
from ..policies import RetryPolicy, Timeout
from .adapter import Adapter
from .pool import Call, CallRetry, DeadlineTimeout, local, wait_before_retry
from .responses import HTTPResult, StreamResponse, read_body
from .sender import SessionSender
from .translate import Translating, translated

__all__ = ["HTTPResult", "HTTPTransport", "StreamResponse", "USER_AGENT"]

logger = logging.getLogger(__name__)

USER_AGENT: Final = f"a2a-sync/{__version__} python-requests/{requests.__version__}"

#: Statuses that carry a Location we refuse to follow. (304 Not Modified is not one.)
_REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})

_PROXY_CACHE_LIMIT: Final = 512  # URLs whose proxies are remembered before a reset
_NO_PROXIES: Final[dict[str, str]] = {}

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
        # Calls until their answer was read; open streams weakly (one dropped unclosed
        # must not keep its call and socket alive).
        self._inflight: set[Call] = set()
        self._streams: weakref.WeakSet[Call] = weakref.WeakSet()
        self._lock = threading.Lock()  # guards _inflight, _streams, _proxies and _closed
        self._closed = False

    # -- public --------------------------------------------------------------------------

    @property
    def tls(self) -> tuple[bool | str, str | tuple[str, str] | None]:
        """``(verify, cert)`` as resolved here (the environment's CA bundle included), for
        bindings that open their own TLS connections (gRPC)."""
        return self._verify, self._cert

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
                content = read_body(response.raw, url, call, limit)
            except (ConnectionLost, ReadTimeout):
                response.close()  # discards the connection: its state is unknown
                # urllib3 retries only until the headers arrive; a body that broke off is
                # retried here, on the same budget and deadline, for idempotent calls only.
                if not idempotent or call.attempts > policy.max_retries:
                    raise
                with Translating(url, call):  # the edge: foreign exceptions become ours
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
            stream=True,
        )
        return StreamResponse(response, call, self._forget_stream, idle_timeout)

    def close(self) -> None:
        """Cancel calls in flight (from any thread) and close the pool. Idempotent."""
        with self._lock:
            self._closed = True
            calls = [*self._inflight, *self._streams]
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
        stream: bool = False,
    ) -> tuple[requests.Response, Call]:
        """Send until the response headers arrive; ``call`` continues an earlier attempt
        (a ``stream`` call is tracked weakly, in ``_streams``, from the start)."""
        limits = (
            self.timeout
            if timeout is None
            else timeout
            if isinstance(timeout, Timeout)
            else Timeout.coerce(timeout)
        )
        if call is None:
            call = Call(None if limits.total is None else time.monotonic() + limits.total)
            if on_start is not None:
                on_start(call)
        with self._lock:
            if self._closed:
                raise Cancelled("the transport is closed", url=url)
            (self._streams if stream else self._inflight).add(call)  # (this frame holds it)
        local.retry = CallRetry.for_call(
            self.retry if retry is None else retry,
            idempotent=idempotent,
            call=call,
            sleep=self._sleep,
        )
        local.call = call
        try:
            response = self._sender.send(
                method,
                url,
                body,
                headers,
                timeout=DeadlineTimeout.of(limits.connect, limits.read, call.deadline),
                verify=self._verify,
                cert=self._cert,
                proxies=self._proxies_for(url),
            )
        except BaseException as exc:
            error = translated(exc, url, call)  # the edge: foreign exceptions become ours
            call.detach()
            (self._forget_stream if stream else self._forget)(call)
            if error is None:
                raise
            raise error[0] from error[1]
        finally:
            local.retry = None
            local.call = None
        if response.status_code in _REDIRECT_STATUSES:
            location = response.headers.get("Location")
            call.detach()
            (self._forget_stream if stream else self._forget)(call)
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

    def _forget(self, call: Call) -> None:
        with self._lock:
            self._inflight.discard(call)

    def _forget_stream(self, call: Call) -> None:
        with self._lock:
            self._streams.discard(call)

    def _proxies_for(self, url: str) -> dict[str, str]:
        if not self._trust_env:
            return _NO_PROXIES
        # Per URL (the same answer as per origin, without a parse per call; bounded).
        proxies = self._proxies.get(url)
        if proxies is None:
            proxies = requests.utils.get_environ_proxies(url)
            with self._lock:
                if len(self._proxies) >= _PROXY_CACHE_LIMIT:
                    self._proxies.clear()
                self._proxies[url] = proxies
        return proxies


def _check_header(name: str, value: str) -> None:
    try:
        requests.utils.check_header_validity((name, value))
    except rex.InvalidHeader as exc:
        raise ConfigurationError(f"invalid header {name!r}: not a valid HTTP header") from exc
