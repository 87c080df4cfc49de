"""Suite-wide fixtures: a clean network environment for every test."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.support.fixtures", "tests.peers.fixtures", "tests.support.postgres"]

_PROXY_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
)


@pytest.fixture(autouse=True)
def _no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy configured in the environment must never capture requests to 127.0.0.1."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
