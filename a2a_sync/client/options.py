"""``ClientOptions``: how an :class:`~a2a_sync.client.client.A2AClient` talks to its agent,
as one frozen value.

The client's keywords (``credentials=``, ``timeout=``, ``headers=``...) are applied onto a
:class:`ClientOptions` with :meth:`ClientOptions.evolve`, so one value can configure many
clients::

    base = ClientOptions(timeout=30, retry=RetryPolicy(attempts=5))
    client = A2AClient.from_url(url, options=base, credentials=BearerToken(token))

An unknown keyword is a :class:`~a2a_sync.errors.ConfigurationError` naming the closest
option.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from .. import _constants as C
from .._net.http import HTTPTransport
from ..auth.hook import ChallengeAuth
from ..errors import ConfigurationError
from ..policies import RetryPolicy
from .auth import Credentials
from .bindings.jsonrpc import TimeoutArg

__all__ = ["OPTION_NAMES", "ClientOptions", "resolve_options"]


@attrs.frozen(kw_only=True)
class ClientOptions:
    """The options of an A2A client. Immutable; derive variants with :meth:`evolve`.

    Attributes:
        credentials: A :class:`~a2a_sync.client.auth.Credentials` (e.g. ``BearerToken``,
            ``APIKey``), sent only to ``trusted_origins``.
        auth: An OAuth authorization (:class:`a2a_sync.auth.oauth.OAuth`): on a 401/403 it
            discovers the agent's authorization server, obtains (or steps up) a token and
            the call is sent again; tokens go only to ``trusted_origins``.
        trusted_origins: Origins the credentials may go to. Defaults to the origin the
            card was fetched from (or the endpoint's origin).
        allow_insecure_credentials: Send ``credentials`` (and ``Authorization``,
            ``Cookie`` or ``X-API-Key`` in ``headers``) over plain ``http://`` (or
            plaintext gRPC) to hosts that are not loopback. Off by default: such a client
            is refused with :class:`~a2a_sync.errors.ConfigurationError`. For trusted
            internal networks only; each such origin is logged once as a warning. OAuth
            (``auth=``) ignores it: tokens go over HTTPS (or to loopback) only.
        extensions: A2A extension URIs to request (``A2A-Extensions``).
        headers: Extra headers for every request.
        timeout: Default limits per call.
        retry: Retry policy for failures that are safe to retry.
        stream_idle_timeout: Longest silence on a stream before it counts as dead.
        threaded_streams: Read streams on a background thread that buffers events ahead
            of the consumer (the default). ``False`` makes the consuming thread read the
            socket itself: one thread wake-up per event instead of two, about 40 % less
            CPU per event when events arrive one at a time (docs/decisions.md §8). Either
            way ``TaskStream.close`` works from any thread. (gRPC: the consumer reads the
            call either way, grpcio buffers ahead; ``True`` adds the thread that enforces
            ``stream_idle_timeout``, docs/decisions.md §18.)
        transport: An :class:`HTTPTransport` to share (then ``verify``, ``retry`` and
            ``timeout`` defaults come from it and ``close`` leaves it open).
        verify: TLS verification, as in requests (``True``, ``False`` or a CA bundle
            path); the gRPC binding uses it too (its roots; ``False`` is refused there).
        cert: Client certificate for mutual TLS, as in requests: one PEM file with the
            certificate and key, or a ``(cert, key)`` pair of paths (HTTP and gRPC).
    """

    credentials: Credentials | ChallengeAuth | None = None
    auth: ChallengeAuth | None = None
    trusted_origins: Iterable[str] | None = None
    allow_insecure_credentials: bool = False
    extensions: Sequence[str] = ()
    headers: Mapping[str, str] | None = attrs.field(default=None, repr=False)  # may hold secrets
    timeout: TimeoutArg = None
    retry: RetryPolicy | None = None
    stream_idle_timeout: float | None = C.DEFAULT_STREAM_IDLE_TIMEOUT
    threaded_streams: bool = True
    transport: HTTPTransport | None = None
    verify: bool | str = True
    cert: str | tuple[str, str] | None = None

    def http_transport(self) -> HTTPTransport:
        """A new :class:`HTTPTransport` with these timeout, retry and TLS settings."""
        return HTTPTransport(
            timeout=self.timeout, retry=self.retry, verify=self.verify, cert=self.cert
        )

    def evolve(self, **changes: Any) -> ClientOptions:
        """A copy with ``changes`` (names of this class's attributes).

        Raises:
            ConfigurationError: A name is no option (the message names it and the
                closest option).
        """
        for name in changes:
            if name not in OPTION_NAMES:
                raise ConfigurationError(_unknown(name))
        return attrs.evolve(self, **changes) if changes else self


#: The names :class:`ClientOptions` (and so ``A2AClient(...)``) accepts.
OPTION_NAMES: Final = frozenset(a.name for a in attrs.fields(ClientOptions))


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(OPTION_NAMES | {"options"}), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"unknown A2AClient option {name!r}{hint}; the options are: "
        f"{', '.join(sorted(OPTION_NAMES))}"
    )


def resolve_options(options: ClientOptions | None, overrides: Mapping[str, Any]) -> ClientOptions:
    """``options`` (default: all defaults) with the keyword ``overrides`` applied."""
    return (options or ClientOptions()).evolve(**overrides)
