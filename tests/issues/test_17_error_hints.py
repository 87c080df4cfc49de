"""Issue 17 §7: errors name the operation, the target and the fix; tracebacks stop at
the a2a_sync edge; urllib3's retry warnings with internal class names are not emitted."""

from __future__ import annotations

import logging
import socket
import ssl
import subprocess
import sys
import traceback
from collections.abc import Iterator

import pytest

from a2a_sync import A2AClient
from a2a_sync.errors import (
    ConfigurationError,
    ConnectError,
    ConnectTimeout,
    RequestTimeout,
    TaskNotFound,
)
from a2a_sync.policies import RetryPolicy, Timeout
from a2a_sync.testing import FakeAgent, agent_server
from tests.support.ports import refused_port

RUN_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with agent_server(FakeAgent()) as served:
        yield served


@pytest.fixture
def closed_port() -> int:
    return refused_port()  # bound and never listening: connecting is refused


def test_a_url_without_scheme_suggests_http() -> None:
    with pytest.raises(ConfigurationError, match=r"did you mean 'http://localhost:8000'"):
        A2AClient.from_url("localhost:8000")


def test_https_against_plain_http_fails_at_once_with_a_tls_hint(url: str) -> None:
    with pytest.raises(ConnectError, match=r"speak plain HTTP: use http://127\.0\.0\.1") as info:
        A2AClient.from_url(url.replace("http://", "https://"), timeout=30.0)
    # The server's plain-HTTP answer to the TLS hello failed the handshake at once (an SSL
    # error), rather than the client waiting out its 30 s read timeout (a timeout error).
    assert not isinstance(info.value, RequestTimeout)
    assert isinstance(info.value.__cause__, ssl.SSLError)


def test_https_against_a_silent_plain_server_names_tls_after_the_connect_timeout() -> None:
    with socket.socket() as silent:  # accepts (backlog), never answers the TLS hello
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        with pytest.raises(ConnectTimeout, match=r"TLS handshake timed out.*use http://"):
            A2AClient.from_url(
                f"https://127.0.0.1:{port}",
                timeout=Timeout(connect=1.0, read=60.0, total=120.0),
                retry=RetryPolicy(max_retries=0),
            )


def test_a_negative_timeout_names_the_option() -> None:
    with pytest.raises(ConfigurationError, match=r"^timeout=-1: give a positive number"):
        A2AClient.from_url("http://127.0.0.1:9", timeout=-1)


def test_task_not_found_names_the_task_and_the_agent(url: str) -> None:
    with A2AClient.from_url(url) as client, pytest.raises(TaskNotFound) as info:
        client.get_task("no-such-task")
    message = str(info.value)
    assert "'no-such-task'" in message
    assert url in message
    assert "list_tasks()" in message


def test_a_refused_connection_has_a_short_chain_without_internal_names(
    closed_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    fast = RetryPolicy(max_retries=2, backoff_base=0.01, backoff_max=0.01)
    with pytest.raises(ConnectError) as info:
        A2AClient.from_url(f"http://127.0.0.1:{closed_port}/?key=hushhush", retry=fast)
    assert "is the server running" in str(info.value)
    cause = info.value.__cause__
    assert isinstance(cause, ConnectionRefusedError)
    assert cause.__traceback__ is None
    assert cause.__cause__ is None
    text = "".join(traceback.format_exception(info.value))
    for internal in ("_TrackedHTTPConnection", "CallRetry", "urllib3", "MaxRetryError"):
        assert internal not in text
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in warnings if "CallRetry" in r.getMessage()], warnings
    retries = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retrying")]
    assert retries
    assert "Connection refused" in retries[0]
    assert "_Tracked" not in " ".join(retries)
    assert retries[0].startswith(
        f"retrying GET http://127.0.0.1:{closed_port}/.well-known/agent-card.json?key=*** "
    )
    assert "hushhush" not in caplog.text
    assert "hushhush" not in str(info.value)


def test_cli_names_the_option_and_suggests_http(closed_port: int) -> None:
    cli = [sys.executable, "-m", "a2a_sync.cli"]
    done = subprocess.run(
        [*cli, "card", "--timeout", "-1", "http://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert "--timeout" in done.stderr
    assert "connect must be" not in done.stderr
    done = subprocess.run(
        [*cli, "card", f"localhost:{closed_port}"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    assert f"did you mean 'http://localhost:{closed_port}'" in done.stderr
