"""A real OAuth 2.1 authorization server on 127.0.0.1 for the tests, built on authlib's
server side (Flask) and served by waitress on port 0.

It offers: RFC 8414 / OpenID Connect metadata (at the well-known location a test picks),
Dynamic Client Registration (RFC 7591), the authorization code grant with PKCE (S256 only;
the browser step approves at once — :meth:`AuthorizationServerFixture.approve` follows
the authorization URL with requests and returns the redirect), client credentials
(client_secret_basic/post and private_key_jwt), refresh tokens that rotate (the old one is
then ``invalid_grant``), RFC 7009 revocation of refresh tokens, ``iss`` in authorization
responses (RFC 9207), and RS256 JWT access tokens (RFC 9068, joserfc) whose ``aud`` is
the request's ``resource``, with the public keys at ``/jwks``.

Every request path is recorded in :attr:`AuthorizationServerFixture.paths` (discovery
order tests) and every token-endpoint form in :attr:`token_requests`.
"""

from __future__ import annotations

import contextlib
import hmac
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import attrs
import flask
import requests
from authlib.common.security import generate_token
from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import ClientMixin, grants
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc9068 import JWTBearerTokenGenerator
from authlib.oauth2.rfc9207 import IssuerParameter
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from tests.support.servers import serve_wsgi

USER = "alice"
ALL_METHODS = ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"]


def _loopback(uri: str) -> tuple[str, str, str] | None:
    parts = urlsplit(uri)
    if parts.scheme == "http" and parts.hostname in ("127.0.0.1", "::1", "localhost"):
        return parts.scheme, parts.hostname or "", parts.path
    return None


