"""Retry, reconnect and poll policies are pure: no test here sleeps."""

from __future__ import annotations

import email.utils

import attrs
import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.policies import PollPolicy, ReconnectPolicy, RetryPolicy, Timeout, parse_retry_after


def _no_jitter() -> float:
    return 0.0


def _full_jitter() -> float:
    return 0.999999


def test_backoff_grows_exponentially_from_a_non_zero_base() -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=100, jitter=0.25)
    delays = [policy.backoff(n, _no_jitter) for n in range(1, 6)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 8.0]


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=3.0)
    assert policy.backoff(10, _no_jitter) == 3.0
    assert policy.backoff(10_000, _no_jitter) == 3.0


def test_jitter_only_shortens_delays_within_its_fraction() -> None:
    policy = RetryPolicy(backoff_base=1.0, backoff_max=100, jitter=0.25)
    assert policy.backoff(1, _full_jitter) == pytest.approx(0.75, abs=1e-5)
    assert policy.backoff(1, _no_jitter) == 1.0


def test_retry_after_wins_over_backoff() -> None:
    policy = RetryPolicy(backoff_base=1.0)
    assert policy.delay(1, retry_after=7.0, rand=_no_jitter) == 7.0
    assert policy.delay(1, retry_after=None, rand=_no_jitter) == 1.0


def test_no_failures_means_no_wait() -> None:
    assert RetryPolicy().backoff(0) == 0.0


def test_policies_are_immutable_and_derived_with_evolve() -> None:
    policy = RetryPolicy()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        policy.max_retries = 5  # type: ignore[misc]
    assert attrs.evolve(policy, max_retries=5).max_retries == 5
    assert policy.max_retries != 5


@pytest.mark.parametrize(
    "kwargs",
    [{"max_retries": -1}, {"max_retries": 1.5}, {"jitter": 2.0}, {"backoff_base": -1}],
)
def test_invalid_retry_settings_are_configuration_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


def test_reconnect_waits_at_least_the_server_retry_time() -> None:
    policy = ReconnectPolicy(initial_delay=1.0, backoff_max=30.0, jitter=0.25)
    assert policy.delay(1, server_retry=1.5) == 1.5
    assert policy.delay(1) == 1.0
    for failures in range(1, 10):
        assert policy.delay(failures, server_retry=1.5, rand=_full_jitter) >= 1.5


def test_reconnect_backoff_grows_for_consecutive_failures_and_is_capped() -> None:
    policy = ReconnectPolicy(initial_delay=1.0, backoff_max=5.0, jitter=0.0)
    assert [policy.delay(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_poll_interval_grows_to_its_cap() -> None:
    policy = PollPolicy(initial_interval=0.2, max_interval=1.0, multiplier=2.0)
    assert [policy.interval(n) for n in range(1, 6)] == [0.2, 0.4, 0.8, 1.0, 1.0]


def test_timeout_accepts_what_requests_users_pass() -> None:
    assert Timeout.coerce(3) == Timeout(connect=3, read=3, total=3)
    assert Timeout.coerce((1, 2)) == Timeout(connect=1, read=2)
    assert Timeout.coerce(None) == Timeout(connect=None, read=None, total=None)
    limits = Timeout(total=9)
    assert Timeout.coerce(limits) is limits


def test_zero_timeouts_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        Timeout(read=0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2", 2.0), ("0", 0.0), (" 120 ", 120.0), ("03", 3.0)],
)
def test_retry_after_delta_seconds(value: str, expected: float) -> None:
    assert parse_retry_after(value) == expected


@pytest.mark.parametrize("value", ["1.5", "-5", "soon", "", "   ", "1e3", "Mon, 99 Foo", "٣"])
def test_malformed_retry_after_means_normal_backoff(value: str) -> None:
    assert parse_retry_after(value) is None


def test_retry_after_http_date_is_seconds_from_now() -> None:
    now = 1_800_000_000.0
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(header, now=now) == pytest.approx(30.0)


def test_retry_after_date_in_the_past_means_now() -> None:
    now = 1_800_000_000.0
    header = email.utils.formatdate(now - 3600, usegmt=True)
    assert parse_retry_after(header, now=now) == 0.0


def test_an_absurd_server_retry_is_capped() -> None:
    policy = ReconnectPolicy(server_retry_max=300.0)
    assert policy.delay(1, server_retry=float("inf")) == 300.0
    assert policy.delay(3, server_retry=1e12, rand=_full_jitter) <= 300.0
