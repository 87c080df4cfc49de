"""Credentials: bearer tokens and API keys go only to the origin they belong to, in the
header the card names (validated), are refreshed once on 401, and never show up in
reprs, logs or exception messages (reliability-cases SEC-01, SEC-02, CT-10, CT-11)."""

from __future__ import annotations

import logging
import pickle
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import responses

from a2a_sync.client import A2AClient, APIKey, BearerToken
from a2a_sync.client.auth import OriginBoundCredentials, origin_of
from a2a_sync.errors import (
    ConfigurationError,
    HTTPStatusError,
    RedirectRefused,
    TaskNotFound,
)
from a2a_sync.types import AuthenticationInfo, PushNotificationConfig
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond, respond_json

from .fakes import CARD_URL, RPC_URL, TASK_1_0, FakeAgent, card_json

SECRET = "s3cr3t-t0ken-value"


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def api_key_card(name: str, location: str = "header") -> dict[str, Any]:
    return card_json(
        (RPC_URL, "JSONRPC", "1.0"),
        securitySchemes={"key": {"apiKeySecurityScheme": {"location": location, "name": name}}},
    )


# -- which header ------------------------------------------------------------------------------


def test_bearer_token_is_sent_as_authorization(rsps: responses.RequestsMock) -> None:
    agent = FakeAgent(rsps)
    agent.results["GetTask"] = TASK_1_0
    with A2AClient.from_url(agent.base_url, credentials=BearerToken(SECRET)) as client:
        client.get_task("t1")
    assert agent.calls[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert "Authorization" not in rsps.calls[0].request.headers  # the public card fetch


def test_token_callable_is_asked_per_request(rsps: responses.RequestsMock) -> None:
    agent = FakeAgent(rsps)
    agent.results["GetTask"] = TASK_1_0
    tokens = iter(["one", "two"])
    with A2AClient.from_url(agent.base_url, credentials=BearerToken(lambda: next(tokens))) as c:
        c.get_task("t1")
        c.get_task("t1")
    assert [call.headers["Authorization"] for call in agent.calls] == ["Bearer one", "Bearer two"]


def test_api_key_goes_in_the_header_the_card_names(rsps: responses.RequestsMock) -> None:
    agent = FakeAgent(rsps, api_key_card("X-Agent-Key"))
    agent.results["GetTask"] = TASK_1_0
    with A2AClient.from_url(agent.base_url, credentials=APIKey(SECRET)) as client:
        client.get_task("t1")
    assert agent.calls[0].headers["X-Agent-Key"] == SECRET
    assert "X-API-Key" not in agent.calls[0].headers


def test_api_key_header_defaults_and_explicit_name(rsps: responses.RequestsMock) -> None:
    agent = FakeAgent(rsps)
    agent.results["GetTask"] = TASK_1_0
    with A2AClient(RPC_URL, credentials=APIKey(SECRET)) as client:
        client.get_task("t1")
    with A2AClient(RPC_URL, credentials=APIKey(SECRET, header="X-Mine")) as client:
        client.get_task("t1")
    assert agent.calls[0].headers["X-API-Key"] == SECRET
    assert agent.calls[1].headers["X-Mine"] == SECRET


@pytest.mark.parametrize(
    ("name", "location"),
    [
        ("Host", "header"),
        ("Cookie", "header"),
        ("X-Forwarded-For", "header"),
        ("Authorization", "header"),
        ("Transfer-Encoding", "header"),
        ("Bad\r\nX-Injected: y", "header"),
        ("Bad Name", "header"),
        ("key", "query"),
        ("session", "cookie"),
    ],
)
def test_card_cannot_choose_a_dangerous_api_key_place(
    rsps: responses.RequestsMock, name: str, location: str
) -> None:
    agent = FakeAgent(rsps, api_key_card(name, location))
    with (
        A2AClient.from_url(agent.base_url, credentials=APIKey(SECRET)) as client,
        pytest.raises(ConfigurationError) as info,
    ):
        client.get_task("t1")
    assert agent.calls == []
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("token", ["", "line\nbreak", "cr\rlf"])
def test_malformed_secrets_are_refused_before_sending(
    rsps: responses.RequestsMock, token: str
) -> None:
    agent = FakeAgent(rsps)
    for credentials in (BearerToken(token), APIKey(token)):
        with (
            A2AClient(RPC_URL, credentials=credentials) as client,
            pytest.raises(ConfigurationError),
        ):
            client.get_task("t1")
    assert agent.calls == []


# -- which origin -------------------------------------------------------------------------------


def test_card_pointing_credentials_at_another_host_is_refused(
    rsps: responses.RequestsMock,
) -> None:
    rsps.add(responses.GET, CARD_URL, json=card_json(("https://evil.test/rpc", "JSONRPC", "1.0")))
    with pytest.raises(ConfigurationError):
        A2AClient.from_url("https://agent.test", credentials=BearerToken(SECRET))
    assert [c.request.url for c in rsps.calls] == [CARD_URL]  # nothing went to evil.test


def test_foreign_endpoint_without_credentials_is_allowed(rsps: responses.RequestsMock) -> None:
    rsps.add(responses.GET, CARD_URL, json=card_json(("https://other.test/rpc", "JSONRPC", "1.0")))
    rsps.add(
        responses.POST,
        "https://other.test/rpc",
        json={"jsonrpc": "2.0", "id": 1, "result": TASK_1_0},
    )
    with A2AClient.from_url("https://agent.test") as client:
        client.get_task("t1")
    assert "Authorization" not in rsps.calls[1].request.headers


def test_trusted_origins_allow_a_declared_foreign_endpoint(rsps: responses.RequestsMock) -> None:
    rsps.add(responses.GET, CARD_URL, json=card_json(("https://other.test/rpc", "JSONRPC", "1.0")))
    rsps.add(
        responses.POST,
        "https://other.test/rpc",
        json={"jsonrpc": "2.0", "id": 1, "result": TASK_1_0},
    )
    with A2AClient.from_url(
        "https://agent.test",
        credentials=BearerToken(SECRET),
        trusted_origins=["https://other.test"],
    ) as client:
        client.get_task("t1")
    assert rsps.calls[1].request.headers["Authorization"] == f"Bearer {SECRET}"


def test_origins_compare_scheme_host_and_port() -> None:
    assert origin_of("http://A.test/x") == origin_of("http://a.test:80/y")
    assert origin_of("https://a.test") == "https://a.test:443"
    assert origin_of("http://a.test") != origin_of("https://a.test")
    assert origin_of("http://a.test:8080") != origin_of("http://a.test")
    bound = OriginBoundCredentials(BearerToken(SECRET), frozenset({origin_of("https://a.test")}))
    assert bound.headers_for("https://a.test/rpc", None) == {"Authorization": f"Bearer {SECRET}"}
    assert bound.headers_for("https://a.test.evil.test/rpc", None) == {}
    assert bound.headers_for("http://a.test:443/rpc", None) == {}
    assert bound.headers_for("https://a.test:8443/rpc", None) == {}


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_to_another_host_is_never_followed(
    scripted_server: ScriptedServerFactory, status: int
) -> None:
    target = scripted_server(lambda sock, request: respond_json(sock, {}))
    location = f"{target.url}/steal"

    def redirect(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, status, b"moved", headers={"Location": location})

    origin = scripted_server(redirect)
    with (
        A2AClient(origin.url + "/rpc", credentials=APIKey(SECRET, header="X-API-Key")) as client,
        pytest.raises(RedirectRefused) as info,
    ):
        client.get_task("t1")
    assert info.value.location == location
    assert len(origin.wait_for_requests(1)) == 1
    assert target.requests == []
    assert SECRET not in str(info.value)


# -- 401 ---------------------------------------------------------------------------------------


class RefreshingToken:
    """A credential that knows how to get a new token (e.g. from an OAuth server)."""

    def __init__(self) -> None:
        self.tokens = ["expired", "fresh"]
        self.refreshes = 0

    def headers(self, card: object) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[0]}"}

    def refresh(self) -> None:
        self.refreshes += 1
        self.tokens.pop(0)


