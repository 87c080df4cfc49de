"""Verifying JWT access tokens (RFC 9068) for a resource server, with joserfc.

:class:`JWTVerifier` checks the signature against the issuer's JWKS (fetched from
``jwks_uri`` with a bounded GET, cached, fetched again when a token names a key id it has
not seen — key rotation — at most once per ``refresh_interval``), an allow-listed
``alg``, ``iss``, ``aud`` (our resource identifier), ``exp``/``nbf`` with a small leeway,
and, when asked, ``typ: at+jwt``. Needs the ``oauth`` extra (joserfc).
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from .._net.http import HTTPTransport
from ..errors import AuthorizationError, ConfigurationError, TransportError
from ..policies import RetryPolicy, Timeout

__all__ = ["JWTVerifier"]

logger = logging.getLogger(__name__)

DEFAULT_ALGORITHMS: Final = ("RS256", "ES256", "PS256", "EdDSA")
MAX_JWKS_BYTES: Final = 256 * 1024


class JWTVerifier:
    """Verifies bearer JWT access tokens for one resource.

    Args:
        issuer: The expected ``iss``.
        audience: This resource's identifier, expected in ``aud``.
        jwks_uri: Where the issuer publishes its keys (or give ``keys``).
        keys: A fixed JWKS document (``{"keys": [...]}``) instead of ``jwks_uri``.
        algorithms: Accepted ``alg`` values (never ``none`` or HMAC by default).
        leeway: Seconds of clock skew tolerated for ``exp``/``nbf``.
        require_at_jwt: Require the RFC 9068 header ``typ: at+jwt``.
        refresh_interval: Least seconds between two JWKS fetches for unknown key ids.
        timeout: Bound of a JWKS fetch.
        clock: Wall clock (tests inject one).

    Thread-safe. Tokens never appear in messages or logs.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_uri: str | None = None,
        keys: Mapping[str, Any] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway: float = 30.0,
        require_at_jwt: bool = False,
        refresh_interval: float = 60.0,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if (jwks_uri is None) == (keys is None):
            raise ConfigurationError("give exactly one of jwks_uri and keys")
        self.issuer = issuer
        self.audience = audience
        self.jwks_uri = jwks_uri
        self.algorithms = tuple(algorithms)
        self.leeway = leeway
        self.require_at_jwt = require_at_jwt
        self.refresh_interval = refresh_interval
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: KeySet | None = KeySet.import_key_set(dict(keys)) if keys else None  # type: ignore[arg-type]
        self._fetched_at = float("-inf")
        self._http: HTTPTransport | None = HTTPTransport(timeout=timeout) if jwks_uri else None

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of a valid token.

        Raises:
            AuthorizationError: (``step="verify"``) The token is malformed, not signed by
                the issuer's keys, for another issuer or audience, expired, or the keys
                could not be fetched. The message never contains the token.
        """
        kid = _kid(token)
        keys = self._key_set(kid)
        try:
            decoded = jwt.decode(token, keys, algorithms=list(self.algorithms))
        except (JoseError, ValueError) as exc:
            raise AuthorizationError(
                f"the token's signature does not verify ({type(exc).__name__})", step="verify"
            ) from None
        if self.require_at_jwt and str(decoded.header.get("typ", "")).lower() not in (
            "at+jwt",
            "application/at+jwt",
        ):
            raise AuthorizationError("the token is not an RFC 9068 access token", step="verify")
        claims = dict(decoded.claims)
        registry = jwt.JWTClaimsRegistry(
            now=lambda: int(self._clock()),
            leeway=int(self.leeway),
            iss={"essential": True, "value": self.issuer},
            aud={"essential": True, "value": self.audience},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except (JoseError, ValueError) as exc:
            raise AuthorizationError(
                f"the token was refused: {getattr(exc, 'description', None) or type(exc).__name__}",
                step="verify",
            ) from None
        return claims

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def __repr__(self) -> str:
        return f"<JWTVerifier iss={self.issuer!r} aud={self.audience!r}>"

    def _key_set(self, kid: str | None) -> KeySet:
        with self._lock:
            keys = self._keys
            known = keys is not None and (kid is None or any(k.kid == kid for k in keys))
            if known or self.jwks_uri is None:
                if keys is None:
                    raise AuthorizationError("no keys to verify tokens with", step="verify")
                return keys
            now = self._clock()
            if keys is not None and now - self._fetched_at < self.refresh_interval:
                return keys  # an unknown kid within the interval: no refetch storm
            self._keys = self._fetch()
            self._fetched_at = now
            return self._keys

    def _fetch(self) -> KeySet:
        assert self._http is not None
        assert self.jwks_uri is not None
        try:
            result = self._http.request(
                "GET",
                self.jwks_uri,
                headers={"Accept": "application/json"},
                idempotent=True,
                timeout=Timeout(connect=self.timeout, read=self.timeout, total=self.timeout),
                retry=RetryPolicy.none(),
                max_response_bytes=MAX_JWKS_BYTES,
            )
            if not result.ok:
                raise AuthorizationError(
                    f"fetching the JWKS {self.jwks_uri} answered HTTP {result.status}",
                    step="verify",
                )
            keys: KeySet = KeySet.import_key_set(json.loads(result.content))
        except TransportError as exc:
            raise AuthorizationError(
                f"fetching the JWKS {self.jwks_uri} failed: {exc}", step="verify"
            ) from exc
        except (ValueError, JoseError, TypeError, KeyError) as exc:
            raise AuthorizationError(
                f"the JWKS at {self.jwks_uri} is not a valid key set", step="verify"
            ) from exc
        logger.info("fetched %d signing keys from %s", len(keys.keys), self.jwks_uri)
        return keys


def _kid(token: str) -> str | None:
    head = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, TypeError):
        return None
    kid = header.get("kid") if isinstance(header, dict) else None
    return kid if isinstance(kid, str) else None
