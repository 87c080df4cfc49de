"""Ready-made authenticators: table lookups, no secrets in reprs."""

from __future__ import annotations

import pytest

from a2a_sync.errors import ConfigurationError
from a2a_sync.server.auth import APIKeys, BearerTokens, Principal, bearer_token


def test_bearer_tokens_map_known_tokens_to_principals() -> None:
    auth = BearerTokens({"tok-a": "alice", "tok-b": Principal("bob", {"role": "admin"})})
    assert auth({"HTTP_AUTHORIZATION": "Bearer tok-a"}) == Principal("alice")
    bob = auth({"HTTP_AUTHORIZATION": "bearer tok-b"})
    assert bob is not None
    assert bob.claims == {"role": "admin"}
    assert auth({"HTTP_AUTHORIZATION": "Bearer nope"}) is None
    assert auth({"HTTP_AUTHORIZATION": "Basic dG9rLWE="}) is None
    assert auth({}) is None
    assert "tok-a" not in repr(auth)


def test_api_keys_read_the_configured_header() -> None:
    auth = APIKeys({"k1": "svc"}, header="X-Agent-Key")
    assert auth({"HTTP_X_AGENT_KEY": "k1"}) == Principal("svc")
    assert auth({"HTTP_X_API_KEY": "k1"}) is None
    assert "k1" not in repr(auth)


def test_principal_reprs_hide_claims() -> None:
    assert "secret" not in repr(Principal("alice", {"token": "secret"}))
    assert Principal("").is_anonymous


def test_bearer_token_parsing() -> None:
    assert bearer_token({"HTTP_AUTHORIZATION": "Bearer  x "}) == "x"
    assert bearer_token({"HTTP_AUTHORIZATION": "Bearer"}) is None


@pytest.mark.parametrize("table", [{}, {"": "a"}, {"k": ""}])
def test_bad_tables_are_refused(table: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError):
        BearerTokens(table)
