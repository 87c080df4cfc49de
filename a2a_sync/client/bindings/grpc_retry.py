"""The attempts of one unary gRPC call: safe retries and the authorization loop.

The same decisions as the HTTP bindings (:mod:`a2a_sync._net.http`, :class:`AuthRetry`):

* **UNAVAILABLE** is retried under the client's :class:`~a2a_sync.policies.RetryPolicy`
  when it is safe: always when the call never got a connection (grpcio's "failed to
  connect to all addresses": the request never left, like a refused TCP connect over
  HTTP), and after the request may have reached the agent only for operations that are
  safe to repeat (:data:`~a2a_sync.a2a.methods.IDEMPOTENT`, or a ``SendMessage`` the
  caller marked ``idempotent=True``: the same ``messageId`` is resent). Other codes are
  not retried (the agent answered).
* The waits are the policy's backoff, or the server's ``grpc-retry-pushback-ms`` trailer
  (capped by ``retry_after_max``); a wait that would outlast the call's budget ends the
  call with the last error at once. Each attempt's gRPC deadline is what is left of the
  budget, so the user's timeout bounds the whole call, retries and waits included.
* **UNAUTHENTICATED / PERMISSION_DENIED** are the 401 / 403 of :class:`AuthRetry`: an
  OAuth credential answers the challenge (the server's ``www-authenticate`` trailer),
  other credentials are refreshed once; then the call is sent again with the new
  ``authorization``. Credentials only ever go where the binding's metadata rules allow.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

import attrs
import grpc

from ...policies import RetryPolicy
from ..auth import AuthRetry

__all__ = ["Attempts", "StreamOpener", "authorized_again", "never_connected", "status_name"]

Metadata = tuple[tuple[str, str], ...]

#: grpcio's message when no connection could be made for the call (pick-first found no
#: READY address): nothing was sent.
_NEVER_CONNECTED: Final = "failed to connect to all addresses"
_PUSHBACK: Final = "grpc-retry-pushback-ms"
_CHALLENGE: Final = "www-authenticate"
_AUTH_STATUS: Final = {"UNAUTHENTICATED": 401, "PERMISSION_DENIED": 403}


def status_name(exc: grpc.RpcError) -> str:
    """The status code name of a failed call (its exceptions are also ``grpc.Call``)."""
    code = getattr(exc, "code", None)
    found = code() if callable(code) else None
    return found.name if isinstance(found, grpc.StatusCode) else "UNKNOWN"


def _trailer(exc: grpc.RpcError, key: str) -> str | None:
    trailing = getattr(exc, "trailing_metadata", None)
    for name, value in (trailing() if callable(trailing) else None) or ():
        if name == key and isinstance(value, str):
            return value
    return None


def authorized_again(auth: AuthRetry, failure: grpc.RpcError, sent: Metadata) -> bool:
    """After UNAUTHENTICATED / PERMISSION_DENIED: True when the credential has new
    metadata to send the call with (the 401 / 403 of :class:`AuthRetry`)."""
    status = _AUTH_STATUS.get(status_name(failure))
    if status is None:
        return False
    return auth.again(status, _present(_trailer(failure, _CHALLENGE)), _sent_auth(sent))


class StreamOpener:
    """Opens one server-streaming call, and opens it again when the agent refused it for
    its credentials and the credential answered (login, step-up, refresh). Streams are
    not retried for anything else: the resilient client resubscribes."""

    def __init__(
        self, start: Callable[[Metadata], Any], metadata: Callable[[], Metadata], auth: AuthRetry
    ) -> None:
        self._start = start
        self._metadata = metadata
        self._auth = auth
        self._sent: Metadata = ()

    def open(self) -> Any:
        """Start the call with the current metadata."""
        self._sent = self._metadata()
        return self._start(self._sent)

    def reopen(self, failure: grpc.RpcError) -> Any | None:
        """A new call after ``failure`` ended the call before any event, else ``None``.

        Raises:
            AuthorizationError: The OAuth credential gave up.
        """
        if not authorized_again(self._auth, failure, self._sent):
            return None
        return self.open()


def _present(challenge: str | None) -> dict[str, str]:
    return {"WWW-Authenticate": challenge} if challenge is not None else {}


def _sent_auth(sent: Metadata) -> dict[str, str]:
    for key, value in sent:
        if key == "authorization":
            return {"Authorization": value}
    return {}


def never_connected(exc: grpc.RpcError) -> bool:
    """True when the call failed because no connection could be made (nothing was sent)."""
    details = getattr(exc, "details", None)
    text = details() if callable(details) else None
    return isinstance(text, str) and _NEVER_CONNECTED in text.lower()


@attrs.frozen
class Attempts:
    """How one unary call may be repeated.

    Attributes:
        policy: Retries and backoff.
        resend_safe: The operation may be repeated after it reached the agent.
        budget: Seconds for the whole call (``None``: no limit).
        wait: Waits between attempts; returns early when the client is closed.
        clock: Monotonic seconds (injectable).
    """

    policy: RetryPolicy
    resend_safe: bool
    budget: float | None
    wait: Callable[[float], object]
    clock: Callable[[], float] = time.monotonic

    def run(
        self,
        send: Callable[[Metadata, float | None], Any],
        metadata: Callable[[], Metadata],
        auth: AuthRetry,
    ) -> Any:
        """``send(metadata, deadline)`` until it answers or may not be repeated.

        Raises:
            grpc.RpcError: The last attempt's failure (the caller translates it).
        """
        start = self.clock()
        sent = metadata()
        try:
            return send(sent, self.budget)
        except grpc.RpcError as exc:
            return self.recover(exc, sent, send, metadata, auth, start)

    def recover(
        self,
        failure: grpc.RpcError,
        sent: Metadata,
        send: Callable[[Metadata, float | None], Any],
        metadata: Callable[[], Metadata],
        auth: AuthRetry,
        start: float,
    ) -> Any:
        """After the first attempt (started at ``start``, with ``sent``) failed with
        ``failure``: the further attempts (the first one costs nothing extra here).

        Raises:
            grpc.RpcError: The last attempt's failure.
        """
        failures = 0
        while True:
            code = status_name(failure)
            if not authorized_again(auth, failure, sent):
                if not self._retryable(code, failure) or failures >= self.policy.max_retries:
                    raise failure
                failures += 1
                delay = self._delay(failures, failure)
                left = self._left(start)
                if delay is None or (left is not None and delay >= left):
                    raise failure
                self.wait(delay)
            sent = metadata()
            try:
                return send(sent, self._left(start))
            except grpc.RpcError as exc:
                failure = exc

    def _retryable(self, code: str, exc: grpc.RpcError) -> bool:
        return code == "UNAVAILABLE" and (self.resend_safe or never_connected(exc))

    def _delay(self, failures: int, exc: grpc.RpcError) -> float | None:
        """The wait before the next attempt; ``None`` when the server asks for longer than
        ``retry_after_max`` (the call fails now, as over HTTP)."""
        pushback = _trailer(exc, _PUSHBACK)
        if pushback is not None and pushback.isascii() and pushback.isdigit():
            seconds = int(pushback) / 1000.0
            return seconds if seconds <= self.policy.retry_after_max else None
        return self.policy.backoff(failures)

    def _left(self, start: float) -> float | None:
        if self.budget is None:
            return None
        return max(self.budget - (self.clock() - start), 0.0)
