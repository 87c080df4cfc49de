"""An a2a-sdk 1.3 echo agent serving A2A 1.0 and 0.3 (JSON-RPC) on one URL.

Run: ``python echo_agent.py PORT [FD]`` (``FD``: an inherited socket listening on
``PORT``, served as is, so the caller never races for the port). Used by the peer tests
as the reference implementation of the wire format: the agent echoes every part of the
user's message back as an artifact (so file bytes, URLs and data make the round trip),
answers "need input" with ``input-required``, and keeps push notification configs in
memory.
"""

from __future__ import annotations

import sys

import uvicorn
from a2a.helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
)
from starlette.applications import Starlette

PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}/"


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, queue: EventQueue) -> None:
        if context.current_task is None:
            await queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
        updater = TaskUpdater(queue, context.task_id, context.context_id)
        await updater.start_work()
        text = context.get_user_input()
        if text == "need input":
            await updater.requires_input(updater.new_agent_message([Part(text="which city?")]))
            return
        await updater.add_artifact(
            [Part(text=f"echo: {text}"), *context.message.parts[1:]], name="echo", last_chunk=True
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, queue: EventQueue) -> None:
        await TaskUpdater(queue, context.task_id, context.context_id).cancel()


card = AgentCard(
    name="Echo",
    description="Echoes parts",
    version="0.0.1",
    capabilities=AgentCapabilities(streaming=True, push_notifications=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="echo", name="Echo", description="echo", tags=["echo"])],
    supported_interfaces=[
        AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=BASE),
        AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=BASE),
    ],
)
handler = DefaultRequestHandler(
    agent_executor=Echo(),
    task_store=InMemoryTaskStore(),
    agent_card=card,
    push_config_store=InMemoryPushNotificationConfigStore(),
)
app = Starlette(
    routes=[
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
    ]
)
if len(sys.argv) > 2:
    uvicorn.run(app, fd=int(sys.argv[2]), log_level="warning")
else:
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