def test_401_refreshes_the_credential_once(rsps: responses.RequestsMock) -> None:
    rsps.add(responses.POST, RPC_URL, status=401, body="expired")
    rsps.add(responses.POST, RPC_URL, json={"jsonrpc": "2.0", "id": 1, "result": TASK_1_0})
    token = RefreshingToken()
    with A2AClient(RPC_URL, credentials=token) as client:
        assert client.get_task("t1").id == "t1"
    assert token.refreshes == 1
    sent = [c.request.headers["Authorization"] for c in rsps.calls]
    assert sent == ["Bearer expired", "Bearer fresh"]
    bodies = [c.request.body for c in rsps.calls]
    assert bodies[0] == bodies[1]  # the same request (same id) again


def test_second_401_is_an_http_status_error(rsps: responses.RequestsMock) -> None:
    rsps.add(responses.POST, RPC_URL, status=401, body="no")
    token = RefreshingToken()
    token.tokens.append("still-bad")
    with A2AClient(RPC_URL, credentials=token) as client, pytest.raises(HTTPStatusError) as info:
        client.get_task("t1")
    assert info.value.status_code == 401
    assert token.refreshes == 1
    assert len(rsps.calls) == 2


def test_401_without_a_refreshable_credential_is_not_retried(
    rsps: responses.RequestsMock,
) -> None:
    rsps.add(responses.POST, RPC_URL, status=401, body="no")
    with (
        A2AClient(RPC_URL, credentials=BearerToken(SECRET)) as client,
        pytest.raises(HTTPStatusError) as info,
    ):
        client.get_task("t1")
    assert info.value.status_code == 401
    assert len(rsps.calls) == 1


# -- secrecy ----------------------------------------------------------------------------------


def test_secrets_never_reach_reprs_logs_or_errors(
    rsps: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = FakeAgent(rsps)
    agent.results["GetTask"] = TASK_1_0
    bearer, key = BearerToken(SECRET), APIKey(SECRET + "-key", header="X-API-Key")
    errors: list[BaseException] = []
    for credentials in (bearer, key):
        with A2AClient.from_url(agent.base_url, credentials=credentials) as client:
            client.get_task("t1")
            texts = [repr(credentials), repr(client), repr(client._credentials)]
            assert not any(SECRET in text for text in texts)
    rsps.replace(
        responses.POST,
        RPC_URL,
        json={"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "Task not found"}},
    )
    with A2AClient(RPC_URL, credentials=bearer) as client, pytest.raises(TaskNotFound) as not_found:
        client.get_task("t1")
    errors.append(not_found.value)
    rsps.replace(responses.POST, RPC_URL, status=500, body="<html>server error</html>")
    with (
        A2AClient(RPC_URL, credentials=key) as client,
        pytest.raises(HTTPStatusError) as status_error,
    ):
        client.get_task("t1")
    errors.append(status_error.value)
    assert len(errors) == 2
    for error in errors:
        assert SECRET not in str(error)
        assert SECRET not in repr(error)
        assert SECRET.encode() not in pickle.dumps(error)
    assert SECRET not in caplog.text
    config = PushNotificationConfig(
        url="https://hook.example",
        token=SECRET,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=SECRET),
    )
    assert SECRET not in repr(config)
