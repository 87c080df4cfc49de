"""A2A 0.3 gRPC transport (§3.2.2), black-box over a gRPC channel: the 0.3 proto's
``a2a.v1.A2AService`` and its rpcs.

Requests and answers are the ``a2a.v1`` messages of the 0.3 proto; calls name their rpc
by its full path (``/a2a.v1.A2AService/<Rpc>``). Every test runs against a2a_sync's
``GRPCServer`` and (``peer``) the official a2a-sdk 1.3.0 ``CompatGrpcHandler`` serving the
same script. Skipped (with the reason) where grpcio is not installed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from tests.support.grpc import import_grpc

grpc = import_grpc()

from a2a_sync.a2a.grpc_v03.messages import message_class  # noqa: E402
from a2a_sync.server import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from tests.server.agents import card  # noqa: E402

from .a2a_wire import WAIT  # noqa: E402
from .agents import ConformanceAgent  # noqa: E402

requirement = pytest.mark.requirement
SERVICE = "/a2a.v1.A2AService/"
#: Each unary rpc of the 0.3 proto: request and response message names.
RPCS = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse"),
    "GetTask": ("GetTaskRequest", "Task"),
    "CancelTask": ("CancelTaskRequest", "Task"),
    "CreateTaskPushNotificationConfig": (
        "CreateTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig",
    ),
    "GetTaskPushNotificationConfig": (
        "GetTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig",
    ),
    "ListTaskPushNotificationConfig": (
        "ListTaskPushNotificationConfigRequest",
        "ListTaskPushNotificationConfigResponse",
    ),
    "DeleteTaskPushNotificationConfig": (
        "DeleteTaskPushNotificationConfigRequest",
        "google.protobuf.Empty",
    ),
    "GetAgentCard": ("GetAgentCardRequest", "AgentCard"),
}
STREAMS = {
    "SendStreamingMessage": "SendMessageRequest",
    "TaskSubscription": "TaskSubscriptionRequest",
}


@pytest.fixture(scope="module")
def own_grpc(agent: ConformanceAgent) -> Iterator[str]:
    public = attrs.evolve(card(extended=True), supported_interfaces=[])
    app = A2AApplication(public, agent, extended_card=attrs.evolve(public, name="Extended"))
    with GRPCServer(app) as server:
        yield server.address
    agent.release.set()
    app.close(WAIT)


@pytest.fixture(
    scope="module", params=["a2a_sync", pytest.param("a2a_sdk", marks=pytest.mark.peer)]
)
def target(request: pytest.FixtureRequest) -> str:
    """``host:port`` of the gRPC server under test (the peer's GRPC 0.3 interface)."""
    if request.param == "a2a_sdk":
        agent = request.getfixturevalue("a2a_sdk_grpc_agent")
        interfaces = requests.get(agent.card_url, timeout=WAIT).json()["supportedInterfaces"]
        return str(
            next(
                i["url"]
                for i in interfaces
                if (i["protocolBinding"], i["protocolVersion"]) == ("GRPC", "0.3")
            )
        )
    return str(request.getfixturevalue("own_grpc"))


@pytest.fixture
def channel(target: str) -> Iterator[Any]:
    with grpc.insecure_channel(target) as opened:
        yield opened


def new(message: str, **fields: Any) -> Any:
    return message_class(message)(**fields)


def send_request(text: str) -> Any:
    request = new("SendMessageRequest")
    request.request.message_id = str(uuid.uuid4())
    request.request.role = 1  # ROLE_USER
    request.request.content.add(text=text)
    request.configuration.blocking = True
    return request


def unary(channel: Any, rpc: str, request: Any) -> Any:
    response = RPCS[rpc][1]
    response_class = message_class(response)
    call = channel.unary_unary(
        SERVICE + rpc,
        request_serializer=type(request).SerializeToString,
        response_deserializer=response_class.FromString,
    )
    return call(request, timeout=WAIT)


def code_of(call: Any) -> Any:
    try:
        result = call()
        if not hasattr(result, "ListFields"):  # a stream: read it through
            list(result)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


@requirement("a2a-0.3-§3.2.2-grpc-transport")
def test_every_rpc_of_the_0_3_service_is_implemented(channel: Any) -> None:
    """Each rpc of ``a2a.v1.A2AService`` answers (a result or an A2A error); none is
    UNIMPLEMENTED. A blocking send completes its task."""
    sent = unary(channel, "SendMessage", send_request("hello"))
    assert sent.task.status.state == 3  # TASK_STATE_COMPLETED
    name = f"tasks/{sent.task.id}"
    requests_by_rpc = {
        "SendMessage": send_request("hello"),
        "GetTask": new("GetTaskRequest", name=name),
        "CancelTask": new("CancelTaskRequest", name=name),
        "CreateTaskPushNotificationConfig": new(
            "CreateTaskPushNotificationConfigRequest", parent=name, config_id="c"
        ),
        "GetTaskPushNotificationConfig": new(
            "GetTaskPushNotificationConfigRequest", name=f"{name}/pushNotificationConfigs/c"
        ),
        "ListTaskPushNotificationConfig": new("ListTaskPushNotificationConfigRequest", parent=name),
        "DeleteTaskPushNotificationConfig": new(
            "DeleteTaskPushNotificationConfigRequest", name=f"{name}/pushNotificationConfigs/c"
        ),
        "GetAgentCard": new("GetAgentCardRequest"),
    }
    assert set(requests_by_rpc) == set(RPCS)
    for rpc, request in requests_by_rpc.items():
        code = code_of(lambda n=rpc, r=request: unary(channel, n, r))
        assert code is not grpc.StatusCode.UNIMPLEMENTED, rpc
    for rpc, request_name in STREAMS.items():
        request = (
            send_request("hello") if rpc == "SendStreamingMessage" else new(request_name, name=name)
        )
        call = channel.unary_stream(
            SERVICE + rpc,
            request_serializer=type(request).SerializeToString,
            response_deserializer=message_class("StreamResponse").FromString,
        )
        code = code_of(lambda c=call, r=request: c(r, timeout=WAIT))
        assert code is not grpc.StatusCode.UNIMPLEMENTED, rpc
    assert code_of(lambda: channel.unary_unary(SERVICE + "NoSuchRpc")(b"", timeout=WAIT)) is (
        grpc.StatusCode.UNIMPLEMENTED
    )
