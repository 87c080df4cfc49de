"""A scripted a2a-sdk 1.3 agent: JSON-RPC A2A 1.0 and 0.3 on one URL, behaviour by message.

Run: ``python a2a_sdk_agent.py [--port PORT] [--token TOKEN] [--rest] [--grpc]``. It binds
127.0.0.1 (port 0 picks a free port), prints ``PORT <n>`` on stdout once the socket is
bound, and serves until terminated. Start it through :mod:`tests.peers.fixtures`.

The card at ``/.well-known/agent-card.json`` advertises a JSON-RPC 1.0 and a JSON-RPC 0.3
interface on the same URL (``enable_v0_3_compat=True``; a2a-sdk serves the merged
dual-version card), capabilities streaming, push notifications and the extended card, and
an HTTP bearer security scheme. The extended card is served only to requests carrying
``Authorization: Bearer <token>`` (a2a-sdk has no per-method auth hook, so a small ASGI
middleware answers HTTP 401 to extended-card calls without it; every other method is open).

``--grpc`` also serves a2a-sdk's gRPC binding (``grpc.aio``, ``lf.a2a.v1.A2AService``) on a
second free port, listed first in the card as ``GRPC`` 1.0 at ``127.0.0.1:<port>``, and on
the same port its 0.3 service (``CompatGrpcHandler``, ``a2a.v1.A2AService``), listed last
as ``GRPC`` 0.3.

What the agent does is chosen by the first text part of the user's message:

==================  ====================================================================
``echo X``          artifact ``echo`` with text ``X`` (plus the message's other parts,
                    so files and data make the round trip), then completed
``chunks N``        Task (working), N chunks of one artifact ``chunks`` (text ``"<i>,"``;
                    the first without ``append``, the rest with it, the last with
                    ``lastChunk``), then completed: N + 2 stream events
``slow N``          like ``chunks N`` but one chunk every 50 ms; cancel stops it
``need input``      input-required asking "which city?"; the answer (sent with the task
                    id) completes the task with artifact ``answer`` = ``city: <answer>``
``need auth``       auth-required
``fail``            failed, with a status message
``reject``          rejected, with a status message
``reply``           a direct Message ``hello from reply`` (no task)
anything else       artifact ``echo`` with the text, then completed
==================  ====================================================================
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket

import uvicorn
from a2a.helpers import new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    Message,
    Part,
    Role,
    SecurityScheme,
    TaskState,
)
from starlette.applications import Starlette

SLOW_INTERVAL = 0.05  # seconds between chunks of "slow N"
REST_CARD_PATHS = ("/extendedAgentCard", "/v1/card")
EXTENDED_CARD_METHODS = frozenset({"GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"})


class ScriptedAgent(AgentExecutor):
    """Does what the message text says (see the module docstring)."""

    def __init__(self) -> None:
        self.waiting_for_input: set[str] = set()

    async def execute(self, context: RequestContext, queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        task_id, context_id = context.task_id, context.context_id
        message = context.message
        assert task_id is not None
        assert context_id is not None
        assert message is not None
        updater = TaskUpdater(queue, task_id, context_id)
        if task_id in self.waiting_for_input:  # the answer to "which city?"
            self.waiting_for_input.discard(task_id)
            await updater.start_work()
            await updater.add_artifact([Part(text=f"city: {text}")], name="answer", last_chunk=True)
            await updater.complete()
            return
        if text == "reply":
            await queue.enqueue_event(
                Message(
                    role=Role.ROLE_AGENT,
                    message_id=f"reply-{task_id}",
                    context_id=context_id,
                    parts=[Part(text="hello from reply")],
                )
            )
            return
        word, _, rest = text.partition(" ")
        if word in ("chunks", "slow"):
            await queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_WORKING, history=[message])
            )
            await self._chunks(updater, int(rest or "3"), SLOW_INTERVAL if word == "slow" else 0)
            return
        if context.current_task is None:
            await queue.enqueue_event(
                new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=[message])
            )
        await updater.start_work()
        if text == "need input":
            self.waiting_for_input.add(task_id)
            await updater.requires_input(updater.new_agent_message([Part(text="which city?")]))
        elif text == "need auth":
            await updater.requires_auth(updater.new_agent_message([Part(text="log in first")]))
        elif text == "fail":
            await updater.failed(updater.new_agent_message([Part(text="it broke")]))
        elif text == "reject":
            await updater.reject(updater.new_agent_message([Part(text="not doing that")]))
        else:
            echoed = text[5:] if word == "echo" else text
            await updater.add_artifact(
                [Part(text=echoed), *message.parts[1:]], name="echo", last_chunk=True
            )
            await updater.complete()

    async def _chunks(self, updater: TaskUpdater, count: int, interval: float) -> None:
        artifact_id = f"chunks-{updater.task_id}"
        for index in range(count):
            if interval:
                await asyncio.sleep(interval)
            await updater.add_artifact(
                [Part(text=f"{index},")],
                artifact_id=artifact_id,
                name="chunks",
                append=index > 0,
                last_chunk=index == count - 1,
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, queue: EventQueue) -> None:
        assert context.task_id is not None
        assert context.context_id is not None
        await TaskUpdater(queue, context.task_id, context.context_id).cancel()


class BearerGuard:
    """ASGI middleware: extended-card calls need ``Authorization: Bearer <token>``."""

    def __init__(self, app: object, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if (
            scope["type"] == "http"
            and scope["path"].endswith(REST_CARD_PATHS)
            and dict(scope["headers"]).get(b"authorization") != self.expected
        ):
            await _refuse(send)
            return
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)  # type: ignore[operator]
            return
        messages = []
        body = b""
        while True:
            message = await receive()  # type: ignore[operator]
            messages.append(message)
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if b"ExtendedCard" in body or b"ExtendedAgentCard" in body:
            try:
                method = json.loads(body).get("method")
            except (ValueError, AttributeError):
                method = None
            authorization = dict(scope["headers"]).get(b"authorization")
            if method in EXTENDED_CARD_METHODS and authorization != self.expected:
                await send(  # type: ignore[operator]
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"text/plain"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": b"unauthorized"})  # type: ignore[operator]
                return

        async def replay() -> object:
            return messages.pop(0) if messages else await receive()  # type: ignore[operator]

        await self.app(scope, replay, send)  # type: ignore[operator]


async def _refuse(send: object) -> None:
    await send(  # type: ignore[operator]
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
        }
    )
    await send({"type": "http.response.body", "body": b"unauthorized"})  # type: ignore[operator]


def build_app(
    base_url: str, token: str, rest: bool = False, grpc_url: str | None = None
) -> BearerGuard:
    """The Starlette app for an agent reachable at ``base_url``; ``rest`` adds the
    HTTP+JSON binding (1.0 and 0.3) under ``/rest``, listed first in the card;
    ``grpc_url`` lists a GRPC 1.0 interface first and a GRPC 0.3 one last (served by
    :func:`serve`)."""
    interfaces = [
        AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=base_url),
        AgentInterface(protocol_binding="JSONRPC", protocol_version="0.3", url=base_url),
    ]
    if rest:
        interfaces[:0] = [
            AgentInterface(protocol_binding="HTTP+JSON", protocol_version=v, url=base_url + "rest")
            for v in ("1.0", "0.3")
        ]
    if grpc_url is not None:
        interfaces.insert(
            0, AgentInterface(protocol_binding="GRPC", protocol_version="1.0", url=grpc_url)
        )
        interfaces.append(
            AgentInterface(protocol_binding="GRPC", protocol_version="0.3", url=grpc_url)
        )
    common = dict(
        description="Scripted test agent",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=True
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=interfaces,
        security_schemes={
            "bearer": SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="bearer")
            )
        },
    )
    skill = AgentSkill(id="script", name="Script", description="see docs", tags=["test"])
    card = AgentCard(name="Scripted", skills=[skill], **common)  # type: ignore[arg-type]
    secret_skill = AgentSkill(id="secret", name="Secret", description="members", tags=["x"])
    extended = AgentCard(name="Scripted (extended)", skills=[skill, secret_skill], **common)  # type: ignore[arg-type]
    handler = DefaultRequestHandler(
        agent_executor=ScriptedAgent(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=InMemoryPushNotificationConfigStore(),
        extended_agent_card=extended,
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
            *(
                create_rest_routes(handler, path_prefix="/rest", enable_v0_3_compat=True)
                if rest
                else []
            ),
        ]
    )
    guard = BearerGuard(app, token)
    guard.handler = handler  # type: ignore[attr-defined]
    return guard


async def serve(sock: socket.socket, port: int, token: str, rest: bool, grpc: bool) -> None:
    """uvicorn on ``sock`` and, with ``grpc``, a2a-sdk's grpc.aio server beside it."""
    grpc_server = None
    grpc_url = None
    if grpc:
        import grpc.aio
        from a2a.compat.v0_3 import a2a_v0_3_pb2_grpc
        from a2a.compat.v0_3.grpc_handler import CompatGrpcHandler
        from a2a.server.request_handlers import GrpcHandler
        from a2a.types import a2a_pb2_grpc

        grpc_server = grpc.aio.server()
        grpc_url = f"127.0.0.1:{grpc_server.add_insecure_port('127.0.0.1:0')}"
    app = build_app(f"http://127.0.0.1:{port}/", token, rest=rest, grpc_url=grpc_url)
    if grpc_server is not None:
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(app.handler), grpc_server)  # type: ignore[attr-defined]
        a2a_v0_3_pb2_grpc.add_A2AServiceServicer_to_server(  # type: ignore[no-untyped-call]
            CompatGrpcHandler(app.handler), grpc_server
        )
        await grpc_server.start()
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    print(f"PORT {port}", flush=True)
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        if grpc_server is not None:
            await grpc_server.stop(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", default="test-token")
    parser.add_argument("--rest", action="store_true", help="serve HTTP+JSON under /rest")
    parser.add_argument("--grpc", action="store_true", help="serve gRPC on another port")
    args = parser.parse_args()
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only for
    # sockets that say they are TCP; without it Nagle + delayed ACK add ~40 ms per answer.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    port = sock.getsockname()[1]
    asyncio.run(serve(sock, port, args.token, args.rest, args.grpc))


if __name__ == "__main__":
    main()
