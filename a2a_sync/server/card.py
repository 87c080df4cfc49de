"""The agent card document: serialized once, with an ETag, optionally signed.

A card whose ``supported_interfaces`` is empty is completed per request: the server
advertises its own JSON-RPC endpoint for A2A 1.0 and 0.3 at the URL the request came to
(scheme, ``Host`` and mount path). That is how an app can be served on a port chosen at
start (``serve_in_thread``) or mounted under a prefix without knowing its URL in
advance. Such documents are cached per base URL; fixed cards are built once. With a
``public_url`` the interfaces use it; with ``allowed_hosts`` a ``Host`` outside the list
never reaches the card (the server's own name and port are used): a client cannot make
the card advertise a host of its choosing.

Every document carries an ``ETag`` and a ``Last-Modified`` (when it was built);
``If-None-Match`` and, without it, ``If-Modified-Since`` answer 304 (RFC 9110 §13.2.2).
An application may choose the card per request (``chooser``) and add response headers.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from email.utils import formatdate, parsedate_to_datetime
from typing import Any, Final

import attrs

from .._net.jsonrpc import encode
from ..a2a.card_codec import dump_card
from ..a2a.types import AgentCard, AgentInterface
from ._wire import host_allowed

__all__ = ["CARD_PATH", "CardChooser", "CardDocument", "CardHeaders", "CardPublisher"]

#: Where clients look for the card (A2A 0.3 and 1.0).
CARD_PATH: Final = "/.well-known/agent-card.json"
#: Card documents kept for request-derived base URLs (one per Host the app is reached at).
_MAX_DERIVED: Final = 64

CardSigner = Callable[[AgentCard], AgentCard]
#: The card to serve for a request (its WSGI environ).
CardChooser = Callable[[Mapping[str, Any]], AgentCard]
#: Extra card response headers: fixed, or a function of the request's WSGI environ.
CardHeaders = Sequence[tuple[str, str]] | Callable[[Mapping[str, Any]], Iterable[tuple[str, str]]]


@attrs.frozen
class CardDocument:
    """A served card: its JSON bytes, entity tag and modification time (whole seconds)."""

    body: bytes
    etag: str
    modified: int = attrs.field(factory=lambda: int(time.time()))

    @classmethod
    def of(cls, card: AgentCard) -> CardDocument:
        body = encode(dump_card(card))
        return cls(body, f'W/"{hashlib.sha256(body).hexdigest()[:32]}"')

    @property
    def last_modified(self) -> str:
        """``Last-Modified`` (an HTTP date)."""
        return formatdate(self.modified, usegmt=True)

    def not_modified(self, environ: Mapping[str, Any]) -> bool:
        """Whether the request's validators name this version: ``If-None-Match`` when
        sent, else ``If-Modified-Since`` (RFC 9110 §13.2.2)."""
        if_none_match = environ.get("HTTP_IF_NONE_MATCH")
        if if_none_match:
            return self.matches(if_none_match)
        since = environ.get("HTTP_IF_MODIFIED_SINCE")
        if not since:
            return False
        try:
            moment = parsedate_to_datetime(since)
        except (TypeError, ValueError):
            return False  # an invalid date is ignored (RFC 9110 §13.1.3)
        return moment.tzinfo is not None and self.modified <= moment.timestamp()

    def matches(self, if_none_match: str | None) -> bool:
        """True when the client's ``If-None-Match`` names this version (or ``*``)."""
        if not if_none_match:
            return False
        tags = [t.strip() for t in if_none_match.split(",")]
        weak = self.etag[2:]
        return "*" in tags or any(
            t in (self.etag, weak) or t.removeprefix("W/") == weak for t in tags
        )


