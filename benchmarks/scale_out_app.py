"""The WSGI module gunicorn imports in each scale-out benchmark worker (docs/scale-out.md).

Imported after the fork (no ``--preload``): every worker opens its own
:class:`~a2a_sync.server.stores.PostgresTaskStore` on ``$A2A_DATABASE_URL`` (or, when
that is empty, an in-memory store: the baseline), with the benchmark's agent.
``benchmarks/scale_out_gunicorn.py`` closes the app, then the store, when a worker exits.
"""

from __future__ import annotations

import os
import time

from a2a_sync.server import A2AApplication, AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.server.stores import InMemoryTaskStore, PostgresTaskStore, TaskStore
from a2a_sync.types import AgentCapabilities, AgentCard

#: Seconds between the ``tick`` agent's chunks (the cross-process latency probe).
TICK_INTERVAL = 0.01


class BenchAgent(AgentExecutor):
    """``hi``: a completed Task with one artifact (task, working, artifact, done);
    ``chunks N``: N artifact chunks; ``tick N``: N timestamped chunks 10 ms apart."""

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        text = context.text
        updater.start_work()
        if text.startswith("chunks "):
            aid = None
            count = int(text.split()[1])
            for i in range(count):
                aid = updater.add_artifact(
                    f"c{i};", artifact_id=aid, append=i > 0, last_chunk=i == count - 1
                )
        elif text.startswith("tick "):
            context.wait_cancelled(0.3)  # let the subscriber on the other worker attach
            aid = None
            for i in range(int(text.split()[1])):
                aid = updater.add_artifact(f"{time.monotonic_ns()}", artifact_id=aid, append=i > 0)
                context.wait_cancelled(TICK_INTERVAL)
        else:
            updater.add_artifact(f"echo: {text}", name="echo", last_chunk=True)
        updater.complete()


card = AgentCard(
    name="Echo",
    description="echo",
    version="1",
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
)
_url = os.environ.get("A2A_DATABASE_URL", "")
store: TaskStore = PostgresTaskStore(_url) if _url else InMemoryTaskStore()
app = A2AApplication(card, BenchAgent(), task_store=store)
