"""urllib3 glue for :mod:`a2a_sync._net.http`: per-call ``Retry``, deadline-capped timeouts,
and connections that register themselves so another thread can cancel them.

These classes plug into urllib3's extension points (``Retry.new``/``increment``/``sleep``,
``Timeout.clone``, ``pool_classes_by_scheme``); :mod:`a2a_sync._net.adapter` mounts them
on requests' ``HTTPAdapter``.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Final

import urllib3
import urllib3.connection
import urllib3.connectionpool
from urllib3.util.retry import Retry

from .._redact import redact_url, scrub
from ..policies import RetryPolicy, parse_retry_after

__all__ = [
    "TRACKED_POOLS",
    "BudgetExhausted",
    "Call",
    "CallRetry",
    "DeadlineTimeout",
    "local",
    "wait_before_retry",
]

logger = logging.getLogger(__name__)

#: Per-thread slots read inside requests/urllib3: the current call and its Retry.
local = threading.local()


# --- per-call state -------------------------------------------------------------------------


class Call:
    """One call in flight: its deadline, attempt count and the socket it is using.

    Shared between the calling thread and :meth:`HTTPTransport.close` (another thread);
    ``_lock`` guards ``_sock``; cancellation is an event so a backoff wait can end on it.

    The socket itself is kept, not the connection: http.client drops the connection's
    reference to it as soon as a response is delimited by closing the connection
    (HTTP/1.0, ``Connection: close``), while the response goes on reading from it.
    """

    __slots__ = ("__weakref__", "_cancelled", "_lock", "_sock", "attempts", "deadline")

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.attempts = 1
        self._cancelled = threading.Event()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    @property
    def sock(self) -> socket.socket | None:
        """The socket of the current attempt, once its request was sent."""
        return self._sock

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def wait_cancelled(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True as soon as the call is cancelled."""
        return self._cancelled.wait(timeout)

    def attach(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            cancelled = self._cancelled.is_set()
        if cancelled:
            _shutdown_socket(sock)

    def detach(self) -> None:
        with self._lock:
            self._sock = None

    def cancel(self) -> None:
        with self._lock:
            self._cancelled.set()
            sock = self._sock
        _shutdown_socket(sock)


def _shutdown_socket(sock: socket.socket | None) -> None:
    if sock is not None:
        # Already closed: nothing is blocked on it.
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class BudgetExhausted(Exception):
    """Raised inside urllib3's retry loop when the call's deadline leaves no room.

    Deliberately not an OSError, so requests passes it through untouched.
    """


class CallRetry(Retry):
    """urllib3 ``Retry`` that takes its delays from a :class:`RetryPolicy`, parses
    ``Retry-After`` leniently and never sleeps past the call's deadline."""

    #: 413 is not "come back later" for an RPC body; only these honour Retry-After alone.
    RETRY_AFTER_STATUS_CODES = frozenset({429, 503})

    def __init__(
        self,
        *args: Any,
        policy: RetryPolicy | None = None,
        call: Call | None = None,
        sleep: Callable[[float], None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self._policy = policy or RetryPolicy()
        self._call = call
        self._sleep_fn = sleep

    @classmethod
    def for_call(
        cls,
        policy: RetryPolicy,
        *,
        idempotent: bool,
        call: Call,
        sleep: Callable[[float], None] | None,
    ) -> CallRetry:
        # A call that is being re-sent (its body broke off) has used some of its budget.
        n = max(0, policy.max_retries - (call.attempts - 1))
        return cls(
            total=n,
            connect=n,
            # After the request left, only idempotent calls may be resent.
            read=n if idempotent else 0,
            status=n if idempotent else 0,
            other=0,
            redirect=0,
            allowed_methods=None if idempotent else Retry.DEFAULT_ALLOWED_METHODS,
            status_forcelist=policy.statuses,
            raise_on_status=False,
            raise_on_redirect=False,
            policy=policy,
            call=call,
            sleep=sleep,
        )

    def new(self, **kw: Any) -> CallRetry:
        retry = super().new(**kw)
        retry._policy = self._policy
        retry._call = self._call
        retry._sleep_fn = self._sleep_fn
        return retry

    def increment(self, *args: Any, **kwargs: Any) -> CallRetry:
        call = self._call
        if call is not None:
            try:
                if call.cancelled:
                    raise BudgetExhausted("cancelled")
                remaining = call.remaining()
                if remaining is not None and remaining <= 0:
                    raise BudgetExhausted("the call's deadline passed before a retry")
            except BudgetExhausted:
                _abandon(kwargs.get("response"))
                raise
        retry = super().increment(*args, **kwargs)
        if call is not None:
            call.attempts += 1
        if logger.isEnabledFor(logging.INFO):  # urllib3 passes method and url by position
            method = kwargs.get("method", args[0] if args else None)
            path = kwargs.get("url", args[1] if len(args) > 1 else None)
            target = _target(kwargs.get("_pool"), path)
            logger.info(
                "retrying %s %s (attempt %d) after %s",
                method or "request",
                redact_url(target),
                call.attempts if call is not None else len(retry.history) + 1,
                scrub(_retry_reason(kwargs.get("error"), kwargs.get("response")), target),
            )
        return retry

    def get_backoff_time(self) -> float:
        return self._policy.backoff(self._failures())

    def _failures(self) -> int:
        # Counted on the Call, so backoff keeps growing when a call is re-sent after its
        # body broke off (a new Retry then starts with an empty history).
        return self._call.attempts - 1 if self._call is not None else len(self.history)

    def sleep(self, response: Any = None) -> None:
        retry_after = None
        if response is not None:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if retry_after is not None and retry_after <= 0:
                # "0" or a date already past: no real hint, so the normal backoff applies
                # (an immediate retry of a busy server is what backoff exists to avoid).
                retry_after = None
        try:
            if retry_after is not None and retry_after > self._policy.retry_after_max:
                raise BudgetExhausted(
                    f"Retry-After of {retry_after:.0f} s exceeds the retry budget "
                    f"({self._policy.retry_after_max:.0f} s)"
                )
            wait_before_retry(
                self._policy, self._call, self._sleep_fn, self._failures(), retry_after
            )
        except BudgetExhausted:
            _abandon(response)
            raise


def _target(pool: Any, path: str | None) -> str:
    """The absolute URL urllib3 is retrying (it passes the pool and the request target)."""
    scheme = getattr(pool, "scheme", "http")
    host = getattr(pool, "host", "?")
    port = getattr(pool, "port", None)
    authority = f"[{host}]" if ":" in host else host
    return f"{scheme}://{authority}{f':{port}' if port else ''}{path or '/'}"


def _retry_reason(error: BaseException | None, response: Any) -> str:
    """Why a request is retried, without urllib3's internal class names."""
    if error is None:
        status = getattr(response, "status", None)
        return f"HTTP {status}" if status is not None else "a retryable answer"
    cause = error.__cause__ if isinstance(error.__cause__, OSError) else error
    if isinstance(cause, urllib3.exceptions.NewConnectionError):
        return str(cause).split(": ", 1)[-1]
    return f"{type(cause).__name__}: {cause}"


class _ForeignRetryWarnings(logging.Filter):
    """Drops urllib3's "Retrying (CallRetry(...)) after ..." warnings for our pools: they
    name internal classes, and :meth:`CallRetry.increment` logs each retry itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        return not (isinstance(args, tuple) and args and isinstance(args[0], CallRetry))


logging.getLogger("urllib3.connectionpool").addFilter(_ForeignRetryWarnings())


def _abandon(response: Any) -> None:
    """Close the connection of a retryable answer urllib3 will not see again.

    urllib3 releases that connection only once the body was read to its end; when the
    retry loop is left by an exception instead (a cancel cut the read short), nothing
    else would close it.
    """
    if isinstance(response, urllib3.BaseHTTPResponse):
        response.close()
        response.release_conn()  # the pool gets its slot back (the closed connection)


def wait_before_retry(
    policy: RetryPolicy,
    call: Call | None,
    sleep: Callable[[float], None] | None,
    failures: int,
    retry_after: float | None = None,
) -> None:
    """Wait before the next attempt, or raise :class:`BudgetExhausted` if the call was
    cancelled or the wait would not end before its deadline.

    ``sleep`` ``None`` waits on the call's cancellation, so cancelling ends the wait.
    """
    if call is not None and call.cancelled:
        raise BudgetExhausted("cancelled")
    delay = policy.delay(failures, retry_after)
    remaining = call.remaining() if call is not None else None
    if remaining is not None and delay >= remaining:
        what = "Retry-After" if retry_after is not None else "backoff"
        raise BudgetExhausted(
            f"{what} of {delay:.2f} s exceeds the call's remaining budget of "
            f"{max(remaining, 0.0):.2f} s"
        )
    if delay > 0:
        logger.debug("retrying in %.3f s (after %d failed attempt(s))", delay, failures)
        if sleep is not None:
            sleep(delay)
        elif call is None:
            time.sleep(delay)
        elif call.wait_cancelled(delay):
            raise BudgetExhausted("cancelled")


class DeadlineTimeout(urllib3.Timeout):
    """urllib3 ``Timeout`` whose connect and read limits never reach past a deadline."""

    def __init__(self, connect: float | None, read: float | None, deadline: float | None) -> None:
        super().__init__(connect=connect, read=read)
        self._deadline = deadline

    def clone(self) -> DeadlineTimeout:
        return DeadlineTimeout(self._connect, self._read, self._deadline)  # type: ignore[arg-type]

    def _cap(self, value: Any, floor: float) -> Any:
        if self._deadline is None:
            return value
        remaining = max(floor, self._deadline - time.monotonic())
        if value is None or value is urllib3.util.timeout._DEFAULT_TIMEOUT:
            return remaining
        return min(value, remaining)

    @property
    def connect_timeout(self) -> Any:
        # A zero connect timeout would make the socket non-blocking; a millisecond fails fast.
        return self._cap(self._connect, 0.001)

    @property
    def read_timeout(self) -> Any:
        # urllib3 raises ReadTimeoutError itself for a zero read timeout.
        return self._cap(self._read, 0.0)


class _DeadlineReader(io.RawIOBase):
    """The raw socket reader under an http.client response, with every ``recv`` capped
    by what is left of the call's deadline.

    Socket timeouts bound one ``recv``; a peer dripping a byte at a time (a long header
    line, a slow body) would keep a call alive far past its deadline. Reading the status
    line and headers happens inside http.client, so the cap has to sit below it. The
    deadline is read on every call: a stream clears it once it is established.
    """

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, call: Call) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._call = call

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._raw.fileno()

    def readinto(self, buffer: Any) -> int | None:
        remaining = self._call.remaining()
        if remaining is not None:
            if remaining <= 0:
                raise TimeoutError("the call's deadline passed")
            current = self._sock.gettimeout()
            if current is None or current > remaining:
                self._sock.settimeout(remaining)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineHTTPResponse(http.client.HTTPResponse):
    """http.client response whose reads respect the calling thread's :class:`Call`."""

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        call: Call | None = getattr(local, "call", None)
        if call is not None and call.deadline is not None:
            raw = self.fp.detach()  # the socket reader, not closed
            self.fp = io.BufferedReader(_DeadlineReader(raw, sock, call))


class _TrackedConnectionMixin:
    """Registers the socket with the calling thread's :class:`Call` before waiting for the
    response, so another thread can shut it down; reads respect the call's deadline."""

    response_class: type[http.client.HTTPResponse] = _DeadlineHTTPResponse

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        call: Call | None = getattr(local, "call", None)
        if call is not None:
            call.attach(self.sock)  # type: ignore[attr-defined]
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _TrackedHTTPConnection(_TrackedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class _TrackedHTTPSConnection(_TrackedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class _TrackedHTTPConnectionPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSConnectionPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


#: Pool classes whose connections register with the calling thread's :class:`Call`.
TRACKED_POOLS: Final = {"http": _TrackedHTTPConnectionPool, "https": _TrackedHTTPSConnectionPool}
