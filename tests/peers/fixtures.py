"""Start the scripted a2a-sdk agent (:mod:`tests.peers.a2a_sdk_agent`) as a subprocess.

Use the session-scoped :func:`a2a_sdk_agent` fixture from any suite: import it into the
suite's ``conftest.py`` (``from tests.peers.fixtures import a2a_sdk_agent  # noqa: F401``)
or list this module in ``pytest_plugins`` of the root conftest so that all suites share
one process. It yields an :class:`AgentProcess`::

    pytestmark = pytest.mark.peer

    def test_echo(a2a_sdk_agent: AgentProcess) -> None:
        client = A2AClient.from_url(a2a_sdk_agent.url)
        assert client.send_message("echo hi").text == "hi"

Outside pytest (benchmarks), use :func:`start_agent` as a context manager.

The agent binds 127.0.0.1 port 0 and reports its port on stdout; the start waits for
that line and then for the card to be served, each with a bounded wait, and fails with
the agent's stderr when either does not come. At the end the process is terminated
(SIGTERM, then SIGKILL after :data:`STOP_TIMEOUT`). Nothing here imports a2a-sdk, so a
suite importing this module still loads where a2a-sdk is not installed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import attrs
import pytest

from tests.peers import A2A_SDK_AGENT
from tests.support.polling import poll_until

__all__ = [
    "AgentProcess",
    "a2a_sdk_agent",
    "a2a_sdk_grpc_agent",
    "a2a_sdk_rest_agent",
    "start_agent",
]

#: Bearer token the agent requires for the extended card.
AGENT_TOKEN = "test-token"
#: Longest wait for the agent to print its port (interpreter start plus ``import a2a``,
#: about 1 s here; generous for a loaded CI machine).
START_TIMEOUT = 30.0
#: Longest wait for the card to be served once the port is known.
READY_TIMEOUT = 10.0
#: Longest wait for the agent to exit after SIGTERM before it is killed.
STOP_TIMEOUT = 5.0
_PROBE_INTERVAL = 0.05


@attrs.frozen
class AgentProcess:
    """A running scripted agent.

    Attributes:
        url: Base URL, ``http://127.0.0.1:<port>/`` (also its JSON-RPC endpoint).
        token: Bearer token that unlocks the extended card.
        pid: The process id (benchmarks read its CPU time).
    """

    url: str
    token: str
    pid: int

    @property
    def card_url(self) -> str:
        return self.url + ".well-known/agent-card.json"


def _read_port(proc: subprocess.Popen[bytes], deadline: float) -> int:
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError("the agent did not report its port in time")
            piece = os.read(proc.stdout.fileno(), 256)
            if not piece:
                raise RuntimeError("the agent exited before reporting its port")
            line += piece
    word, _, port = line.decode().strip().partition(" ")
    if word != "PORT" or not port.isdigit():
        raise RuntimeError(f"unexpected start-up line from the agent: {line!r}")
    return int(port)


def _wait_until_served(card_url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    def served() -> bool:
        try:
            with urllib.request.urlopen(card_url, timeout=1.0) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    # the agent reports its port, not its readiness: poll its card (or its exit), bounded
    if not poll_until(
        lambda: served() or proc.poll() is not None, timeout, interval=_PROBE_INTERVAL
    ):
        raise TimeoutError(f"the agent did not serve {card_url} in time")
    if proc.poll() is not None:
        raise RuntimeError(f"the agent exited with status {proc.returncode}")


@contextlib.contextmanager
def start_agent(
    token: str = AGENT_TOKEN, *, rest: bool = False, grpc: bool = False
) -> Iterator[AgentProcess]:
    """Run the scripted agent for the duration of the ``with`` block (``rest``: with
    the HTTP+JSON binding under ``/rest``; ``grpc``: with gRPC on a second port; each
    listed first in its card)."""
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [sys.executable, A2A_SDK_AGENT, "--port", "0", "--token", token]
            + (["--rest"] if rest else [])
            + (["--grpc"] if grpc else []),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
        )
        try:
            try:
                port = _read_port(proc, time.monotonic() + START_TIMEOUT)
                agent = AgentProcess(f"http://127.0.0.1:{port}/", token, proc.pid)
                _wait_until_served(agent.card_url, proc, READY_TIMEOUT)
            except (TimeoutError, RuntimeError) as exc:
                stderr.seek(0)
                tail = stderr.read()[-4000:].decode("utf-8", "replace")
                raise RuntimeError(f"{exc}; agent stderr:\n{tail}") from exc
            yield agent
        finally:
            proc.terminate()
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(STOP_TIMEOUT)
            assert proc.stdout is not None
            proc.stdout.close()


@pytest.fixture(scope="session")
def a2a_sdk_agent() -> Iterator[AgentProcess]:
    """The scripted a2a-sdk agent, started once per session (mark users ``peer``)."""
    with start_agent() as agent:
        yield agent


@pytest.fixture(scope="session")
def a2a_sdk_rest_agent() -> Iterator[AgentProcess]:
    """The scripted agent serving HTTP+JSON too (under ``/rest``; mark users ``peer``)."""
    with start_agent(rest=True) as agent:
        yield agent


@pytest.fixture(scope="session")
def a2a_sdk_grpc_agent() -> Iterator[AgentProcess]:
    """The scripted agent serving gRPC too (listed first in its card; mark users ``peer``)."""
    with start_agent(grpc=True) as agent:
        yield agent