class CardPublisher:
    """Builds and caches the card documents of one application. Thread-safe.

    Args:
        card: The card.
        rpc_path: The JSON-RPC endpoint, relative to the application's mount point.
        signer: Signs the completed card (e.g. ``functools.partial(sign_card, key=...,
            alg="ES256", kid="k1")``).
        public_url: The base URL of the interfaces (default: from each request).
        allowed_hosts: Host names a request's ``Host`` may put into the card (``None``:
            any; see :func:`card_base`).
        headers: Extra response headers.
        chooser: Chooses the card per request (default: always ``card``).
    """

    def __init__(
        self,
        card: AgentCard,
        *,
        rpc_path: str,
        signer: CardSigner | None,
        public_url: str | None = None,
        allowed_hosts: frozenset[str] | None = None,
        headers: CardHeaders = (),
        chooser: CardChooser | None = None,
        rest_path: str | None = None,
    ) -> None:
        self.card = card
        self._rpc_path = rpc_path
        self._rest_path = rest_path
        self._signer = signer
        self._public_url = public_url.rstrip("/") if public_url else None
        self._allowed_hosts = allowed_hosts
        self._headers = headers
        self._chooser = chooser
        self._lock = threading.Lock()
        # (id of the card, base URL) -> (the card, kept so its id stays unique; document)
        self._derived: dict[tuple[int, str], tuple[AgentCard, CardDocument]] = {}
        #: Interfaces of bindings served elsewhere (gRPC on its own port), once started.
        self._advertised: tuple[AgentInterface, ...] = ()
        self._fixed = self._build(card) if card.supported_interfaces and chooser is None else None

    def document(self, environ: Mapping[str, Any]) -> CardDocument:
        """The document to serve for this request."""
        if self._fixed is not None:
            return self._fixed
        card = self._chooser(environ) if self._chooser is not None else self.card
        base = "" if card.supported_interfaces else self.base(environ)
        key = (id(card), base)
        found = self._derived.get(key)
        if found is None or found[0] is not card:
            found = (card, self._build(self.complete(card, environ)))
            with self._lock:
                if len(self._derived) >= _MAX_DERIVED:
                    self._derived.pop(next(iter(self._derived)))
                self._derived[key] = found
        return found[1]

    def extra_headers(self, environ: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The application's extra response headers for this request."""
        headers = self._headers
        return list(headers(environ) if callable(headers) else headers)

    def base(self, environ: Mapping[str, Any]) -> str:
        """The base URL the card's interfaces use for this request."""
        if self._public_url is not None:
            return self._public_url
        return card_base(environ, self._allowed_hosts)

    def complete(self, card: AgentCard, environ: Mapping[str, Any]) -> AgentCard:
        """``card`` with this app's JSON-RPC interfaces (1.0 and 0.3) at the URL the
        request came to, and its HTTP+JSON interface when it serves one, unless it lists
        interfaces of its own."""
        if card.supported_interfaces:
            return card
        base = self.base(environ)
        url = base + self._rpc_path
        interfaces = [
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ]
        if self._rest_path is not None:
            rest_url = base + (self._rest_path.rstrip("/") or "")
            interfaces += [
                AgentInterface(url=rest_url, protocol_binding="HTTP+JSON", protocol_version=v)
                for v in ("1.0", "0.3")
            ]
        interfaces += self._advertised
        return attrs.evolve(card, supported_interfaces=interfaces)

    def extended(self, card: AgentCard, environ: Mapping[str, Any]) -> AgentCard:
        """The extended card as served to an authenticated caller: completed like the
        public card (:meth:`complete`) and signed by the same signer, so a client that
        verifies the public card verifies this one too."""
        completed = self.complete(card, environ)
        return self._signer(completed) if self._signer is not None else completed

    def advertise(self, interface: AgentInterface) -> None:
        """List ``interface`` too in derived cards (a binding on another port, such as
        gRPC's, known once it is bound)."""
        with self._lock:
            self._advertised = (*self._advertised, interface)
            self._derived.clear()

    def _build(self, card: AgentCard) -> CardDocument:
        return CardDocument.of(self._signer(card) if self._signer is not None else card)


def card_base(environ: Mapping[str, Any], allowed_hosts: frozenset[str] | None) -> str:
    """:func:`request_base`, except that a ``Host`` outside ``allowed_hosts`` (when set)
    is replaced by the server's own name and port: the card never advertises a host the
    application was not configured for."""
    host = environ.get("HTTP_HOST")
    if allowed_hosts is not None and host and not host_allowed(host, allowed_hosts):
        return request_base({k: v for k, v in environ.items() if k != "HTTP_HOST"})
    return request_base(environ)


def request_base(environ: Mapping[str, Any]) -> str:
    """``scheme://host[:port]/mount`` of a request (``wsgiref.util.application_uri``
    without the trailing slash)."""
    scheme = environ.get("wsgi.url_scheme", "http")
    host = environ.get("HTTP_HOST")
    if not host:
        host = environ.get("SERVER_NAME", "localhost")
        port = environ.get("SERVER_PORT", "")
        if port and port != ("443" if scheme == "https" else "80"):
            host = f"{host}:{port}"
    return f"{scheme}://{host}{environ.get('SCRIPT_NAME', '').rstrip('/')}"
