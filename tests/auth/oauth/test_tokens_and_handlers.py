"""Token storage (memory, 0600 files) and the browser handlers (loopback listener,
script, notebook timeout, headless)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
import requests

from a2a_sync.auth.oauth import (
    FileTokenStore,
    Grant,
    GrantKey,
    HeadlessHandler,
    LoopbackListener,
    NotebookHandler,
    OAuth,
    ScriptHandler,
    Token,
)
from a2a_sync.auth.oauth.tokens import ClientInfo
from a2a_sync.errors import AuthorizationError, AuthorizationRequired
from tests.auth.oauth.conftest import Approve, call
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture

KEY = GrantKey("https://as.example/t", "https://rs.example/mcp", "dcr:a2a-sync")


def test_token_repr_hides_secrets() -> None:
    token = Token("access-secret", refresh_token="refresh-secret", scope=("read",))
    client = ClientInfo("cid", "client-secret", "client_secret_basic")
    assert "secret" not in repr(token)
    assert "client-secret" not in repr(client)


def test_file_store_round_trip_with_owner_only_permissions(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "oauth")
    grant = Grant(Token("a", expires_at=5.0, refresh_token="r", scope=("x", "y")), None)

    store.save(KEY, grant)

    path = store.path(KEY)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.load(KEY) == grant
    other = GrantKey(KEY.issuer, KEY.resource, "other-client")
    assert store.path(other) != path  # one file per issuer + resource + client
    assert store.load(other) is None
    store.delete(KEY)
    assert store.load(KEY) is None


def test_file_store_ignores_a_file_others_can_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = FileTokenStore(tmp_path)
    store.save(KEY, Grant(Token("a"), None))
    os.chmod(store.path(KEY), 0o644)

    assert store.load(KEY) is None
    assert "chmod 600" in caplog.text


def test_a_second_run_with_a_file_store_does_not_log_in_again(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    tmp_path: Path,
) -> None:
    first = Approve(authorization_server)
    assert call(make_oauth(handler=first, store=FileTokenStore(tmp_path)), resource.url).ok
    second = Approve(authorization_server)

    assert call(make_oauth(handler=second, store=FileTokenStore(tmp_path)), resource.url).ok

    assert len(first.urls) == 1
    assert not second.urls
    assert len(authorization_server.registrations) == 1  # the registration was kept too


def test_a_stale_stored_token_is_refreshed(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    tmp_path: Path,
) -> None:
    assert call(
        make_oauth(handler=Approve(authorization_server), store=FileTokenStore(tmp_path)),
        resource.url,
    ).ok
    authorization_server.key = type(authorization_server.key).generate_key(
        2048, parameters={"kid": "k2"}
    )  # the resource now refuses every old token
    second = Approve(authorization_server)

    assert call(make_oauth(handler=second, store=FileTokenStore(tmp_path)), resource.url).ok

    assert not second.urls  # refreshed, no new login
    assert authorization_server.token_requests[-1]["grant_type"] == "refresh_token"


def test_logout_forgets_the_stored_grant(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
    tmp_path: Path,
) -> None:
    oauth = make_oauth(handler=Approve(authorization_server), store=FileTokenStore(tmp_path))
    oauth.login(resource.url)
    assert list(tmp_path.iterdir())

    (refresh,) = authorization_server.refresh

    assert oauth.logout(resource.url)

    assert not list(tmp_path.iterdir())
    assert oauth.authorization(resource.url) is None
    assert authorization_server.refresh[refresh].revoked  # RFC 7009 at the server too
    assert authorization_server.paths[-1] == "/tenant1/revoke"


def test_loopback_listener_catches_the_redirect() -> None:
    with LoopbackListener() as listener:
        assert listener.redirect_uri.startswith("http://127.0.0.1:")
        response = requests.get(listener.redirect_uri + "?code=c&state=s", timeout=10)
        assert response.status_code == 200
        assert listener.wait(10).endswith("/callback?code=c&state=s")


def test_script_handler_end_to_end_through_the_loopback_listener(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    make_oauth: Callable[..., OAuth],
) -> None:
    opened: list[str] = []

    def browser(url: str) -> bool:  # the "browser": follows every redirect, like a real one
        opened.append(url)
        assert requests.get(url, timeout=10).status_code == 200
        return True

    oauth = make_oauth(handler=ScriptHandler(timeout=30, open_browser=browser))

    assert call(oauth, resource.url).ok
    assert len(opened) == 1


def test_notebook_handler_waits_a_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []
    monkeypatch.setattr("a2a_sync.auth.oauth.handlers._show_link", shown.append)
    with pytest.raises(AuthorizationError, match=r"no authorization arrived within 0\.2 s"):
        NotebookHandler(timeout=0.2).authorize(
            lambda redirect: f"https://as.example/a?r={redirect}"
        )
    assert shown
    assert "127.0.0.1" in shown[0]


def test_headless_handler_raises_with_the_url() -> None:
    with pytest.raises(AuthorizationRequired) as caught:
        HeadlessHandler().authorize(lambda redirect: f"https://as.example/a?r={redirect}")
    assert caught.value.authorization_url.startswith("https://as.example/a?r=http://127.0.0.1")
