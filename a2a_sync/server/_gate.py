"""Who is calling and whether they may: authentication, origins, scope refusals.

One :class:`CallerGate` per application, asked by every binding before dispatching.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ..a2a.methods import Operation
from .auth import ANONYMOUS, Authenticator, Principal

__all__ = ["CallerGate"]

logger = logging.getLogger("a2a_sync.server.app")  # where these messages always logged


class CallerGate:
    """Identifies callers and checks their requests. Thread-safe (immutable).

    Args:
        authenticate: ``authenticate(environ) -> Principal | None`` (``None``: everyone
            is anonymous).
        allow_anonymous: Accept callers the authenticator did not identify (``None``:
            only when there is no authenticator).
        allowed_origins: Origins accepted in ``Origin`` besides the request's own.
    """

    def __init__(
        self,
        authenticate: Authenticator | None,
        *,
        allow_anonymous: bool | None,
        allowed_origins: Iterable[str],
    ) -> None:
        self._authenticate = authenticate
        self._allow_anonymous = authenticate is None if allow_anonymous is None else allow_anonymous
        self._allowed_origins = frozenset(o.lower().rstrip("/") for o in allowed_origins)

    def principal(self, environ: Mapping[str, Any]) -> Principal | None:
        """The caller, or ``None`` when it must authenticate (answer 401)."""
        if self._authenticate is None:
            return ANONYMOUS
        try:
            principal = self._authenticate(environ)
        except Exception:  # a failing hook must not become a 500 with a traceback
            logger.exception("the authentication hook raised")
            principal = None
        if principal is None:
            # Anonymous callers may be allowed; a caller presenting credentials the
            # authenticator refused is not anonymous (A2A 1.0 §3.3.2: invalid credentials
            # are rejected).
            presented = bool(environ.get("HTTP_AUTHORIZATION", "").strip())
            return ANONYMOUS if self._allow_anonymous and not presented else None
        return principal

    def challenge(self, environ: Mapping[str, Any]) -> str:
        """``WWW-Authenticate`` of a 401, for every binding: the authenticator's own
        challenge when it has one (e.g. JWTBearerAuth: ``resource_metadata``, ``scope``)."""
        challenge = getattr(self._authenticate, "challenge", None)
        return str(challenge(environ)) if challenge is not None else "Bearer"

    def refusal(self, principal: Principal, operation: Operation, method: str) -> str | None:
        """``WWW-Authenticate`` of a 403 when the authenticator refuses ``principal`` the
        operation (e.g. JWTBearerAuth's scopes per operation), else ``None``. Every binding
        asks this before dispatching."""
        refusal = getattr(self._authenticate, "refusal", None)
        return None if refusal is None else refusal(principal, operation.value, method)

    def origin_allowed(self, environ: Mapping[str, Any]) -> bool:
        """Whether a browser's ``Origin`` may call (no ``Origin``: not a browser, yes)."""
        origin = environ.get("HTTP_ORIGIN")
        if origin is None:
            return True  # not a browser: DNS rebinding and CSRF need one
        origin = origin.lower().rstrip("/")
        if origin in self._allowed_origins:
            return True
        parts = urlsplit(origin)
        return bool(parts.netloc) and parts.netloc == environ.get("HTTP_HOST", "").lower()
