"""End to end against the authlib test authorization server: authorization code + PKCE,
client credentials with each client authentication, refresh with rotation, step-up."""

from __future__ import annotations

import time
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

import pytest
from joserfc.jwk import RSAKey

from a2a_sync.auth.oauth import OAuth
from a2a_sync.errors import InsufficientScope, TokenEndpointError
from tests.auth.oauth.conftest import Approve, call
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture, Client


def test_authorization_code_with_pkce_dcr_resource_and_iss(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    response = call(oauth, resource.url)

    assert response.status_code == 200, response.text
    assert response.json()["sub"] == "alice"
    # One dynamic registration, native, for the loopback redirect.
    (registration,) = authorization_server.registrations
    assert registration["application_type"] == "native"
    assert registration["token_endpoint_auth_method"] == "none"
    # The authorization request: PKCE S256, state, resource, the PRM scopes.
    (url,) = approve.urls
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert query["resource"] == resource.url
    assert query["scope"] == "read"
    assert query["state"]
    # The token request carries the verifier and the resource too.
    (form,) = authorization_server.token_requests
    assert form["grant_type"] == "authorization_code"
    assert form["resource"] == resource.url
    assert form["code_verifier"]
    claims = authorization_server.decode(
        resource.authorizations[-1].removeprefix("Bearer ")  # type: ignore[union-attr]
    )
    assert claims["aud"] == resource.url
    assert claims["iss"] == authorization_server.issuer


def test_the_second_call_reuses_the_token_without_a_401(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    oauth = make_oauth(handler=Approve(authorization_server))
    assert call(oauth, resource.url).status_code == 200
    unauthorized = resource.authorizations.count(None)

    assert call(oauth, resource.url).status_code == 200

    assert resource.authorizations.count(None) == unauthorized
    assert len(authorization_server.token_requests) == 1


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_client_credentials_with_a_secret(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    method: str,
) -> None:
    authorization_server.add_client(
        Client("svc", "s3cret:/+ x", method, grant_types=["client_credentials"])
    )
    oauth = make_oauth(
        client_id="svc",
        client_secret="s3cret:/+ x",
        token_endpoint_auth_method=method,
        grant="client_credentials",
    )

    response = call(oauth, resource.url)

    assert response.status_code == 200, response.text
    assert response.json()["sub"] == "svc"
    (form,) = authorization_server.token_requests
    assert form["grant_type"] == "client_credentials"
    assert form["resource"] == resource.url
    assert ("client_secret" in form) is (method == "client_secret_post")


def test_client_credentials_with_private_key_jwt(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    key = RSAKey.generate_key(2048)
    authorization_server.add_client(
        Client(
            "svc-jwt",
            None,
            "private_key_jwt",
            grant_types=["client_credentials"],
            public_key=RSAKey.import_key(key.as_dict(private=False)),
        )
    )
    oauth = make_oauth(client_id="svc-jwt", private_key=key, grant="client_credentials")

    assert call(oauth, resource.url).status_code == 200
    (form,) = authorization_server.token_requests
    assert form["client_assertion_type"].endswith(":jwt-bearer")
    assert "client_secret" not in form


def test_an_expired_token_is_refreshed_and_the_refresh_token_rotates(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    later = [0.0]
    oauth = make_oauth(handler=Approve(authorization_server), clock=lambda: time.time() + later[0])
    assert call(oauth, resource.url).status_code == 200
    later[0] = 3600.0  # the token's lifetime
    first_refresh = authorization_server.token_requests[0]
    old = [t for t, r in authorization_server.refresh.items() if not r.revoked]
    assert len(old) == 1

    assert call(oauth, resource.url).status_code == 200

    refreshes = [
        f for f in authorization_server.token_requests if f["grant_type"] == "refresh_token"
    ]
    assert len(refreshes) == 1
    assert refreshes[0]["refresh_token"] == old[0]
    assert refreshes[0]["resource"] == resource.url
    assert authorization_server.refresh[old[0]].revoked  # rotated: the old one is dead
    assert first_refresh["grant_type"] == "authorization_code"

    # And the rotated one is what the next refresh uses.
    later[0] = 7200.0
    assert call(oauth, resource.url).status_code == 200
    refreshes = [
        f for f in authorization_server.token_requests if f["grant_type"] == "refresh_token"
    ]
    assert len(refreshes) == 2
    assert refreshes[1]["refresh_token"] != old[0]


def test_a_revoked_refresh_token_leads_to_a_new_authorization(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    later = [0.0]
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve, clock=lambda: time.time() + later[0])
    assert call(oauth, resource.url).status_code == 200
    authorization_server.revoke_all_refresh_tokens()
    later[0] = 3600.0

    assert call(oauth, resource.url).status_code == 200

    assert len(approve.urls) == 2  # refresh refused (invalid_grant), so a person approved again


def test_step_up_on_insufficient_scope_once_then_a_clear_error(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    resource.required = {"/api": ["read", "write"]}
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    assert call(oauth, resource.url).status_code == 200

    scopes = [parse_qs(urlsplit(u).query)["scope"][0] for u in approve.urls]
    assert scopes == ["read", "read write"]  # the union of requested and challenged

    # A scope the server will not grant: one re-authorization, then a clear error.
    authorization_server.grantable = {"read", "write"}
    resource.required = {"/api": ["admin"]}
    with pytest.raises(InsufficientScope, match="did not grant") as caught:
        call(oauth, resource.url)
    assert caught.value.step == "resource"
    assert "admin" in caught.value.scopes
    assert len(approve.urls) == 3


def test_client_credentials_with_a_wrong_secret_is_a_token_endpoint_error(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.add_client(
        Client("svc", "right", "client_secret_basic", grant_types=["client_credentials"])
    )
    oauth = make_oauth(client_id="svc", client_secret="wrong", grant="client_credentials")

    with pytest.raises(TokenEndpointError) as caught:
        call(oauth, resource.url)

    assert caught.value.error == "invalid_client"
    assert "wrong" not in str(caught.value)
