"""``a2a-sync login`` / ``logout`` with the file store, the system browser replaced by a
requests-driven one that follows the redirects like a real browser."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import requests

from a2a_sync.cli.commands import main
from tests.support.oauth_resource import ProtectedResource
from tests.support.oauth_server import AuthorizationServerFixture


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    opened: list[str] = []

    def open_url(url: str) -> bool:
        opened.append(url)
        assert requests.get(url, timeout=10).status_code == 200  # lands on the listener
        return True

    monkeypatch.setattr("webbrowser.open", open_url)
    return opened


def test_login_then_logout(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    browser: list[str],
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    assert main(["login", resource.url, "--token-dir", str(tmp_path), "--json"], stdout=out) == 0
    assert json.loads(out.getvalue()) == {"logged_in": resource.url}
    assert len(browser) == 1
    (stored,) = tmp_path.iterdir()
    assert stored.stat().st_mode & 0o777 == 0o600

    out = io.StringIO()
    assert main(["logout", resource.url, "--token-dir", str(tmp_path), "--json"], stdout=out) == 0
    assert json.loads(out.getvalue()) == {"logged_out": resource.url, "had_token": True}
    assert not list(tmp_path.iterdir())
    assert len(authorization_server.registrations) == 1  # logout registered nothing
    assert all(record.revoked for record in authorization_server.refresh.values())


def test_login_failure_is_one_line_and_an_exit_code(
    authorization_server: AuthorizationServerFixture,
    resource: ProtectedResource,
    browser: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    authorization_server.pkce_methods = []
    assert main(["login", resource.url, "--token-dir", str(tmp_path)]) != 0
    err = capsys.readouterr().err
    assert err.startswith("a2a-sync: AuthorizationError:")
    assert "S256" in err
    assert not browser
