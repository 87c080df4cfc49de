"""Issue 18 item 4, second pass: what the A2A client's request path no longer builds per
call (requests' cookie jar, header copies and encoding guess for each response; Retry and
Timeout re-validation; a cancel event per call; a URL parse and a cookie walk per
request) keeps requests' and urllib3's observable behaviour."""

from __future__ import annotations

import pickle
import socket
import threading
from collections.abc import Iterator

import pytest
import requests
import responses

from a2a_sync._net.call import Call, wait_before_retry
from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.pool import DeadlineTimeout
from a2a_sync._net.retry import CallRetry
from a2a_sync.errors import Cancelled
from a2a_sync.policies import RetryPolicy, Timeout
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond, respond_json

WAIT = 10.0


@pytest.fixture
def transport() -> Iterator[HTTPTransport]:
    with HTTPTransport(timeout=Timeout(connect=WAIT, read=WAIT, total=2 * WAIT)) as made:
        yield made


def echo(sock: socket.socket, request: RecordedRequest) -> None:
    respond_json(sock, {"path": request.path}, headers=[("X-Twice", "a"), ("x-twice", "b")])


# -- the response --------------------------------------------------------------------------------


def test_response_headers_are_case_insensitive_and_join_repeated_values(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(echo)
    result = transport.request("POST", f"{server.url}/rpc", body=b"{}")
    assert result.headers["content-type"] == "application/json"
    assert result.headers.get("CONTENT-TYPE") == "application/json"
    assert result.headers["X-TWICE"] == "a, b"  # as requests' CaseInsensitiveDict copy
    assert result.content_type == "application/json"


def test_a_response_built_by_the_adapter_still_has_cookies_and_an_encoding(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    def text(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, 200, b"caf\xc3\xa9", headers=[("Content-Type", "text/plain; charset=utf-8")])

    server = scripted_server(text)
    response = transport._sender.send("GET", f"{server.url}/x", None, None, timeout=WAIT)
    try:
        assert isinstance(response, requests.Response)
        assert isinstance(response.cookies, requests.cookies.RequestsCookieJar)
        assert len(response.cookies) == 0
        assert response.encoding == "utf-8"
        assert response.text == "café"
        response.encoding = "latin-1"
        assert response.encoding == "latin-1"
        copy = pickle.loads(pickle.dumps(response))  # requests' __getstate__/__setstate__
        assert copy.content == "café".encode()
        assert copy.encoding == "latin-1"
        assert len(copy.cookies) == 0
    finally:
        response.close()


# -- request headers -----------------------------------------------------------------------------


def test_a_call_header_replaces_a_session_header_whatever_its_case(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(echo)
    transport.session.headers["X-Team"] = "blue"
    transport.request(
        "POST", f"{server.url}/rpc", body=b"{}", headers={"x-team": "red", "user-agent": "me"}
    )
    (sent,) = server.wait_for_requests(1)
    assert sent.headers["X-Team"] == "red"  # one header, not "blue, red"
    assert sent.headers["User-Agent"] == "me"


def test_responses_sees_request_headers_case_insensitively(transport: HTTPTransport) -> None:
    with responses.RequestsMock() as rsps:
        rsps.add(responses.POST, "http://agent.test/rpc", json={})
        transport.request("POST", "http://agent.test/rpc", body=b"{}", headers={"X-Call": "1"})
        sent = rsps.calls[0].request.headers
    assert sent["x-call"] == "1"
    assert sent["content-length"] == "2"
    assert dict(sent.items())["X-Call"] == "1"
    copied = sent.copy()
    copied["X-Call"] = "2"
    assert sent["X-Call"] == "1"  # a copy, not a view


def test_an_emptied_cookie_jar_sends_no_cookie(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(echo)
    host = server.url.removeprefix("http://").split(":")[0]
    transport.session.cookies.set("sid", "abc", domain=host, path="/")
    transport.request("POST", f"{server.url}/rpc", body=b"{}")
    # Clearing one cookie leaves the jar's inner dicts behind: still no Cookie header.
    transport.session.cookies.clear(host, "/", "sid")
    transport.request("POST", f"{server.url}/rpc", body=b"{}")
    first, second = server.wait_for_requests(2)
    assert first.headers["Cookie"] == "sid=abc"
    assert "Cookie" not in second.headers


def test_each_url_is_sent_with_its_own_path_and_query(
    transport: HTTPTransport, scripted_server: ScriptedServerFactory
) -> None:
    server = scripted_server(echo)
    for path in ("/a", "/b?x=1", "/a", "", "/b?x=2"):
        transport.request("GET", f"{server.url}{path}")
    sent = [request.path for request in server.wait_for_requests(5)]
    assert sent == ["/a", "/b?x=1", "/a", "/", "/b?x=2"]


# -- per-call Retry, Timeout and Call ------------------------------------------------------------


def test_each_call_gets_its_own_retry_with_its_own_call() -> None:
    policy = RetryPolicy(max_retries=3)
    first, second = Call(None), Call(None)
    a = CallRetry.for_call(policy, idempotent=True, call=first, sleep=None)
    b = CallRetry.for_call(policy, idempotent=True, call=second, sleep=None)
    c = CallRetry.for_call(policy, idempotent=False, call=second, sleep=None)
    assert a is not b
    assert (a._call, b._call) == (first, second)
    assert (a.total, a.read, a.status) == (3, 3, 3)
    assert (c.total, c.read, c.status) == (3, 0, 0)
    assert c.allowed_methods == CallRetry.DEFAULT_ALLOWED_METHODS
    second.attempts = 3  # a body broke off twice: one retry is left
    d = CallRetry.for_call(policy, idempotent=True, call=second, sleep=None)
    assert (d.total, d.connect, d.read) == (1, 1, 1)
    assert a.total == 3  # the earlier one is unchanged


def test_a_cloned_deadline_timeout_has_a_fresh_connect_clock() -> None:
    timeout = DeadlineTimeout(2.0, 3.0, None)
    timeout.start_connect()
    clone = timeout.clone()
    assert isinstance(clone, DeadlineTimeout)
    assert (clone.connect_timeout, clone.read_timeout) == (2.0, 3.0)
    assert clone._start_connect is None
    clone.start_connect()  # would raise if the clock had been copied as started


def test_a_cancel_ends_a_backoff_wait_at_once() -> None:
    call = Call(None)
    policy = RetryPolicy(max_retries=1, backoff_base=60.0, backoff_max=60.0, jitter=0.0)
    waiting = threading.Event()
    outcome: list[BaseException] = []

    def wait() -> None:
        waiting.set()
        try:
            wait_before_retry(policy, call, None, 1)
        except BaseException as exc:  # recorded for the assertion below
            outcome.append(exc)

    thread = threading.Thread(target=wait, name="a2a-sync-test-wait", daemon=True)
    thread.start()
    assert waiting.wait(WAIT)
    call.cancel()
    thread.join(WAIT)
    assert not thread.is_alive()
    assert len(outcome) == 1
    assert "cancelled" in str(outcome[0])
    assert call.wait_cancelled(0.0)  # once cancelled, every wait ends at once


def test_a_closed_transport_refuses_new_calls(transport: HTTPTransport) -> None:
    transport.close()
    with pytest.raises(Cancelled):
        transport.request("POST", "http://agent.test/rpc", body=b"{}")
