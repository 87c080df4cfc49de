"""The stdio transport against real subprocesses (the framework-free echo server)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import (
    ConfigurationError,
    ConnectionClosed,
    DeadlineExceeded,
    ResponseTooLarge,
    ServerProcessError,
)
from a2a_sync.mcp import eras, types
from a2a_sync.mcp.session import Handlers, MCPSession
from a2a_sync.mcp.transports.stdio import StdioTransport

from ..peers import echo_argv

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX process groups")


class Peer:
    def __init__(self, transport: StdioTransport, session: MCPSession) -> None:
        self.transport = transport
        self.session = session

    def call(self, name: str, timeout: float = 5, **arguments: Any) -> Any:
        return self.session.request(
            "tools/call", {"name": name, "arguments": arguments}, timeout=timeout
        )

    def close(self) -> None:
        self.transport.close()
        self.session.join_dispatcher()


def open_peer(*flags: str, handlers: Handlers | None = None, **options: Any) -> Peer:
    transport = StdioTransport(echo_argv(*flags), **options)
    session = MCPSession(transport, handlers)
    transport.start(session)
    try:
        result = session.request(
            "initialize",
            eras.initialize_params("2025-11-25", session.client_info, session.client_capabilities),
            timeout=10,
        )
    except Exception:
        with contextlib.suppress(ServerProcessError):
            transport.close()
        raise
    session.adopt(eras.server_info_from_initialize(result))
    session.notify("notifications/initialized")
    return Peer(transport, session)


@pytest.fixture
def peer() -> Iterator[Peer]:
    p = open_peer()
    yield p
    p.close()


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def test_round_trip_and_concurrent_calls_from_many_threads(peer: Peer) -> None:
    results: dict[int, str] = {}

    def worker(n: int) -> None:
        for i in range(20):
            text = f"{n}-{i}"
            results[n * 100 + i] = peer.call("echo", text=text)["content"][0]["text"]

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == {n * 100 + i: f"{n}-{i}" for n in range(4) for i in range(20)}


def test_child_gets_only_the_allow_listed_environment_plus_explicit_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("BASH_FUNC_x%%", "() { echo pwned; }")
    monkeypatch.setenv("TERM", "() { echo pwned; }")
    monkeypatch.setenv("HOME", str(tmp_path))
    p = open_peer(env={"MY_TOKEN": "given"}, cwd=tmp_path)
    try:
        info = p.call("env")["structuredContent"]
    finally:
        p.close()
    env = info["env"]
    assert env["MY_TOKEN"] == "given"
    assert env["HOME"] == str(tmp_path)
    for name in ("AWS_SECRET_ACCESS_KEY", "OPENAI_API_KEY", "BASH_FUNC_x%%", "TERM"):
        assert name not in env
    assert set(env) - {"MY_TOKEN", "PATH", "HOME", "LOGNAME", "SHELL", "USER", "LC_CTYPE"} == set()
    assert Path(info["cwd"]) == tmp_path


def test_server_runs_in_its_own_process_group_and_argv_is_never_a_shell(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        StdioTransport(f"{sys.executable} server.py")  # type: ignore[arg-type]
    marker = tmp_path / "pwned"
    p = open_peer("--pid-file", "pid; touch pwned", cwd=tmp_path)
    try:
        info = p.call("env")["structuredContent"]
    finally:
        p.close()
    assert info["pgid"] == info["pid"] == p.transport.pid
    assert info["pgid"] != os.getpgid(0)
    assert (tmp_path / "pid; touch pwned").exists()
    assert not marker.exists()


@pytest.mark.parametrize("flags", [(), ("--crlf",)])
def test_line_separators_inside_strings_survive_and_crlf_servers_work(
    flags: tuple[str, ...],
) -> None:
    p = open_peer(*flags)
    try:
        text = "a\u2028b\u0085c\rd\ne\u2029"
        assert p.call("echo", text=text)["content"][0]["text"] == text
    finally:
        p.close()


def test_non_json_lines_are_logged_and_the_session_continues(
    peer: Peer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="a2a_sync.mcp.transports.stdio"):
        assert peer.call("garbage")["content"][0]["text"] == "after garbage"
    assert any("not JSON" in r.getMessage() for r in caplog.records)
    assert peer.call("echo", text="still here")["content"][0]["text"] == "still here"


def test_a_line_over_the_cap_ends_the_session_with_response_too_large() -> None:
    p = open_peer(max_line_bytes=64 * 1024)
    with pytest.raises(ResponseTooLarge) as info:
        p.call("huge", size=1 << 20)
    assert info.value.limit == 64 * 1024
    with pytest.raises(ResponseTooLarge):
        p.call("echo", text="x")
    pid = p.transport.pid
    assert pid is not None
    p.transport._close_done.wait(10)
    assert not alive(pid)
    assert p.transport.returncode == 0  # stdout kept draining: it exited on stdin EOF


def test_a_flood_on_stderr_does_not_deadlock_and_goes_to_the_given_file() -> None:
    sink = io.StringIO()
    p = open_peer("--stderr-flood", str(1 << 20), stderr=sink)
    try:
        assert p.call("echo", text="ok")["content"][0]["text"] == "ok"
    finally:
        p.close()
    assert sink.getvalue().count("e") >= 1 << 20


def test_stderr_goes_to_logging_by_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="a2a_sync.mcp.transports.stdio.stderr"):
        p = open_peer()
        with pytest.raises(ServerProcessError):
            p.call("die", code=4)
        with pytest.raises(ServerProcessError):
            p.close()  # joins the stderr drain
    assert any("asked to die" in r.getMessage() for r in caplog.records)


def test_stderr_none_discards_but_still_works() -> None:
    p = open_peer("--stderr-flood", "100000", stderr=None)
    try:
        assert p.call("echo", text="ok")["content"][0]["text"] == "ok"
    finally:
        p.close()


def test_missing_command_fails_fast_with_server_process_error() -> None:
    transport = StdioTransport(["/nonexistent/mcp-server"])
    with pytest.raises(ServerProcessError):
        transport.start(MCPSession(transport))


def test_server_exiting_at_start_fails_initialize_with_exit_status_and_stderr_tail() -> None:
    with pytest.raises(ServerProcessError) as info:
        open_peer("--exit-code", "3")
    assert info.value.returncode == 3
    assert "bad configuration" in info.value.stderr_tail


def test_server_death_fails_every_pending_call_at_once_and_later_writes_raise() -> None:
    p = open_peer()
    pending = [p.session.begin("tools/call", {"name": "hang"}) for _ in range(5)]
    with pytest.raises(ServerProcessError) as info:
        p.call("die", code=7)
    assert info.value.returncode == 7
    assert "asked to die" in info.value.stderr_tail
    for call in pending:
        with pytest.raises(ServerProcessError):
            call.wait(5)
    with pytest.raises(ConnectionClosed):
        p.call("echo", text="x")
    with pytest.raises(ServerProcessError):
        p.close()  # close reports that the server had failed


def test_death_is_detected_even_when_a_grandchild_holds_stdout_open() -> None:
    p = open_peer("--grandchild-holds-stdout")
    try:
        with pytest.raises(ServerProcessError) as info:
            p.call("die", code=5, timeout=30)
        assert info.value.returncode == 5
    finally:
        with pytest.raises(ServerProcessError):
            p.close()


def test_close_of_a_well_behaved_server_needs_no_signal(peer: Peer) -> None:
    peer.close()
    assert peer.transport.returncode == 0


def test_close_sends_sigterm_to_a_server_ignoring_stdin_eof() -> None:
    p = open_peer("--ignore-eof", terminate_timeout=0.2)
    p.close()
    assert p.transport.returncode == -signal.SIGTERM


def test_close_sends_sigkill_to_a_server_ignoring_sigterm() -> None:
    p = open_peer("--ignore-eof", "--ignore-sigterm", terminate_timeout=0.2, kill_timeout=0.2)
    p.close()
    assert p.transport.returncode == -signal.SIGKILL


def test_close_leaves_no_member_of_the_process_group_alive(peer: Peer) -> None:
    grandchild = peer.call("spawn")["structuredContent"]["pid"]
    assert alive(grandchild)
    server = peer.transport.pid
    assert server is not None
    peer.close()
    assert not alive(grandchild)
    assert not alive(server)


def test_close_drains_stdout_so_a_server_blocked_on_a_full_pipe_can_exit(peer: Peer) -> None:
    call = peer.session.begin("tools/call", {"name": "flood", "arguments": {"count": 2000}})
    peer.close()
    assert peer.transport.returncode == 0
    assert call.wait(5)["content"][0]["text"] == "flooded"


def test_close_is_idempotent_and_unblocks_a_call_in_another_thread(peer: Peer) -> None:
    errors: list[BaseException] = []
    sent = threading.Event()

    def blocked() -> None:
        # begin() returns once the request is written to the server's stdin: the event
        # says the call is in flight, and the wait below is the blocked call.
        pending = peer.session.begin("tools/call", {"name": "hang", "arguments": {}})
        sent.set()
        try:
            pending.wait(30)
        except ConnectionClosed as exc:
            errors.append(exc)

    thread = threading.Thread(target=blocked)
    thread.start()
    assert sent.wait(5)
    peer.close()
    peer.close()
    thread.join(5)
    assert not thread.is_alive()
    assert len(errors) == 1


def test_timeout_cancels_the_call_and_the_session_stays_usable(peer: Peer) -> None:
    with pytest.raises(DeadlineExceeded):
        peer.call("hang", timeout=0.1)
    assert peer.call("echo", text="next")["content"][0]["text"] == "next"


def test_server_requests_are_answered_over_stdio() -> None:
    handlers = Handlers(
        sampling=lambda r: types.CreateMessageResult.from_text("from the model", model="m")
    )
    p = open_peer(handlers=handlers)
    try:
        assert p.call("sample")["content"][0]["text"] == "from the model"
    finally:
        p.close()


def test_progress_notifications_arrive_before_the_result(peer: Peer) -> None:
    seen: list[float] = []
    all_seen = threading.Event()

    def on_progress(progress: Any) -> None:
        seen.append(progress.progress)
        if len(seen) == 3:
            all_seen.set()

    result = peer.session.request(
        "tools/call",
        {"name": "progress", "arguments": {"steps": 3}},
        timeout=5,
        progress=on_progress,
    )
    assert result["content"][0]["text"] == "done"
    assert all_seen.wait(5)  # callbacks run on the dispatcher thread, in order
    assert seen == [1, 2, 3]
