"""Issue 20 item 6: URL secrets never reach exception text or log lines, and derived URLs
are built with urllib.parse.

Every failure is real (a refused port, a scripted server answering 500, holding, breaking
off, redirecting, sending too much); the URL carries a password in its userinfo and a key
in its query. The secret must not appear in the message, ``repr``, ``url``, the chained
causes or the formatted traceback, nor in any log record a2a_sync wrote (``caplog``).
"""

from __future__ import annotations

import logging
import socket
import threading
import traceback
from collections.abc import Callable

import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync._redact import redact_url, scrub
from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.errors import (
    A2ASyncError,
    AllAgentsFailed,
    ConnectError,
    ConnectionLost,
    HTTPStatusError,
    ReadTimeout,
    RedirectRefused,
    ResponseTooLarge,
)
from a2a_sync.policies import RetryPolicy
from tests.support.ports import refused_url
from tests.support.servers import (
    RecordedRequest,
    ScriptedServer,
    close_connection,
    hold,
    respond,
    respond_json,
)

PASSWORD = "hunter2-pass-9f3"
KEY = "sk-live-5e1b7c"
SECRETS = (PASSWORD, KEY)

Handler = Callable[[socket.socket, RecordedRequest], None]


def secret_url(base: str, path: str = "/rpc") -> str:
    host = base.removeprefix("http://")
    return f"http://alice:{PASSWORD}@{host}{path}?key={KEY}&mode=fast"


def all_text(exc: BaseException) -> str:
    """Everything an exception shows: message, repr, url, causes, formatted traceback."""
    parts = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts += [str(current), repr(current), str(getattr(current, "url", ""))]
        # What Python shows (and what logging formats): a suppressed context is not shown.
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return "\n".join(parts)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def assert_logs_clean(caplog: pytest.LogCaptureFixture) -> None:
    """a2a_sync's own log records (urllib3's retry warnings quote the request target
    themselves: see docs/security.md)."""
    ours = [r for r in caplog.records if r.name.startswith("a2a_sync")]
    for record in ours:
        assert_no_secret(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            assert_no_secret(all_text(record.exc_info[1]))


@pytest.fixture(autouse=True)
def _debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="a2a_sync")


@pytest.fixture
def refused_port() -> str:
    """A bound, never-listening port: connecting is refused, and no other test can take it."""
    return refused_url("")


def _answer_500(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 500, b"internal error", headers=[("Content-Type", "text/plain")])


def _redirect(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 302, headers=[("Location", f"http://elsewhere.test/x?key={KEY}")])


def _break_off(sock: socket.socket, request: RecordedRequest) -> None:
    close_connection(sock)


def _too_large(sock: socket.socket, request: RecordedRequest) -> None:
    respond(sock, 200, b"x" * 4096, headers=[("Content-Type", "application/json")])


def _no_retry() -> RetryPolicy:
    return RetryPolicy(max_retries=0)


# --- the A2A client ---------------------------------------------------------------------------


def test_connect_error_hides_userinfo_and_query(
    refused_port: str, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        A2AClient(secret_url(refused_port), retry=_no_retry()) as client,
        pytest.raises(ConnectError) as caught,
    ):
        client.send_message("hi")
    assert_no_secret(all_text(caught.value))
    assert "key=***" in str(caught.value)  # still says which URL, with the secret masked
    assert_logs_clean(caplog)


@pytest.mark.parametrize(
    ("handler", "error"),
    [
        (_answer_500, HTTPStatusError),
        (_redirect, RedirectRefused),
        (_break_off, ConnectionLost),
        (_too_large, ResponseTooLarge),
    ],
    ids=["http-status", "redirect", "connection-lost", "too-large"],
)
def test_errors_from_a_peer_hide_userinfo_and_query(
    handler: Handler, error: type[A2ASyncError], caplog: pytest.LogCaptureFixture
) -> None:
    transport = HTTPTransport(retry=_no_retry(), max_response_bytes=1024)
    with (
        ScriptedServer(handler) as server,
        transport,
        A2AClient(secret_url(server.url), transport=transport) as client,
        pytest.raises(error) as caught,
    ):
        client.send_message("hi")
    assert_no_secret(all_text(caught.value))
    assert_logs_clean(caplog)


