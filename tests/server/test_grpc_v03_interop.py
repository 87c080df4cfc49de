"""a2a-sdk 1.3's 0.3 gRPC client (``CompatGrpcTransport``, ``a2a.v1.A2AService``)
drives our gRPC binding's 0.3 service.

The a2a-sdk card lists one ``GRPC`` interface with protocol version 0.3 at our
``host:port``, so a2a-sdk's client factory picks its 0.3 compat transport: the calls go
to ``/a2a.v1.A2AService/<Rpc>`` on the same :class:`GRPCServer` that serves 1.0. Errors
come back as a2a-sdk's error classes: its 0.3 client reads the error name at the start
of the status message (``TaskNotFoundError: ...``). a2a-sdk's generated ``a2a.v1`` lives
in protobuf's default pool, ours in a private one, so both share the process.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from tests.server.agents import WAIT, EchoAgent, card  # noqa: E402

pytestmark = pytest.mark.peer


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture
def app(agent: EchoAgent) -> Iterator[A2AApplication]:
    application = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent)
    yield application
    agent.release.set()
    application.close(WAIT)


@pytest.fixture
def server(app: A2AApplication) -> Iterator[GRPCServer]:
    with GRPCServer(app) as running:
        yield running


@pytest.fixture
def served(server: GRPCServer) -> Any:
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface

    return AgentCard(
        name="Test agent",
        description="test",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[
            AgentInterface(protocol_binding="GRPC", protocol_version="0.3", url=server.address)
        ],
    )


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WAIT * 2))


async def client_for(sdk_card: Any, *, streaming: bool) -> Any:
    import grpc.aio
    from a2a.client import ClientConfig, create_client
    from a2a.compat.v0_3.grpc_transport import CompatGrpcTransport

    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=["GRPC"],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    client = await create_client(sdk_card, client_config=config)
    assert isinstance(client._transport, CompatGrpcTransport)  # the 0.3 service is spoken
    return client


def user(text: str, task_id: str = "") -> Any:
    from a2a.types import Message, Part, Role

    return Message(
        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)], task_id=task_id
    )


async def collect(client: Any, message: Any, **config: Any) -> list[Any]:
    from a2a.types import SendMessageConfiguration, SendMessageRequest

    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(**config))
    return [event async for event in client.send_message(request)]


def test_send_and_get(served: Any, server: GRPCServer) -> None:
    from a2a.helpers import get_stream_response_text
    from a2a.types import GetTaskRequest, TaskState

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            events = await collect(client, user("hello"))
            assert [e.WhichOneof("payload") for e in events] == ["task"]
            assert events[0].task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_stream_response_text(events[0]) == "echo: hello"
            task_id = events[0].task.id
            full = await client.get_task(GetTaskRequest(id=task_id))
            assert full.id == task_id
            assert [m.parts[0].text for m in full.history] == ["hello"]
            reply = await collect(client, user("reply"))
            assert reply[0].WhichOneof("payload") == "message"
            assert reply[0].message.parts[0].text == "echo: reply"
        finally:
            await client.close()

    run(scenario())


def test_stream_with_chunked_artifacts(served: Any) -> None:
    from a2a.types import TaskState

    async def scenario() -> None:
        client = await client_for(served, streaming=True)
        try:
            events = await collect(client, user("chunks 3"))
            kinds = [e.WhichOneof("payload") for e in events]
            assert kinds[0] == "task"
            assert kinds.count("artifact_update") == 3
            chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
            assert [c.append for c in chunks] == [False, True, True]
            assert [c.last_chunk for c in chunks] == [False, False, True]
            assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()

    run(scenario())


def test_cancel_and_its_errors(served: Any, agent: EchoAgent) -> None:
    from a2a.types import CancelTaskRequest, GetTaskRequest, TaskState
    from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            events = await collect(client, user("wait"), return_immediately=True)
            task_id = events[0].task.id
            assert agent.started.wait(WAIT)
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            done = await collect(client, user("hello"))
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=done[0].task.id))
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
        finally:
            await client.close()

    run(scenario())


def test_subscribe_mid_task(served: Any, agent: EchoAgent) -> None:
    from a2a.types import SubscribeToTaskRequest, TaskState

    async def scenario() -> None:
        starter = await client_for(served, streaming=False)
        client = await client_for(served, streaming=True)
        try:
            first = await collect(starter, user("wait"), return_immediately=True)
            task_id = first[0].task.id
            assert agent.started.wait(WAIT)
            kinds = []
            last = None
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                kind = event.WhichOneof("payload")
                kinds.append(kind)
                if kind == "task":
                    assert event.task.status.state == TaskState.TASK_STATE_WORKING
                    agent.release.set()
                last = event
            assert kinds[0] == "task"
            assert last is not None
            assert last.status_update.status.state == TaskState.TASK_STATE_COMPLETED
        finally:
            await starter.close()
            await client.close()

    run(scenario())


def test_push_config_crud(served: Any) -> None:
    from a2a.types import (
        DeleteTaskPushNotificationConfigRequest,
        GetTaskPushNotificationConfigRequest,
        ListTaskPushNotificationConfigsRequest,
        TaskPushNotificationConfig,
    )

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            task_id = (await collect(client, user("need input")))[0].task.id
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task_id, id="cfg-1", url="https://hooks.example/a", token="t"
                )
            )
            assert (created.id, created.url) == ("cfg-1", "https://hooks.example/a")
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
            )
            # answered without the token (a2a_sync.server.push_policy), as over JSON-RPC
            assert (got.task_id, got.id, got.url) == (task_id, "cfg-1", "https://hooks.example/a")
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            assert [c.id for c in listed.configs] == ["cfg-1"]
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
            )
            after = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            assert list(after.configs) == []
        finally:
            await client.close()

    run(scenario())


def test_errors_raised_by_the_agent_map_to_their_classes(served: Any) -> None:
    from a2a.utils.errors import UnsupportedOperationError

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            done = await collect(client, user("hello"))
            with pytest.raises(UnsupportedOperationError):
                await collect(client, user("again", task_id=done[0].task.id))
        finally:
            await client.close()

    run(scenario())


def test_raw_calls_malformed_names_versions_and_one_port(server: GRPCServer) -> None:
    """The 0.3 stub of a2a-sdk, raw: a bad resource name is INVALID_ARGUMENT with the 0.3
    error name, a 1.0 ``a2a-version`` is refused, and 1.0 answers on the same port."""
    import grpc
    from a2a.compat.v0_3 import a2a_v0_3_pb2, a2a_v0_3_pb2_grpc
    from a2a.types import a2a_pb2, a2a_pb2_grpc

    with grpc.insecure_channel(server.address) as channel:
        stub = a2a_v0_3_pb2_grpc.A2AServiceStub(channel)
        with pytest.raises(grpc.RpcError) as bad_name:
            stub.GetTask(a2a_v0_3_pb2.GetTaskRequest(name="task/x"), timeout=WAIT)
        assert bad_name.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert bad_name.value.details().startswith("InvalidParamsError: GetTask: name must be")
        with pytest.raises(grpc.RpcError) as missing:
            stub.GetTask(a2a_v0_3_pb2.GetTaskRequest(name="tasks/nope"), timeout=WAIT)
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        assert missing.value.details().startswith("TaskNotFoundError: ")
        with pytest.raises(grpc.RpcError) as version:
            stub.GetTask(
                a2a_v0_3_pb2.GetTaskRequest(name="tasks/nope"),
                metadata=[("a2a-version", "1.0")],
                timeout=WAIT,
            )
        assert version.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert version.value.details().startswith("VersionNotSupportedError: ")
        with pytest.raises(grpc.RpcError) as card_rpc:  # GetAgentCard is the extended card
            stub.GetAgentCard(a2a_v0_3_pb2.GetAgentCardRequest(), timeout=WAIT)
        assert card_rpc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert card_rpc.value.details().startswith("UnsupportedOperationError: ")
        sent = stub.SendMessage(
            a2a_v0_3_pb2.SendMessageRequest(
                request=a2a_v0_3_pb2.Message(
                    message_id="m-1",
                    role=a2a_v0_3_pb2.ROLE_USER,
                    content=[a2a_v0_3_pb2.Part(text="hello")],
                ),
                configuration=a2a_v0_3_pb2.SendMessageConfiguration(blocking=True),
            ),
            timeout=WAIT,
        )
        assert sent.task.status.state == a2a_v0_3_pb2.TASK_STATE_COMPLETED
        # the same task over 1.0's service, same server and port
        task = a2a_pb2_grpc.A2AServiceStub(channel).GetTask(
            a2a_pb2.GetTaskRequest(id=sent.task.id),
            metadata=[("a2a-version", "1.0")],
            timeout=WAIT,
        )
        assert task.status.state == a2a_pb2.TaskState.TASK_STATE_COMPLETED


def test_our_0_3_client_against_our_server(server: GRPCServer, agent: EchoAgent) -> None:
    """a2a_sync's client, given a 0.3 card preferring GRPC, against the same server."""
    from a2a_sync.a2a.card_codec import load_card
    from a2a_sync.client import A2AClient
    from a2a_sync.errors import TaskNotFound
    from a2a_sync.types import Task, TaskState

    legacy = load_card(
        {
            "protocolVersion": "0.3.0",
            "name": "Test agent",
            "description": "test",
            "version": "1",
            "url": server.address,
            "preferredTransport": "GRPC",
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    )
    with A2AClient.from_card(legacy, timeout=WAIT) as client:
        assert (client.binding, client.revision) == ("GRPC", "0.3")
        task = client.send_message("hello")
        assert isinstance(task, Task)
        assert (task.state, client.get_task(task.id)) == (TaskState.completed, task)
        with client.stream_message("chunks 2") as stream:
            events = list(stream)
        assert isinstance(events[0], Task)
        assert stream.get_final_task().state is TaskState.completed
        with pytest.raises(TaskNotFound):
            client.cancel_task("no-such-task")


def test_the_card_lists_the_0_3_grpc_interface(app: A2AApplication, server: GRPCServer) -> None:
    """Started beside HTTP, the server lists GRPC 0.3 at its address: in 0.3's layout
    (``additionalInterfaces``) and in 1.0's, and a client asking for 0.3 over gRPC picks it."""
    import json
    import urllib.request

    from a2a_sync.client import A2AClient
    from a2a_sync.server.serving import serve_in_thread

    with serve_in_thread(app) as url:
        with urllib.request.urlopen(
            url.rstrip("/") + "/.well-known/agent-card.json", timeout=WAIT
        ) as answer:
            raw = json.load(answer)
        assert {"url": server.address, "transport": "GRPC"} in raw["additionalInterfaces"]
        assert {
            "url": server.address,
            "protocolBinding": "GRPC",
            "protocolVersion": "0.3",
        } in raw["supportedInterfaces"]
        with A2AClient.from_url(url, bindings=["GRPC"], revisions=["0.3"], timeout=WAIT) as client:
            assert (client.binding, client.revision, client.url) == ("GRPC", "0.3", server.address)
            assert client.send_message("over the card").state.value == "completed"


def test_bad_bytes_and_refused_credentials(agent: EchoAgent) -> None:
    """The 0.3 service shares the 1.0 one's edges: malformed bytes are INVALID_ARGUMENT
    (nothing runs) and the app's authenticator refuses a caller without a token."""
    import grpc

    from a2a_sync.server.auth import BearerTokens

    guarded = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        agent,
        authenticate=BearerTokens({"tok": "alice"}),
    )
    try:
        with GRPCServer(guarded) as running, grpc.insecure_channel(running.address) as channel:
            send = channel.unary_unary("/a2a.v1.A2AService/SendMessage")
            with pytest.raises(grpc.RpcError) as refused:
                send(b"\x0a\x02\x0a", timeout=WAIT)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.RpcError) as malformed:
                send(b"\x0a\x05\x0a", metadata=[("authorization", "Bearer tok")], timeout=WAIT)
            assert malformed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert malformed.value.details().startswith("InvalidRequestError: SendMessage:")
        assert agent.calls == 0
    finally:
        guarded.close(WAIT)


