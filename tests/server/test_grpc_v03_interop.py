"""a2a-sdk 1.3's 0.3 gRPC client (``CompatGrpcTransport``, ``a2a.v1.A2AService``)
drives our gRPC binding's 0.3 service.

The a2a-sdk card lists one ``GRPC`` interface with protocol version 0.3 at our
``host:port``, so a2a-sdk's client factory picks its 0.3 compat transport: the calls go
to ``/a2a.v1.A2AService/<Rpc>`` on the same :class:`GRPCServer` that serves 1.0. Errors
come back as a2a-sdk's error classes: its 0.3 client reads the error name at the start
of the status message (``TaskNotFoundError: ...``). a2a-sdk's generated ``a2a.v1`` lives
in protobuf's default pool, ours in a private one, so both share the process. The
scenarios shared with the other bindings live in :mod:`tests.server._sdk_client_scenarios`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from tests.server._sdk_client_scenarios import *  # noqa: E402, F403 - collected here
from tests.server._sdk_client_scenarios import client_for, run, sdk_card  # noqa: E402
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
    from a2a.types import AgentInterface

    return sdk_card(
        AgentInterface(protocol_binding="GRPC", protocol_version="0.3", url=server.address)
    )


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
