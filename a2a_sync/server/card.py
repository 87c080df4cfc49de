"""The agent card document: serialized once, with an ETag, optionally signed.

A card whose ``supported_interfaces`` is empty is completed per request: the server
advertises its own JSON-RPC endpoint for A2A 1.0 and 0.3 at the URL the request came to
(scheme, ``Host`` and mount path). That is how an app can be served on a port chosen at
start (``serve_in_thread``) or mounted under a prefix without knowing its URL in
advance. Such documents are cached per base URL; fixed cards are built once.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from .._net.jsonrpc import encode
from ..a2a.card_codec import dump_card
from ..a2a.types import AgentCard, AgentInterface

__all__ = ["CARD_PATH", "CardDocument", "CardPublisher"]

#: Where clients look for the card (A2A 0.3 and 1.0).
CARD_PATH: Final = "/.well-known/agent-card.json"
#: Card documents kept for request-derived base URLs (one per Host the app is reached at).
_MAX_DERIVED: Final = 64

CardSigner = Callable[[AgentCard], AgentCard]


@attrs.frozen
class CardDocument:
    """A served card: its JSON bytes and entity tag."""

    body: bytes
    etag: str

    @classmethod
    def of(cls, card: AgentCard) -> CardDocument:
        body = encode(dump_card(card))
        return cls(body, f'W/"{hashlib.sha256(body).hexdigest()[:32]}"')

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
    """

    def __init__(
        self,
        card: AgentCard,
        *,
        rpc_path: str,
        signer: CardSigner | None,
        rest_path: str | None = None,
    ) -> None:
        self.card = card
        self._rpc_path = rpc_path
        self._rest_path = rest_path
        self._signer = signer
        self._lock = threading.Lock()
        self._derived: dict[str, CardDocument] = {}
        self._fixed = self._build(card) if card.supported_interfaces else None

    def document(self, environ: Mapping[str, Any]) -> CardDocument:
        """The document to serve for this request."""
        if self._fixed is not None:
            return self._fixed
        base = request_base(environ)
        found = self._derived.get(base)
        if found is None:
            found = self._build(self.complete(self.card, environ))
            with self._lock:
                if len(self._derived) >= _MAX_DERIVED:
                    self._derived.pop(next(iter(self._derived)))
                self._derived[base] = found
        return found

    def complete(self, card: AgentCard, environ: Mapping[str, Any]) -> AgentCard:
        """``card`` with this app's JSON-RPC interfaces (1.0 and 0.3) at the URL the
        request came to, and its HTTP+JSON interface when it serves one, unless it lists
        interfaces of its own."""
        if card.supported_interfaces:
            return card
        base = request_base(environ)
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
        return attrs.evolve(card, supported_interfaces=interfaces)

    def _build(self, card: AgentCard) -> CardDocument:
        return CardDocument.of(self._signer(card) if self._signer is not None else card)


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
