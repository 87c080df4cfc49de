"""urllib3 ``Retry`` for one call: delays from a :class:`~a2a_sync.policies.RetryPolicy`,
lenient ``Retry-After``, no sleep past the call's deadline, and retries logged without
urllib3's internal names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

import urllib3
from urllib3.util.retry import Retry

from .._redact import redact_url, scrub
from ..policies import RetryPolicy, parse_retry_after
from .call import BudgetExhausted, Call, wait_before_retry

__all__ = ["CallRetry"]

# The logger keeps the name it had before the split, so log configuration stays valid.
logger = logging.getLogger("a2a_sync._net.pool")


#: Retries per (class, id of the policy, idempotent, retries left) that each call's ``Retry`` is
#: copied from; emptied when full (policies a process uses are few).
_TEMPLATES: dict[tuple[type[CallRetry], int, bool, int], CallRetry] = {}
_TEMPLATE_LIMIT: Final = 64


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
        # Keyed by the policy's identity (hashing a policy hashes its six fields); the
        # template keeps its policy, so an id is not reused while its entry exists.
        key = (cls, id(policy), idempotent, n)
        template = _TEMPLATES.get(key)
        if template is None:
            template = cls(
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
            )
            if len(_TEMPLATES) >= _TEMPLATE_LIMIT:
                _TEMPLATES.clear()
            _TEMPLATES[key] = template
        # A copy of the template's attributes (all immutable: numbers, frozensets, an
        # empty history) instead of Retry.__init__'s twenty assignments on every call.
        retry = object.__new__(cls)
        retry.__dict__.update(template.__dict__)
        retry._call = call
        retry._sleep_fn = sleep
        return retry

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