def test_the_extended_card_over_get_agent_card(agent: EchoAgent) -> None:
    """a2a-sdk's 0.3 client asks GetAgentCard for the extended card: with the bearer
    token it gets it (security schemes in the proto's oneof form), without it is refused."""
    from a2a.client import A2AClientError, ClientCallContext
    from a2a.types import GetExtendedAgentCardRequest

    from a2a_sync.a2a.types import HTTPAuthSecurityScheme
    from a2a_sync.server.auth import BearerTokens

    ours = attrs.evolve(
        card(extended=True),
        supported_interfaces=[],
        security_schemes={"bearer": HTTPAuthSecurityScheme(scheme="bearer")},
        security_requirements=[{"bearer": []}],
    )
    guarded = A2AApplication(
        ours,
        agent,
        extended_card=attrs.evolve(ours, name="Extended agent"),
        authenticate=BearerTokens({"tok": "alice"}),
        allow_anonymous=True,
    )
    try:
        with GRPCServer(guarded) as running:
            from a2a.types import AgentCapabilities, AgentCard, AgentInterface

            sdk_card = AgentCard(
                name="Test agent",
                description="test",
                version="1.0.0",
                capabilities=AgentCapabilities(extended_agent_card=True),
                supported_interfaces=[
                    AgentInterface(
                        protocol_binding="GRPC", protocol_version="0.3", url=running.address
                    )
                ],
            )

            async def scenario() -> None:
                client = await client_for(sdk_card, streaming=False)
                try:
                    with pytest.raises(A2AClientError):
                        await client.get_extended_agent_card(GetExtendedAgentCardRequest())
                    context = ClientCallContext(service_parameters={"Authorization": "Bearer tok"})
                    extended = await client.get_extended_agent_card(
                        GetExtendedAgentCardRequest(), context=context
                    )
                    assert extended.name == "Extended agent"
                    assert extended.security_schemes["bearer"].http_auth_security_scheme.scheme
                finally:
                    await client.close()

            run(scenario())
    finally:
        guarded.close(WAIT)
