"""A protected resource for OAuth tests: a bare WSGI app that checks JWT access tokens
from the test authorization server (signature with its key, ``iss``, ``aud`` = this
resource, ``exp``, scopes per path) and answers like RFC 6750/9728 say.

* ``/.well-known/oauth-protected-resource<path>`` (and/or the root one): the metadata.
* any other path: 401 ``Bearer resource_metadata=...[, scope=...]`` without a valid token,
  403 ``insufficient_scope`` (with the needed ``scope``) when a scope is missing, else
  200 ``{"sub": ..., "scope": ...}``.

Knobs: ``prm_at`` (``"path"``, ``"root"``, ``"both"`` or ``"none"``), ``header_metadata``
(name the metadata URL in the challenge), ``challenge_scope`` (put ``scope`` in the 401),
``required`` (path -> scopes), ``resource_override`` (lie in the metadata).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from joserfc import jwt
from joserfc.errors import JoseError

from tests.support.oauth_server import AuthorizationServerFixture

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

PRM = "/.well-known/oauth-protected-resource"


class ProtectedResource:
    def __init__(
        self, authorization_server: AuthorizationServerFixture, path: str = "/api"
    ) -> None:
        self.authorization_server = authorization_server
        self.path = path
        self.base = ""
        self.prm_at = "path"
        self.header_metadata = True
        self.challenge_scope: list[str] | None = None
        self.required: dict[str, list[str]] = {}
        self.scopes_supported = ["read"]
        self.resource_override: str | None = None
        self.paths: list[str] = []
        self.authorizations: list[str | None] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"{self.base}{self.path}"

    def metadata_url(self, kind: str = "path") -> str:
        return f"{self.base}{PRM}{self.path}" if kind == "path" else f"{self.base}{PRM}"

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        with self._lock:
            self.paths.append(path)
        if path.startswith(PRM):
            kind = "root" if path == PRM else "path"
            if self.prm_at not in (kind, "both") or (
                kind == "path" and path != f"{PRM}{self.path}"
            ):
                return _send(start_response, "404 Not Found", {"error": "not found"})
            return _send(
                start_response,
                "200 OK",
                {
                    "resource": self.resource_override or self.url,
                    "authorization_servers": [self.authorization_server.issuer],
                    "scopes_supported": self.scopes_supported,
                    "bearer_methods_supported": ["header"],
                },
            )
        header = environ.get("HTTP_AUTHORIZATION")
        with self._lock:
            self.authorizations.append(header)
        claims = self._verify(header)
        if claims is None:
            params = []
            if self.header_metadata:
                params.append(f'resource_metadata="{self.metadata_url()}"')
            if self.challenge_scope:
                params.append(f'scope="{" ".join(self.challenge_scope)}"')
            if header:
                params.insert(0, 'error="invalid_token"')
            challenge = "Bearer " + ", ".join(params) if params else "Bearer"
            return _send(start_response, "401 Unauthorized", {"error": "unauthorized"}, challenge)
        granted = set(str(claims.get("scope") or "").split())
        needed = self.required.get(path, [])
        if not set(needed) <= granted:
            challenge = (
                f'Bearer error="insufficient_scope", scope="{" ".join(needed)}", '
                f'resource_metadata="{self.metadata_url()}"'
            )
            return _send(start_response, "403 Forbidden", {"error": "forbidden"}, challenge)
        return _send(
            start_response, "200 OK", {"sub": claims.get("sub"), "scope": claims.get("scope")}
        )

    def _verify(self, header: str | None) -> dict[str, Any] | None:
        if not header or not header.startswith("Bearer "):
            return None
        try:
            token = jwt.decode(header[7:], self.authorization_server.key)
            jwt.JWTClaimsRegistry(
                iss={"essential": True, "value": self.authorization_server.issuer},
                aud={"essential": True, "value": self.url},
                exp={"essential": True},
            ).validate(token.claims)
        except (JoseError, ValueError):
            return None
        return dict(token.claims)


def _send(
    start_response: StartResponse, status: str, body: dict[str, Any], challenge: str | None = None
) -> Iterator[bytes]:
    data = json.dumps(body).encode()
    headers = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    if challenge:
        headers.append(("WWW-Authenticate", challenge))
    start_response(status, headers)
    yield data
