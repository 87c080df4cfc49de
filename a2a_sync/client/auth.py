"""Credentials for A2A agents: bearer tokens and API keys, bound to one origin.

A credential is attached to requests only when the request goes to the origin it belongs
to (scheme, host and port). An agent card cannot move credentials elsewhere: if the card
advertises an endpoint on another origin, the client refuses to send credentials there
unless that origin was explicitly trusted (A2A Java advisories GHSA-9rhm-2h4x-jwmx and
GHSA-4fpj-g9jf-9rgg were exactly this). Nor does any credential travel over plain HTTP,
except to loopback: a client for an ``http://`` agent elsewhere is refused at construction
unless the caller opts in with ``allow_insecure_credentials=True`` (docs/security.md).
Secrets never appear in ``repr()``, logs or exception messages.
"""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Callable, Mapping
from typing import Final, Protocol, TypeVar, runtime_checkable
from urllib.parse import urlsplit

import attrs

from .._net.secure import check_credentials_destination
from .._redact import redact_url
from ..a2a.types import (
    AgentCard,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    OAuth2SecurityScheme,
    OpenIdConnectSecurityScheme,
)
from ..auth.hook import ChallengeAuth
from ..errors import ConfigurationError, HTTPStatusError

__all__ = ["APIKey", "BearerToken", "Credentials", "origin_of"]

#: RFC 9110 token characters: what a header name may contain.
_TOKEN: Final = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

#: Header names an agent card must never make us set (hop-by-hop, framing, identity of
#: the connection, cookies, or other credentials' places).
_FORBIDDEN_HEADERS: Final = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "proxy-authorization",
        "proxy-connection",
        "cookie",
        "set-cookie",
        "authorization",
        "a2a-version",
        "a2a-extensions",
        "x-forwarded-for",
        "x-forwarded-host",
        "forwarded",
    }
)

_DEFAULT_API_KEY_HEADER: Final = "X-API-Key"

_T = TypeVar("_T")


