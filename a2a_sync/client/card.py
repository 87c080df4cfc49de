"""Agent-card discovery: fetch, revalidate with ETag, pick the interface to talk to."""

from __future__ import annotations

import importlib.util
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import attrs

from .._net.http import HTTPTransport
from .._net.jsonrpc import decode_json
from .._redact import redact_url
from ..a2a.card_codec import load_card
from ..a2a.methods import REVISIONS, Revision
from ..a2a.types import AgentCard, AgentInterface
from ..errors import ConfigurationError, HTTPStatusError, ProtocolError, excerpt
from ..policies import Timeout, parse_retry_after
from .bindings.grpc_target import parse_grpc_url

__all__ = [
    "AGENT_CARD_PATH",
    "LEGACY_AGENT_CARD_PATH",
    "CardFetch",
    "card_url_for",
    "fetch_card",
    "select_interface",
]

logger = logging.getLogger(__name__)

#: Where A2A 0.3 and 1.0 agents publish their card (A2A 1.0 §8.2; IANA registration).
AGENT_CARD_PATH: Final = "/.well-known/agent-card.json"
#: Where 0.2-era agents publish it; tried when the current path answers 404.
LEGACY_AGENT_CARD_PATH: Final = "/.well-known/agent.json"
_JSONRPC: Final = "JSONRPC"
#: Declared revisions spoken to as another: A2A 0.2.x (0.2.5, 0.2.6) has the JSON-RPC
#: methods and objects of 0.3 (``message/send``, ``tasks/resubscribe``, ...).
COMPATIBLE_REVISIONS: Final[Mapping[str, Revision]] = {"0.2": "0.3"}
#: The revisions each binding is spoken in.
_BINDING_REVISIONS: Final[dict[str, tuple[str, ...]]] = {
    _JSONRPC: ("1.0", "0.3"),
    "HTTP+JSON": ("1.0", "0.3"),
    "GRPC": ("1.0", "0.3"),
}

#: Verifies a raw card (the JSON object as received) and returns the card *as verified*
#: (e.g. :func:`a2a_sync.signing.card_verifier`); raises SignatureError on failure. The
#: client uses the returned card, never its own parse of the JSON (issue 20).
CardVerifier = Callable[[Mapping[str, Any]], AgentCard]


@attrs.frozen
class CardFetch:
    """A fetched card with what is needed to revalidate it."""

    card: AgentCard
    url: str
    raw: Mapping[str, Any] = attrs.field(repr=False)
    etag: str | None = None


def not_http_url(url: object) -> ConfigurationError:
    """The error for an agent URL that is not http(s), with the likely fix."""
    if not isinstance(url, str):
        return ConfigurationError(
            f"the agent URL must be a str such as 'http://localhost:8000', got a "
            f"{type(url).__name__}"
            + ("; pass its .url" if isinstance(getattr(url, "url", None), str) else "")
        )
    shown = redact_url(url)
    if "://" not in url and url.strip():
        return ConfigurationError(
            f"cannot reach the agent at {shown!r}: not an http(s) URL; did you mean "
            f"'http://{shown}' (or https://)?"
        )
    return ConfigurationError(
        f"cannot reach the agent at {shown!r}: not an http(s) URL; give "
        "http://host[:port][/path] or https://..."
    )


