"""The agent behind a2a_sync's server in the conformance tests.

It answers the same message texts as the a2a-sdk peer (:mod:`tests.peers.a2a_sdk_agent`),
so one test can run against both servers: ``need input`` (input-required; the next
message completes it), ``need auth``, ``reply`` (a direct Message), ``chunks N``,
``slow N`` (works until canceled or released), anything else is echoed and completed.
"""

from __future__ import annotations

import attrs

from a2a_sync.server import A2AApplication
from a2a_sync.server.executor import RequestContext, TaskUpdater
from tests.server.agents import EchoAgent, card, wait_either


class ConformanceAgent(EchoAgent):
    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        if context.current_task is None and context.text == "need auth":
            updater.start_work()
            updater.require_auth("log in first")
            return
        if context.current_task is None and context.text.startswith("slow "):
            updater.start_work()
            if wait_either(self.release, context):
                updater.complete()
            return
        super().execute(context, updater)


def own_app(
    agent: ConformanceAgent, *, streaming: bool = True, push: bool = True, extended: bool = False
) -> A2AApplication:
    """a2a_sync's server with other card capabilities (capability-validation tests)."""
    declared = card(streaming=streaming, push=push, extended=extended)
    return A2AApplication(attrs.evolve(declared, supported_interfaces=[]), agent)
