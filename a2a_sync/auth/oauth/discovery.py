"""Finding the authorization server of a protected resource.

1. Protected-resource metadata (RFC 9728): the ``resource_metadata`` URL of the 401
   challenge, then ``/.well-known/oauth-protected-resource/<path>`` (path-aware), then
   ``/.well-known/oauth-protected-resource`` at the root. Its ``resource`` must be the
   server's URL (or a parent path on the same origin).
2. Authorization-server metadata for the chosen issuer, in the order of the MCP
   specification (2025-11-25 and 2026-07-28): RFC 8414 path insertion, OpenID Connect
   path insertion, OpenID Connect path appending (issuers without a path: the first two).
   The document's ``issuer`` must be the issuer we asked for (RFC 8414 §3.3).

Every fetch is one bounded GET (the OAuth timeout, a size cap, no redirects).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import attrs

from ..._net.http import HTTPTransport
from ...errors import AuthorizationError, TransportError, excerpt
from ...policies import RetryPolicy, Timeout
from .urls import canonical_resource, check_endpoint, within

__all__ = [
    "AuthorizationServer",
    "ProtectedResource",
    "as_metadata_urls",
    "authorization_server_at",
    "discover_authorization_server",
    "discover_resource",
    "prm_urls",
]

logger = logging.getLogger(__name__)

#: Largest metadata document read (real ones are a few KiB).
MAX_METADATA_BYTES: Final = 256 * 1024
PRM_WELL_KNOWN: Final = "/.well-known/oauth-protected-resource"
OAUTH_WELL_KNOWN: Final = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN: Final = "/.well-known/openid-configuration"


@attrs.frozen
class ProtectedResource:
    """What RFC 9728 metadata (or, without it, the configuration) says about a resource."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] = ()
    metadata_url: str | None = None


@attrs.frozen
class AuthorizationServer:
    """Validated authorization-server metadata."""

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    revocation_endpoint: str | None = None
    code_challenge_methods: tuple[str, ...] = ()
    token_endpoint_auth_methods: tuple[str, ...] = ("client_secret_basic",)
    scopes_supported: tuple[str, ...] = ()
    iss_parameter_supported: bool = False
    client_id_metadata_document_supported: bool = False
    metadata_url: str = ""

    @property
    def supports_s256(self) -> bool:
        return "S256" in self.code_challenge_methods


