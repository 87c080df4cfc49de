"""Issue 17 §2-3: serving from a script or notebook, and what ``serve`` tells its user.

``serve_in_thread`` returns a handle (``.url``, ``.stop()``, ``with``; stopped at
interpreter exit), ``from_url`` names what it expected, ``serve`` says where it serves and
where tasks go, and a busy port is one clear error (library and CLI).
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_sync import A2AClient, serve
from a2a_sync.errors import ConfigurationError
from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.testing import FakeAgent, agent_card

RUN_TIMEOUT = 60.0


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def app() -> A2AApplication:
    return A2AApplication(agent_card(), FakeAgent())


def test_the_handle_serves_until_stopped_and_from_url_takes_its_url() -> None:
    server = serve_in_thread(app())
    states = [server.running]
    try:
        assert repr(server) == f"<ServerHandle {server.url} running>"
        with A2AClient.from_url(server.url) as client:
            assert client.card is not None
    finally:
        assert server.stop()
    states.append(server.running)
    assert states == [True, False]
    assert repr(server).endswith(" stopped>")
    assert server.stop()  # idempotent


def test_the_with_block_still_binds_the_url_string() -> None:
    with serve_in_thread(app()) as url:
        assert isinstance(url, str)
        with A2AClient.from_url(url) as client:
            assert client.card is not None


def test_from_url_given_the_handle_says_what_it_expected() -> None:
    server = serve_in_thread(app())
    try:
        with pytest.raises(
            ConfigurationError, match=r"must be a str .*got a ServerHandle; pass its \.url"
        ):
            A2AClient.from_url(server)  # type: ignore[arg-type]
    finally:
        server.stop()


def test_a_handle_left_running_is_stopped_quietly_at_exit() -> None:
    script = textwrap.dedent(
        """
        from a2a_sync import A2AClient, serve
        from a2a_sync.server import A2AApplication, serve_in_thread
        from a2a_sync.testing import FakeAgent, agent_card

        server = serve_in_thread(A2AApplication(agent_card(), FakeAgent()))
        client = A2AClient.from_url(server.url)
        stream = client.stream_message("hello")
        next(iter(stream))
        print("served", server.url, flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "served http://127.0.0.1:" in done.stdout
    assert "Exception ignored" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_busy_port_is_a_configuration_error_with_the_fix(busy_port: int) -> None:
    with pytest.raises(
        ConfigurationError, match=rf"127.0.0.1:{busy_port}: the port is in use.*port=0"
    ):
        serve_in_thread(app(), port=busy_port)


SERVE_SCRIPT = """
import sys
from a2a_sync import serve
from a2a_sync.server import A2AApplication
from a2a_sync.testing import FakeAgent, agent_card

if sys.argv[1] == "memory":
    serve(A2AApplication(agent_card(), FakeAgent()), port=0)
else:
    serve(FakeAgent(), card=agent_card(), port=0)
"""


def serve_until_sigint(kind: str, cwd: Path) -> tuple[int, list[str]]:
    """Run ``serve`` in a child; Ctrl-C it once it said it serves; its exit and lines."""
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE_SCRIPT, kind],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()  # blocks until serve() printed its line
        process.send_signal(signal.SIGINT)
        rest = process.stderr.read()
        return process.wait(RUN_TIMEOUT), [first, *rest.splitlines()]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(RUN_TIMEOUT)
        assert process.stderr is not None
        process.stderr.close()


def test_serve_says_where_it_serves_where_tasks_go_and_when_it_stopped(tmp_path: Path) -> None:
    code, lines = serve_until_sigint("sqlite", tmp_path)
    assert code == 0, lines
    database = tmp_path / "a2a-tasks.sqlite3"
    assert database.exists()
    started = re.fullmatch(
        r"a2a-sync: serving (http://127\.0\.0\.1:\d+) \(tasks in (.*), created now\); "
        r"Ctrl-C stops it\n",
        lines[0],
    )
    assert started is not None, lines
    assert started.group(2) == str(database)
    assert lines[-1] == f"a2a-sync: stopped serving {started.group(1)}"
    # A second start finds the file: no "created now".
    code, lines = serve_until_sigint("sqlite", tmp_path)
    assert code == 0
    assert f"(tasks in {database}); Ctrl-C stops it" in lines[0]


def test_serve_says_when_tasks_live_in_memory(tmp_path: Path) -> None:
    code, lines = serve_until_sigint("memory", tmp_path)
    assert code == 0, lines
    assert "(tasks in memory, lost when it stops); Ctrl-C stops it" in lines[0]


def test_serve_on_a_busy_port_raises_instead_of_an_oserror(busy_port: int, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="the port is in use"):
        serve(app(), port=busy_port, quiet=True)


def test_cli_serve_on_a_busy_port_prints_one_line_and_exits_2(busy_port: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "a2a_sync.cli", "serve", "--demo", "--port", str(busy_port)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("a2a-sync: ConfigurationError: cannot serve on 127.0.0.1:")
    assert "--port 0" in lines[0]