def card_url_for(url: str) -> str:
    """The card URL for what a user typed: a ``.json`` URL is taken as the card itself,
    anything else as the agent's base URL (a path prefix is kept: mounted agents
    publish their card under their prefix)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise not_http_url(url)
    if parts.path.endswith(".json"):
        return urlunsplit(parts._replace(fragment=""))
    # Built from the parts: a query (a gateway key) stays a query, after the new path.
    path = parts.path.rstrip("/") + AGENT_CARD_PATH
    return urlunsplit(parts._replace(path=path, fragment=""))


def _legacy_card_url(card_url: str) -> str | None:
    """The 0.2-era card URL next to a well-known ``card_url``, or ``None``."""
    parts = urlsplit(card_url)
    if not parts.path.endswith(AGENT_CARD_PATH):
        return None
    path = parts.path[: -len(AGENT_CARD_PATH)] + LEGACY_AGENT_CARD_PATH
    return urlunsplit(parts._replace(path=path))


def fetch_card(
    transport: HTTPTransport,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    previous: CardFetch | None = None,
    verifier: CardVerifier | None = None,
    timeout: Timeout | float | tuple[float | None, float | None] | None = None,
) -> CardFetch:
    """GET an agent card (falling back to the legacy path on 404), revalidating
    ``previous`` with ``If-None-Match`` when given.

    Raises:
        HTTPStatusError: The card could not be fetched.
        ProtocolError: The body is not a valid card.
        SignatureError: ``verifier`` rejected the card.
    """
    card_url = previous.url if previous is not None else card_url_for(url)
    request_headers = {"Accept": "application/json", **(headers or {})}
    if previous is not None and previous.etag:
        request_headers["If-None-Match"] = previous.etag
    result = transport.request(
        "GET", card_url, headers=request_headers, idempotent=True, timeout=timeout
    )
    if result.status == 304 and previous is not None:
        return previous
    legacy = _legacy_card_url(card_url) if result.status == 404 and previous is None else None
    if legacy is not None:
        logger.debug("no card at %s, trying %s", redact_url(card_url), redact_url(legacy))
        fallback = transport.request(
            "GET", legacy, headers=request_headers, idempotent=True, timeout=timeout
        )
        if fallback.status == 200:
            result, card_url = fallback, legacy
    if result.status != 200:
        raise HTTPStatusError(
            f"GET {redact_url(card_url)} answered HTTP {result.status}: {excerpt(result.content)}",
            status_code=result.status,
            body=result.content,
            url=card_url,
            retry_after=parse_retry_after(result.headers.get("Retry-After")),
            content_type=result.content_type,
        )
    raw = decode_json(result.content, what="agent card", content_type=result.content_type)
    if not isinstance(raw, dict):
        raise ProtocolError("agent card is not a JSON object", excerpt=excerpt(result.content))
    card = verify_with(verifier, raw, what=f"the card at {redact_url(card_url)}")
    return CardFetch(card=card, url=card_url, raw=raw, etag=result.headers.get("ETag"))


def verify_with(verifier: CardVerifier | None, raw: Mapping[str, Any], *, what: str) -> AgentCard:
    """The card to use: the verifier's (what it verified), or the parsed JSON without one.

    Raises:
        SignatureError: The verifier rejected the card.
        ConfigurationError: The verifier returned something other than an AgentCard.
    """
    if verifier is None:
        return load_card(raw)
    card = verifier(raw)
    if not isinstance(card, AgentCard):
        raise ConfigurationError(
            f"verify_card returned {type(card).__name__} for {what}; it must return the "
            "AgentCard it verified (use a2a_sync.signing.card_verifier or return "
            "verify_card(...)'s result), so that the client uses exactly what was verified"
        )
    return card


def select_interface(
    card: AgentCard,
    *,
    card_url: str | None = None,
    revisions: Sequence[Revision] = REVISIONS,
    bindings: Sequence[str] | None = None,
) -> tuple[AgentInterface, Revision]:
    """Pick the endpoint to talk to: the card's first interface this client speaks (A2A
    1.0 §8.3.2: clients select the first supported entry; earlier entries win, also
    between protocol revisions).

    ``revisions`` and ``bindings`` narrow what counts as supported. ``bindings`` given
    explicitly (e.g. ``["HTTP+JSON", "JSONRPC"]``) is also the caller's preference: its
    first binding the card offers wins, in the card's order within it.

    The chosen interface's URL must be absolute ``http(s)`` (A2A 1.0: "a valid absolute
    HTTPS URL in production"); a relative or empty one is refused, never resolved
    against the card's address. ``card_url`` is accepted for compatibility and unused.

    Raises:
        ConfigurationError: The card offers no interface of ``bindings`` in a known
            revision.
        ProtocolError: The chosen interface's URL is not an absolute http(s) URL.
    """
    del card_url
    wanted = [b.upper() for b in (bindings if bindings is not None else _spoken_bindings())]
    candidates = [
        (wanted.index(binding) if bindings is not None else 0, position, interface)
        for position, interface in enumerate(_as_spoken(card))
        if (binding := interface.protocol_binding.upper()) in wanted
        and interface.protocol_revision in revisions
        and interface.protocol_revision in _BINDING_REVISIONS.get(binding, ())
    ]
    if candidates:
        interface = min(candidates, key=lambda c: (c[0], c[1]))[2]
        revision = interface.protocol_revision
        if interface.protocol_binding.upper() == "GRPC":
            try:
                parse_grpc_url(interface.url)
            except ConfigurationError as exc:
                raise ProtocolError(
                    f"agent {card.name!r} lists a {revision} GRPC interface whose URL "
                    f"{redact_url(interface.url)!r} is not host:port",
                    details=["GRPC interface URL must be host:port @ $.supportedInterfaces"],
                ) from exc
            return interface, revision  # type: ignore[return-value]
        parts = urlsplit(interface.url)
        if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
            raise ProtocolError(
                f"agent {card.name!r} lists a {revision} {interface.protocol_binding} "
                f"interface whose URL {redact_url(interface.url)!r} is not an absolute "
                "http(s) URL",
                details=["interface URL must be absolute http(s) @ $.supportedInterfaces"],
            )
        return interface, revision  # type: ignore[return-value]
    offered = ", ".join(
        f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces
    )
    jsonrpc = [i for i in card.supported_interfaces if i.protocol_binding.upper() == _JSONRPC]
    hint = (
        f"; if it really speaks A2A 0.3 JSON-RPC, connect with "
        f'A2AClient({redact_url(jsonrpc[0].url)!r}, revision="0.3")'
        if jsonrpc
        else ""
    )
    raise ConfigurationError(
        f"agent {card.name!r} offers no {' or '.join(wanted)} interface in A2A "
        f"{' or '.join(revisions)} (it offers: {offered or 'nothing'}){hint}"
    )


def _spoken_bindings() -> list[str]:
    """The bindings this installation speaks: gRPC only with the ``grpc`` extra."""
    return [
        binding
        for binding in _BINDING_REVISIONS
        if binding != "GRPC" or importlib.util.find_spec("grpc") is not None
    ]


def _as_spoken(card: AgentCard) -> list[AgentInterface]:
    """The card's interfaces with each declared revision replaced by the one spoken to it
    (:data:`COMPATIBLE_REVISIONS`: 0.2.x is spoken to as 0.3; logged at DEBUG)."""
    spoken = []
    for interface in card.supported_interfaces:
        revision = COMPATIBLE_REVISIONS.get(interface.protocol_revision)
        if revision is not None:
            logger.debug(
                "tolerated: agent %r declares A2A %s; spoken to as A2A %s (same methods)",
                card.name,
                interface.protocol_version,
                revision,
            )
            spoken.append(attrs.evolve(interface, protocol_version=revision))
        else:
            spoken.append(interface)
    return spoken


class CardCache:
    """The last fetched card of one client; revalidated on demand. Thread-safe."""

    def __init__(self, fetched: CardFetch | None) -> None:
        self._fetched = fetched
        self._lock = threading.Lock()

    @property
    def current(self) -> CardFetch | None:
        return self._fetched

    def replace(self, fetched: CardFetch) -> None:
        with self._lock:
            self._fetched = fetched