@attrs.define(eq=False)
class Client(ClientMixin):  # type: ignore[misc]
    client_id: str
    client_secret: str | None = None
    auth_method: str = "none"
    redirect_uris: list[str] = attrs.Factory(list)
    grant_types: list[str] = attrs.Factory(lambda: ["authorization_code", "refresh_token"])
    public_key: Any = None
    metadata: dict[str, Any] = attrs.Factory(dict)

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        return self.redirect_uris[0] if self.redirect_uris else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return scope or ""

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        if redirect_uri in self.redirect_uris:
            return True
        # RFC 8252 §7.3: any port for loopback redirect URIs.
        loop = _loopback(redirect_uri)
        return loop is not None and any(_loopback(uri) == loop for uri in self.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and hmac.compare_digest(
            client_secret.encode(), self.client_secret.encode()
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


@attrs.define(eq=False)
class Code:
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    code_challenge: str | None
    code_challenge_method: str | None
    resource: str | None

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@attrs.define(eq=False)
class RefreshRecord:
    refresh_token: str
    client_id: str
    scope: str
    user: str | None
    revoked: bool = False

    def check_client(self, client: Client) -> bool:
        return client.client_id == self.client_id

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return 3600

    def is_expired(self) -> bool:
        return False

    def is_revoked(self) -> bool:
        return self.revoked


@attrs.define
class User:
    name: str

    def get_user_id(self) -> str:
        return self.name


class AuthorizationServerFixture:
    """The state and knobs of one test authorization server (see the module docstring).

    Knobs (set before the first request): ``metadata_at`` (``"oauth"``, ``"oidc"`` or
    ``"oidc-append"``), ``advertised_issuer`` (to lie about the issuer),
    ``pkce_methods``, ``iss_parameter``, ``cimd``, ``lifetime`` (access-token seconds).
    """

    def __init__(self, path: str = "/tenant1") -> None:
        self.path = path
        self.issuer = ""
        self.metadata_at = "oauth"
        self.advertised_issuer: str | None = None
        self.pkce_methods = ["S256"]
        self.iss_parameter = True
        self.cimd = False
        self.dcr = True
        self.lifetime = 3600
        self.rotate = True
        self.audience_override: str | None = None
        self.grantable: set[str] | None = None  # scopes the server grants (None: all asked)
        self.metadata_extra: dict[str, Any] = {}
        self.paths: list[str] = []
        self.token_requests: list[dict[str, str]] = []
        self.registrations: list[dict[str, Any]] = []
        self.clients: dict[str, Client] = {}
        self.codes: dict[str, Code] = {}
        self.refresh: dict[str, RefreshRecord] = {}
        self.key = RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig"})
        self._lock = threading.Lock()
        self.app = self._build()

    # --- for tests -------------------------------------------------------------------------

    @property
    def jwks(self) -> dict[str, Any]:
        return KeySet([self.key]).as_dict(private=False)

    @property
    def metadata_url(self) -> str:
        """Where the RFC 8414 metadata is (path insertion)."""
        parts = urlsplit(self.issuer)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-authorization-server{self.path}"

    def add_client(self, client: Client) -> Client:
        self.clients[client.client_id] = client
        return client

    def approve(self, authorization_url: str) -> str:
        """The browser step: open the authorization URL (auto-approved) and return the
        URL the browser would be sent to."""
        response = requests.get(authorization_url, allow_redirects=False, timeout=10)
        assert response.status_code == 302, (response.status_code, response.text[:300])
        return str(response.headers["Location"])

    def revoke_all_refresh_tokens(self) -> None:
        for record in self.refresh.values():
            record.revoked = True

    def decode(self, token: str) -> dict[str, Any]:
        return dict(jwt.decode(token, self.key).claims)

    # --- the app ---------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        base = self.issuer
        document = {
            "issuer": self.advertised_issuer or self.issuer,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "revocation_endpoint": f"{base}/revoke",
            "jwks_uri": f"{base}/jwks",
            "response_types_supported": ["code"],
            "grant_types_supported": [
                "authorization_code",
                "refresh_token",
                "client_credentials",
            ],
            "token_endpoint_auth_methods_supported": ALL_METHODS,
            "token_endpoint_auth_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["read", "write", "admin"],
            "authorization_response_iss_parameter_supported": self.iss_parameter,
        }
        if self.pkce_methods:
            document["code_challenge_methods_supported"] = self.pkce_methods
        if self.dcr:
            document["registration_endpoint"] = f"{base}/register"
        if self.cimd:
            document["client_id_metadata_document_supported"] = True
        document.update(self.metadata_extra)
        return document

    def _build(self) -> flask.Flask:
        app = flask.Flask("test-authorization-server")
        fixture = self

        def query_client(client_id: str) -> Client | None:
            client = fixture.clients.get(client_id)
            if client is None and fixture.cimd and client_id.startswith("http"):
                client = fixture._fetch_metadata_document(client_id)
            return client

        def save_token(token: dict[str, Any], request: Any) -> None:
            refresh = token.get("refresh_token")
            if refresh:
                user = request.user.get_user_id() if request.user else None
                fixture.refresh[refresh] = RefreshRecord(
                    refresh, request.client.client_id, token.get("scope", ""), user
                )

        server = AuthorizationServer(app, query_client=query_client, save_token=save_token)

        class Generator(JWTBearerTokenGenerator):  # type: ignore[misc]
            def get_jwks(self) -> KeySet:
                return KeySet([fixture.key])

            def get_audiences(self, client: Client, user: Any, scope: str) -> str:
                if fixture.audience_override is not None:
                    return fixture.audience_override
                return flask.request.form.get("resource") or client.client_id

        server.register_token_generator(
            "default",
            Generator(
                issuer="",
                refresh_token_generator=lambda *a, **k: generate_token(48),
                expires_generator=lambda client, grant_type: fixture.lifetime,
            ),
        )

        class S256Only(CodeChallenge):  # type: ignore[misc]
            SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]  # noqa: RUF012

        class AuthorizationCode(grants.AuthorizationCodeGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ALL_METHODS

            def save_authorization_code(self, code: str, request: Any) -> None:
                data = request.payload.data
                if not data.get("code_challenge"):
                    from authlib.oauth2.rfc6749.errors import InvalidRequestError

                    raise InvalidRequestError("PKCE (S256) is required")
                scope = (request.payload.scope or "").split()
                if fixture.grantable is not None:
                    scope = [s for s in scope if s in fixture.grantable]
                fixture.codes[code] = Code(
                    code,
                    request.client.client_id,
                    request.payload.redirect_uri,
                    " ".join(scope),
                    data.get("code_challenge"),
                    data.get("code_challenge_method"),
                    data.get("resource"),
                )

            def query_authorization_code(self, code: str, client: Client) -> Code | None:
                found = fixture.codes.get(code)
                return found if found is not None and found.client_id == client.client_id else None

            def delete_authorization_code(self, authorization_code: Code) -> None:
                fixture.codes.pop(authorization_code.code, None)

            def authenticate_user(self, authorization_code: Code) -> User:
                return User(USER)

        class Refresh(grants.RefreshTokenGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ALL_METHODS

            @property
            def INCLUDE_NEW_REFRESH_TOKEN(self) -> bool:
                return fixture.rotate

            def authenticate_refresh_token(self, refresh_token: str) -> RefreshRecord | None:
                record = fixture.refresh.get(refresh_token)
                return record if record is not None and not record.revoked else None

            def authenticate_user(self, refresh_token: RefreshRecord) -> User | None:
                return User(refresh_token.user) if refresh_token.user else None

            def revoke_old_credential(self, refresh_token: RefreshRecord) -> None:
                refresh_token.revoked = True

        class ClientCredentials(grants.ClientCredentialsGrant):  # type: ignore[misc]
            TOKEN_ENDPOINT_AUTH_METHODS = ALL_METHODS[1:]

        class Assertion(JWTBearerClientAssertion):  # type: ignore[misc]
            CLIENT_AUTH_METHOD = "private_key_jwt"
            seen: set[str] = set()  # noqa: RUF012

            def validate_jti(self, claims: Any, jti: str) -> bool:
                if jti in self.seen:
                    return False
                self.seen.add(jti)
                return True

            def resolve_client_public_key(self, client: Client) -> Any:
                return client.public_key

            def get_audiences(self) -> list[str]:
                return [f"{fixture.issuer}/token", fixture.issuer]

        class Issuer(IssuerParameter):  # type: ignore[misc]
            def get_issuer(self) -> str | None:
                return fixture.issuer if fixture.iss_parameter else None

        class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
            def authenticate_token(self, request: Any) -> bool:
                return True

            def get_server_metadata(self) -> dict[str, Any]:
                return fixture.metadata()

            def save_client(self, client_info: Any, client_metadata: Any, request: Any) -> Client:
                fixture.registrations.append(dict(flask.request.get_json()))  # as sent
                method = client_metadata.get("token_endpoint_auth_method", "client_secret_basic")
                client = Client(
                    client_info["client_id"],
                    client_info.get("client_secret") if method != "none" else None,
                    method,
                    list(client_metadata.get("redirect_uris", [])),
                    list(client_metadata.get("grant_types", ["authorization_code"])),
                    metadata=dict(client_metadata),
                )
                fixture.clients[client.client_id] = client
                return client

        class Revocation(RevocationEndpoint):  # type: ignore[misc]
            CLIENT_AUTH_METHODS = ALL_METHODS

            def query_token(self, token_string: str, token_type_hint: str | None) -> Any:
                return fixture.refresh.get(token_string)

            def revoke_token(self, token: RefreshRecord, request: Any) -> None:
                token.revoked = True

        server.register_grant(AuthorizationCode, [S256Only(required=True)])
        server.register_grant(Refresh)
        server.register_grant(ClientCredentials)
        server.register_client_auth_method(Assertion.CLIENT_AUTH_METHOD, Assertion())
        server.register_extension(Issuer())
        server.register_endpoint(Registration)
        server.register_endpoint(Revocation)
        self._server = server
        self._generator_holder = Generator

        @app.before_request
        def record() -> None:
            fixture.paths.append(flask.request.path)
            if flask.request.path.endswith("/token"):
                fixture.token_requests.append(dict(flask.request.form))

        prefix = self.path

        @app.get(f"{prefix}/authorize")
        def authorize() -> Any:
            user = User(USER)
            try:
                grant = server.get_consent_grant(end_user=user)
            except OAuth2Error as error:
                return flask.Response(
                    f"{error.error}: {error.description}", status=400, mimetype="text/plain"
                )
            return server.create_authorization_response(grant_user=user, grant=grant)

        @app.post(f"{prefix}/token")
        def token() -> Any:
            return server.create_token_response()

        @app.post(f"{prefix}/register")
        def register() -> Any:
            return server.create_endpoint_response("client_registration")

        @app.post(f"{prefix}/revoke")
        def revoke() -> Any:
            return server.create_endpoint_response("revocation")

        @app.get(f"{prefix}/jwks")
        def jwks() -> Any:
            return flask.jsonify(fixture.jwks)

        @app.get("/.well-known/<path:rest>")
        @app.get(f"{prefix}/.well-known/<path:rest>")
        def well_known(rest: str) -> Any:
            path = flask.request.path
            wanted = {
                "oauth": f"/.well-known/oauth-authorization-server{prefix}",
                "oidc": f"/.well-known/openid-configuration{prefix}",
                "oidc-append": f"{prefix}/.well-known/openid-configuration",
            }[fixture.metadata_at]
            if path != wanted:
                return flask.Response("not found", status=404)
            return flask.jsonify(fixture.metadata())

        return app

    def _fetch_metadata_document(self, client_id: str) -> Client | None:
        response = requests.get(client_id, timeout=10, allow_redirects=False)
        if response.status_code != 200:
            return None
        document = response.json()
        if document.get("client_id") != client_id:
            return None
        client = Client(
            client_id,
            None,
            document.get("token_endpoint_auth_method", "none"),
            list(document.get("redirect_uris", [])),
            list(document.get("grant_types", ["authorization_code", "refresh_token"])),
            metadata=document,
        )
        self.clients[client_id] = client
        return client

    def bind(self, base_url: str) -> None:
        self.issuer = f"{base_url}{self.path}"
        # The JWT generator reads its issuer at signing time.
        for grant_generator in self._server._token_generators.values():
            if isinstance(grant_generator, JWTBearerTokenGenerator):
                grant_generator.issuer = self.issuer


@contextlib.contextmanager
def serve_authorization_server(
    fixture: AuthorizationServerFixture | None = None,
) -> Iterator[AuthorizationServerFixture]:
    """Serve a test authorization server on 127.0.0.1; yield it with ``issuer`` set."""
    fixture = fixture or AuthorizationServerFixture()
    with serve_wsgi(fixture.app) as url:
        fixture.bind(url)
        yield fixture
