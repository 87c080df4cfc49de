"""Timeouts and retry/reconnect policies: immutable values with pure decisions.

The model is urllib3's ``Retry``: a policy never changes after construction, so one
instance can be shared by every thread and client; deciding *how long* to wait is a pure
function, and sleeping is left to the caller (through an injectable ``sleep``), so tests
never sleep. Use :func:`attrs.evolve` (or the ``with_*`` helpers) to derive a variant.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from . import _constants as C
from .errors import ConfigurationError

__all__ = [
    "Timeout",
    "RetryPolicy",
    "ReconnectPolicy",
    "PollPolicy",
    "ResilienceConfig",
    "parse_retry_after",
]

#: A source of uniform random numbers in [0, 1); injectable for tests.
RandomSource = Callable[[], float]


def _non_negative(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, (int, float)) or value < 0):
        raise ConfigurationError(f"{attribute.name} must be a non-negative number or None")


def _positive_or_none(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, (int, float)) or value <= 0):
        raise ConfigurationError(f"{attribute.name} must be a positive number or None")


def _int_set(values: Iterable[int]) -> frozenset[int]:
    return frozenset(values)


def _count(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(f"{attribute.name} must be a non-negative integer")


def _fraction(_: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigurationError(f"{attribute.name} must be between 0 and 1")


@attrs.frozen
class Timeout:
    """How long a call may take, in seconds. ``None`` disables that limit.

    Attributes:
        connect: Longest wait for a TCP (and TLS) connection.
        read: Longest silence between received bytes (an idle timeout, not a total).
        total: Wall-clock limit for the whole call, retries and backoff included.
            a2a_sync enforces it itself; requests has no such limit.

    Example:
        >>> Timeout(total=10).connect
        5.0
    """

    connect: float | None = attrs.field(
        default=C.DEFAULT_CONNECT_TIMEOUT, validator=_positive_or_none
    )
    read: float | None = attrs.field(default=C.DEFAULT_READ_TIMEOUT, validator=_positive_or_none)
    total: float | None = attrs.field(default=C.DEFAULT_CALL_TIMEOUT, validator=_positive_or_none)

    @classmethod
    def coerce(cls, value: Timeout | float | tuple[float | None, float | None] | None) -> Timeout:
        """Accept what requests users pass: a number (every limit), a ``(connect, read)``
        tuple, a :class:`Timeout`, or ``None`` (no limits at all)."""
        if isinstance(value, Timeout):
            return value
        if value is None:
            return cls(connect=None, read=None, total=None)
        if isinstance(value, tuple):
            connect, read = value
            return cls(connect=connect, read=read)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigurationError(
                f"timeout={value!r}: give a positive number of seconds, a (connect, read) "
                "tuple, a Timeout, or None for no limit"
            )
        return cls(connect=value, read=value, total=value)


@attrs.frozen
class RetryPolicy:
    """When and how long to wait before retrying a call that is safe to retry.

    Which calls are safe is decided by the transport: connect failures always (the
    request never left), read failures and :attr:`statuses` only for operations marked
    idempotent. This policy only answers "how many" and "how long".

    Delays grow exponentially from a non-zero base (urllib3 retries the first time
    without waiting, which turns a brief outage into a burst) and lose up to
    :attr:`jitter` of their length at random.

    Attributes:
        max_retries: Retries after the first attempt (0 disables retrying).
        backoff_base: Delay before the first retry.
        backoff_max: Ceiling for any single backoff delay.
        jitter: Fraction of each delay removed at random (0 .. 1).
        statuses: HTTP statuses retried for idempotent operations.
        retry_after_max: Longest ``Retry-After`` honoured; a longer one fails the call.
    """

    max_retries: int = attrs.field(default=C.DEFAULT_MAX_RETRIES)
    backoff_base: float = attrs.field(default=C.DEFAULT_BACKOFF_BASE, validator=_non_negative)
    backoff_max: float = attrs.field(default=C.DEFAULT_BACKOFF_MAX, validator=_non_negative)
    jitter: float = attrs.field(default=C.DEFAULT_JITTER, validator=_fraction)
    statuses: frozenset[int] = attrs.field(default=C.RETRYABLE_STATUSES, converter=_int_set)
    retry_after_max: float = attrs.field(default=C.DEFAULT_RETRY_AFTER_MAX, validator=_non_negative)

    @max_retries.validator
    def _check_retries(self, _: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigurationError("max_retries must be a non-negative integer")

    @classmethod
    def none(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(max_retries=0)

    def backoff(self, failures: int, rand: RandomSource = random.random) -> float:
        """Delay before the next attempt after ``failures`` consecutive failures (>= 1)."""
        if failures < 1:
            return 0.0
        exponent = min(failures - 1, 62)  # keep 2**n finite; the cap applies anyway
        delay = min(self.backoff_max, self.backoff_base * (2.0**exponent))
        return delay * (1.0 - self.jitter * rand())

    def delay(
        self, failures: int, retry_after: float | None = None, rand: RandomSource = random.random
    ) -> float:
        """Delay before the next attempt: the server's ``Retry-After`` when it gave a
        valid one (it knows best), else :meth:`backoff`."""
        if retry_after is not None:
            return retry_after
        return self.backoff(failures, rand)


@attrs.frozen
class ReconnectPolicy:
    """How an SSE stream re-establishes a dropped connection (WHATWG HTML §9.2.3).

    The wait is the reconnection time (the server's ``retry:`` when it sent one, else
    :attr:`initial_delay`) plus exponential backoff for consecutive failures, capped.
    The failure counter resets only when an event arrives (progress), never merely on a
    clean close, so a server that accepts and immediately closes cannot cause a tight loop.

    Attributes:
        max_attempts: Consecutive failed reconnects before the stream gives up
            (0: never reconnect).
        initial_delay: Reconnection time until the server sets one.
        backoff_max: Ceiling for one delay.
        jitter: Fraction of each delay removed at random.
        server_retry_max: Ceiling for the server's ``retry:`` value (a hostile or buggy
            server could otherwise park the stream for days).
    """

    max_attempts: int = C.DEFAULT_MAX_RECONNECTS
    initial_delay: float = attrs.field(default=C.DEFAULT_RECONNECT_DELAY, validator=_non_negative)
    backoff_max: float = attrs.field(default=C.DEFAULT_RECONNECT_DELAY_MAX, validator=_non_negative)
    jitter: float = attrs.field(default=C.DEFAULT_JITTER, validator=_fraction)
    server_retry_max: float = attrs.field(default=300.0, validator=_non_negative)

    @classmethod
    def none(cls) -> ReconnectPolicy:
        """A policy that never reconnects."""
        return cls(max_attempts=0)

    def delay(
        self, failures: int, server_retry: float | None = None, rand: RandomSource = random.random
    ) -> float:
        """Wait before reconnect number ``failures`` (>= 1)."""
        base = (
            self.initial_delay if server_retry is None else min(server_retry, self.server_retry_max)
        )
        if failures <= 1:
            return base
        # The reconnection time is a floor the spec says to respect; the backoff grows
        # above it (capped), and jitter spreads only that growth.
        grown = min(max(self.backoff_max, base), base * (2.0 ** min(failures - 1, 62)))
        return grown - (grown - base) * self.jitter * rand()


@attrs.frozen
class PollPolicy:
    """How task recovery polls ``GetTask``: a short first interval growing to a cap.

    Attributes:
        initial_interval: Wait before the second poll.
        max_interval: Ceiling for the wait between polls.
        multiplier: Growth factor per poll.
    """

    initial_interval: float = attrs.field(default=0.2, validator=_non_negative)
    max_interval: float = attrs.field(default=2.0, validator=_non_negative)
    multiplier: float = attrs.field(default=1.5, validator=_non_negative)

    def interval(self, polls: int) -> float:
        """Wait after poll number ``polls`` (>= 1)."""
        exponent = min(max(polls - 1, 0), 200)
        return min(self.max_interval, self.initial_interval * (self.multiplier**exponent))


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Parse an HTTP ``Retry-After`` value (RFC 9110 §10.2.3) into seconds from now.

    Accepts delta-seconds and HTTP dates. Anything else (``"1.5"``, ``"-5"``, ``"soon"``)
    returns ``None`` so the caller falls back to its own backoff; a malformed header
    never fails the call (urllib3 raises ``InvalidHeader`` for these). A date in the
    past means "now" (0.0).

    >>> parse_retry_after("120")
    120.0
    >>> parse_retry_after("soon") is None
    True
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None or parsed.tzinfo is None:  # RFC 9110 dates are always GMT
        return None
    seconds = parsed.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


@attrs.frozen
class ResilienceConfig:
    """Every delay and budget of :class:`~a2a_sync.client.ResilientA2AClient`.

    Immutable and shareable; derive variants with :func:`attrs.evolve`. The defaults are
    conservative (a couple of retries, short backoff) so the wrapper is safe to enable
    everywhere.

    Attributes:
        max_transport_retries: L1 — retries of a transient failure on the same agent.
        retry_base_delay: L1 — first backoff delay (doubles per consecutive failure).
        retry_max_delay: L1 — ceiling for one backoff delay.
        retry_statuses: L1 — HTTP statuses retried (for operations that are safe to repeat).
        retry_after_max: L1 — longest ``Retry-After`` honoured before failing over.
        jitter: Fraction of each delay removed at random.
        max_reconnect_attempts: L2 — resubscribes after a stream drops, before falling
            through to polling.
        task_timeout: L3 — default deadline of :meth:`wait_for_task` and ``send_and_wait``.
        poll: L3 — how task recovery polls ``GetTask``.
        idempotent_send: Resend a message whose outcome is unknown (and fail over to the
            next agent after such a failure). Safe only with agents that deduplicate by
            ``message_id``; every resend carries the byte-identical message.
    """

    max_transport_retries: int = attrs.field(default=2, validator=_count)
    retry_base_delay: float = attrs.field(default=C.DEFAULT_BACKOFF_BASE, validator=_non_negative)
    retry_max_delay: float = attrs.field(default=C.DEFAULT_BACKOFF_MAX, validator=_non_negative)
    retry_statuses: frozenset[int] = attrs.field(
        default=C.RETRYABLE_STATUSES | {500}, converter=_int_set
    )
    retry_after_max: float = attrs.field(default=C.DEFAULT_RETRY_AFTER_MAX, validator=_non_negative)
    jitter: float = attrs.field(default=C.DEFAULT_JITTER, validator=_fraction)
    max_reconnect_attempts: int = attrs.field(default=2, validator=_count)
    task_timeout: float = attrs.field(default=30.0, validator=_non_negative)
    poll: PollPolicy = attrs.field(factory=PollPolicy)
    idempotent_send: bool = False

    def retry_policy(self) -> RetryPolicy:
        """The L1 policy applied to every agent's transport calls."""
        return RetryPolicy(
            max_retries=self.max_transport_retries,
            backoff_base=self.retry_base_delay,
            backoff_max=self.retry_max_delay,
            jitter=self.jitter,
            statuses=self.retry_statuses,
            retry_after_max=self.retry_after_max,
        )

    def reconnect_delay(self, attempt: int, rand: RandomSource = random.random) -> float:
        """L2 — wait before resubscribe number ``attempt`` (>= 1)."""
        return self.retry_policy().backoff(attempt, rand)
