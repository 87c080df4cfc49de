""":class:`OAuth`: an OAuth 2.1 client that the MCP and A2A HTTP transports consult.

On a 401 it discovers the authorization server (:mod:`.discovery`), registers or picks a
client (:mod:`.registration`), obtains a token (authorization code + PKCE through a
:mod:`handler <.handlers>`, or client credentials), keeps it in a
:class:`~.tokens.TokenStore`, and tells the transport to send the request again. Expired
tokens are refreshed before use (refresh tokens rotate); a 403 ``insufficient_scope``
leads to one re-authorization with the union of the scopes, then to
:class:`~a2a_sync.errors.InsufficientScope`.

Tokens are bound to the origin (scheme, host, port) that challenged for them and are only
sent there, and only over HTTPS or to loopback.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, Final

import attrs

from ..._net.http import HTTPTransport
from ...errors import AuthorizationError, ConfigurationError
from .binding import Binding, bearer_header, step_up_scopes, union_scopes
from .challenge import BearerChallenge, parse_bearer_challenge
from .discovery import (
    AuthorizationServer,
    ProtectedResource,
    authorization_server_at,
    discover_authorization_server,
    discover_resource,
    first_issuer,
)
from .grants import finish_authorization, request_token, revoke_token, start_authorization
from .handlers import default_handler
from .options import DEFAULT_LEEWAY, DEFAULT_TIMEOUT, Grants, OAuthOptions, resolve_oauth_options
from .registration import ClientChoice, check_metadata_document_url
from .tokens import Grant, GrantKey, MemoryTokenStore, Token, TokenStore
from .urls import canonical_resource, check_endpoint, origin, token_destination

__all__ = ["DEFAULT_LEEWAY", "DEFAULT_TIMEOUT", "OAuth", "OAuthOptions"]

logger = logging.getLogger(__name__)

#: Refusals of one request after which we stop (stored token, fresh token, give up).
MAX_ATTEMPTS: Final = 3


class OAuth:
    """OAuth 2.1 authorization for ``MCPConnection.http(url, auth=OAuth(...))``.

    Args:
        options: The client's settings (:class:`OAuthOptions`): a pre-registered client
            or how to register one, scopes, grant, browser handler, token store,
            authorization server, timeouts, clock.
        **overrides: Any :class:`OAuthOptions` attribute by name (``client_id=``,
            ``scopes=``, ``store=``, ``grant=``...), applied onto ``options``.

    Raises:
        ConfigurationError: An unknown option, or settings that cannot work together.

    Thread-safe: one lock serializes discovery, flows and refreshes; concurrent requests
    refused together share the one new token.
    """

    def __init__(self, options: OAuthOptions | None = None, **overrides: Any) -> None:
        opts = resolve_oauth_options(options, overrides)
        self.options = opts
        if opts.grant not in ("authorization_code", "client_credentials"):
            raise ConfigurationError(
                f"grant must be 'authorization_code' or 'client_credentials', not {opts.grant!r}"
            )
        if opts.grant == "client_credentials" and not opts.client_id:
            raise ConfigurationError(
                "the client_credentials grant needs a pre-registered client: pass client_id= "
                "with client_secret= or private_key="
            )
        if opts.client_metadata_url is not None:
            check_metadata_document_url(opts.client_metadata_url)
        if opts.timeout <= 0:
            raise ConfigurationError("timeout must be positive")
        self.client_id = opts.client_id
        self._private_key = opts.private_key
        self._registration = ClientChoice(
            client_id=opts.client_id,
            client_secret=opts.client_secret,
            has_private_key=opts.private_key is not None,
            auth_method=opts.token_endpoint_auth_method,
            metadata_url=opts.client_metadata_url,
            name=opts.client_name,
            redirect_uri=opts.redirect_uri,
            dynamic=opts.dynamic_registration,
        )
        self.scopes = tuple(opts.scopes)
        self.grant: Grants = opts.grant
        self.handler = opts.handler if opts.handler is not None else default_handler()
        self.store: TokenStore = opts.store if opts.store is not None else MemoryTokenStore()
        self.authorization_server = opts.authorization_server
        self.timeout = opts.timeout
        self.leeway = opts.leeway
        self.jwt_alg = opts.jwt_alg
        self._clock = opts.clock
        self._http = HTTPTransport(timeout=opts.timeout)
        self._lock = threading.RLock()
        self._bindings: dict[str, Binding] = {}
        self._hints: dict[str, tuple[tuple[str, ...], str | None]] = {}

    # --- the transport hook --------------------------------------------------------------------

    def authorization(self, url: str) -> str | None:
        """``Bearer <token>`` for a request to ``url`` when we hold a token for its origin
        (refreshed first when it is about to expire), else ``None``."""
        key, secure = token_destination(url)
        with self._lock:
            binding = self._bindings.get(key)
            if binding is None or binding.token is None or not secure:
                return None
            if binding.token.expired(self.leeway, self._clock()):
                self._renew(binding)
            token = binding.token
        return None if token is None else f"Bearer {token.access_token}"

    def challenged(
        self, url: str, status: int, challenge: str | None, sent: str | None, attempt: int
    ) -> bool:
        """React to a 401 or 403 (see :class:`a2a_sync.auth.ChallengeAuth`)."""
        if status not in (401, 403):
            return False
        parsed = parse_bearer_challenge(challenge)
        with self._lock:
            binding = self._bindings.get(origin(url))
            current = bearer_header(binding)
            if current is not None and sent != current:
                return attempt <= MAX_ATTEMPTS  # another thread renewed meanwhile
            if status == 403:
                return self._step_up(url, binding, parsed)
            return self._unauthorized(url, binding, parsed, attempt)

    def hint(
        self, url: str, *, scopes: Sequence[str] = (), metadata_url: str | None = None
    ) -> None:
        """What an A2A agent card says about the protection of ``url``: the scopes of its
        security requirement (asked for when a challenge names none) and its
        authorization-server metadata URL (used when the agent publishes no
        protected-resource metadata). The A2A client calls this with the card."""
        with self._lock:
            self._hints[origin(url)] = (tuple(scopes), metadata_url)

    # --- explicit use (CLI login/logout) -------------------------------------------------------

    def login(self, url: str) -> None:
        """Obtain a token for the server at ``url`` now (without waiting for a 401)."""
        with self._lock:
            binding = self._bindings.get(origin(url))
            if binding is None or binding.token is None:
                self._unauthorized(url, binding, None, 1)

    def logout(self, url: str, *, revoke: bool = True) -> bool:
        """Forget the token for ``url`` (in memory and in the store; without a token in
        memory, discovery finds the stored grant), and first revoke its refresh token at
        the server (RFC 7009, best effort) unless ``revoke=False``. True if a token was
        held."""
        with self._lock:
            binding = self._bindings.pop(origin(url), None)
            if binding is not None:
                key, token = binding.key, binding.token
                server, client = binding.server, binding.client
            else:  # not used in this process: find the stored grant's key
                _, server, key = self._locate(url, None)
                stored = self.store.load(key)
                token = stored.token if stored is not None else None
                client = None
                if revoke and token is not None and token.refresh_token is not None:
                    # a stored grant comes with its client: no registration happens here
                    client = self._registration.choose(self._http, server, stored, self.timeout)
            if revoke and client is not None and token is not None and token.refresh_token:
                revoke_token(
                    self._http,
                    server,
                    client,
                    token.refresh_token,
                    timeout=self.timeout,
                    private_key=self._private_key,
                    jwt_alg=self.jwt_alg,
                )
            self.store.delete(key)
            return token is not None

    def close(self) -> None:
        """Close the connection pool used for OAuth requests."""
        self._http.close()

    def __repr__(self) -> str:
        return f"<OAuth {self.grant} for {sorted(self._bindings)}>"

    # --- internals -----------------------------------------------------------------------------

    def _unauthorized(
        self, url: str, binding: Binding | None, parsed: BearerChallenge | None, attempt: int
    ) -> bool:
        if not token_destination(url)[1]:
            raise AuthorizationError(
                f"refusing OAuth for {canonical_resource(url)}: tokens are sent over HTTPS "
                "only (plain HTTP only to loopback)",
                step="discovery",
            )
        if attempt > MAX_ATTEMPTS:
            raise AuthorizationError(
                f"{canonical_resource(url)} keeps answering 401; giving up after "
                f"{MAX_ATTEMPTS} attempts",
                step="resource",
            )
        if binding is not None and binding.token is not None:
            if binding.fresh and attempt > 1:
                raise AuthorizationError(
                    f"{canonical_resource(url)} refused a token {binding.server.issuer} "
                    "just issued for it; check that the server accepts this issuer and "
                    "resource (audience)",
                    step="resource",
                )
            if binding.token.refresh_token and self._refresh(binding):
                return True
            binding.token = None
            self.store.save(binding.key, Grant(None, self._registration.kept(binding.client)))
        if binding is None or (
            parsed is not None
            and parsed.resource_metadata is not None
            and parsed.resource_metadata != binding.resource.metadata_url
        ):
            binding = self._discover(url, parsed)
            if binding.token is not None:
                return True  # a stored token: try it
        if parsed is not None and parsed.scope:
            binding.scopes = union_scopes(self.scopes, parsed.scope)
        self._obtain(binding)
        return True

    def _step_up(
        self,
        url: str,
        binding: Binding | None,
        parsed: BearerChallenge | None,
    ) -> bool:
        if binding is None or parsed is None or not parsed.insufficient_scope:
            return False
        wanted = step_up_scopes(url, binding, parsed)
        logger.info("%s needs more scopes; re-authorizing for %s", binding.key.resource, wanted)
        binding.scopes = wanted
        self._obtain(binding)
        binding.step_up = (binding.token, wanted) if binding.token is not None else None
        return True

    def _locate(
        self, url: str, parsed: BearerChallenge | None
    ) -> tuple[ProtectedResource, AuthorizationServer, GrantKey]:
        header_url = parsed.resource_metadata if parsed is not None else None
        need_pkce = self.grant == "authorization_code"
        hinted = self._hints.get(origin(url), ((), None))[1]
        try:
            resource = discover_resource(self._http, url, header_url, self.timeout)
        except AuthorizationError:
            if hinted is not None:  # the A2A card names the server's metadata
                server = authorization_server_at(
                    self._http, hinted, self.timeout, need_pkce=need_pkce
                )
                resource = ProtectedResource(canonical_resource(url), (server.issuer,))
                return resource, server, self._key(server, resource)
            if self.authorization_server is None:
                raise
            resource = ProtectedResource(canonical_resource(url), (self.authorization_server,))
        preferred = [self.authorization_server] if self.authorization_server else None
        issuer = first_issuer(resource, preferred)
        server = discover_authorization_server(
            self._http, issuer, self.timeout, need_pkce=need_pkce
        )
        return resource, server, self._key(server, resource)

    def _key(self, server: AuthorizationServer, resource: ProtectedResource) -> GrantKey:
        return GrantKey(server.issuer, resource.resource, self._registration.label)

    def _discover(self, url: str, parsed: BearerChallenge | None) -> Binding:
        resource, server, key = self._locate(url, parsed)
        stored = self.store.load(key)
        client = self._registration.choose(self._http, server, stored, self.timeout)
        scopes = union_scopes(self.scopes, parsed.scope if parsed is not None else ())
        hinted = self._hints.get(origin(url), ((), None))[0]
        binding = Binding(
            resource=resource,
            server=server,
            client=client,
            key=key,
            scopes=scopes or hinted or resource.scopes_supported,
            token=stored.token if stored is not None else None,
        )
        self._bindings[origin(url)] = binding
        logger.info("%s is protected by %s", resource.resource, server.issuer)
        return binding

    def _keep(self, binding: Binding, token: Token) -> None:
        binding.token = token
        binding.fresh = True
        self.store.save(binding.key, Grant(token, self._registration.kept(binding.client)))

    def _token(self, binding: Binding, grant_type: str, step: str, **params: str) -> Token:
        return request_token(
            self._http,
            binding.server,
            binding.client,
            grant_type,
            step=step,
            timeout=self.timeout,
            private_key=self._private_key,
            jwt_alg=self.jwt_alg,
            params={"resource": binding.resource.resource, **params},
        )

    def _obtain(self, binding: Binding) -> None:
        scope = " ".join(binding.scopes)
        if self.grant == "client_credentials":
            self._keep(binding, self._token(binding, "client_credentials", "token", scope=scope))
            return
        pending = None

        def build(redirect_uri: str) -> str:
            nonlocal pending
            check_endpoint(redirect_uri, "the redirect URI", "authorization")
            pending = start_authorization(
                binding.server,
                binding.client,
                redirect_uri,
                binding.scopes,
                binding.resource.resource,
            )
            return pending.url

        callback = self.handler.authorize(build)
        if pending is None:
            raise AuthorizationError(
                "the authorization handler returned without building the authorization URL",
                step="authorization",
            )
        code = finish_authorization(
            pending, callback, iss_supported=binding.server.iss_parameter_supported
        )
        token = self._token(
            binding,
            "authorization_code",
            "token",
            code=code,
            redirect_uri=pending.redirect_uri,
            code_verifier=pending.verifier,
        )
        self._keep(binding, token)

    def _refresh(self, binding: Binding) -> bool:
        """Use the refresh token; False (and the token dropped) when it was refused."""
        token = binding.token
        assert token is not None
        assert token.refresh_token is not None
        try:
            new = self._token(
                binding, "refresh_token", "refresh", refresh_token=token.refresh_token
            )
        except AuthorizationError as exc:
            logger.info("refreshing the token for %s failed: %s", binding.key.resource, exc)
            return False
        if new.refresh_token is None:  # the server did not rotate it: keep the old one
            new = attrs.evolve(new, refresh_token=token.refresh_token)
        self._keep(binding, new)
        return True

    def _renew(self, binding: Binding) -> None:
        """Before use: refresh an expiring token, or fetch a new client-credentials one;
        else drop it (the next 401 starts the flow)."""
        token = binding.token
        assert token is not None
        if token.refresh_token and self._refresh(binding):
            return
        if self.grant == "client_credentials":
            self._obtain(binding)
            return
        binding.token = None
