"""Discovery: the RFC 9728 and RFC 8414/OIDC orders (pure and against recording servers),
issuer and resource checks, PKCE support, and metadata endpoints that misbehave."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from a2a_sync.auth.oauth import OAuth
from a2a_sync.auth.oauth.challenge import parse_bearer_challenge
from a2a_sync.auth.oauth.discovery import as_metadata_urls, prm_urls
from a2a_sync.auth.oauth.urls import canonical_resource
from a2a_sync.errors import AuthorizationError
from tests.auth.oauth.conftest import Approve, call
from tests.support.fixtures import ScriptedServerFactory
from tests.support.oauth_resource import PRM, ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture, Client
from tests.support.servers import hold, respond

# --- pure ---------------------------------------------------------------------------------------


def test_prm_order_header_then_path_aware_then_root() -> None:
    assert prm_urls("https://h.example/public/mcp?x=1", "https://h.example/meta") == [
        "https://h.example/meta",
        "https://h.example/.well-known/oauth-protected-resource/public/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert prm_urls("https://h.example/", None) == [
        "https://h.example/.well-known/oauth-protected-resource"
    ]


def test_as_metadata_order_with_and_without_an_issuer_path() -> None:
    assert as_metadata_urls("https://auth.example.com/tenant1") == [
        "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
        "https://auth.example.com/.well-known/openid-configuration/tenant1",
        "https://auth.example.com/tenant1/.well-known/openid-configuration",
    ]
    assert as_metadata_urls("https://auth.example.com") == [
        "https://auth.example.com/.well-known/oauth-authorization-server",
        "https://auth.example.com/.well-known/openid-configuration",
    ]


def test_canonical_resource() -> None:
    assert canonical_resource("HTTPS://MCP.Example.com:443/Server/mcp?q=1#f") == (
        "https://mcp.example.com/Server/mcp"
    )
    assert canonical_resource("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"


def test_bearer_challenge_parsing() -> None:
    parsed = parse_bearer_challenge(
        'Basic realm="x", Bearer error="insufficient_scope", scope="a b", '
        'resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"'
    )
    assert parsed is not None
    assert parsed.insufficient_scope
    assert parsed.scope == ("a", "b")
    assert parsed.resource_metadata == "https://h/.well-known/oauth-protected-resource/mcp"
    assert parse_bearer_challenge("Negotiate abc") is None
    assert parse_bearer_challenge("Bearer " + "x" * 10_000) is None


# --- against recording servers ------------------------------------------------------------------


def test_without_a_header_the_path_aware_prm_comes_before_the_root_one(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    resource.header_metadata = False
    resource.prm_at = "root"

    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok

    wells = [p for p in resource.paths if p.startswith(PRM)]
    assert wells == [f"{PRM}/api", PRM]


def test_the_header_metadata_url_is_used_first(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok
    assert [p for p in resource.paths if p.startswith(PRM)] == [f"{PRM}/api"]


@pytest.mark.parametrize(
    ("metadata_at", "expected"),
    [
        ("oauth", ["/.well-known/oauth-authorization-server/tenant1"]),
        (
            "oidc",
            [
                "/.well-known/oauth-authorization-server/tenant1",
                "/.well-known/openid-configuration/tenant1",
            ],
        ),
        (
            "oidc-append",
            [
                "/.well-known/oauth-authorization-server/tenant1",
                "/.well-known/openid-configuration/tenant1",
                "/tenant1/.well-known/openid-configuration",
            ],
        ),
    ],
)
def test_authorization_server_metadata_order(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    metadata_at: str,
    expected: list[str],
) -> None:
    authorization_server.metadata_at = metadata_at

    assert call(make_oauth(handler=Approve(authorization_server)), resource.url).ok

    assert [p for p in authorization_server.paths if ".well-known" in p] == expected


# --- refusals -------------------------------------------------------------------------------------


def test_metadata_with_another_issuer_is_refused(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.advertised_issuer = "https://evil.example/tenant1"
    with pytest.raises(AuthorizationError, match="names issuer") as caught:
        call(make_oauth(handler=Approve(authorization_server)), resource.url)
    assert caught.value.step == "discovery"
    assert not authorization_server.registrations


@pytest.mark.parametrize("methods", [[], ["plain"]])
def test_an_authorization_server_without_s256_is_refused(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    methods: list[str],
) -> None:
    authorization_server.pkce_methods = methods
    approve = Approve(authorization_server)
    with pytest.raises(AuthorizationError, match="S256") as caught:
        call(make_oauth(handler=approve), resource.url)
    assert caught.value.step == "discovery"
    assert not approve.urls


def test_client_credentials_do_not_need_pkce(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.pkce_methods = []
    authorization_server.add_client(
        Client("svc", "pw", "client_secret_basic", grant_types=["client_credentials"])
    )
    oauth = make_oauth(client_id="svc", client_secret="pw", grant="client_credentials")
    assert call(oauth, resource.url).ok


def test_resource_metadata_for_another_resource_is_refused(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    resource.resource_override = "https://elsewhere.example/api"
    with pytest.raises(AuthorizationError, match="RFC 9728"):
        call(make_oauth(handler=Approve(authorization_server)), resource.url)


def test_no_resource_metadata_anywhere_names_what_was_tried(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    resource.prm_at = "none"
    resource.header_metadata = False
    with pytest.raises(AuthorizationError, match="no protected-resource metadata") as caught:
        call(make_oauth(handler=Approve(authorization_server)), resource.url)
    assert "HTTP 404" in str(caught.value)


def test_html_metadata_is_not_taken(
    scripted_server: ScriptedServerFactory, make_oauth: Callable[..., OAuth]
) -> None:
    def handler(sock: object, request: object) -> None:
        page = b"<html><body>Sign in</body></html>"
        if getattr(request, "path", "").startswith("/.well-known"):
            respond(sock, 200, page, headers={"Content-Type": "text/html"})  # type: ignore[arg-type]
        else:
            respond(sock, 401, b"", headers={"WWW-Authenticate": "Bearer"})  # type: ignore[arg-type]

    server = scripted_server(handler)  # type: ignore[arg-type]
    with pytest.raises(AuthorizationError, match="not JSON"):
        call(make_oauth(handler=Approve(None)), f"{server.url}/mcp")  # type: ignore[arg-type]


def test_a_metadata_endpoint_that_never_answers_times_out(
    scripted_server: ScriptedServerFactory, make_oauth: Callable[..., OAuth]
) -> None:
    release = threading.Event()

    def handler(sock: object, request: object) -> None:
        if getattr(request, "path", "").startswith("/.well-known"):
            hold(release)
        else:
            respond(sock, 401, b"", headers={"WWW-Authenticate": "Bearer"})  # type: ignore[arg-type]

    server = scripted_server(handler)  # type: ignore[arg-type]
    oauth = make_oauth(handler=Approve(None), timeout=0.5)  # type: ignore[arg-type]
    try:
        with pytest.raises(AuthorizationError, match="timeout bounds every step") as caught:
            call(oauth, f"{server.url}/mcp")
    finally:
        release.set()
    assert caught.value.step == "discovery"


def test_oversized_metadata_is_refused(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.metadata_extra = {"padding": "x" * 400_000}
    with pytest.raises(
        AuthorizationError, match=r"authorization-server metadata .* failed: .*(large|bytes)"
    ):
        call(make_oauth(handler=Approve(authorization_server)), resource.url)


def test_plain_http_to_a_remote_host_is_refused_before_any_request(
    make_oauth: Callable[..., OAuth],
) -> None:
    oauth = make_oauth(handler=Approve(None))  # type: ignore[arg-type]
    assert oauth.authorization("http://example.com/mcp") is None
    with pytest.raises(AuthorizationError, match="HTTPS only"):
        oauth.challenged("http://example.com/mcp", 401, "Bearer", None, 1)
