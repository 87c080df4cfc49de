"""Issue 17 §5: the CLI contract as a shell user meets it: options before the command,
a progress display that does not garble the streamed answer on a real terminal, ``--wait``
without an event count, Ctrl-C naming the task, ``task watch`` replaying, help texts."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from a2a_sync import A2AClient
from a2a_sync.testing import FakeAgent, agent_server
from a2a_sync.types import Task
from tests.support.polling import wait_until

CLI = [sys.executable, "-m", "a2a_sync.cli"]
RUN_TIMEOUT = 30.0
WAIT = 15.0


@pytest.fixture(scope="module")
def agent() -> FakeAgent:
    return (
        FakeAgent("CLI contract agent")
        .on("stream", chunks=["one ", "two ", "three"], delay=0.05)
        .on("slow", artifact="finally", delay=0.5)
        .on("hold", chunks=["started\n"], hold=True)
    )


@pytest.fixture(scope="module")
def url(agent: FakeAgent) -> Iterator[str]:
    with agent_server(agent) as served:
        yield served


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )


class Terminal:
    """The command on a pseudo-terminal (stdout and stderr both), as in a shell."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*CLI, *args],
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "TERM": "xterm", "COLUMNS": "100"},
        )
        os.close(slave)
        self.output = b""

    def read_until(self, marker: bytes | None, timeout: float = WAIT) -> bool:
        """Read until ``marker`` appears (or, with None, until the command ends)."""
        deadline = time.monotonic() + timeout
        while marker is None or marker not in self.output:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([self.master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the command ended and closed the terminal
                return marker is None
            if not chunk:
                return marker is None
            self.output += chunk
        return True

    def finish(self) -> int:
        self.read_until(None)
        code = self.proc.wait(WAIT)
        os.close(self.master)
        return code


def test_options_before_the_command_stand(url: str) -> None:
    done = run("--json", "card", url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == "CLI contract agent"
    done = run("--json", "send", url, "stream")
    assert json.loads(done.stdout)["status"]["state"] == "TASK_STATE_COMPLETED"


def test_timeout_before_the_command_stands() -> None:
    with socket.socket() as silent:  # accepts connections (backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        done = run("--timeout", "0.5", "card", f"http://127.0.0.1:{port}")
    # The call's own deadline ended it (the option's): without the option the silent peer
    # holds the command past RUN_TIMEOUT (read timeouts, retried), and run() raises.
    assert done.returncode == 3, done.stderr
    assert "DeadlineExceeded" in done.stderr


def test_bad_timeouts_name_the_option() -> None:
    for args in (
        ("card", "--timeout", "-1"),
        ("--timeout", "0", "card"),
        ("send", "--wait-timeout", "x"),
    ):
        done = run(*args, "http://127.0.0.1:9", *(["hi"] if "send" in args else []))
        assert done.returncode == 2
        assert "argument --timeout" in done.stderr or "argument --wait-timeout" in done.stderr
        assert "positive number of seconds" in done.stderr


def test_the_progress_display_does_not_garble_the_streamed_answer(url: str) -> None:
    terminal = Terminal("send", url, "stream", "--stream")
    assert terminal.finish() == 0, terminal.output
    text = terminal.output.decode()
    assert "one two three" in text  # the chunks are contiguous: no bar redrawn between
    assert "events/s" not in text.split("one two three")[1]
    assert "task " in text
    assert ": completed" in text


def test_wait_shows_the_state_not_an_event_count(url: str) -> None:
    terminal = Terminal("send", url, "slow", "--wait")
    assert terminal.finish() == 0, terminal.output
    text = terminal.output.decode()
    assert "finally" in text
    assert "events" not in text


def test_ctrl_c_during_wait_names_the_task(url: str, agent: FakeAgent) -> None:
    proc = subprocess.Popen(
        [*CLI, "send", url, "hold", "--wait"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        waiting = proc.stdout.readline()  # "task ID: working; waiting until it settles"
        assert waiting.endswith("waiting until it settles\n"), waiting
        task_id = waiting.split()[1].rstrip(":")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)
        agent.release()
    assert proc.returncode == 130
    assert stderr.strip() == (
        f"a2a-sync: interrupted; task {task_id} may still be running on the agent; "
        f"follow it with: a2a-sync task watch {url} {task_id}"
    )


def test_task_watch_replays_what_the_task_has_then_follows(url: str, agent: FakeAgent) -> None:
    with A2AClient.from_url(url) as client:
        task = client.send_message("hold", return_immediately=True)
        assert isinstance(task, Task)
        # produced before we attach
        wait_until(lambda: "started" in client.get_task(task.id).text, "the first chunk", WAIT)
    proc = subprocess.Popen(
        [*CLI, "task", "watch", url, task.id],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed while the task still runs
        agent.release()
        rest, _ = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)
    assert first == "started\n"
    assert f"task {task.id}: completed" in rest
    assert proc.returncode == 0


def test_help_texts() -> None:
    card = run("card", "--help").stdout
    assert "--wait-timeout" not in card
    assert "the agent's base URL" in card
    send = run("send", "--help").stdout
    assert "the message text" in send
    assert "--wait-timeout" in send
    assert "get, cancel or watch a task" in run("--help").stdout
    task = run("task", "--help").stdout
    assert "Inspect or control a task" in task
    assert "print what the task has so far" in task
    mcp = run("mcp", "--help").stdout
    assert "Streamable HTTP" in mcp
    assert "list the tools" in mcp
    assert "the tool's name" in run("mcp", "call", "--help").stdout
