"""The blocking A2A client for one agent."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from .._net.secure import carries_credentials, check_credentials_destination
from .._redact import redact_url
from ..a2a.codec import codec_for
from ..a2a.methods import REVISIONS, Operation, Revision
from ..a2a.types import AgentCard
from ..errors import ConfigurationError, ProtocolError
from ..policies import RetryPolicy, Timeout
from .auth import OriginBoundCredentials, origin_of
from .bindings import GRPC, JSONRPC, Binding, binding_class
from .bindings.grpc_target import parse_grpc_url
from .bindings.jsonrpc import TimeoutArg, static_headers
from .card import (
    CardFetch,
    CardVerifier,
    fetch_card,
    not_http_url,
    select_interface,
    verify_with,
)
from .messages import MessageOperations
from .options import ClientOptions, resolve_options

__all__ = ["A2AClient"]

logger = logging.getLogger(__name__)


class A2AClient(MessageOperations):
    """A blocking client for one A2A agent, speaking A2A 1.0 or 0.3 as the card allows.

    Create it from the agent's URL (the card is fetched and the interface chosen), from
    a card you already have, or from an explicit endpoint and revision::

        client = A2AClient.from_url("http://127.0.0.1:8000")
        task = client.send_message("What is the capital of France?")
        print(task.text)

    **Threads:** one client may be shared by any number of threads. It holds a
    connection pool (:class:`~a2a_sync._net.http.HTTPTransport`), its configuration never
    changes after construction, and each call keeps its state on its own stack.
    :meth:`close` (from any thread) cancels calls in flight.

    **Timeouts:** every call has connect, read (idle) and total limits; pass
    ``timeout=`` per call to override the client's default.

    Args:
        url: The endpoint (JSON-RPC URL, or the HTTP+JSON base URL).
        revision: ``"1.0"`` or ``"0.3"``.
        binding: ``"JSONRPC"`` (default), ``"HTTP+JSON"`` (A2A 1.0 REST) or ``"GRPC"``
            (A2A 1.0 gRPC, the ``grpc`` extra; ``url`` is ``host:port``).
        card: The agent's card, if known (used for credentials and capabilities).
        tenant: The tenant sent with every request (A2A 1.0), if the interface has one.
        options: How the client talks to the agent (:class:`ClientOptions`): credentials
            and the origins they may go to, extensions, headers, timeouts, retries,
            streams, a shared transport, TLS. Default: all defaults.
        **overrides: Any :class:`ClientOptions` attribute by name (``credentials=``,
            ``auth=``, ``timeout=``, ``headers=``, ``retry=``...), applied onto ``options``.
    """

    def __init__(
        self,
        url: str,
        *,
        revision: Revision = "1.0",
        binding: str = JSONRPC,
        card: AgentCard | None = None,
        tenant: str | None = None,
        options: ClientOptions | None = None,
        _card_fetch: CardFetch | None = None,
        _card_verifier: CardVerifier | None = None,
        **overrides: Any,
    ) -> None:
        if revision not in REVISIONS:
            raise ConfigurationError(f"unknown A2A revision {revision!r}; use one of {REVISIONS}")
        binding_cls = binding_class(binding)
        if binding_cls is None:
            raise ConfigurationError(
                f"unknown A2A binding {binding!r}; use 'JSONRPC', 'HTTP+JSON' or 'GRPC'"
            )
        opts = resolve_options(options, overrides)
        self.options = opts
        self.binding = binding.strip().upper()
        credentials, auth = opts.credentials, opts.auth
        if auth is not None:
            if credentials is not None:
                raise ConfigurationError("give the credential once: credentials= or auth=")
            credentials = auth
        self.url = url
        self.revision: Revision = revision
        self.tenant = tenant
        self._endpoint_origin = (
            parse_grpc_url(url).origin if self.binding == GRPC else origin_of(url)
        )
        self._card_fetch = _card_fetch
        #: Every later fetch of this agent's card (refresh, extended card) verifies too.
        self._card_verifier = _card_verifier
        self._card = card if card is not None else (_card_fetch.card if _card_fetch else None)
        self.extended_card: AgentCard | None = None
        self._codec = codec_for(revision)
        origins = (
            frozenset(origin_of(o) for o in opts.trusted_origins)
            if opts.trusted_origins is not None
            else frozenset({origin_of(_card_fetch.url) if _card_fetch else self._endpoint_origin})
        )
        insecure = opts.allow_insecure_credentials
        self._credentials = (
            OriginBoundCredentials(credentials, origins, allow_insecure=insecure)
            if credentials is not None
            else None
        )
        if carries_credentials(opts.headers):  # a credential set by hand, as a header
            check_credentials_destination(
                self._endpoint_origin, what="A2A client headers=", allow_insecure=insecure
            )
        if self._credentials is not None and self._endpoint_origin not in origins:
            raise ConfigurationError(
                f"the agent's endpoint {redact_url(url)!r} is on another origin than its card "
                f"({', '.join(sorted(origins))}); credentials are not sent there. Pass "
                f"trusted_origins=[{self._endpoint_origin!r}] if that host is really yours."
            )
        if self._credentials is not None:
            self._credentials.use_card(self._endpoint_origin, self._card)  # OAuth: scopes, AS
        fixed_headers = static_headers(revision, opts.extensions, opts.headers)
        # Everything that can refuse the arguments ran above: only now open a pool, so a
        # refused client leaves no connection pool behind.
        transport = opts.transport
        self._owns_transport = transport is None
        if transport is None:
            transport = opts.http_transport()
        self._transport = transport
        default_timeout = (
            transport.timeout if opts.timeout is None else Timeout.coerce(opts.timeout)
        )
        self._rpc: Binding
        self._rpc = binding_cls(
            url=url,
            revision=revision,
            http=transport,
            timeout=default_timeout,
            retry=opts.retry if opts.retry is not None and not self._owns_transport else None,
            headers=fixed_headers,
            credentials=self._credentials,
            tenant=tenant,
            stream_idle_timeout=opts.stream_idle_timeout,
            threaded_streams=opts.threaded_streams,
        )

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        revisions: Sequence[Revision] = REVISIONS,
        bindings: Sequence[str] | None = None,
        verify_card: CardVerifier | None = None,
        card_headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> A2AClient:
        """Fetch the agent's card from ``url`` and connect to its preferred interface.

        ``url`` is the agent's base URL (the card is at ``/.well-known/agent-card.json``
        below it, with a fallback to ``agent.json``) or the card's own URL. The card's
        first interface this client speaks is used (A2A 1.0 §8.3.2), or, with
        ``bindings`` given, the first of the caller's preferred bindings the card offers.

        Args:
            url: Base URL or card URL.
            revisions: Revisions to accept.
            bindings: Bindings to accept, most preferred first (``"JSONRPC"``,
                ``"HTTP+JSON"``, ``"GRPC"``), e.g. ``bindings=["GRPC", "JSONRPC"]``; default:
                every binding this client speaks, in the card's order.
            verify_card: Called with the raw card before it is used; it returns the
                card as verified (which is what the client uses) or raises
                :class:`~a2a_sync.errors.SignatureError` to reject it, e.g.
                :func:`a2a_sync.signing.card_verifier`. It verifies every later fetch
                too: :meth:`refresh_card` and :meth:`get_extended_card`.
            card_headers: Extra headers for the card request.
            **kwargs: Passed to :class:`A2AClient` (credentials, timeout, ...).

        Raises:
            HTTPStatusError, TransportError: The card could not be fetched.
            ProtocolError: The card is invalid.
            ConfigurationError: ``url`` is not an http(s) URL string, or no usable
                interface.
        """
        if not isinstance(url, str):
            raise not_http_url(url)
        opts = resolve_options(kwargs.pop("options", None), kwargs)
        if carries_credentials(card_headers):
            check_credentials_destination(
                url, what="agent card fetch", allow_insecure=opts.allow_insecure_credentials
            )
        transport = opts.transport
        owns = transport is None
        if transport is None:
            transport = opts.http_transport()
        try:
            fetched = fetch_card(
                transport,
                url,
                headers=card_headers,
                verifier=verify_card,
                timeout=opts.timeout,
            )
            interface, revision = select_interface(
                fetched.card, card_url=fetched.url, revisions=revisions, bindings=bindings
            )
            client = cls(
                interface.url,
                revision=revision,
                binding=interface.protocol_binding,
                tenant=interface.tenant,
                options=opts.evolve(transport=transport),
                _card_fetch=fetched,
                _card_verifier=verify_card,
            )
        except BaseException:
            if owns:
                transport.close()
            raise
        client._owns_transport = owns
        return client

    @classmethod
    def from_card(
        cls,
        card: AgentCard,
        *,
        card_url: str | None = None,
        bindings: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> A2AClient:
        """Connect to the preferred interface of a card you already have (see
        :meth:`from_url`)."""
        interface, revision = select_interface(card, card_url=card_url, bindings=bindings)
        if card_url is not None and "trusted_origins" not in kwargs:
            kwargs["trusted_origins"] = [card_url]
        return cls(
            interface.url,
            revision=revision,
            binding=interface.protocol_binding,
            card=card,
            tenant=interface.tenant,
            **kwargs,
        )

    def with_options(
        self, *, timeout: TimeoutArg = None, retry: RetryPolicy | None = None
    ) -> A2AClient:
        """A client for the same agent with other per-call defaults.

        The copy shares this client's connection pool and credentials (it is cheap) and
        leaves this client unchanged; closing the copy does not close the pool::

            patient = client.with_options(timeout=600)
        """
        clone = copy.copy(self)
        clone._owns_transport = False
        clone._rpc = self._rpc.with_defaults(timeout=timeout, retry=retry)
        return clone

    # -- card -----------------------------------------------------------------------------------

    @property
    def card(self) -> AgentCard | None:
        """The agent's card, if the client was built from one."""
        return self._card

    def refresh_card(self, *, timeout: TimeoutArg = None) -> AgentCard:
        """Revalidate the card with ``If-None-Match`` and return the current one.

        A client created with ``verify_card`` verifies the new card the same way (a 304
        keeps the card verified before).

        Raises:
            SignatureError: The new card does not verify; the client keeps the old one.
        """
        if self._card_fetch is None:
            raise ConfigurationError("this client was not created from an agent card URL")
        fetched = fetch_card(
            self._transport,
            self._card_fetch.url,
            previous=self._card_fetch,
            verifier=self._card_verifier,
            timeout=timeout,
        )
        self._card_fetch = fetched
        self._card = fetched.card
        return fetched.card

    def get_extended_card(self, *, timeout: TimeoutArg = None) -> AgentCard:
        """Fetch the authenticated extended card (``GetExtendedAgentCard``).

        The extended card is kept on :attr:`extended_card` for this client only. A client
        created with ``verify_card`` verifies it like the public card.

        Raises:
            SignatureError: The extended card does not verify.
        """
        result = self._call(Operation.GET_EXTENDED_CARD, {}, timeout=timeout)
        if self._card_verifier is not None and not isinstance(result, dict):
            raise ProtocolError("the extended agent card is not a JSON object")
        card = verify_with(self._card_verifier, result, what="the extended agent card")
        self.extended_card = card
        return card

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancel calls in flight and release connections (unless the transport was
        passed in). Safe from any thread; idempotent."""
        if self._owns_transport:
            self._transport.close()
            close_binding = getattr(self._rpc, "close", None)  # the gRPC channel
            if close_binding is not None:
                close_binding()

    def __enter__(self) -> A2AClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<A2AClient {redact_url(self.url)} A2A {self.revision} {self.binding}>"
