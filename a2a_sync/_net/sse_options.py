"""What opens an event stream (:class:`StreamRequest`) and how it is read
(:class:`SSEOptions`), as frozen values for :class:`~a2a_sync._net.sse.SSEStream`.

``SSEStream(transport, request, idle_timeout=30)`` applies its keywords onto an
:class:`SSEOptions` with :meth:`SSEOptions.evolve`; an unknown keyword is a
:class:`~a2a_sync.errors.ConfigurationError` naming the closest option.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from .. import _constants as C
from ..errors import ConfigurationError
from ..policies import ReconnectPolicy, RetryPolicy, Timeout
from .sse_decoder import DEFAULT_MAX_EVENT_BYTES

__all__ = ["ReconnectHook", "SSEOptions", "StreamRequest", "resolve_sse_options"]


@attrs.frozen
class StreamRequest:
    """An HTTP request that opens (or re-establishes) an event stream."""

    method: str
    url: str
    body: bytes | None = attrs.field(default=None, repr=False)
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    #: Safe to send again after it may have reached the server (enables read retries).
    idempotent: bool = False


#: Given the last event id, return the request that re-establishes the stream, or
#: ``None`` to end it (the stream is complete, or resuming is not possible).
ReconnectHook = Callable[[str], "StreamRequest | None"]


@attrs.frozen(kw_only=True)
class SSEOptions:
    """How one event stream is opened and read. Immutable; see :class:`SSEStream` for
    what each option does."""

    timeout: Timeout | float | tuple[float | None, float | None] | None = None
    idle_timeout: float | None = C.DEFAULT_STREAM_IDLE_TIMEOUT
    reconnect_policy: ReconnectPolicy | None = None
    reconnect: ReconnectHook | None = None
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES
    queue_size: int = C.DEFAULT_STREAM_QUEUE_SIZE
    json_fallback: bool = False
    sleep: Callable[[float], None] | None = None
    threaded: bool = True
    retry: RetryPolicy | None = None

    def evolve(self, **changes: Any) -> SSEOptions:
        """A copy with ``changes`` (names of this class's attributes).

        Raises:
            ConfigurationError: A name is no option (the message names the closest).
        """
        for name in changes:
            if name not in _NAMES:
                close = difflib.get_close_matches(name, sorted(_NAMES | {"options"}), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigurationError(
                    f"unknown SSEStream option {name!r}{hint}; the options are: "
                    f"{', '.join(sorted(_NAMES))}"
                )
        return attrs.evolve(self, **changes) if changes else self


_NAMES: Final = frozenset(a.name for a in attrs.fields(SSEOptions))


def resolve_sse_options(options: SSEOptions | None, overrides: Mapping[str, Any]) -> SSEOptions:
    """``options`` (default: all defaults) with the keyword ``overrides`` applied."""
    return (options or SSEOptions()).evolve(**overrides)
