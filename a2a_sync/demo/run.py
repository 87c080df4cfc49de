"""``run_demo()``: the end-to-end demo behind ``a2a-sync demo`` and ``make demo``.

One process, embedded defaults, no external service. It starts the demo agent (the
a2a_sync server on a free port, a SQLite task store in a temporary folder, an MCP tool
server subprocess), puts a relay in front of it that cuts the first stream on purpose,
streams a task through :class:`~a2a_sync.client.ResilientA2AClient` with a live progress
display, shows the client resubscribing without sending the message again, prints the
final task, and cleans up every thread, process and file. Each step is told as it happens.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
import time
from typing import IO, Any, Final

from ..a2a.types import Task, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from ..client import A2AClient, ResilientA2AClient
from ..client.display import progress_bar
from ..policies import ResilienceConfig
from ..server.serving import serve_in_thread
from .agent import TOOLS_COMMAND, DemoAgent, numbers_in
from .relay import StreamCutter

__all__ = ["DEMO_MESSAGE", "run_demo"]

#: What the demo asks the agent: six numbers, one tool call and one chunk each.
DEMO_MESSAGE: Final = "factor 360 1001 65537 999999 2147483647 600851475143"
#: Events the client receives before the relay cuts its stream: the task, "working",
#: two numbers' status and chunk, so the cut lands mid-task.
CUT_AFTER_EVENTS: Final = 6
#: Budgets for the demo's client: resubscribe quickly, never wait long.
CLIENT_CONFIG: Final = ResilienceConfig(retry_base_delay=0.2, retry_max_delay=1.0, task_timeout=20)
#: Longest wait for the relay to report the cut after the client got its last event.
CUT_WAIT: Final = 2.0
#: Per-call time limit of the demo's client (the agent answers in milliseconds).
CLIENT_TIMEOUT: Final = 10.0
_INDENT: Final = "      "


class _Story:
    """Numbered steps and indented details on ``out``; thread-safe (the relay reports
    the cut from its own thread). Lines go through the progress bar when one is shown."""

    def __init__(self, out: IO[str], steps: int) -> None:
        self._out = out
        self._steps = steps
        self._step = 0
        self._lock = threading.Lock()
        self.bar: Any = None

    def step(self, text: str) -> None:
        self._step += 1
        self.line(f"[{self._step}/{self._steps}] {text}")

    def detail(self, text: str) -> None:
        self.line(_INDENT + text)

    def line(self, line: str) -> None:
        with self._lock:
            if self.bar is not None:
                type(self.bar).write(line, file=self._out)
            else:
                self._out.write(line + "\n")
                self._out.flush()


def _short(task_id: str | None) -> str:
    return (task_id or "?")[:8]


def _times(count: int) -> str:
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


def _describe(event: Any) -> str:
    if isinstance(event, Task):
        return f"task {_short(event.id)} {event.state.value}"
    if isinstance(event, TaskStatusUpdateEvent):
        message = event.status.message
        detail = f": {message.text}" if message is not None else ""
        return f"status {event.status.state.value}{detail}"
    if isinstance(event, TaskArtifactUpdateEvent):
        return f"chunk  {event.artifact.text.strip()}"
    return type(event).__name__


def run_demo(out: IO[str] | None = None, *, message: str = DEMO_MESSAGE) -> int:
    """Run the demo, telling each step on ``out`` (stdout by default).

    Interrupting it (Ctrl-C) still stops every thread and process it started.

    Args:
        out: Where the story goes.
        message: What the client asks the agent.

    Returns:
        0 when every check held (the stream was cut, the client resubscribed, the agent
        got the message once, the task completed with every chunk, nothing was left
        running); 1 otherwise, with the reason printed.
    """
    story = _Story(out if out is not None else sys.stdout, steps=6)
    started = time.monotonic()
    problems: list[str] = []
    story.line("a2a_sync demo: an A2A agent whose skill uses an MCP tool, and a client that")
    story.line("survives a stream cut on purpose. Everything runs on this machine.")
    story.line("")
    with tempfile.TemporaryDirectory(prefix="a2a-sync-demo-") as folder:
        database = os.path.join(folder, "tasks.sqlite3")
        with contextlib.ExitStack() as stack:
            story.step(
                f"MCP: starting the tool server over stdio: python {' '.join(TOOLS_COMMAND[1:])}"
            )
            agent = DemoAgent(database)
            stack.callback(agent.close)
            story.detail(f"pid {agent.tools_pid}; tools: {', '.join(agent.tool_names)}")

            story.step("A2A server: the demo agent on waitress, tasks in SQLite")
            url = stack.enter_context(serve_in_thread(agent.app))
            story.detail(f"{agent.app.card.name} at {url}")
            story.detail(f"task store: {database}")

            story.step(
                f"Relay: forwards to the agent and will cut the first stream after "
                f"{CUT_AFTER_EVENTS} events"
            )

            relay = stack.enter_context(StreamCutter(url, cut_after_events=CUT_AFTER_EVENTS))
            story.detail(f"client -> {relay.url} -> {url}")

            story.step("Client: ResilientA2AClient streams a task through the relay")
            client = stack.enter_context(
                ResilientA2AClient(
                    A2AClient.from_url(relay.url, timeout=CLIENT_TIMEOUT), CLIENT_CONFIG
                )
            )
            card = client.get_agent_card()
            story.detail(f"card: {card.name} {card.version}, skill: {card.skills[0].name}")
            story.detail(f'sending "{message}"')
            final, streamed = _stream(client, message, story, relay)

            story.step(f"Result: task {_short(final.id)} {final.state.value}")
            for line in final.text.splitlines():
                story.detail(line)
            if streamed == final.text:
                story.detail(
                    "(what streamed, cut and all, equals the stored task: each chunk once)"
                )
            received = agent.handler.received
            sends = received.get("SendStreamingMessage", 0)
            story.detail(
                f"the agent received the message {_times(sends)} (SendStreamingMessage) and "
                f"ran the skill {_times(agent.executor.runs)}"
            )
            story.detail(
                f"the client re-attached with SubscribeToTask x{received.get('SubscribeToTask', 0)}"
                f" and confirmed the result with GetTask x{received.get('GetTask', 0)}"
            )
            problems += _check(final, streamed, received, agent.executor.runs, relay.cut.is_set())
            tools_pid = agent.tools_pid
        story.step("Cleanup: client closed, relay closed, server stopped, tool server reaped")
        story.detail(
            f"MCP tool server (pid {tools_pid}) exited with status {agent.tools_returncode}"
        )
        if agent.tools_returncode is None:
            problems.append("the MCP tool server is still running")
    left = [t.name for t in threading.enumerate() if t.name.startswith("a2a-sync")]
    story.detail(f"temporary folder removed: {not os.path.exists(folder)}")
    story.detail(f"a2a_sync threads still running: {len(left)}")
    if left:
        problems.append(f"threads left running: {left}")
    if os.path.exists(folder):
        problems.append(f"the temporary folder {folder} is still there")
    story.line("")
    if problems:
        for problem in problems:
            story.line(f"demo FAILED: {problem}")
        return 1
    story.line(f"demo finished in {time.monotonic() - started:.1f} s")
    return 0


def _stream(
    client: ResilientA2AClient, message: str, story: _Story, relay: StreamCutter
) -> tuple[Task, str]:
    """Stream the task with a progress display; return the final task and the chunks."""
    total = len(numbers_in(message))
    bar = progress_bar(total, "factoring", unit=" numbers")
    story.bar = bar
    chunks: list[str] = []
    reconnects = 0
    try:
        with client.stream_message(message) as stream:
            for number, event in enumerate(stream, start=1):
                if stream.reconnects > reconnects:
                    reconnects = stream.reconnects
                    story.detail(
                        f">>> client: the stream dropped; resubscribed to task "
                        f"{_short(stream.task_id)} (SubscribeToTask, attempt {reconnects})"
                    )
                    story.detail(">>> nothing was sent again; the events go on where they stopped")
                story.detail(f"event {number:2}  {_describe(event)}")
                if number == CUT_AFTER_EVENTS and relay.cut.wait(CUT_WAIT):
                    story.detail(f">>> relay: cut the connection after event {number}")
                if isinstance(event, TaskArtifactUpdateEvent):
                    chunks.append(event.artifact.text)
                    if bar is not None:
                        bar.update(1)
                elif isinstance(event, TaskStatusUpdateEvent) and bar is not None:
                    status = event.status.message
                    bar.set_description(status.text if status else event.status.state.value)
            final = stream.get_final_task()
    finally:
        story.bar = None
        if bar is not None:
            bar.close()
    return final, "".join(chunks)


def _check(final: Task, streamed: str, received: dict[str, int], runs: int, cut: bool) -> list[str]:
    """What the demo promises, checked."""
    problems = []
    if not cut:
        problems.append("the relay never cut the stream")
    if received.get("SendStreamingMessage", 0) + received.get("SendMessage", 0) != 1:
        problems.append(f"the message reached the agent more than once: {received}")
    if received.get("SubscribeToTask", 0) < 1:
        problems.append("the client never resubscribed")
    if runs != 1:
        problems.append(f"the skill ran {runs} times")
    if final.state is not TaskState.completed:
        problems.append(f"the task ended {final.state.value}")
    if streamed != final.text:
        problems.append("the streamed chunks differ from the final task")
    return problems
