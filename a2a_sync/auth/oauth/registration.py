"""Client registration, in the order of the MCP specification: a pre-registered client,
then a Client ID Metadata Document (when the server advertises
``client_id_metadata_document_supported``), then Dynamic Client Registration (RFC 7591,
with ``application_type``) when the server has a ``registration_endpoint``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Final
from urllib.parse import urlsplit

import attrs

from ..._net.http import HTTPTransport
from ...errors import AuthorizationError, TransportError, excerpt
from ...policies import RetryPolicy, Timeout
from .discovery import AuthorizationServer
from .tokens import ClientInfo, Grant
from .urls import check_endpoint

__all__ = ["ClientChoice", "check_metadata_document_url", "register_dynamically"]

logger = logging.getLogger(__name__)

MAX_REGISTRATION_BYTES: Final = 64 * 1024


def check_metadata_document_url(url: str) -> str:
    """A Client ID Metadata Document URL must be HTTPS (loopback HTTP for tests) and have
    a path (draft-ietf-oauth-client-id-metadata-document §3)."""
    check_endpoint(url, "client_metadata_url", "registration")
    if urlsplit(url).path in ("", "/"):
        raise AuthorizationError(
            f"client_metadata_url {url!r} needs a path (e.g. /oauth/client.json)",
            step="registration",
        )
    return url


def register_dynamically(
    http: HTTPTransport,
    server: AuthorizationServer,
    *,
    client_name: str,
    redirect_uris: Sequence[str],
    grant_types: Sequence[str],
    scopes: Sequence[str],
    auth_method: str,
    timeout: float,
) -> ClientInfo:
    """Register a client at the server's ``registration_endpoint`` (RFC 7591).

    Raises:
        AuthorizationError: The server has no registration endpoint, refused the request
            (its ``error`` and description are named, e.g. a redirect URI rule), or sent a
            registration a2a_sync cannot use.
    """
    if server.registration_endpoint is None:
        raise AuthorizationError(
            f"{server.issuer} offers neither Client ID Metadata Documents nor dynamic "
            "registration; register a client there and pass client_id= (and client_secret=)",
            step="registration",
        )
    metadata: dict[str, object] = {
        "client_name": client_name,
        "redirect_uris": list(redirect_uris),
        "grant_types": list(grant_types),
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": auth_method,
        "application_type": "native",
    }
    if scopes:
        metadata["scope"] = " ".join(scopes)
    try:
        result = http.request(
            "POST",
            server.registration_endpoint,
            body=json.dumps(metadata).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            timeout=Timeout(connect=timeout, read=timeout, total=timeout),
            retry=RetryPolicy.none(),
            max_response_bytes=MAX_REGISTRATION_BYTES,
        )
    except TransportError as exc:
        raise AuthorizationError(
            f"registering at {server.registration_endpoint} failed: {exc}", step="registration"
        ) from exc
    try:
        document = json.loads(result.content)
    except (ValueError, RecursionError):
        document = None
    if not result.ok or not isinstance(document, dict) or "error" in document:
        detail = excerpt(result.content, 160)
        raise AuthorizationError(
            f"{server.registration_endpoint} refused the dynamic registration (HTTP "
            f"{result.status}: {detail}); fix the named metadata or pre-register a client",
            step="registration",
        )
    client_id = document.get("client_id")
    if not isinstance(client_id, str) or not client_id:
        raise AuthorizationError(
            f"{server.registration_endpoint} returned a registration without client_id",
            step="registration",
        )
    method = document.get("token_endpoint_auth_method", auth_method)
    secret = document.get("client_secret")
    if method not in ("none", "client_secret_basic", "client_secret_post"):
        raise AuthorizationError(
            f"{server.registration_endpoint} registered the client for {method!r}, which "
            "a2a_sync cannot use for a dynamically registered client",
            step="registration",
        )
    if method != "none" and not isinstance(secret, str):
        raise AuthorizationError(
            f"{server.registration_endpoint} wants {method} but sent no client_secret",
            step="registration",
        )
    return ClientInfo(
        client_id=client_id,
        client_secret=secret if isinstance(secret, str) and method != "none" else None,
        auth_method=str(method),
        issuer=server.issuer,
    )


@attrs.frozen
class ClientChoice:
    """How :class:`~a2a_sync.auth.oauth.OAuth` gets a client at an authorization server,
    in the specification's order (pre-registered, metadata document, a stored dynamic
    registration, a new dynamic registration)."""

    client_id: str | None
    client_secret: str | None = attrs.field(repr=False)
    has_private_key: bool
    auth_method: str | None
    metadata_url: str | None
    name: str
    redirect_uri: str
    dynamic: bool

    @property
    def label(self) -> str:
        """The client part of a :class:`~.tokens.GrantKey`."""
        return self.client_id or self.metadata_url or f"dcr:{self.name}"

    def choose(
        self,
        http: HTTPTransport,
        server: AuthorizationServer,
        stored: Grant | None,
        timeout: float,
    ) -> ClientInfo:
        """The client to use at ``server`` (registering one if that is the way).

        Raises:
            AuthorizationError: No way to get a client, or the registration failed.
        """
        if self.client_id is not None:
            method = self.method_for(server)
            return ClientInfo(self.client_id, self.client_secret, method, server.issuer)
        if self.metadata_url is not None and server.client_id_metadata_document_supported:
            return ClientInfo(self.metadata_url, None, "none", server.issuer)
        kept = stored.client if stored is not None else None
        if kept is not None and kept.issuer == server.issuer:  # never reused elsewhere
            return kept
        if not self.dynamic:
            raise AuthorizationError(
                f"no client for {server.issuer}: pass client_id=, or client_metadata_url= "
                "(if the server supports metadata documents), or allow dynamic_registration",
                step="registration",
            )
        client = register_dynamically(
            http,
            server,
            client_name=self.name,
            redirect_uris=[self.redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            scopes=(),
            auth_method="none",
            timeout=timeout,
        )
        logger.info("registered a client at %s", server.issuer)
        return client

    def method_for(self, server: AuthorizationServer) -> str:
        """The token endpoint auth method of a pre-registered client."""
        if self.auth_method is not None:
            return self.auth_method
        if self.has_private_key:
            return "private_key_jwt"
        if self.client_secret is None:
            return "none"
        supported = server.token_endpoint_auth_methods
        if "client_secret_basic" not in supported and "client_secret_post" in supported:
            return "client_secret_post"
        return "client_secret_basic"

    def kept(self, client: ClientInfo) -> ClientInfo | None:
        """What the store keeps of ``client``: dynamic registrations only (configured
        clients come from code, metadata-document ids from their URL)."""
        if self.client_id is None and client.client_id != self.metadata_url:
            return client
        return None
