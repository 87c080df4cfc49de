"""HTTP Basic credentials for an agent whose card declares an HTTP ``basic`` scheme
(issue 16: the client picks a credential for every scheme a card can declare)."""

from __future__ import annotations

import base64
from typing import Any

import attrs
import pytest

from a2a_sync.client import A2AClient, BasicAuth
from a2a_sync.errors import ConfigurationError, HTTPStatusError
from a2a_sync.server import A2AApplication, Principal, serve_in_thread
from a2a_sync.types import HTTPAuthSecurityScheme, Task
from tests.server.agents import EchoAgent, card

_EXPECTED = "Basic " + base64.b64encode(b"ada:s3cret").decode()


def _authenticate(environ: dict[str, Any]) -> Principal | None:
    return Principal("ada") if environ.get("HTTP_AUTHORIZATION") == _EXPECTED else None


@pytest.fixture
def url() -> Any:
    basic = attrs.evolve(
        card(),
        supported_interfaces=[],
        security_schemes={"basic": HTTPAuthSecurityScheme(scheme="basic")},
        security_requirements=[{"basic": []}],
    )
    app = A2AApplication(basic, EchoAgent(), authenticate=_authenticate)
    try:
        with serve_in_thread(app) as served:
            yield served
    finally:
        app.close()


def test_basic_credentials_reach_an_agent_that_declares_basic(url: str) -> None:
    with A2AClient.from_url(url, credentials=BasicAuth("ada", "s3cret")) as client:
        task = client.send_message("hello")
    assert isinstance(task, Task)
    assert task.text == "echo: hello"


def test_wrong_basic_credentials_are_refused(url: str) -> None:
    with (
        A2AClient.from_url(url, credentials=BasicAuth("ada", "wrong")) as client,
        pytest.raises(HTTPStatusError) as refused,
    ):
        client.send_message("hello")
    assert refused.value.status_code == 401


def test_the_password_never_shows_and_a_colon_in_the_user_is_refused() -> None:
    assert "s3cret" not in repr(BasicAuth("ada", "s3cret"))
    with pytest.raises(ConfigurationError):
        BasicAuth("a:da", "x").headers(None)
