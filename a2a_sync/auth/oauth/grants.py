"""Grant mechanics on authlib's client pieces, sent through a2a_sync's HTTP seam.

authlib builds the authorization URL (:func:`prepare_grant_uri`), the PKCE S256 challenge,
the token request bodies (:func:`prepare_token_request`) and the client authentication
(``none``, ``client_secret_basic``, ``client_secret_post`` and RFC 7523 ``private_key_jwt``
assertions signed with joserfc). The requests themselves go through
:class:`~a2a_sync._net.http.HTTPTransport` (deadline, no redirects, capped bodies, typed
errors) rather than authlib's ``OAuth2Session``, which is a plain ``requests.Session``
(follows redirects, no total deadline, unbounded bodies). What authlib does not check we
do here: ``state`` in constant time, and ``iss`` (RFC 9207) per the MCP 2026-07-28 table.
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import attrs

from ..._net.http import HTTPTransport
from ...errors import (
    AuthorizationError,
    ConfigurationError,
    TokenEndpointError,
    TransportError,
    excerpt,
    install_hint,
)
from ...policies import RetryPolicy, Timeout
from .discovery import AuthorizationServer
from .tokens import ClientInfo, Token

try:
    from authlib.common.security import generate_token
    from authlib.oauth2.auth import ClientAuth
    from authlib.oauth2.rfc6749.parameters import prepare_grant_uri, prepare_token_request
    from authlib.oauth2.rfc7523 import PrivateKeyJWT
    from authlib.oauth2.rfc7636 import create_s256_code_challenge
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"a2a_sync.auth.oauth needs authlib: {install_hint('oauth')}") from exc

__all__ = [
    "PendingAuthorization",
    "finish_authorization",
    "request_token",
    "revoke_token",
    "start_authorization",
]

logger = logging.getLogger(__name__)

#: Largest token endpoint answer read.
MAX_TOKEN_BYTES: Final = 64 * 1024
AUTH_METHODS: Final = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")


@attrs.frozen
class PendingAuthorization:
    """An authorization request on its way: what the callback is checked against."""

    url: str
    redirect_uri: str
    issuer: str
    state: str = attrs.field(repr=False)
    verifier: str = attrs.field(repr=False)


def start_authorization(
    server: AuthorizationServer,
    client: ClientInfo,
    redirect_uri: str,
    scopes: tuple[str, ...],
    resource: str,
) -> PendingAuthorization:
    """The authorization URL (code flow, PKCE S256, ``state``, ``resource``, ``scope``)."""
    assert server.authorization_endpoint is not None
    verifier = generate_token(64)
    state = generate_token(32)
    params: dict[str, str] = {
        "redirect_uri": redirect_uri,
        "code_challenge": create_s256_code_challenge(verifier),
        "code_challenge_method": "S256",
        "resource": resource,
    }
    if scopes:
        params["scope"] = " ".join(scopes)
    url = prepare_grant_uri(
        server.authorization_endpoint,
        client_id=client.client_id,
        response_type="code",
        state=state,
        **params,
    )
    return PendingAuthorization(url, redirect_uri, server.issuer, state, verifier)


def finish_authorization(
    pending: PendingAuthorization, callback_url: str, *, iss_supported: bool
) -> str:
    """The authorization code of a callback, after the ``state`` and ``iss`` checks.

    Raises:
        AuthorizationError: The callback is not for our redirect URI, its ``state`` or
            ``iss`` does not match (its ``error`` is then not trusted), the server sent
            no ``iss`` although it promised to, or the server refused (``error``).
    """
    parts = urlsplit(callback_url)
    expected = urlsplit(pending.redirect_uri)
    if (parts.scheme, parts.hostname, parts.path) != (
        expected.scheme,
        expected.hostname,
        expected.path,
    ) or (expected.port is not None and parts.port != expected.port):
        raise AuthorizationError(
            "the authorization response arrived at a URL other than the redirect URI "
            "a2a_sync registered; ignoring it",
            step="authorization",
        )
    query = {name: values[0] for name, values in parse_qs(parts.query).items() if values}
    state = query.get("state", "")
    if not hmac.compare_digest(state.encode(), pending.state.encode()):
        raise AuthorizationError(
            "the authorization response carries a state that does not match the request "
            "(a forged or stale redirect); start the login again",
            step="authorization",
        )
    iss = query.get("iss")
    if iss is not None and iss != pending.issuer:
        raise AuthorizationError(
            f"the authorization response comes from issuer {iss!r}, not {pending.issuer!r} "
            "(RFC 9207: a mix-up attack or misconfiguration); its content was discarded",
            step="authorization",
        )
    if iss is None and iss_supported:
        raise AuthorizationError(
            f"{pending.issuer} promises an iss parameter (RFC 9207) but the authorization "
            "response has none; discarded",
            step="authorization",
        )
    if "error" in query:
        description = query.get("error_description", "")
        raise AuthorizationError(
            f"{pending.issuer} refused the authorization: {query['error']}"
            + (f" ({excerpt(description, 120)})" if description else ""),
            step="authorization",
        )
    code = query.get("code")
    if not code:
        raise AuthorizationError(
            "the authorization response has neither a code nor an error", step="authorization"
        )
    return code


def _client_secret_basic(
    client: ClientAuth, method: str, uri: str, headers: dict[str, str], body: str
) -> tuple[str, dict[str, str], str]:
    # RFC 6749 §2.3.1: both parts are form-urlencoded before base64 (authlib does not).
    pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret or '', safe='')}"
    headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return uri, headers, body


def _client_auth(
    client: ClientInfo, token_endpoint: str, private_key: Any, jwt_alg: str
) -> ClientAuth:
    method = client.auth_method
    if method == "private_key_jwt":
        if private_key is None:
            raise ConfigurationError(
                "token_endpoint_auth_method private_key_jwt needs private_key= (PEM or a "
                "joserfc key)"
            )
        return ClientAuth(client.client_id, private_key, PrivateKeyJWT(token_endpoint, alg=jwt_alg))
    if method in ("client_secret_basic", "client_secret_post") and not client.client_secret:
        raise ConfigurationError(f"token_endpoint_auth_method {method} needs client_secret=")
    if method == "client_secret_basic":
        return ClientAuth(client.client_id, client.client_secret, _client_secret_basic)
    if method not in AUTH_METHODS:
        raise ConfigurationError(
            f"unsupported token_endpoint_auth_method {method!r}; use one of {AUTH_METHODS}"
        )
    return ClientAuth(client.client_id, client.client_secret, method)


def request_token(
    http: HTTPTransport,
    server: AuthorizationServer,
    client: ClientInfo,
    grant_type: str,
    *,
    step: str,
    timeout: float,
    private_key: Any = None,
    jwt_alg: str = "RS256",
    params: Mapping[str, str],
) -> Token:
    """POST one token request and return the token.

    Raises:
        TokenEndpointError: The endpoint refused (``.error`` is its OAuth error code), or
            answered something that is not a token.
        AuthorizationError: The endpoint could not be reached in time.
    """
    body = prepare_token_request(grant_type, **{k: v for k, v in params.items() if v})
    auth = _client_auth(client, server.token_endpoint, private_key, jwt_alg)
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    uri, headers, body = auth.prepare("POST", server.token_endpoint, headers, body)
    try:
        result = http.request(
            "POST",
            uri,
            body=body.encode("utf-8"),
            headers=headers,
            timeout=Timeout(connect=timeout, read=timeout, total=timeout),
            retry=RetryPolicy.none(),
            max_response_bytes=MAX_TOKEN_BYTES,
        )
    except TransportError as exc:
        raise AuthorizationError(
            f"the {step} request to {server.token_endpoint} failed: {exc}", step=step
        ) from exc
    try:
        document = json.loads(result.content)
    except (ValueError, RecursionError):
        document = None
    if not isinstance(document, dict):
        raise TokenEndpointError(
            f"the token endpoint {server.token_endpoint} answered the {step} request with "
            f"HTTP {result.status} and no JSON object ({result.content_type or 'no type'})",
            step=step,
            error=None,
        )
    if not result.ok or "error" in document:
        error = document.get("error")
        code = error if isinstance(error, str) else None
        description = document.get("error_description")
        hint = _HINTS.get(code or "", "")
        raise TokenEndpointError(
            f"the token endpoint {server.token_endpoint} refused the {step} request "
            f"(HTTP {result.status}, {code or 'no error code'}"
            + (f": {excerpt(description, 120)}" if isinstance(description, str) else "")
            + f"){hint}",
            step=step,
            error=code,
        )
    return _token(document, server.token_endpoint, step)


_HINTS: Final = {
    "invalid_grant": "; the code or refresh token is expired, used or revoked: log in again",
    "invalid_client": "; check the client id, secret or key (or register again)",
    "unauthorized_client": "; the client may not use this grant type",
    "invalid_scope": "; ask for scopes the server supports",
}


def _token(document: dict[str, Any], endpoint: str, step: str) -> Token:
    access = document.get("access_token")
    kind = document.get("token_type")
    if not isinstance(access, str) or not access or "\n" in access or "\r" in access:
        raise TokenEndpointError(
            f"the token endpoint {endpoint} answered the {step} request without a usable "
            "access_token",
            step=step,
            error=None,
        )
    if not isinstance(kind, str) or kind.lower() != "bearer":
        raise TokenEndpointError(
            f"the token endpoint {endpoint} issued a {kind!r} token; a2a_sync sends Bearer "
            "tokens only",
            step=step,
            error=None,
        )
    expires_in = document.get("expires_in")
    expires_at = (
        time.time() + float(expires_in)
        if isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool)
        else None
    )
    refresh = document.get("refresh_token")
    scope = document.get("scope")
    return Token(
        access_token=access,
        expires_at=expires_at,
        refresh_token=refresh if isinstance(refresh, str) and refresh else None,
        scope=tuple(scope.split()) if isinstance(scope, str) else (),
    )


def revoke_token(
    http: HTTPTransport,
    server: AuthorizationServer,
    client: ClientInfo,
    token: str,
    *,
    timeout: float,
    private_key: Any = None,
    jwt_alg: str = "RS256",
) -> bool:
    """Revoke a refresh token at the server's ``revocation_endpoint`` (RFC 7009).

    Returns:
        True when the server confirmed (200); False when it has no revocation endpoint,
        refused, or could not be reached (revocation is best effort: the grant is
        forgotten locally either way).
    """
    endpoint = server.revocation_endpoint
    if endpoint is None:
        return False
    body = urlencode({"token": token, "token_type_hint": "refresh_token"})
    auth = _client_auth(client, endpoint, private_key, jwt_alg)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    uri, headers, body = auth.prepare("POST", endpoint, headers, body)
    try:
        result = http.request(
            "POST",
            uri,
            body=body.encode("utf-8"),
            headers=headers,
            timeout=Timeout(connect=timeout, read=timeout, total=timeout),
            retry=RetryPolicy.none(),
            max_response_bytes=MAX_TOKEN_BYTES,
        )
    except TransportError as exc:
        logger.info("revoking the refresh token at %s failed: %s", endpoint, exc)
        return False
    if not result.ok:
        logger.info("%s refused to revoke the refresh token (HTTP %s)", endpoint, result.status)
    return result.ok
