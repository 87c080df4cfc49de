"""``PushSenderOptions``: how a :class:`~a2a_sync.server.push.PushSender` delivers, as one
frozen value.

``PushSender(allow_private=True, timeout=5)`` applies its keywords onto a
:class:`PushSenderOptions` with :meth:`PushSenderOptions.evolve`; an unknown keyword is a
:class:`~a2a_sync.errors.ConfigurationError` naming the closest option.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ..errors import ConfigurationError
from ._push_http import Resolver

__all__ = [
    "DEFAULT_BACKOFF_BASE",
    "DEFAULT_BACKOFF_MAX",
    "DEFAULT_DESTINATION_QUEUE_LIMIT",
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_PER_DESTINATION",
    "DEFAULT_PUSH_TIMEOUT",
    "DEFAULT_PUSH_WORKERS",
    "DEFAULT_QUEUE_LIMIT",
    "PushSenderOptions",
    "resolve_push_options",
]

#: Total limit of one webhook call (connect, TLS, send, answer headers). A2A 1.0 §13.2
#: recommends 10-30 s; receivers should answer at once (2xx) and work later.
DEFAULT_PUSH_TIMEOUT: Final = 10.0
#: Attempts per notification before it is dropped (logged).
DEFAULT_MAX_ATTEMPTS: Final = 5
#: First retry delay; doubles per attempt (1, 2, 4, 8 s ...), with up to 25 % jitter.
DEFAULT_BACKOFF_BASE: Final = 1.0
#: Ceiling of one retry delay (also caps a receiver's Retry-After).
DEFAULT_BACKOFF_MAX: Final = 60.0
#: Notifications waiting at most; more are dropped (logged) instead of growing memory.
DEFAULT_QUEUE_LIMIT: Final = 10_000
#: Notifications waiting for one destination at most (a dead receiver cannot fill the
#: whole queue and make everyone else's notifications drop).
DEFAULT_DESTINATION_QUEUE_LIMIT: Final = 1_000
#: Delivery threads.
DEFAULT_PUSH_WORKERS: Final = 4
#: Delivery threads one destination may occupy at once.
DEFAULT_PER_DESTINATION: Final = 2


@attrs.frozen(kw_only=True)
class PushSenderOptions:
    """How push notifications are delivered. Immutable; derive variants with :meth:`evolve`.

    Attributes:
        allow_private: Allow webhooks on loopback/private/link-local addresses (tests,
            trusted internal networks).
        timeout: Total limit of one attempt (connect, TLS, send, answer headers).
        max_attempts: Attempts per notification.
        backoff_base: First retry delay (doubles per attempt).
        backoff_max: Longest retry delay.
        queue_limit: Most notifications waiting in all.
        destination_queue_limit: Most notifications waiting for one destination.
        workers: Delivery threads.
        per_destination: Delivery threads one destination may use at once.
        resolve: Host resolution (``socket.getaddrinfo`` by default).
        verify: TLS verification: True, or a CA bundle path.
        clock: Monotonic clock for deadlines and retry times (tests).
    """

    allow_private: bool = False
    timeout: float = DEFAULT_PUSH_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_max: float = DEFAULT_BACKOFF_MAX
    queue_limit: int = DEFAULT_QUEUE_LIMIT
    destination_queue_limit: int = DEFAULT_DESTINATION_QUEUE_LIMIT
    workers: int = DEFAULT_PUSH_WORKERS
    per_destination: int = DEFAULT_PER_DESTINATION
    resolve: Resolver | None = None
    verify: bool | str = True
    clock: Callable[[], float] = time.monotonic

    def evolve(self, **changes: Any) -> PushSenderOptions:
        """A copy with ``changes`` (names of this class's attributes).

        Raises:
            ConfigurationError: A name is no option (the message names the closest).
        """
        for name in changes:
            if name not in _NAMES:
                close = difflib.get_close_matches(name, sorted(_NAMES | {"options"}), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigurationError(
                    f"unknown PushSender option {name!r}{hint}; the options are: "
                    f"{', '.join(sorted(_NAMES))}"
                )
        return attrs.evolve(self, **changes) if changes else self


_NAMES: Final = frozenset(a.name for a in attrs.fields(PushSenderOptions))


def resolve_push_options(
    options: PushSenderOptions | None, overrides: Mapping[str, Any]
) -> PushSenderOptions:
    """``options`` (default: all defaults) with the keyword ``overrides`` applied."""
    return (options or PushSenderOptions()).evolve(**overrides)
