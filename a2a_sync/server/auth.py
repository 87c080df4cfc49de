"""Who is calling: the authentication hook and the principal it yields.

The server never decides what a credential means; an **authenticator** does. It is any
callable that takes the WSGI environ and returns a :class:`Principal` (the caller is
known), or ``None`` (no credentials, or credentials it does not recognise)::

    def authenticate(environ):
        token = bearer_token(environ)
        user = my_sessions.get(token) if token else None
        return Principal(user.id) if user else None

    app = A2AApplication(card, executor, authenticate=authenticate)

Every task belongs to the principal that created it. Another principal asking for it
(GetTask, CancelTask, SubscribeToTask, ListTasks, push configs, or a message naming it)
is told the task does not exist, so task ids cannot be probed. Callers without
credentials share the anonymous principal; with an authenticator configured they are
refused (HTTP 401) unless the application allows anonymous calls.

Two ready-made authenticators cover the common cases: :class:`BearerTokens` and
:class:`APIKeys` (static secrets compared in constant time, never logged).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from ..errors import ConfigurationError

__all__ = [
    "ANONYMOUS",
    "APIKeys",
    "Authenticator",
    "BearerTokens",
    "Principal",
    "bearer_token",
]


@attrs.frozen
class Principal:
    """An authenticated caller.

    Attributes:
        name: Stable identifier; tasks are scoped by it. ``""`` is the anonymous caller.
        claims: Whatever the authenticator wants executors to see (roles, tenant ...).
            Not shown in reprs.
    """

    name: str
    claims: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def is_anonymous(self) -> bool:
        """True for the caller without credentials."""
        return self.name == ""


#: The principal of callers without (recognised) credentials.
ANONYMOUS: Final = Principal("")

#: ``authenticate(environ) -> Principal | None``; ``None`` means "not authenticated".
Authenticator = Callable[[Mapping[str, Any]], "Principal | None"]


def bearer_token(environ: Mapping[str, Any]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, if present."""
    header = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


class _SecretTable:
    """Secrets looked up by their SHA-256 digest, confirmed with a constant-time compare."""

    __slots__ = ("_by_digest",)

    def __init__(self, secrets: Mapping[str, str | Principal]) -> None:
        if not secrets:
            raise ConfigurationError("at least one secret is needed")
        self._by_digest: dict[bytes, tuple[bytes, Principal]] = {}
        for secret, who in secrets.items():
            if not secret:
                raise ConfigurationError("empty secrets are not allowed")
            principal = who if isinstance(who, Principal) else Principal(who)
            if principal.is_anonymous:
                raise ConfigurationError("a secret must map to a named principal")
            digest = _digest(secret)
            self._by_digest[digest] = (digest, principal)

    def lookup(self, presented: str | None) -> Principal | None:
        if not presented:
            return None
        digest = _digest(presented)
        found = self._by_digest.get(digest)
        if found is None or not hmac.compare_digest(found[0], digest):
            return None
        return found[1]


class BearerTokens:
    """Authenticate ``Authorization: Bearer <token>`` against a fixed table.

    Args:
        tokens: token -> principal name (or :class:`Principal`).

    Thread-safe (immutable after construction). Tokens never appear in reprs.
    """

    __slots__ = ("_table",)

    def __init__(self, tokens: Mapping[str, str | Principal]) -> None:
        self._table = _SecretTable(tokens)

    def __call__(self, environ: Mapping[str, Any]) -> Principal | None:
        return self._table.lookup(bearer_token(environ))

    def __repr__(self) -> str:
        return f"<BearerTokens {len(self._table._by_digest)} tokens>"


class APIKeys:
    """Authenticate an API-key header (``X-API-Key`` by default) against a fixed table.

    Args:
        keys: key -> principal name (or :class:`Principal`).
        header: The header carrying the key.

    Thread-safe (immutable after construction). Keys never appear in reprs.
    """

    __slots__ = ("_environ_key", "_table", "header")

    def __init__(self, keys: Mapping[str, str | Principal], *, header: str = "X-API-Key") -> None:
        self._table = _SecretTable(keys)
        self.header = header
        self._environ_key = "HTTP_" + header.upper().replace("-", "_")

    def __call__(self, environ: Mapping[str, Any]) -> Principal | None:
        value = environ.get(self._environ_key)
        return self._table.lookup(value.strip() if isinstance(value, str) else None)

    def __repr__(self) -> str:
        return f"<APIKeys header={self.header!r} {len(self._table._by_digest)} keys>"
