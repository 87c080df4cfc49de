"""The ``a2a-sync`` command end to end: real subprocesses against a real local agent
(a FakeAgent served by agent_server in this process) and real MCP stdio servers.

Every documented exit code is produced by a real situation; Ctrl-C is a real SIGINT to
the command, which must exit 130 and leave no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_sync import A2AClient
from a2a_sync.testing import FakeAgent, agent_server, mcp_server_command, recorded_messages
from a2a_sync.types import Task
from tests.support.polling import wait_until
from tests.support.ports import refused_url
from tests.support.processes import alive, descendants

CLI = [sys.executable, "-m", "a2a_sync.cli"]
RUN_TIMEOUT = 30.0  # one command; they take well under a second
WAIT = 10.0  # a marker in a running command's output, or its exit after a signal

MCP_SCRIPT = {
    "name": "cli-test-tools",
    "tools": {
        "greet": {"description": "says hello", "reply": "Hello, {name}!"},
        "fail": {"reply": "the tool failed", "is_error": True},
        "slow": {"reply": "late", "delay": 30.0},
    },
    "resources": {"mem://readme": {"name": "readme", "text": "read me"}},
    "prompts": {"review": {"description": "review code", "text": "Review {code}"}},
}


# --- helpers -------------------------------------------------------------------------------------


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        cwd=cwd,
        check=False,
    )


def one_error_line(done: subprocess.CompletedProcess[str], error: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"a2a-sync: {error}: "), done.stderr


class Running:
    """A command running in the background; its stdout is read on a thread."""

    def __init__(self, *args: str, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen(
            [*CLI, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )
        self._out = bytearray()
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, name="test-cli-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 4096):
            with self._changed:
                self._out += chunk
                self._changed.notify_all()

    @property
    def output(self) -> str:
        with self._changed:
            return self._out.decode()

    def wait_for(self, marker: str) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: marker.encode() in self._out, WAIT)

    def stop(self, sig: signal.Signals) -> tuple[int, str]:
        """Send ``sig``; return the exit status and stderr."""
        self.proc.send_signal(sig)
        returncode = self.proc.wait(WAIT)
        self._reader.join(WAIT)
        assert self.proc.stderr is not None
        return returncode, self.proc.stderr.read().decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for command in started:
        command.kill()


@pytest.fixture(scope="module")
def agent() -> FakeAgent:
    return (
        FakeAgent("CLI test agent")
        .on("fail", state="failed", message="cannot do that")
        .on("city?", ask="Which city?")
        .on("stream", chunks=["one ", "two ", "three"], delay=0.02)
        .on("slow", artifact="finally", delay=0.3)
        .on("hold", chunks=["started\n"], hold=True)
    )


@pytest.fixture(scope="module")
def url(agent: FakeAgent) -> Iterator[str]:
    with agent_server(agent) as url:
        yield url


@pytest.fixture
def mcp() -> list[str]:
    """``--stdio`` and the scripted MCP server's argv."""
    return ["--stdio", *mcp_server_command(MCP_SCRIPT)]


# --- A2A -----------------------------------------------------------------------------------------


