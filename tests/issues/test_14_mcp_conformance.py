"""Issue 14 part B: MCP client deviations from the specification.

Real subprocess servers: a scripted server (``scripted_mcp_server.py``, no SDK) where a
peer must misbehave on purpose, the official ``mcp`` 2.3.0 server where it applies.
Spec: 2026-07-28 ``basic/versioning.mdx`` ("a recognized modern JSON-RPC error ...
identifies a modern server: the client retries with a supported version rather than
falling back"); 2025-06-18 introduced elicitation.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import (
    DeadlineExceeded,
    MethodNotFound,
    ProtocolError,
    UnsupportedProtocolVersion,
)
from a2a_sync.mcp import (
    CallbackUnavailableWarning,
    ElicitRequest,
    ElicitResult,
    MCPConnection,
    eras,
)
from a2a_sync.mcp.eras import ERA_CACHE
from a2a_sync.mcp.transports import ProcessTransport, Transport
from a2a_sync.mcp.transports.http import StreamableHTTPTransport
from a2a_sync.mcp.transports.legacy_sse import LegacySSETransport
from a2a_sync.mcp.transports.stdio import StdioTransport
from tests.mcp.fake import FakeTransport
from tests.mcp.peers.launch import EVERYTHING
from tests.mcp.transports.test_http import Handler, Script
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond_json

SERVER = str(Path(__file__).with_name("scripted_mcp_server.py"))


def scripted(*flags: str) -> list[str]:
    return [sys.executable, SERVER, *flags]


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Iterator[None]:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def _elicit(request: ElicitRequest) -> ElicitResult:
    return ElicitResult.decline()


# --- B.1 era negotiation ---------------------------------------------------------------------


def test_pinned_modern_re_probes_at_a_version_the_server_lists(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A client that also speaks a newer revision than the server: the server's -32022
    # names 2026-07-28, so the client re-sends discover there (old code: raised).
    monkeypatch.setattr(eras, "MODERN_VERSIONS", ("2026-07-28", "2099-01-01"))
    monkeypatch.setattr(eras, "LATEST_MODERN_VERSION", "2099-01-01")
    argv = scripted("--discover-supported", '["2026-07-28"]')
    with MCPConnection.stdio(argv, era="modern", timeout=10) as conn:
        assert (conn.era, conn.protocol_version) == ("modern", "2026-07-28")
    with MCPConnection.stdio(argv, era="auto", timeout=10) as conn:
        assert (conn.era, conn.protocol_version) == ("modern", "2026-07-28")


def test_a_modern_server_without_a_common_version_is_not_taken_for_legacy() -> None:
    # -32022 naming only modern revisions: a modern server. Old code fell back to
    # initialize (no MCP-Protocol-Version, no _meta) and failed with an unrelated error.
    argv = scripted("--discover-supported", '["2099-01-01"]', "--initialize-unknown")
    for era in ("auto", "modern"):
        with pytest.raises(UnsupportedProtocolVersion) as info:
            MCPConnection.stdio(argv, era=era, timeout=10)
        message = str(info.value)
        assert "2099-01-01" in message
        assert "2026-07-28" in message
        assert "server/discover" in message


def test_a_dual_era_server_refusing_our_modern_version_gets_the_handshake() -> None:
    argv = scripted("--discover-supported", '["2099-01-01", "2025-11-25"]')
    with MCPConnection.stdio(argv, timeout=10) as conn:
        assert (conn.era, conn.protocol_version) == ("legacy", "2025-11-25")


def test_a_failed_fallback_names_the_probe_that_led_to_it() -> None:
    argv = scripted("--no-discover-reply", "--initialize-garbage")
    with pytest.raises(ProtocolError) as info:
        MCPConnection.stdio(argv, discover_timeout=0.3, timeout=10)
    message = str(info.value)
    assert "initialize result lacks protocolVersion" in message
    assert "did not answer server/discover within 0.3 s" in message
    assert "fell back to initialize" in message

    refused = scripted("--discover-supported", "[]", "--initialize-unknown")
    with pytest.raises(MethodNotFound) as refused_info:
        MCPConnection.stdio(refused, timeout=10)
    assert "answered server/discover with [-32022]" in str(refused_info.value)


# --- B.2 progress ------------------------------------------------------------------------------


def test_reset_timeout_on_progress_asks_for_progress_by_itself() -> None:
    with MCPConnection.stdio(scripted("--discover-supported", '["2026-07-28"]')) as conn:
        client = conn.client()
        # The tool answers after 2.4 s of progress (one every 0.3 s); 1.5 s would expire
        # without the resets, which only happen when a progressToken was sent.
        result = client.call_tool("progress", timeout=1.5, reset_timeout_on_progress=True)
        assert result.text == "token"
        assert client.call_tool("progress", timeout=10).text == "no token"


@pytest.mark.peer
@pytest.mark.skipif(
    not EVERYTHING.exists() or shutil.which("node") is None, reason="server-everything missing"
)
def test_reset_timeout_on_progress_alone_against_server_everything() -> None:
    with MCPConnection.stdio([str(EVERYTHING)], timeout=30) as conn:
        # 3 s of work, progress every 0.3 s: 1.5 s expires unless progress resets it.
        result = conn.client().call_tool(
            "trigger-long-running-operation",
            {"duration": 3, "steps": 10},
            timeout=1.5,
            reset_timeout_on_progress=True,
        )
        assert "completed" in result.text


# --- B.3 time limits ------------------------------------------------------------------------------


class _ShutdownRecorder(StdioTransport):
    """A stdio transport whose own shutdown waits outlast the test's time-out (pytest's
    60 s): only the budget a failed connect hands it (``limit_shutdown``) makes its
    ``close`` quick. Records that budget."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(argv, terminate_timeout=600.0, kill_timeout=600.0)
        self.shutdown_limits: list[float] = []

    def limit_shutdown(self, seconds: float) -> None:
        self.shutdown_limits.append(seconds)
        super().limit_shutdown(seconds)