def origin_of(url: str) -> str:
    """``scheme://host:port`` of a URL, with the default port made explicit."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"not an http(s) URL: {redact_url(url)!r}")
    port = parts.port or (443 if scheme == "https" else 80)
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


@runtime_checkable
class Credentials(Protocol):
    """What a client asks a credential for: headers to add for a card's agent.

    Implement it to plug in your own token source. ``headers`` is called for every
    request, from any thread; ``refresh`` (optional) is called once after a 401.
    """

    def headers(self, card: AgentCard | None) -> Mapping[str, str]:
        """Headers carrying the credential for the agent described by ``card``."""
        ...


@attrs.frozen
class BearerToken:
    """An OAuth/OIDC or HTTP bearer token, sent as ``Authorization: Bearer <token>``.

    Args:
        token: The token, or a callable returning the current token (called per request,
            e.g. to read a token cache that refreshes itself).
    """

    token: str | Callable[[], str] = attrs.field(repr=False)

    def headers(self, card: AgentCard | None) -> Mapping[str, str]:
        token = self.token() if callable(self.token) else self.token
        if not token or "\n" in token or "\r" in token:
            raise ConfigurationError("bearer token is empty or contains a line break")
        return {"Authorization": f"Bearer {token}"}


@attrs.frozen
class APIKey:
    """An API key, sent in the header the agent card's API-key scheme names.

    Args:
        key: The key (or a callable returning it).
        header: Header name to use; by default the name from the card's API-key security
            scheme, else ``X-API-Key``. Names are validated: no hop-by-hop, framing,
            cookie or other credential headers, whatever the card says.
    """

    key: str | Callable[[], str] = attrs.field(repr=False)
    header: str | None = None

    def headers(self, card: AgentCard | None) -> Mapping[str, str]:
        name = self.header or _api_key_header_from_card(card) or _DEFAULT_API_KEY_HEADER
        _check_header_name(name)
        key = self.key() if callable(self.key) else self.key
        if not key or "\n" in key or "\r" in key:
            raise ConfigurationError("API key is empty or contains a line break")
        return {name: key}


@attrs.frozen
class BasicAuth:
    """HTTP Basic credentials (a card's ``HTTPAuthSecurityScheme`` with ``scheme: basic``),
    sent as ``Authorization: Basic base64(user:password)``. Like every credential, only to
    the agent's own origin, and never over plain HTTP except to loopback.

    Args:
        username: The user name (no ``:``).
        password: The password (or a callable returning it).
    """

    username: str
    password: str | Callable[[], str] = attrs.field(repr=False)

    def headers(self, card: AgentCard | None) -> Mapping[str, str]:
        password = self.password() if callable(self.password) else self.password
        if ":" in self.username or any(c in self.username + password for c in "\r\n"):
            raise ConfigurationError("basic credentials: the user name holds ':' or a line break")
        token = base64.b64encode(f"{self.username}:{password}".encode()).decode("ascii")
        return {"Authorization": f"Basic {token}"}


def _api_key_header_from_card(card: AgentCard | None) -> str | None:
    if card is None:
        return None
    for scheme in (card.security_schemes or {}).values():
        if isinstance(scheme, APIKeySecurityScheme):
            if (scheme.location or "header").lower() != "header":
                raise ConfigurationError(
                    f"the agent wants its API key in the {scheme.location}; a2a_sync only "
                    "sends API keys in headers (query strings end up in logs)"
                )
            return scheme.name
    return None


def _check_header_name(name: str) -> None:
    if not _TOKEN.match(name) or name.lower() in _FORBIDDEN_HEADERS:
        raise ConfigurationError(f"refusing to send a credential in header {name!r}")


def card_wants_bearer(card: AgentCard | None) -> bool:
    """True when the card declares an HTTP bearer (or OAuth/OIDC) scheme."""
    if card is None:
        return False
    return any(
        isinstance(scheme, HTTPAuthSecurityScheme) and scheme.scheme.lower() == "bearer"
        for scheme in (card.security_schemes or {}).values()
    )


def oauth_hints(card: AgentCard | None) -> tuple[list[str], str | None] | None:
    """The scopes and metadata URL of the first OAuth 2 / OpenID Connect scheme the card's
    security requirements name (OpenAPI: any one requirement object satisfies), or
    ``None`` when the card asks for no such scheme."""
    if card is None:
        return None
    schemes = card.security_schemes or {}
    for requirement in card.security_requirements or []:
        for name, scopes in requirement.items():
            scheme = schemes.get(name)
            if isinstance(scheme, OAuth2SecurityScheme):
                return list(scopes), scheme.oauth2_metadata_url
            if isinstance(scheme, OpenIdConnectSecurityScheme):
                return list(scopes), scheme.open_id_connect_url
    return None


class OriginBoundCredentials:
    """Applies a credential only to requests for the origins it is bound to.

    Thread-safe: the bound origins never change after construction; ``refresh`` is
    serialized.

    Raises:
        ConfigurationError: An origin is plain HTTP to a host that is not loopback and
            ``allow_insecure`` is false (an OAuth credential checks its own destinations:
            tokens go over HTTPS, or plain HTTP to loopback, whatever ``allow_insecure``).
    """

    def __init__(
        self,
        credentials: Credentials | ChallengeAuth,
        origins: frozenset[str],
        *,
        allow_insecure: bool = False,
    ) -> None:
        if not isinstance(credentials, ChallengeAuth):
            for origin in sorted(origins):
                check_credentials_destination(
                    origin, what="A2A client", allow_insecure=allow_insecure
                )
        self._credentials = credentials
        self.origins = origins
        self._refresh_lock = threading.Lock()

    def headers_for(self, url: str, card: AgentCard | None) -> Mapping[str, str]:
        if origin_of(url) not in self.origins:
            return {}
        if isinstance(self._credentials, ChallengeAuth):  # OAuth: asked per request
            value = self._credentials.authorization(url)
            return {"Authorization": value} if value is not None else {}
        return self._credentials.headers(card)

    def challenged(
        self, url: str, status: int, challenge: str | None, sent: str | None, attempt: int
    ) -> bool:
        """After a 401/403 from ``url``: True when an OAuth credential has a new token
        to send the request with (it raises AuthorizationError when it gives up)."""
        if origin_of(url) not in self.origins or not isinstance(self._credentials, ChallengeAuth):
            return False
        return self._credentials.challenged(url, status, challenge, sent, attempt)

    def use_card(self, url: str, card: AgentCard | None) -> None:
        """Tell an OAuth credential what ``card`` says about ``url``'s protection."""
        hint = getattr(self._credentials, "hint", None)
        found = oauth_hints(card)
        if hint is not None and found is not None and origin_of(url) in self.origins:
            hint(url, scopes=found[0], metadata_url=found[1])

    def refresh(self) -> bool:
        """Ask the credential to refresh itself; False when it cannot."""
        refresh = getattr(self._credentials, "refresh", None)
        if refresh is None:
            return False
        with self._refresh_lock:
            refresh()
        return True

    def __repr__(self) -> str:
        kind = type(self._credentials).__name__
        return f"<OriginBoundCredentials {kind} for {sorted(self.origins)}>"


class AuthRetry:
    """Whether a refused request is sent again, for one request of a binding: an OAuth
    credential answers 401/403 challenges (log in, refresh, step up; it bounds the attempts
    and raises when it gives up), other credentials are refreshed once after a 401.

    A stream's opening goes through :meth:`open`: the same decision, taken at most once.

    Not thread-safe: one per request.
    """

    __slots__ = ("_credentials", "_refreshed", "_refusals", "_url")

    def __init__(self, credentials: OriginBoundCredentials | None, url: str) -> None:
        self._credentials = credentials
        self._url = url
        self._refusals = 0
        self._refreshed = False

    def again(self, status: int, answer: Mapping[str, str], sent: Mapping[str, str]) -> bool:
        """True when the request should be sent again (with the credential's new headers)."""
        credentials = self._credentials
        if credentials is None or status not in (401, 403):
            return False
        self._refusals += 1
        challenge = answer.get("WWW-Authenticate")
        if credentials.challenged(
            self._url, status, challenge, sent.get("Authorization"), self._refusals
        ):
            return True
        if status == 401 and not self._refreshed and credentials.refresh():
            self._refreshed = True
            return True
        return False

    def open(
        self, send: Callable[[Mapping[str, str]], _T], headers: Callable[[], Mapping[str, str]]
    ) -> _T:
        """``send(headers())`` for a stream's opening, sent again once when a 401/403
        (:class:`~a2a_sync.errors.HTTPStatusError`) is answered by :meth:`again`.

        Once only: the refused opening's ``WWW-Authenticate`` does not reach here (OAuth
        discovery falls back to the well-known URLs), so a second refusal has nothing new
        to act on.
        """
        sent = headers()
        try:
            return send(sent)
        except HTTPStatusError as exc:
            if not self.again(exc.status_code, {}, sent):
                raise
        return send(headers())
