"""``OAuthOptions``: how an :class:`~a2a_sync.auth.oauth.OAuth` client registers, asks
for and keeps tokens, as one frozen value.

``OAuth(client_id=..., scopes=[...])`` applies its keywords onto an :class:`OAuthOptions`
with :meth:`OAuthOptions.evolve`; an unknown keyword is a
:class:`~a2a_sync.errors.ConfigurationError` naming the closest option. Secrets
(``client_secret``, ``private_key``) are not shown in reprs.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from ...errors import ConfigurationError
from .handlers import AuthorizationHandler
from .tokens import TokenStore

__all__ = ["DEFAULT_LEEWAY", "DEFAULT_TIMEOUT", "Grants", "OAuthOptions", "resolve_oauth_options"]

#: Default bound of every OAuth network step (one metadata fetch, one token request).
DEFAULT_TIMEOUT: Final = 30.0
#: A token is refreshed this many seconds before it expires.
DEFAULT_LEEWAY: Final = 30.0
Grants = Literal["authorization_code", "client_credentials"]


@attrs.frozen(kw_only=True)
class OAuthOptions:
    """The settings of an OAuth client. Immutable; derive variants with :meth:`evolve`.

    Attributes:
        client_id: A pre-registered client (used first when given).
        client_secret: Its secret (``client_secret_basic``/``client_secret_post``).
        private_key: Its private key for ``private_key_jwt`` (PEM or a joserfc key).
        token_endpoint_auth_method: ``none``, ``client_secret_basic``,
            ``client_secret_post`` or ``private_key_jwt``; chosen from what was given and
            what the server supports when omitted.
        client_metadata_url: An HTTPS URL serving this client's Client ID Metadata
            Document, used when the server supports them and no ``client_id`` is given.
        client_name: Name sent with dynamic registration.
        scopes: Scopes to ask for in addition to those the server challenges for (by
            default, the challenge's, else the resource metadata's ``scopes_supported``).
        grant: ``"authorization_code"`` (a person approves) or ``"client_credentials"``
            (machine to machine; needs a pre-registered client).
        handler: The browser step (:mod:`a2a_sync.auth.oauth.handlers`); by default a
            notebook, script or headless handler depending on where this runs.
        store: Where grants are kept (default: in memory; ``FileTokenStore`` to keep
            them between runs).
        authorization_server: Issuer to prefer (or to use when the resource publishes no
            metadata).
        dynamic_registration: Allow RFC 7591 registration as the last resort.
        redirect_uri: Redirect URI registered for loopback handlers (any port is used at
            request time, RFC 8252 §7.3).
        timeout: Bound of each OAuth network step, in seconds.
        leeway: Refresh this many seconds before expiry.
        jwt_alg: Signing algorithm of ``private_key_jwt`` assertions.
        clock: Wall clock for expiry checks (tests inject one).
    """

    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    private_key: Any = attrs.field(default=None, repr=False)
    token_endpoint_auth_method: str | None = None
    client_metadata_url: str | None = None
    client_name: str = "a2a-sync"
    scopes: Sequence[str] = ()
    grant: Grants = "authorization_code"
    handler: AuthorizationHandler | None = None
    store: TokenStore | None = None
    authorization_server: str | None = None
    dynamic_registration: bool = True
    redirect_uri: str = "http://127.0.0.1/callback"
    timeout: float = DEFAULT_TIMEOUT
    leeway: float = DEFAULT_LEEWAY
    jwt_alg: str = "RS256"
    clock: Callable[[], float] = time.time

    def evolve(self, **changes: Any) -> OAuthOptions:
        """A copy with ``changes`` (names of this class's attributes).

        Raises:
            ConfigurationError: A name is no option (the message names the closest).
        """
        for name in changes:
            if name not in _NAMES:
                close = difflib.get_close_matches(name, sorted(_NAMES | {"options"}), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigurationError(
                    f"unknown OAuth option {name!r}{hint}; the options are: "
                    f"{', '.join(sorted(_NAMES))}"
                )
        return attrs.evolve(self, **changes) if changes else self


_NAMES: Final = frozenset(a.name for a in attrs.fields(OAuthOptions))


def resolve_oauth_options(
    options: OAuthOptions | None, overrides: Mapping[str, Any]
) -> OAuthOptions:
    """``options`` (default: all defaults) with the keyword ``overrides`` applied."""
    return (options or OAuthOptions()).evolve(**overrides)
