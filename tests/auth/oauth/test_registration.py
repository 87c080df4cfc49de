"""Client registration paths, in the spec's order: pre-registered, Client ID Metadata
Document, dynamic registration; and what happens when none is possible."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from a2a_sync.auth.oauth import OAuth
from a2a_sync.errors import AuthorizationError, ConfigurationError
from tests.auth.oauth.conftest import Approve, call
from tests.support.fixtures import WsgiServerFactory
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture, Client


def _client_id(url: str) -> str:
    return parse_qs(urlsplit(url).query)["client_id"][0]


def test_a_pre_registered_client_is_used_first(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.cimd = True
    authorization_server.add_client(Client("pre", None, "none", ["http://127.0.0.1/callback"]))
    approve = Approve(authorization_server)
    oauth = make_oauth(
        client_id="pre", client_metadata_url="https://unused.example/c.json", handler=approve
    )

    assert call(oauth, resource.url).ok

    assert [_client_id(u) for u in approve.urls] == ["pre"]
    assert not authorization_server.registrations


def test_a_client_id_metadata_document_when_the_server_supports_them(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    wsgi_server: WsgiServerFactory,
) -> None:
    holder: dict[str, str] = {}

    def document(environ: Any, start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = json.dumps(
            {
                "client_id": holder["url"],
                "client_name": "a2a-sync test",
                "redirect_uris": ["http://127.0.0.1/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            }
        ).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body]

    holder["url"] = wsgi_server(document) + "/oauth/client.json"
    authorization_server.cimd = True
    approve = Approve(authorization_server)
    oauth = make_oauth(client_metadata_url=holder["url"], handler=approve)

    assert call(oauth, resource.url).ok

    assert [_client_id(u) for u in approve.urls] == [holder["url"]]
    assert not authorization_server.registrations


def test_without_cimd_support_dynamic_registration_is_used(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    approve = Approve(authorization_server)
    oauth = make_oauth(client_metadata_url="https://unused.example/c.json", handler=approve)

    assert call(oauth, resource.url).ok

    (registration,) = authorization_server.registrations
    assert registration["application_type"] == "native"
    assert registration["redirect_uris"] == ["http://127.0.0.1/callback"]
    assert _client_id(approve.urls[0]) in authorization_server.clients


def test_no_way_to_register_is_a_registration_error(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.dcr = False
    with pytest.raises(AuthorizationError, match="pass client_id") as caught:
        call(make_oauth(handler=Approve(authorization_server)), resource.url)
    assert caught.value.step == "registration"


def test_a_refused_registration_names_the_reason(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    oauth = make_oauth(handler=Approve(authorization_server), redirect_uri="not a uri")
    with pytest.raises(AuthorizationError, match="refused the dynamic registration") as caught:
        call(oauth, resource.url)
    assert caught.value.step == "registration"


def test_configuration_is_checked_up_front() -> None:
    with pytest.raises(ConfigurationError, match="pre-registered"):
        OAuth(grant="client_credentials")
    with pytest.raises(AuthorizationError, match="needs a path"):
        OAuth(client_metadata_url="https://client.example")
    with pytest.raises(AuthorizationError, match="HTTPS"):
        OAuth(client_metadata_url="http://client.example/c.json")