def test_read_timeout_hides_userinfo_and_query(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()
    with ScriptedServer(lambda sock, request: hold(release)) as server:
        try:
            with (
                A2AClient(secret_url(server.url), timeout=(5, 0.2), retry=_no_retry()) as client,
                pytest.raises(ReadTimeout) as caught,
            ):
                client.get_task("t1")
        finally:
            release.set()
    assert_no_secret(all_text(caught.value))
    assert_logs_clean(caplog)


def test_stream_errors_hide_userinfo_and_query(caplog: pytest.LogCaptureFixture) -> None:
    with (
        ScriptedServer(_answer_500) as server,
        A2AClient(secret_url(server.url), retry=_no_retry()) as client,
    ):
        with pytest.raises(HTTPStatusError) as caught, client.stream_message("hi") as stream:
            list(stream)
        assert_no_secret(repr(client))
    assert_no_secret(all_text(caught.value))
    assert_logs_clean(caplog)


def test_card_fetch_errors_hide_userinfo_and_query(caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedServer(_answer_500) as server, pytest.raises(HTTPStatusError) as caught:
        A2AClient.from_url(secret_url(server.url, "/agent"), retry=_no_retry())
    assert_no_secret(all_text(caught.value))
    assert_logs_clean(caplog)


def test_card_404_fallback_logs_hide_the_query(caplog: pytest.LogCaptureFixture) -> None:
    with ScriptedServer(lambda sock, request: respond(sock, 404)) as server:
        with pytest.raises(HTTPStatusError) as caught:
            A2AClient.from_url(secret_url(server.url, "/agent"), retry=_no_retry())
        paths = [r.path for r in server.requests]
    assert_no_secret(all_text(caught.value))
    assert_logs_clean(caplog)
    assert any("agent.json" in r.getMessage() for r in caplog.records)  # the log line ran
    # Derived URLs keep the query where it belongs (issue 20: it was glued before the path).
    assert paths == [
        f"/agent/.well-known/agent-card.json?key={KEY}&mode=fast",
        f"/agent/.well-known/agent.json?key={KEY}&mode=fast",
    ]


def test_all_agents_failed_hides_userinfo_and_query(
    refused_port: str, caplog: pytest.LogCaptureFixture
) -> None:
    primary = A2AClient(secret_url(refused_port), retry=_no_retry())
    fallback = A2AClient(secret_url(refused_port, "/other"), retry=_no_retry())
    with ResilientA2AClient(primary, fallbacks=[fallback]) as resilient:
        assert_no_secret(repr(resilient))
        with pytest.raises(AllAgentsFailed) as caught:
            resilient.get_task("t1")
    primary.close()
    fallback.close()
    assert_no_secret(all_text(caught.value))
    assert_logs_clean(caplog)


def test_from_url_with_a_query_builds_the_card_url_with_urllib() -> None:
    def serve(sock: socket.socket, request: RecordedRequest) -> None:
        respond_json(sock, {"name": "x"}, status=404)

    with ScriptedServer(serve) as server:
        with pytest.raises(HTTPStatusError):
            A2AClient.from_url(f"{server.url}/a/?key=abc#frag", retry=_no_retry())
        assert server.requests[0].path == "/a/.well-known/agent-card.json?key=abc"


# --- the helper ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://u:p@h.test/x", "http://***@h.test/x"),
        ("http://token@h.test/x", "http://***@h.test/x"),
        ("https://h.test/x?key=s&a=", "https://h.test/x?key=***&a=***"),
        ("https://h.test/x?opaque", "https://h.test/x?opaque=***"),
        ("https://h.test/x#frag", "https://h.test/x"),
        ("https://h.test/x", "https://h.test/x"),
        ("npx server --flag", "npx server --flag"),  # a stdio command is not a URL
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_scrub_masks_the_request_target_and_percent_encoded_values() -> None:
    url = "http://u:longpass@h.test/p?key=a%2Fsecret"
    text = f"{url} failed: Max retries exceeded with url: /p?key=a%2Fsecret (u:longpass@h)"
    assert scrub(text, url) == (
        "http://***@h.test/p?key=*** failed: Max retries exceeded with url: /p?key=*** (***@h)"
    )
