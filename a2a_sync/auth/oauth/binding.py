"""What the OAuth client knows about one protected origin, and the scope decisions made on
it: the protected resource, its authorization server, the client registered there, the
grant's key in the token store, the scopes asked for and the token held.

:class:`~a2a_sync.auth.oauth.client.OAuth` keeps one :class:`Binding` per origin (under its
lock); :func:`step_up_scopes` decides whether a 403 ``insufficient_scope`` is worth another
authorization (MCP 2026-07-28: with the union of the scopes asked before and challenged for).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ...errors import InsufficientScope
from .challenge import BearerChallenge
from .discovery import AuthorizationServer, ProtectedResource
from .tokens import ClientInfo, GrantKey, Token
from .urls import canonical_resource

__all__ = ["Binding", "bearer_header", "step_up_scopes", "union_scopes"]


@attrs.define
class Binding:
    """What we know about one protected origin."""

    resource: ProtectedResource
    server: AuthorizationServer
    client: ClientInfo
    key: GrantKey
    scopes: tuple[str, ...]
    token: Token | None = None
    fresh: bool = False  # the token came from the token endpoint during this challenge
    #: The token a step-up obtained and the scopes it asked for.
    step_up: tuple[Token, tuple[str, ...]] | None = None


def union_scopes(*groups: Sequence[str]) -> tuple[str, ...]:
    """Every scope of ``groups``, once, in first-seen order."""
    return tuple(dict.fromkeys(scope for group in groups for scope in group))


def bearer_header(binding: Binding | None) -> str | None:
    """The ``Authorization`` value the binding's token makes (``None`` without a token)."""
    if binding is None or binding.token is None:
        return None
    return f"Bearer {binding.token.access_token}"


def step_up_scopes(url: str, binding: Binding, challenge: BearerChallenge) -> tuple[str, ...]:
    """The scopes to re-authorize with after ``challenge`` (an ``insufficient_scope``
    refusal of a request to ``url``).

    Raises:
        InsufficientScope: The token has (or a step-up already asked for) every scope
            wanted: another login would not help.
    """
    # MCP 2026-07-28: the union of what was asked before and what is challenged for.
    wanted = union_scopes(binding.scopes, challenge.scope or binding.resource.scopes_supported)
    token = binding.token
    granted = token.scope if token is not None and token.scope else binding.scopes
    stepped = binding.step_up
    if (token is not None and set(wanted) <= set(token.scope)) or (
        stepped is not None and stepped[0] is token and set(wanted) <= set(stepped[1])
    ):
        raise InsufficientScope(
            f"{canonical_resource(url)} refuses with insufficient_scope although the "
            f"token was issued for {list(granted)} (wanted {list(wanted)})"
            + (f": {challenge.error_description}" if challenge.error_description else "")
            + "; the authorization server did not grant the scopes the operation needs, "
            "ask its operator",
            scopes=wanted,
        )
    return wanted