def _base(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", "")), parts.path.rstrip("/")


def prm_urls(server_url: str, header_url: str | None) -> list[str]:
    """Protected-resource metadata URLs to try, in order (RFC 9728 §3.1, MCP)."""
    base, path = _base(server_url)
    urls = [header_url] if header_url else []
    if path:
        urls.append(f"{base}{PRM_WELL_KNOWN}{path}")
    urls.append(f"{base}{PRM_WELL_KNOWN}")
    return list(dict.fromkeys(urls))


def as_metadata_urls(issuer: str) -> list[str]:
    """Authorization-server metadata URLs to try for ``issuer``, in the MCP order."""
    base, path = _base(issuer)
    if not path:
        return [f"{base}{OAUTH_WELL_KNOWN}", f"{base}{OIDC_WELL_KNOWN}"]
    return [
        f"{base}{OAUTH_WELL_KNOWN}{path}",
        f"{base}{OIDC_WELL_KNOWN}{path}",
        f"{base}{path}{OIDC_WELL_KNOWN}",
    ]


def _fetch_json(
    http: HTTPTransport, url: str, timeout: float, what: str
) -> tuple[dict[str, Any] | None, str]:
    """The JSON object at ``url``, or ``(None, why)`` when it has none (404, HTML, ...).

    Raises:
        AuthorizationError: The endpoint timed out, was unreachable or sent too much.
    """
    try:
        result = http.request(
            "GET",
            url,
            headers={"Accept": "application/json"},
            idempotent=True,
            timeout=Timeout(connect=timeout, read=timeout, total=timeout),
            retry=RetryPolicy.none(),
            max_response_bytes=MAX_METADATA_BYTES,
        )
    except TransportError as exc:
        raise AuthorizationError(
            f"fetching the {what} at {url} failed: {exc}; check that the server is reachable "
            "(the OAuth timeout bounds every step)",
            step="discovery",
        ) from exc
    if result.status != 200:
        return None, f"{url}: HTTP {result.status}"
    try:
        document = json.loads(result.content)
    except (ValueError, RecursionError):
        return None, f"{url}: not JSON ({result.content_type or 'no Content-Type'}: " + (
            f"{excerpt(result.content, 60)})"
        )
    if not isinstance(document, dict):
        return None, f"{url}: JSON that is not an object"
    return document, ""


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return ()


def discover_resource(
    http: HTTPTransport, server_url: str, header_url: str | None, timeout: float
) -> ProtectedResource:
    """The protected-resource metadata of ``server_url``.

    Raises:
        AuthorizationError: No metadata at any URL of the order, or metadata that does not
            describe this server or names no authorization server.
    """
    if header_url is not None:
        check_endpoint(header_url, "the resource_metadata URL of the challenge", "discovery")
    tried: list[str] = []
    for url in prm_urls(server_url, header_url):
        document, why = _fetch_json(http, url, timeout, "protected-resource metadata")
        if document is None:
            tried.append(why)
            continue
        resource = document.get("resource")
        if not isinstance(resource, str) or not within(resource, server_url):
            raise AuthorizationError(
                f"the protected-resource metadata at {url} describes {resource!r}, not "
                f"{canonical_resource(server_url)!r}; refusing it (RFC 9728 §3.3)",
                step="discovery",
            )
        servers = _strings(document.get("authorization_servers"))
        if not servers:
            raise AuthorizationError(
                f"the protected-resource metadata at {url} names no authorization_servers",
                step="discovery",
            )
        logger.debug("protected-resource metadata found at %s", url)
        return ProtectedResource(
            resource=canonical_resource(resource),
            authorization_servers=servers,
            scopes_supported=_strings(document.get("scopes_supported")),
            metadata_url=url,
        )
    raise AuthorizationError(
        f"no protected-resource metadata for {canonical_resource(server_url)} ("
        + "; ".join(tried)
        + "); pass authorization_server= to OAuth if the server does not publish it",
        step="discovery",
    )


def _same_issuer(found: str, expected: str) -> bool:
    # RFC 8414 §3.3 wants identical strings. The one tolerated difference is a trailing
    # "/" on an issuer without a path (the URLs are equivalent, RFC 3986 §6.2.3); the mcp
    # server renders path-less issuers with it (modelcontextprotocol/python-sdk#1919).
    if found == expected:
        return True
    return _base(found)[1] == "" and found.rstrip("/") == expected.rstrip("/")


def discover_authorization_server(
    http: HTTPTransport, issuer: str, timeout: float, *, need_pkce: bool
) -> AuthorizationServer:
    """Validated metadata of the authorization server ``issuer``.

    Raises:
        AuthorizationError: No metadata, an ``issuer`` other than the one asked for,
            endpoints that are not HTTPS (or loopback), or (``need_pkce``) no ``S256`` in
            ``code_challenge_methods_supported``.
    """
    check_endpoint(issuer, "the authorization server issuer", "discovery")
    tried: list[str] = []
    for url in as_metadata_urls(issuer):
        document, why = _fetch_json(http, url, timeout, "authorization-server metadata")
        if document is None:
            tried.append(why)
            continue
        found = document.get("issuer")
        if not isinstance(found, str) or not _same_issuer(found, issuer):
            raise AuthorizationError(
                f"the authorization-server metadata at {url} names issuer {found!r}, not "
                f"{issuer!r}; refusing it (RFC 8414 §3.3: a mix-up or misconfiguration)",
                step="discovery",
            )
        return _server(document, found, url, need_pkce=need_pkce)
    raise AuthorizationError(
        f"no authorization-server metadata for issuer {issuer} (" + "; ".join(tried) + ")",
        step="discovery",
    )


def authorization_server_at(
    http: HTTPTransport, metadata_url: str, timeout: float, *, need_pkce: bool
) -> AuthorizationServer:
    """Validated metadata from a known metadata URL (an A2A card's ``oauth2MetadataUrl``
    or OpenID Connect URL), used when the resource publishes no RFC 9728 metadata. The
    URL must be one the document's own ``issuer`` yields (RFC 8414 §3.3), so a card
    cannot pair one server's endpoints with another's issuer.

    Raises:
        AuthorizationError: Unreachable, not metadata, or not derived from its issuer.
    """
    check_endpoint(metadata_url, "the authorization server metadata URL", "discovery")
    document, why = _fetch_json(http, metadata_url, timeout, "authorization-server metadata")
    if document is None:
        raise AuthorizationError(f"no authorization-server metadata at {why}", step="discovery")
    issuer = document.get("issuer")
    if not isinstance(issuer, str) or metadata_url not in as_metadata_urls(issuer):
        raise AuthorizationError(
            f"the metadata at {metadata_url} names issuer {issuer!r}, whose metadata is not "
            "published there; refusing it (RFC 8414 §3.3)",
            step="discovery",
        )
    return _server(document, issuer, metadata_url, need_pkce=need_pkce)


def _server(
    document: dict[str, Any], issuer: str, url: str, *, need_pkce: bool
) -> AuthorizationServer:
    def endpoint(name: str, required: bool) -> str | None:
        value = document.get(name)
        if value is None and not required:
            return None
        return check_endpoint(value, f"{name} of {issuer}", "discovery")

    methods = _strings(document.get("code_challenge_methods_supported"))
    server = AuthorizationServer(
        issuer=issuer,
        token_endpoint=endpoint("token_endpoint", True) or "",
        authorization_endpoint=endpoint("authorization_endpoint", need_pkce),
        registration_endpoint=endpoint("registration_endpoint", False),
        revocation_endpoint=endpoint("revocation_endpoint", False),
        code_challenge_methods=methods,
        token_endpoint_auth_methods=_strings(document.get("token_endpoint_auth_methods_supported"))
        or ("client_secret_basic",),
        scopes_supported=_strings(document.get("scopes_supported")),
        iss_parameter_supported=document.get("authorization_response_iss_parameter_supported")
        is True,
        client_id_metadata_document_supported=document.get("client_id_metadata_document_supported")
        is True,
        metadata_url=url,
    )
    if need_pkce and not server.supports_s256:
        raise AuthorizationError(
            f"the authorization server {issuer} does not list S256 in "
            f"code_challenge_methods_supported (it lists {list(methods)}); OAuth 2.1 and MCP "
            "require PKCE with S256, so a2a_sync will not start an authorization there",
            step="discovery",
        )
    return server


def first_issuer(resource: ProtectedResource, preferred: Sequence[str] | None) -> str:
    """The authorization server to use: the first configured one the resource lists,
    else the resource's first."""
    for issuer in preferred or ():
        if issuer in resource.authorization_servers:
            return issuer
    return resource.authorization_servers[0]
