"""Start third-party A2A agents (fasta2a 2.1, VoltAgent 2) as subprocesses for interop tests.

Peers nobody here wrote, as users meet them (issue 22):

- ``fasta2a-plain``: :mod:`tests.peers.fasta2a_agent` ``--mode plain`` (a fasta2a Worker);
- ``fasta2a-pydantic``: the same with ``--mode pydantic`` (pydantic-ai's bridge
  ``agent_to_a2a`` on a ``FunctionModel``; no network);
- ``voltagent``: :file:`tests/peers/voltagent_agent.mjs` (``@voltagent/a2a-server`` behind
  ``@voltagent/server-hono``, mock model).

Each agent binds 127.0.0.1 port 0 and prints ``PORT <n>``; :func:`start_peer` waits for
that line and for the card (bounded waits, the agent's stderr in the failure) and
terminates the process at the end, like :mod:`tests.peers.fixtures` does for a2a-sdk.
The session fixture :func:`third_party_agent` is parametrized over the three; a peer
whose package is missing is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from tests.peers import PEERS
from tests.peers.fixtures import (
    READY_TIMEOUT,
    START_TIMEOUT,
    STOP_TIMEOUT,
    _read_port,
    _wait_until_served,
)

__all__ = ["PEER_NAMES", "ThirdPartyAgent", "start_peer", "third_party_agent"]

FASTA2A_AGENT = str(PEERS / "fasta2a_agent.py")
VOLTAGENT_AGENT = str(PEERS / "voltagent_agent.mjs")
#: Where node resolves the VoltAgent packages from (the repository root's node_modules).
NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"

PEER_NAMES = ("fasta2a-plain", "fasta2a-pydantic", "voltagent")


@attrs.frozen
class ThirdPartyAgent:
    """A running third-party agent.

    Attributes:
        name: One of :data:`PEER_NAMES`.
        card_url: Where its agent card is served.
        base_url: ``http://127.0.0.1:<port>``.
        resubscribe: Whether it implements ``tasks/resubscribe`` / ``SubscribeToTask``.
    """

    name: str
    card_url: str
    base_url: str
    resubscribe: bool


def _command(name: str) -> tuple[list[str], str, bool]:
    """argv, card path and resubscribe support of a peer (skips when it is not installed)."""
    if name.startswith("fasta2a"):
        if importlib.util.find_spec("fasta2a") is None:
            pytest.skip("fasta2a is not installed (pip install '.[test]')")
        mode = name.removeprefix("fasta2a-")
        if mode == "pydantic" and importlib.util.find_spec("pydantic_ai") is None:
            pytest.skip("pydantic-ai-slim is not installed (pip install '.[test]')")
        argv = [sys.executable, FASTA2A_AGENT, "--mode", mode, "--port", "0"]
        return argv, "/.well-known/agent-card.json", True
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "@voltagent" / "server-hono").is_dir():
        pytest.skip("node or the @voltagent packages are not installed (npm ci)")
    return [node, VOLTAGENT_AGENT], "/.well-known/volt/agent-card.json", False


@contextlib.contextmanager
def start_peer(name: str) -> Iterator[ThirdPartyAgent]:
    """Run one third-party agent for the duration of the ``with`` block."""
    argv, card_path, resubscribe = _command(name)
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=str(NODE_MODULES.parent),
        )
        try:
            try:
                port = _read_port(proc, time.monotonic() + START_TIMEOUT)
                base = f"http://127.0.0.1:{port}"
                agent = ThirdPartyAgent(name, base + card_path, base, resubscribe)
                _wait_until_served(agent.card_url, proc, READY_TIMEOUT)
            except (TimeoutError, RuntimeError) as exc:
                stderr.seek(0)
                tail = stderr.read()[-4000:].decode("utf-8", "replace")
                raise RuntimeError(f"{name}: {exc}; stderr:\n{tail}") from exc
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


@pytest.fixture(scope="session", params=PEER_NAMES)
def third_party_agent(request: pytest.FixtureRequest) -> Iterator[ThirdPartyAgent]:
    """Each third-party agent in turn, started once per session (mark users ``peer``)."""
    with start_peer(request.param) as agent:
        yield agent
