"""JWTVerifier on its own: what it refuses, and its JWKS fetching."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, OctKey, RSAKey

from a2a_sync.auth.verify import JWTVerifier
from a2a_sync.errors import AuthorizationError, ConfigurationError
from tests.support.fixtures import WsgiServerFactory

ISS = "https://as.example/t"
AUD = "https://rs.example/a2a"
KEY = RSAKey.generate_key(2048, parameters={"kid": "k1"})


def _token(key: Any = KEY, alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    payload = {"iss": ISS, "aud": AUD, "sub": "alice", "iat": now, "exp": now + 300, **claims}
    return jwt.encode({"alg": alg, "typ": "at+jwt", "kid": "k1"}, payload, key)


def _verifier(**options: Any) -> JWTVerifier:
    keys = KeySet([KEY]).as_dict(private=False)
    return JWTVerifier(issuer=ISS, audience=AUD, keys=keys, **options)


def test_a_valid_token_gives_its_claims() -> None:
    assert _verifier(require_at_jwt=True).verify(_token())["sub"] == "alice"


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (lambda: _token(iss="https://evil.example"), "refused"),
        (lambda: _token(aud="https://other.example"), "refused"),
        (lambda: _token(exp=int(time.time()) - 3600), "refused"),
        (lambda: _token(key=RSAKey.generate_key(2048, parameters={"kid": "k1"})), "signature"),
        (lambda: _token(key=OctKey.generate_key(256), alg="HS256"), "signature"),
        (lambda: "not-a-jwt", "signature"),
    ],
    ids=["issuer", "audience", "expired", "other-key", "hmac", "garbage"],
)
def test_bad_tokens_are_refused_without_echoing_them(token: Any, message: str) -> None:
    value = token()
    with pytest.raises(AuthorizationError, match=message) as caught:
        _verifier().verify(value)
    assert caught.value.step == "verify"
    assert value not in str(caught.value)


def test_the_leeway_and_the_clock() -> None:
    token = _token(exp=int(time.time()) - 10)
    assert _verifier(leeway=30).verify(token)["sub"] == "alice"
    with pytest.raises(AuthorizationError):
        _verifier(leeway=30, clock=lambda: time.time() + 60).verify(token)


def test_keys_come_from_the_jwks_uri_once(wsgi_server: WsgiServerFactory) -> None:
    fetches: list[str] = []

    def jwks(environ: Any, start_response: Any) -> Iterable[bytes]:
        fetches.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(KeySet([KEY]).as_dict(private=False)).encode()]

    base = wsgi_server(jwks)
    verifier = JWTVerifier(issuer=ISS, audience=AUD, jwks_uri=f"{base}/jwks")
    try:
        for _ in range(3):
            assert verifier.verify(_token())["sub"] == "alice"
    finally:
        verifier.close()
    assert fetches == ["/jwks"]


def test_an_unreachable_jwks_is_an_authorization_error() -> None:
    verifier = JWTVerifier(issuer=ISS, audience=AUD, jwks_uri="http://127.0.0.1:9/jwks", timeout=2)
    try:
        with pytest.raises(AuthorizationError, match="fetching the JWKS"):
            verifier.verify(_token())
    finally:
        verifier.close()


def test_exactly_one_key_source() -> None:
    with pytest.raises(ConfigurationError):
        JWTVerifier(issuer=ISS, audience=AUD)
