"""Agents used by the server tests (plain executors with observable behaviour)."""

from __future__ import annotations

import threading

from a2a_sync.errors import InvalidParams
from a2a_sync.server.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
)

WAIT = 5.0


def card(
    url: str = "http://127.0.0.1:1/",
    *,
    streaming: bool = True,
    push: bool = True,
    extended: bool = False,
) -> AgentCard:
    return AgentCard(
        name="Test agent",
        description="Echoes and misbehaves on request",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(
            streaming=streaming, push_notifications=push, extended_agent_card=extended
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="echo", tags=["echo"])],
    )


def wait_either(release: threading.Event, context: RequestContext) -> bool:
    """Wait until ``release`` is set (True) or the task is canceled / WAIT passes (False)."""
    for _ in range(int(WAIT / 0.005)):
        if release.is_set():
            return True
        if context.wait_cancelled(0.005):
            return False
    return False


class EchoAgent(AgentExecutor):
    """Echoes text; understands a few commands in the message text.

    - ``need input``: asks a question (input_required); the answer completes the task.
    - ``chunks N``: streams N artifact chunks.
    - ``wait``: blocks until ``release`` is set (or the task is canceled).
    - ``reply``: answers with a direct message.
    - ``boom``: raises RuntimeError with a secret in the text (``boom early``: before the
      task exists).
    - ``bad params``: raises InvalidParams after starting work.
    - ``nothing``: returns without publishing.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()
        self.started = threading.Event()
        self.lock = threading.Lock()

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        with self.lock:
            self.calls += 1
        text = context.text
        if context.current_task is not None:
            updater.start_work()
            updater.add_artifact(f"answer: {text}", name="echo", last_chunk=True)
            updater.complete()
            return
        if text == "reply":
            updater.reply(f"echo: {text}")
            return
        if text == "nothing":
            return
        if text == "boom early":
            raise RuntimeError("secret-token-123 leaked")
        updater.start_work()
        if text == "boom":
            raise RuntimeError("secret-token-123 leaked")
        if text == "bad params":
            raise InvalidParams("the agent refuses this")
        if text == "need input":
            updater.require_input("which city?")
            return
        if text == "wait":
            self.started.set()
            if not wait_either(self.release, context):
                return
        if text.startswith("chunks "):
            count = int(text.split()[1])
            aid = None
            for i in range(count):
                aid = updater.add_artifact(
                    Part(text=f"c{i};"),
                    artifact_id=aid,
                    name="chunks",
                    append=i > 0,
                    last_chunk=i == count - 1,
                )
            updater.complete()
            return
        updater.add_artifact(f"echo: {text}", name="echo", last_chunk=True)
        updater.complete()