def test_card_prints_the_agent_and_json_parses(url: str) -> None:
    done = run("card", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("CLI test agent 1.0.0")
    assert "capabilities: streaming" in done.stdout
    as_json = run("card", url, "--json")
    assert json.loads(as_json.stdout)["name"] == "CLI test agent"


def test_send_prints_the_completed_task_and_exits_0(url: str) -> None:
    done = run("send", url, "hello")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "echo: hello"
    assert ": completed" in done.stdout


def test_send_stream_prints_the_chunks_then_the_outcome(url: str) -> None:
    done = run("send", url, "stream", "--stream")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("one two three\n")
    assert done.stdout.rstrip().endswith(": completed")
    assert done.stderr == ""  # no progress bar without a terminal


def test_send_stream_json_is_one_event_per_line(url: str) -> None:
    done = run("send", url, "stream", "--stream", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert "task" in events[0]
    chunks = [
        e["artifactUpdate"]["artifact"]["parts"][0]["text"]
        for e in events[1:-1]
        if "artifactUpdate" in e
    ]
    assert chunks == ["one ", "two ", "three"]


def test_send_wait_polls_until_the_task_settles(url: str) -> None:
    done = run("send", url, "slow", "--wait", "--json")
    assert done.returncode == 0, done.stderr
    task = json.loads(done.stdout)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "finally"


def test_send_wait_gives_up_after_the_wait_timeout_with_exit_3(url: str) -> None:
    done = run("send", url, "hold", "--wait", "--wait-timeout", "0.5")
    assert done.returncode == 3, done.stderr
    one_error_line(done, "TaskWaitTimeout")
    assert "task watch" in done.stderr  # says how to keep waiting


def test_a_failed_task_exits_1(url: str) -> None:
    done = run("send", url, "fail")
    assert done.returncode == 1
    assert ": failed" in done.stdout
    assert "cannot do that" in done.stdout


def test_usage_errors_exit_2(url: str, mcp: list[str]) -> None:
    missing = run("send", url)
    assert missing.returncode == 2
    assert "usage:" in missing.stderr
    bad_json = run("mcp", "call", "greet", "{not json", *mcp)
    assert bad_json.returncode == 2
    one_error_line(bad_json, "ConfigurationError")


def test_an_agent_that_is_not_there_exits_3_with_one_line() -> None:
    done = run("card", refused_url(""), "--timeout", "5")
    assert done.returncode == 3
    one_error_line(done, "ConnectError")


def test_debug_shows_the_traceback_instead() -> None:
    done = run("card", refused_url(""), "--timeout", "5", "--debug")
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr
    assert "ConnectError" in done.stderr


def test_an_unknown_task_exits_4(url: str) -> None:
    done = run("task", "get", url, "no-such-task")
    assert done.returncode == 4
    one_error_line(done, "TaskNotFound")


def test_a_question_exits_5_and_json_carries_the_task(url: str) -> None:
    done = run("send", url, "city?", "--json")
    assert done.returncode == 5
    task = json.loads(done.stdout)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    answered = run("send", url, "Oslo", "--task-id", task["id"])
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.splitlines()[-1] == "echo: Oslo"


def test_task_get_cancel_and_watch(url: str, agent: FakeAgent, running: list[Running]) -> None:
    with A2AClient.from_url(url) as client:
        held = client.send_message("hold", return_immediately=True)
        other = client.send_message("hold", return_immediately=True)
    assert isinstance(held, Task)
    assert isinstance(other, Task)
    got = run("task", "get", url, held.id)
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith(f"task {held.id}: ")
    canceled = run("task", "cancel", url, other.id)
    assert canceled.returncode == 0, canceled.stderr
    assert f"task {other.id}: canceled" in canceled.stdout
    watch = Running("task", "watch", url, held.id, "--json")
    running.append(watch)
    assert watch.wait_for('"task"')  # the subscription's first event: it is live
    agent.release()
    assert watch.proc.wait(WAIT) == 0
    last = json.loads(watch.output.splitlines()[-1])
    assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("command", ["send", "watch"])
def test_ctrl_c_exits_130_and_leaves_no_process(
    command: str, url: str, running: list[Running]
) -> None:
    if command == "send":
        cli = Running("send", url, "hold", "--stream")
        marker = "started"
    else:
        with A2AClient.from_url(url) as client:
            task = client.send_message("hold", return_immediately=True)
        assert isinstance(task, Task)
        cli = Running("task", "watch", url, task.id, "--json")
        marker = '"task"'
    running.append(cli)
    assert cli.wait_for(marker)
    children = descendants(cli.proc.pid)
    returncode, stderr = cli.stop(signal.SIGINT)
    assert returncode == 130
    # One line naming the task to follow up (issue 17 §5).
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("a2a-sync: interrupted; task ")
    assert f"a2a-sync task watch {url} " in lines[0]
    assert not [pid for pid in children if alive(pid)]


# --- MCP -----------------------------------------------------------------------------------------


def test_mcp_lists_and_calls_tools(mcp: list[str]) -> None:
    tools = run("mcp", "tools", *mcp)
    assert tools.returncode == 0, tools.stderr
    assert tools.stdout.splitlines()[0] == "greet: says hello"
    call = run("mcp", "call", "greet", '{"name": "Ada"}', *mcp)
    assert (call.returncode, call.stdout) == (0, "Hello, Ada!\n")
    as_json = run("mcp", "call", "greet", '{"name": "Ada"}', "--json", *mcp)
    assert json.loads(as_json.stdout)["content"][0]["text"] == "Hello, Ada!"


def test_mcp_resources_and_prompts(mcp: list[str]) -> None:
    resources = run("mcp", "resources", *mcp)
    assert resources.stdout.split() == ["mem://readme", "readme"]
    read = run("mcp", "read", "mem://readme", *mcp)
    assert read.stdout == "read me\n"
    prompts = run("mcp", "prompts", *mcp)
    assert prompts.stdout == "review: review code\n"
    prompt = run("mcp", "get-prompt", "review", '{"code": "x = 1"}', *mcp)
    assert (prompt.returncode, prompt.stdout) == (0, "user: Review x = 1\n")


def test_mcp_a_failed_tool_call_exits_4(mcp: list[str]) -> None:
    done = run("mcp", "call", "fail", *mcp)
    assert done.returncode == 4
    assert done.stdout == "the tool failed\n"


def test_mcp_a_server_that_cannot_start_exits_3() -> None:
    done = run("mcp", "tools", "--stdio", "/nonexistent/mcp-server")
    assert done.returncode == 3
    one_error_line(done, "ServerProcessError")


def test_mcp_the_demo_tool_server_factorizes() -> None:
    demo_tools = ["--stdio", sys.executable, "-m", "a2a_sync.demo.mcp_tools"]
    done = run("mcp", "call", "factorize", '{"n": 360}', "--json", *demo_tools)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["structuredContent"] == {"n": 360, "factors": [2, 2, 2, 3, 3, 5]}


def test_ctrl_c_during_an_mcp_call_exits_130_and_reaps_the_server(
    tmp_path: Path, running: list[Running]
) -> None:
    record = tmp_path / "record.jsonl"
    cli = Running("mcp", "call", "slow", "--stdio", *mcp_server_command(MCP_SCRIPT, record=record))
    running.append(cli)

    def calling() -> bool:
        return any(m.get("method") == "tools/call" for m in recorded_messages(record))

    wait_until(calling, "the tool call to reach the server", WAIT)
    children = descendants(cli.proc.pid)
    assert children  # the MCP server
    returncode, stderr = cli.stop(signal.SIGINT)
    assert returncode == 130
    assert stderr.strip() == "interrupted"
    assert not [pid for pid in children if alive(pid)]


# --- serve ---------------------------------------------------------------------------------------


def test_serve_demo_answers_and_ctrl_c_reaps_the_tool_server(running: list[Running]) -> None:
    server = Running("serve", "--demo", "--port", "0")
    running.append(server)
    assert server.wait_for("Ctrl-C stops it"), server.output
    url = server.output.splitlines()[0].rsplit(" ", 1)[-1]
    children = descendants(server.proc.pid)
    assert children  # the MCP tool server
    done = run("send", url, "factor 360 1001", "--stream")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("360 = 2^3 * 3^2 * 5\n1001 = 7 * 11 * 13\n")
    returncode, _ = server.stop(signal.SIGINT)
    assert returncode == 130
    assert not [pid for pid in children if alive(pid)]


def test_serve_module_attr_and_sigterm_exits_0(tmp_path: Path, running: list[Running]) -> None:
    (tmp_path / "myagent.py").write_text(
        "def execute(context, updater):\n"
        "    updater.add_artifact('hi ' + context.text)\n"
        "    updater.complete()\n"
    )
    server = Running(
        "serve", "myagent:execute", "--port", "0", "--database", ":memory:", "--json", cwd=tmp_path
    )
    running.append(server)
    assert server.wait_for("\n"), server.output
    started = json.loads(server.output.splitlines()[0])
    card = run("card", started["url"], "--json")
    assert json.loads(card.stdout)["name"] == "execute"
    done = run("send", started["url"], "there")
    assert done.stdout.splitlines()[-1] == "hi there"
    returncode, stderr = server.stop(signal.SIGTERM)
    assert returncode == 0, stderr


def test_serve_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    (tmp_path / "notagent.py").write_text("value = 42\n")
    for target in ("no_such_module:app", "notagent:value", "notagent:missing"):
        done = run("serve", target, "--port", "0", cwd=tmp_path)
        assert done.returncode == 2, target
        one_error_line(done, "ConfigurationError")