def _waits_named(message: str) -> list[float]:
    """The waits a handshake timeout names: 'after X s', 'within Y s'."""
    return [float(value) for value in re.findall(r"(?:after|within) ([0-9.]+) s\b", message)]


def test_the_user_timeout_bounds_the_whole_connect_including_shutdown() -> None:
    # The server never answers, ignores stdin EOF and SIGTERM: SIGKILL ends it.
    made: list[_ShutdownRecorder] = []

    def factory() -> Transport:
        made.append(_ShutdownRecorder(scripted("--silent")))
        return made[-1]

    with pytest.raises(DeadlineExceeded) as info:
        MCPConnection(factory, timeout=2)
    [transport] = made
    # The probe and the handshake waited within the 2 s budget (the default is 60 s)...
    waits = _waits_named(str(info.value))
    assert waits, str(info.value)
    assert sum(waits) <= 2.0 + 1e-3  # printed to 6 digits
    # ...the shutdown got what was left of it (not its own 600 s waits)...
    [limit] = transport.shutdown_limits
    assert 0.0 < limit <= 2.0
    # ...and the server had been killed when the call gave up (nothing left running).
    assert transport.returncode == -signal.SIGKILL


def test_the_cli_timeout_bounds_the_connect() -> None:
    argv = [sys.executable, "-m", "a2a_sync.cli", "mcp", "tools", "--timeout", "2"]
    done = subprocess.run(
        [*argv, "--stdio", *scripted("--silent")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "DeadlineExceeded" in done.stderr, done.stderr
    # The waits the error names come from the option's 2 s budget (the default is 60 s).
    waits = _waits_named(done.stderr)
    assert waits, done.stderr
    assert sum(waits) <= 2.0 + 1e-3  # printed to 6 digits


def test_stdout_noise_is_quoted_when_the_handshake_deadline_passes() -> None:
    argv = scripted("--stdout-noise", "2", "--no-discover-reply", "--silent")
    with pytest.raises(DeadlineExceeded) as info:
        MCPConnection.stdio(argv, timeout=2)
    message = str(info.value)
    assert '"Starting server... step 0"' in message  # the line (escaped, shortened)
    assert "must write only JSON-RPC messages to stdout and log to stderr" in message


# --- B.4 one transport surface -----------------------------------------------------------------


def _all_transports() -> list[Transport]:
    return [
        StdioTransport(scripted()),
        StreamableHTTPTransport("http://127.0.0.1:9/mcp"),
        StreamableHTTPTransport("http://127.0.0.1:9/mcp", fallback_to_sse=True),
        LegacySSETransport("http://127.0.0.1:9/sse"),
        FakeTransport(),
    ]


@pytest.mark.parametrize("transport", _all_transports(), ids=lambda t: type(t).__name__)
def test_every_transport_has_the_whole_transport_surface(transport: Transport) -> None:
    members = [name for name in vars(Transport) if not name.startswith("_")]
    members += list(Transport.__annotations__)
    assert {"kind", "name", "era_key", "send", "close"} <= set(members)
    for member in members:
        assert hasattr(transport, member), f"{type(transport).__name__} lacks {member}"
    assert isinstance(transport.kind, str)
    assert transport.kind
    assert isinstance(transport, ProcessTransport) == isinstance(transport, StdioTransport)


def test_legacy_sse_names_its_kind() -> None:
    assert LegacySSETransport("http://127.0.0.1:9/sse").kind == "http+sse"
    assert StdioTransport(scripted()).kind == "stdio"


# --- B.5 callbacks and the era ------------------------------------------------------------------


def test_a_callback_the_revision_lacks_warns_once() -> None:
    argv = scripted("--discover-supported", '["2025-11-25"]', "--counter-offer", "2025-03-26")
    with (
        pytest.warns(CallbackUnavailableWarning, match="elicitation") as caught,
        MCPConnection.stdio(argv, elicitation_callback=_elicit, timeout=10) as conn,
    ):
        assert conn.protocol_version == "2025-03-26"
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with MCPConnection.stdio(argv, elicitation_callback=_elicit, timeout=10):
            pass  # warned once for this server already


def test_a_dual_era_server_gets_the_handshake_when_callbacks_are_declared() -> None:
    argv = scripted("--discover-supported", '["2026-07-28"]', "--dual-era")
    with MCPConnection.stdio(argv, timeout=10) as conn:
        assert conn.era == "modern"  # nothing to push to: the modern era
    ERA_CACHE.clear()
    with MCPConnection.stdio(argv, elicitation_callback=_elicit, timeout=10) as conn:
        assert (conn.era, conn.protocol_version) == ("legacy", "2025-11-25")
    with MCPConnection.stdio(argv, elicitation_callback=_elicit, era="modern", timeout=10) as conn:
        assert conn.era == "modern"  # pinned: honoured


# --- B.1 over Streamable HTTP: 400 + -32022 ------------------------------------------------------


@pytest.fixture
def http_server(scripted_server: ScriptedServerFactory) -> Callable[[Script], str]:
    def start(script: Script) -> str:
        return str(scripted_server(script).url) + "/mcp"

    return start


def _unsupported(supported: list[str]) -> Handler:
    def handler(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        asked = request.headers.get("mcp-protocol-version")
        if asked in supported:
            Script.discover(sock, request, message)
            return
        data = {"supported": supported, "requested": asked}
        error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
        respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "error": error}, status=400)

    return handler


def test_http_400_unsupported_version_is_re_probed_not_handshaken(
    http_server: Callable[[Script], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(eras, "MODERN_VERSIONS", ("2026-07-28", "2099-01-01"))
    monkeypatch.setattr(eras, "LATEST_MODERN_VERSION", "2099-01-01")
    script = Script(server__discover=_unsupported(["2026-07-28"]))
    url = http_server(script)
    for era in ("auto", "modern"):
        with MCPConnection.http(url, era=era, timeout=10) as conn:
            assert (conn.era, conn.protocol_version) == ("modern", "2026-07-28")
    methods = [script.posts.get_nowait().get("method") for _ in range(script.posts.qsize())]
    assert "initialize" not in methods


def test_http_400_naming_only_unknown_modern_versions_is_an_error(
    http_server: Callable[[Script], str],
) -> None:
    script = Script(server__discover=_unsupported(["2099-01-01"]))
    with pytest.raises(UnsupportedProtocolVersion, match="2099-01-01"):
        MCPConnection.http(http_server(script), timeout=10)
    methods = [script.posts.get_nowait().get("method") for _ in range(script.posts.qsize())]
    assert methods == ["server/discover"]
