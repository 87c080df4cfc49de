"""Issue 18 item 4: the request path skips requests' generic per-request machinery
(``Session.prepare_request`` + ``Session.send``) but keeps the session as the place users
configure (headers, cookies, auth, mounted adapters) and ``responses`` still intercepts
every call."""

from __future__ import annotations

import base64
import io
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import requests.adapters
import responses
import urllib3

from a2a_sync._net.http import HTTPTransport
from a2a_sync.client import A2AClient
from a2a_sync.errors import ConfigurationError
from a2a_sync.policies import Timeout
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond, respond_json

from ..client.fakes import RPC_URL, FakeAgent

WAIT = 10.0


@pytest.fixture
def transport() -> Iterator[HTTPTransport]:
    with HTTPTransport(timeout=Timeout(connect=WAIT, read=WAIT, total=2 * WAIT)) as made:
        yield made


@pytest.fixture
def no_generic_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make requests' generic merge path fail loudly if anything takes it."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("Session.prepare_request must not run on the plain path")

    monkeypatch.setattr(requests.Session, "prepare_request", refuse)
    monkeypatch.setattr(requests.Session, "send", refuse)


def ok(sock: socket.socket, request: RecordedRequest) -> None:
    respond_json(sock, {"echo": request.body.decode() or None})


# -- responses still intercepts -----------------------------------------------------------


def test_responses_intercepts_a2a_client_calls_made_without_the_generic_path(
    no_generic_path: None,
) -> None:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as rsps:
        agent = FakeAgent(rsps)
        agent.results["SendMessage"] = {"message": _agent_message("pong")}
        with A2AClient(RPC_URL) as client:
            result = client.send_message("ping")
        recorded = rsps.calls[-1].request
    assert result.text == "pong"
    (call,) = agent.calls
    assert call.method == "SendMessage"
    assert recorded.headers["Content-Type"] == "application/json"
    assert isinstance(recorded.body, bytes)
    assert recorded.headers["Content-Length"] == str(len(recorded.body))


def test_responses_sees_session_headers_and_per_call_headers(transport: HTTPTransport) -> None:
    transport.session.headers["X-Team"] = "blue"
    with responses.RequestsMock() as rsps:
        rsps.add(responses.POST, "http://agent.test/rpc", json={"ok": True})
        transport.request("POST", "http://agent.test/rpc", body=b"{}", headers={"X-Call": "1"})
        sent = rsps.calls[0].request
    assert sent.headers["x-team"] == "blue"
    assert sent.headers["X-Call"] == "1"
    assert sent.headers["User-Agent"].startswith("a2a-sync/")


# -- the session stays the configuration -------------------------------------------------------


def test_header_changes_on_the_session_apply_to_the_next_call(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory, no_generic_path: None
) -> None:
    server = scripted_server(ok)
    url = f"{server.url}/rpc"
    transport.request("POST", url, body=b"1")
    transport.session.headers["X-Later"] = "yes"
    transport.request("POST", url, body=b"2", headers={"Accept": None})  # type: ignore[dict-item]
    first, second = server.wait_for_requests(2)
    assert "X-Later" not in first.headers
    assert second.headers["X-Later"] == "yes"
    assert "Accept" not in second.headers  # None removes a header, as in requests
    assert second.headers["Content-Length"] == "1"


def test_cookies_set_by_the_server_are_kept_in_the_session_jar_and_sent_back(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory, no_generic_path: None
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, 200, b"{}", headers=[("Set-Cookie", "sid=abc; Path=/")])

    server = scripted_server(handler)
    transport.request("POST", f"{server.url}/rpc", body=b"{}")
    assert transport.session.cookies.get("sid") == "abc"
    transport.request("POST", f"{server.url}/rpc", body=b"{}")
    first, second = server.wait_for_requests(2)
    assert "Cookie" not in first.headers
    assert second.headers["Cookie"] == "sid=abc"


def test_session_auth_and_url_credentials_still_go_through_requests(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(ok)
    transport.session.auth = ("alice", "s3cret")
    transport.request("POST", f"{server.url}/rpc", body=b"{}")
    transport.session.auth = None
    host = server.url.removeprefix("http://")
    transport.request("POST", f"http://bob:pw@{host}/rpc", body=b"{}")
    first, second = server.wait_for_requests(2)
    assert first.headers["Authorization"] == "Basic " + base64.b64encode(b"alice:s3cret").decode()
    assert second.headers["Authorization"] == "Basic " + base64.b64encode(b"bob:pw").decode()


def test_an_adapter_the_user_mounts_for_a_prefix_is_used(
    transport: HTTPTransport, no_generic_path: None
) -> None:
    seen: list[requests.PreparedRequest] = []

    class Canned(requests.adapters.BaseAdapter):
        def send(  # type: ignore[override]
            self, request: requests.PreparedRequest, **kwargs: Any
        ) -> requests.Response:
            seen.append(request)
            response = requests.Response()
            response.status_code = 200
            response.raw = _raw(b'{"canned": true}')
            response.url = str(request.url)
            return response

        def close(self) -> None:
            pass

    transport.session.mount("http://special.test/", Canned())
    result = transport.request("POST", "http://special.test/rpc", body=b"{}")
    assert json.loads(result.content) == {"canned": True}
    assert [str(request.url) for request in seen] == ["http://special.test/rpc"]


def test_an_invalid_per_call_header_is_a_configuration_error(transport: HTTPTransport) -> None:
    with pytest.raises(ConfigurationError):
        transport.request("POST", "http://agent.test/rpc", headers={"X-Bad": "a\r\nb"})


def test_calls_keep_working_after_the_adapter_pools_were_closed(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    # The adapter remembers the pool per origin; a closed pool is looked up again.
    server = scripted_server(ok)
    url = f"{server.url}/rpc"
    assert transport.request("POST", url, body=b"a").ok
    adapter = transport.session.get_adapter(url)
    assert isinstance(adapter, requests.adapters.HTTPAdapter)
    adapter.poolmanager.clear()  # closes every pool, as an eviction does
    assert transport.request("POST", url, body=b"b").ok
    assert [r.body for r in server.wait_for_requests(2)] == [b"a", b"b"]


# -- helpers -----------------------------------------------------------------------------------


def _agent_message(text: str) -> dict[str, Any]:
    return {"role": "ROLE_AGENT", "messageId": "m1", "parts": [{"text": text}]}


def _raw(body: bytes) -> Any:
    return urllib3.HTTPResponse(
        body=io.BytesIO(body),
        headers={"Content-Type": "application/json", "Content-Length": str(len(body))},
        status=200,
        preload_content=False,
    )


@pytest.mark.parametrize(
    ("method", "body", "headers"),
    [
        ("POST", b'{"a": 1}', {"Content-Type": "application/json"}),
        ("POST", None, None),
        ("POST", b"", {"X-Call": "1"}),
        ("GET", None, {"Accept": "text/event-stream"}),
        ("DELETE", None, {"Accept": None}),
    ],
)
def test_the_request_sent_matches_what_requests_would_prepare(
    transport: HTTPTransport, method: str, body: bytes | None, headers: dict[str, Any] | None
) -> None:
    url = "http://agent.test/rpc?x=1"
    expected = transport.session.prepare_request(
        requests.Request(method, url, data=body, headers=headers)
    )
    with responses.RequestsMock() as rsps:
        rsps.add(method, url, body=b"{}")
        transport.request(method, url, body=body, headers=headers)
        sent = rsps.calls[0].request
    assert sent.url == expected.url
    assert dict(sent.headers) == dict(expected.headers)
    assert sent.body == expected.body
