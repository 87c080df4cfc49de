"""Bearer JWT authentication for :class:`~a2a_sync.server.app.A2AApplication` (OAuth 2.1
resource server), with the ``oauth`` extra.

::

    auth = JWTBearerAuth(
        JWTVerifier(issuer=ISSUER, audience="https://agent.example/a2a", jwks_uri=JWKS),
        resource="https://agent.example/a2a",
        required_scopes=["a2a"],
        operation_scopes={"send_message": ["a2a:write"]},
    )
    app = A2AApplication(card, executor, authenticate=auth)

* Every request's token is verified (:class:`~a2a_sync.auth.verify.JWTVerifier`: JWKS
  cached with rotation, ``iss``, ``aud``, ``exp``); a missing or invalid token gets
  ``401`` with ``WWW-Authenticate: Bearer [error="invalid_token", ]resource_metadata=...,
  scope=...`` (RFC 6750 §3, RFC 9728 §5.1).
* Scopes per operation (keys: :class:`~a2a_sync.a2a.methods.Operation` values such as
  ``"send_message"``, or wire method names): missing ones get ``403`` with
  ``error="insufficient_scope"`` and the scopes needed.
* Protected-resource metadata (RFC 9728) is served at
  ``/.well-known/oauth-protected-resource<resource path>``.
* The principal is ``sub`` (prefixed by the ``tenant`` claim when present), so each
  caller sees only its own tasks.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import attrs

from ..a2a.card_types import AgentCard, OAuth2SecurityScheme, OAuthFlow, OAuthFlows
from ..auth.verify import JWTVerifier
from ..errors import AuthorizationError, ConfigurationError
from .auth import Principal, bearer_token

__all__ = ["JWTBearerAuth"]

logger = logging.getLogger(__name__)

PRM_WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"
#: Where the verdict on a presented token is left for the challenge.
_INVALID: Final = "a2a_sync.invalid_token"


class JWTBearerAuth:
    """An authenticator verifying OAuth bearer JWTs (see the module docstring).

    Args:
        verifier: Checks signature, issuer, audience and expiry.
        resource: This agent's resource identifier (its JSON-RPC URL, as clients send it
            in ``resource``); the metadata is served below its path.
        authorization_servers: Issuers listed in the metadata (default: the verifier's).
        required_scopes: Scopes every call needs.
        operation_scopes: Extra scopes per operation.
        scopes_supported: Listed in the metadata (default: all scopes named here).
        tenant_claim: Claim that prefixes the principal name, when present.

    Thread-safe; immutable after construction.
    """

    def __init__(
        self,
        verifier: JWTVerifier,
        *,
        resource: str,
        authorization_servers: Sequence[str] | None = None,
        required_scopes: Sequence[str] = (),
        operation_scopes: Mapping[str, Sequence[str]] | None = None,
        scopes_supported: Sequence[str] | None = None,
        tenant_claim: str | None = "tenant",
    ) -> None:
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"resource must be an absolute http(s) URL, not {resource!r}")
        self.verifier = verifier
        self.resource = resource
        self.authorization_servers = tuple(authorization_servers or (verifier.issuer,))
        self.required_scopes = tuple(required_scopes)
        self.operation_scopes = {k: tuple(v) for k, v in (operation_scopes or {}).items()}
        named = [*self.required_scopes, *(s for v in self.operation_scopes.values() for s in v)]
        self.scopes_supported = tuple(
            scopes_supported if scopes_supported is not None else dict.fromkeys(named)
        )
        self.tenant_claim = tenant_claim
        path = parts.path.rstrip("/")
        #: Where the protected-resource metadata is served.
        self.metadata_path = PRM_WELL_KNOWN + path
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{self.metadata_path}"

    def __call__(self, environ: Mapping[str, Any]) -> Principal | None:
        token = bearer_token(environ)
        if token is None:
            return None
        try:
            claims = self.verifier.verify(token)
        except AuthorizationError as exc:
            logger.info("refused a bearer token: %s", exc)
            if isinstance(environ, dict):
                environ[_INVALID] = True
            return None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            return None
        tenant = claims.get(self.tenant_claim) if self.tenant_claim else None
        name = f"{tenant}/{subject}" if isinstance(tenant, str) and tenant else subject
        scope = claims.get("scope")
        scopes = tuple(scope.split()) if isinstance(scope, str) else ()
        return Principal(name, claims={**claims, "scopes": scopes})

    # --- what the application asks -------------------------------------------------------------

    def challenge(self, environ: Mapping[str, Any]) -> str:
        """``WWW-Authenticate`` for a 401."""
        params = []
        if environ.get(_INVALID):
            params.append('error="invalid_token"')
        params.append(f'resource_metadata="{self.metadata_url}"')
        if self.required_scopes:
            params.append(f'scope="{" ".join(self.required_scopes)}"')
        return "Bearer " + ", ".join(params)

    def refusal(self, principal: Principal, operation: str, method: str) -> str | None:
        """``WWW-Authenticate`` for a 403 when ``principal`` lacks scopes for the
        operation, else ``None``."""
        needed = (
            *self.required_scopes,
            *self.operation_scopes.get(operation, ()),
            *self.operation_scopes.get(method, ()),
        )
        granted = set(principal.claims.get("scopes", ()))
        if set(needed) <= granted:
            return None
        scopes = " ".join(dict.fromkeys(needed))
        return (
            f'Bearer error="insufficient_scope", scope="{scopes}", '
            f'resource_metadata="{self.metadata_url}"'
        )

    def metadata(self) -> bytes:
        """The RFC 9728 document."""
        return json.dumps(
            {
                "resource": self.resource,
                "authorization_servers": list(self.authorization_servers),
                "scopes_supported": list(self.scopes_supported),
                "bearer_methods_supported": ["header"],
            }
        ).encode()

    def declare(
        self,
        card: AgentCard,
        *,
        authorization_url: str | None = None,
        token_url: str,
        metadata_url: str | None = None,
        name: str = "oauth2",
    ) -> AgentCard:
        """``card`` declaring this protection: an OAuth 2 security scheme (the
        authorization-code flow with PKCE when ``authorization_url`` is given, else client
        credentials) and a security requirement for :attr:`required_scopes`."""
        scopes = {scope: scope for scope in self.scopes_supported}
        flow = OAuthFlow(
            scopes=scopes,
            authorization_url=authorization_url,
            token_url=token_url,
            pkce_required=authorization_url is not None,
        )
        flows = (
            OAuthFlows(authorization_code=flow)
            if authorization_url is not None
            else OAuthFlows(client_credentials=flow)
        )
        scheme = OAuth2SecurityScheme(flows=flows, oauth2_metadata_url=metadata_url)
        return attrs.evolve(
            card,
            security_schemes={**(card.security_schemes or {}), name: scheme},
            security_requirements=[{name: list(self.required_scopes)}],
        )

    def __repr__(self) -> str:
        return f"<JWTBearerAuth {self.resource!r} by {list(self.authorization_servers)}>"
