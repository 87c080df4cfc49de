"""A2A 1.0 gRPC binding (§10), black-box over a gRPC channel: the service and its method
names, service parameters in metadata, status codes with ErrorInfo details, and
server-streaming.

Requests and answers are the ``lf.a2a.v1`` messages of the normative proto; calls name
their rpc by its full path (``/lf.a2a.v1.A2AService/<Rpc>``), written out here from §10.3
and the proto. Every test runs against a2a_sync's ``GRPCServer`` and (``peer``) the
official a2a-sdk 1.3.0 gRPC server running the same script, unless its docstring says
why it cannot. Skipped (with the reason) where grpcio is not installed.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import attrs
import pytest
import requests

from tests.support.grpc import import_grpc

grpc = import_grpc()

from google.rpc import error_details_pb2, status_pb2  # noqa: E402

from a2a_sync import A2AClient  # noqa: E402
from a2a_sync.a2a.grpc.messages import message_class  # noqa: E402
from a2a_sync.server import A2AApplication, serve_in_thread  # noqa: E402
from a2a_sync.server.auth import BearerTokens  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from a2a_sync.server.push import PushSender  # noqa: E402
from a2a_sync.types import Task  # noqa: E402
from tests.peers.fixtures import AGENT_TOKEN  # noqa: E402
from tests.server.agents import card  # noqa: E402
from tests.server.webhook import receiver  # noqa: E402

from .a2a_wire import V1, WAIT, error_code, post, rpc  # noqa: E402
from .agents import ConformanceAgent  # noqa: E402

requirement = pytest.mark.requirement
SERVICE = "/lf.a2a.v1.A2AService/"
VERSION = (("a2a-version", "1.0"),)
#: Each rpc of §10.3 / the proto: request and response message names.
RPCS = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse"),
    "GetTask": ("GetTaskRequest", "Task"),
    "ListTasks": ("ListTasksRequest", "ListTasksResponse"),
    "CancelTask": ("CancelTaskRequest", "Task"),
    "CreateTaskPushNotificationConfig": (
        "TaskPushNotificationConfig",
        "TaskPushNotificationConfig",
    ),
    "GetTaskPushNotificationConfig": (
        "GetTaskPushNotificationConfigRequest",
        "TaskPushNotificationConfig",
    ),
    "ListTaskPushNotificationConfigs": (
        "ListTaskPushNotificationConfigsRequest",
        "ListTaskPushNotificationConfigsResponse",
    ),
    "DeleteTaskPushNotificationConfig": (
        "DeleteTaskPushNotificationConfigRequest",
        "google.protobuf.Empty",
    ),
    "GetExtendedAgentCard": ("GetExtendedAgentCardRequest", "AgentCard"),
}
STREAMS = {
    "SendStreamingMessage": "SendMessageRequest",
    "SubscribeToTask": "SubscribeToTaskRequest",
}


@pytest.fixture(scope="module")
def own_grpc(agent: ConformanceAgent) -> Iterator[str]:
    """a2a_sync's gRPC server (bearer-protected extended card, like the JSON-RPC one)."""
    public = attrs.evolve(card(extended=True), supported_interfaces=[])
    app = A2AApplication(
        public,
        agent,
        authenticate=BearerTokens({AGENT_TOKEN: "alice"}),
        allow_anonymous=True,
        extended_card=attrs.evolve(public, name="Test agent (extended)"),
    )
    with GRPCServer(app) as server:
        yield server.address
    agent.release.set()
    app.close(WAIT)


@pytest.fixture(
    scope="module", params=["a2a_sync", pytest.param("a2a_sdk", marks=pytest.mark.peer)]
)
def target(request: pytest.FixtureRequest) -> str:
    """``host:port`` of the gRPC server under test (the peer's from its card)."""
    if request.param == "a2a_sdk":
        agent = request.getfixturevalue("a2a_sdk_grpc_agent")
        interfaces = requests.get(agent.card_url, timeout=WAIT).json()["supportedInterfaces"]
        return str(next(i["url"] for i in interfaces if i["protocolBinding"] == "GRPC"))
    return str(request.getfixturevalue("own_grpc"))


@pytest.fixture
def channel(target: str) -> Iterator[Any]:
    with grpc.insecure_channel(target) as opened:
        yield opened


def unary(channel: Any, rpc: str, request: Any, metadata: Any = VERSION) -> Any:
    response = RPCS[rpc][1]
    call = channel.unary_unary(
        SERVICE + rpc,
        request_serializer=type(request).SerializeToString,
        response_deserializer=message_class(response).FromString,
    )
    return call(request, timeout=WAIT, metadata=metadata)


def stream(channel: Any, rpc: str, request: Any, metadata: Any = VERSION) -> Any:
    call = channel.unary_stream(
        SERVICE + rpc,
        request_serializer=type(request).SerializeToString,
        response_deserializer=message_class("StreamResponse").FromString,
    )
    return call(request, timeout=WAIT, metadata=metadata)


def new(name: str, **fields: Any) -> Any:
    return message_class(name)(**fields)


def send_request(text: str, task_id: str = "") -> Any:
    request = new("SendMessageRequest")
    request.message.message_id = str(uuid.uuid4())
    request.message.role = 1  # ROLE_USER
    request.message.parts.add().text = text
    if task_id:
        request.message.task_id = task_id
    return request


def finished(channel: Any) -> Any:
    task = unary(channel, "SendMessage", send_request("hello")).task
    assert task.status.state == 3  # TASK_STATE_COMPLETED
    return task


def outcome(call: Any) -> Any:
    """Run ``call`` (a unary call, or a stream read to its end): the status code it ended
    with (OK, or the error's), and the error if any."""
    try:
        result = call()
        if not hasattr(result, "ListFields"):  # a stream: errors arrive on iteration
            list(result)
    except grpc.RpcError as error:
        return error.code(), error
    return grpc.StatusCode.OK, None


def refusal(call: Any) -> tuple[Any, str, str | None, str | None]:
    """Run ``call``; the status code, message and ErrorInfo (reason, domain) it failed with."""
    code, error = outcome(call)
    assert error is not None, "the call succeeded"
    reason = domain = None
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            assert status.code == code.value[0]  # the details match the call's status
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    reason, domain = info.reason, info.domain
    return code, error.details(), reason, domain


# -- §10.1, §10.3 the service ---------------------------------------------------------------


@requirement("a2a-1.0-§10.3-service-and-method-names")
def test_every_rpc_of_the_service_is_implemented(channel: Any) -> None:
    """Each rpc of ``lf.a2a.v1.A2AService`` answers (a result or an A2A error); none is
    UNIMPLEMENTED, which an unknown rpc is."""
    task = finished(channel)
    requests_by_rpc = {
        "SendMessage": send_request("hello"),
        "GetTask": new("GetTaskRequest", id=task.id),
        "ListTasks": new("ListTasksRequest"),
        "CancelTask": new("CancelTaskRequest", id=task.id),
        "CreateTaskPushNotificationConfig": new(
            "TaskPushNotificationConfig", task_id=task.id, url="https://example.com/hook"
        ),
        "GetTaskPushNotificationConfig": new(
            "GetTaskPushNotificationConfigRequest", task_id=task.id, id="none"
        ),
        "ListTaskPushNotificationConfigs": new(
            "ListTaskPushNotificationConfigsRequest", task_id=task.id
        ),
        "DeleteTaskPushNotificationConfig": new(
            "DeleteTaskPushNotificationConfigRequest", task_id=task.id, id="none"
        ),
        "GetExtendedAgentCard": new("GetExtendedAgentCardRequest"),
    }
    assert set(requests_by_rpc) == set(RPCS)
    auth = (*VERSION, ("authorization", f"Bearer {AGENT_TOKEN}"))
    for name, request in requests_by_rpc.items():
        code, _ = outcome(lambda n=name, r=request: unary(channel, n, r, auth))
        assert code is not grpc.StatusCode.UNIMPLEMENTED, name
    for name, request_name in STREAMS.items():
        request = send_request("hello") if name == "SendStreamingMessage" else None
        request = request or new(request_name, id=task.id)
        code, _ = outcome(lambda n=name, r=request: stream(channel, n, r))
        assert code is not grpc.StatusCode.UNIMPLEMENTED, name
    code, *_ = refusal(lambda: channel.unary_unary(SERVICE + "NoSuchRpc")(b"", timeout=WAIT))
    assert code is grpc.StatusCode.UNIMPLEMENTED


# -- §10.6, §5.4 errors ---------------------------------------------------------------------


@requirement("a2a-1.0-§10.6-error-info-in-status-details")
def test_an_a2a_error_carries_an_error_info(channel: Any) -> None:
    """An unknown task: NOT_FOUND, a message, and a ``google.rpc.Status`` in
    ``grpc-status-details-bin`` (code matching the call's) holding an ErrorInfo
    ``TASK_NOT_FOUND`` in the ``a2a-protocol.org`` domain."""
    code, message, reason, domain = refusal(
        lambda: unary(channel, "GetTask", new("GetTaskRequest", id="no-such-task"))
    )
    assert code is grpc.StatusCode.NOT_FOUND
    assert message
    assert (reason, domain) == ("TASK_NOT_FOUND", "a2a-protocol.org")


@requirement("a2a-1.0-§5.4-grpc-status-per-error")
def test_each_error_has_its_grpc_status(channel: Any) -> None:
    """TaskNotCancelable and UnsupportedOperation (subscribe to a finished task) are
    FAILED_PRECONDITION (v1.0.0; the draft's table says UNIMPLEMENTED for the latter), a
    Message without parts INVALID_ARGUMENT, each with its ErrorInfo reason."""
    task = finished(channel)
    empty = new("SendMessageRequest")
    empty.message.message_id = str(uuid.uuid4())
    empty.message.role = 1
    found = [
        refusal(lambda: unary(channel, "CancelTask", new("CancelTaskRequest", id=task.id))),
        refusal(
            lambda: stream(channel, "SubscribeToTask", new("SubscribeToTaskRequest", id=task.id))
        ),
        refusal(lambda: unary(channel, "SendMessage", empty)),
    ]
    assert [(code, reason) for code, _, reason, _ in found] == [
        (grpc.StatusCode.FAILED_PRECONDITION, "TASK_NOT_CANCELABLE"),
        (grpc.StatusCode.FAILED_PRECONDITION, "UNSUPPORTED_OPERATION"),
        (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PARAMS"),
    ]


# -- §10.2 service parameters -------------------------------------------------------------


@requirement("a2a-1.0-§10.2-version-validated-from-metadata")
def test_the_version_comes_from_metadata(own_grpc: str) -> None:
    """``a2a-version: 1.0`` metadata is served; an unsupported version, or none (0.3),
    is FAILED_PRECONDITION with VERSION_NOT_SUPPORTED. (a2a_sync only: a2a-sdk's gRPC
    server does not check the version, which §10.2 only recommends.)"""
    with grpc.insecure_channel(own_grpc) as channel:
        assert unary(channel, "SendMessage", send_request("hello")).task.id
        for metadata in ((("a2a-version", "9.9"),), ()):
            code, _, reason, _ = refusal(
                lambda m=metadata: unary(channel, "SendMessage", send_request("hello"), m)
            )
            assert (code, reason) == (
                grpc.StatusCode.FAILED_PRECONDITION,
                "VERSION_NOT_SUPPORTED",
            )


@requirement("a2a-1.0-§10.2-credentials-in-metadata")
def test_credentials_travel_in_metadata(own_grpc: str) -> None:
    """The extended card is UNAUTHENTICATED without ``authorization`` metadata and served
    with the bearer token in it. (a2a_sync only: the peer script guards the extended card
    on HTTP only.)"""
    with grpc.insecure_channel(own_grpc) as channel:
        request = new("GetExtendedAgentCardRequest")
        code, *_ = refusal(lambda: unary(channel, "GetExtendedAgentCard", request))
        assert code is grpc.StatusCode.UNAUTHENTICATED
        auth = (*VERSION, ("authorization", f"Bearer {AGENT_TOKEN}"))
        assert unary(channel, "GetExtendedAgentCard", request, auth).name


# -- §10.7 streaming ----------------------------------------------------------------------


@requirement("a2a-1.0-§10.7-server-streaming")
def test_streaming_rpcs_are_server_streams_of_stream_responses(channel: Any) -> None:
    """SendStreamingMessage is a server stream of StreamResponse: the Task first, then
    status/artifact updates, ending (status OK) at the terminal state."""
    events = list(stream(channel, "SendStreamingMessage", send_request("chunks 3")))
    kinds = [event.WhichOneof("payload") for event in events]
    assert kinds[0] == "task"
    assert set(kinds[1:]) <= {"status_update", "artifact_update"}
    assert kinds.count("artifact_update") == 3
    assert events[-1].status_update.status.state == 3  # TASK_STATE_COMPLETED


# -- §5.1 one agent, three bindings ---------------------------------------------------------


@requirement("a2a-1.0-§5.1-functional-equivalence")
def test_every_binding_serves_the_same_tasks_errors_and_authentication(
    agent: ConformanceAgent,
) -> None:
    """One agent served over JSON-RPC, HTTP+JSON and gRPC: a task sent on one binding is
    the same task (id, context, state) on the others, an unknown task is the same error
    (TaskNotFound) on each, and the extended card needs the same credentials on each.
    (a2a_sync only: the peer script serves its bindings from separate processes.)"""
    public = attrs.evolve(card(extended=True), supported_interfaces=[])
    app = A2AApplication(
        public,
        agent,
        authenticate=BearerTokens({AGENT_TOKEN: "alice"}),
        allow_anonymous=True,
        extended_card=attrs.evolve(public, name="Test agent (extended)"),
        rest_path="/rest",
    )
    auth = {"Authorization": f"Bearer {AGENT_TOKEN}"}
    with serve_in_thread(app) as url, GRPCServer(app) as server:
        channel = grpc.insecure_channel(server.address)
        try:
            sent = unary(channel, "SendMessage", send_request("hello")).task
            via_rpc = rpc(url + "/", "GetTask", {"id": sent.id})["result"]
            via_rest = requests.get(f"{url}/rest/tasks/{sent.id}", headers=V1, timeout=WAIT)
            seen = {
                (t["id"], t["contextId"], t["status"]["state"]) for t in (via_rpc, via_rest.json())
            }
            assert seen == {(sent.id, sent.context_id, "TASK_STATE_COMPLETED")}
            missing = new("GetTaskRequest", id="no-such-task")
            assert refusal(lambda: unary(channel, "GetTask", missing))[2] == "TASK_NOT_FOUND"
            assert error_code(rpc(url + "/", "GetTask", {"id": "no-such-task"})) == -32001
            gone = requests.get(f"{url}/rest/tasks/no-such-task", headers=V1, timeout=WAIT)
            assert gone.status_code == 404
            card_request = new("GetExtendedAgentCardRequest")
            code, *_ = refusal(lambda: unary(channel, "GetExtendedAgentCard", card_request))
            assert code is grpc.StatusCode.UNAUTHENTICATED
            extended = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}
            assert post(url + "/", extended, V1).status_code == 401
            assert (
                requests.get(f"{url}/rest/extendedAgentCard", headers=V1, timeout=WAIT).status_code
                == 401
            )
            names = {
                post(url + "/", extended, {**V1, **auth}).json()["result"]["name"],
                requests.get(
                    f"{url}/rest/extendedAgentCard", headers={**V1, **auth}, timeout=WAIT
                ).json()["name"],
                unary(
                    channel,
                    "GetExtendedAgentCard",
                    card_request,
                    (*VERSION, ("authorization", auth["Authorization"])),
                ).name,
            }
            assert names == {"Test agent (extended)"}
        finally:
            channel.close()
    app.close(WAIT)


@requirement("a2a-1.0-§3.5.1-webhooks-are-http-json-whatever-the-binding")
def test_a_push_config_made_over_grpc_is_served_as_http_json(agent: ConformanceAgent) -> None:
    """A webhook registered over gRPC receives plain HTTP POSTs with the JSON payloads of
    the HTTP binding (a StreamResponse in ProtoJSON), not protobuf. (a2a_sync only: the
    peer script runs no push sender.)"""
    sender = PushSender(allow_private=True, backoff_base=0.01)
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, push_sender=sender)
    try:
        with contextlib.contextmanager(receiver)() as hook, GRPCServer(app) as server:
            with grpc.insecure_channel(server.address) as channel:
                task = unary(channel, "SendMessage", send_request("need input")).task
                config = new("TaskPushNotificationConfig", task_id=task.id, url=hook.url + "/g")
                unary(channel, "CreateTaskPushNotificationConfig", config)
                unary(channel, "SendMessage", send_request("Paris", task_id=task.id))
            received = hook.wait_for(1)
            assert sender.flush(WAIT)
        body = received[0].json()
        assert received[0].headers["content-type"].split(";")[0] == "application/a2a+json"
        member = next(iter(body))
        assert len(body) == 1
        assert member in {"task", "statusUpdate", "artifactUpdate"}
        assert body[member].get("taskId", body[member].get("id")) == task.id
    finally:
        assert sender.close()
        app.close(WAIT)


@requirement("a2a-1.0-§10.6-capability-errors")
def test_capability_errors_have_their_grpc_status(agent: ConformanceAgent) -> None:
    """Over gRPC, an agent without streaming, push or an extended card answers
    FAILED_PRECONDITION with UNSUPPORTED_OPERATION, PUSH_NOTIFICATION_NOT_SUPPORTED and
    UNSUPPORTED_OPERATION; one that declares an extended card it lacks
    EXTENDED_AGENT_CARD_NOT_CONFIGURED, whoever asks. (a2a_sync only: the peer's card
    declares every capability.)"""
    bare = A2AApplication(
        attrs.evolve(card(streaming=False, push=False), supported_interfaces=[]), agent
    )
    declared = A2AApplication(attrs.evolve(card(extended=True), supported_interfaces=[]), agent)
    found = []
    with GRPCServer(bare) as server, grpc.insecure_channel(server.address) as channel:
        task = unary(channel, "SendMessage", send_request("need input")).task
        found += [
            refusal(lambda: stream(channel, "SendStreamingMessage", send_request("hi"))),
            refusal(
                lambda: stream(
                    channel, "SubscribeToTask", new("SubscribeToTaskRequest", id=task.id)
                )
            ),
            refusal(
                lambda: unary(
                    channel,
                    "ListTaskPushNotificationConfigs",
                    new("ListTaskPushNotificationConfigsRequest", task_id=task.id),
                )
            ),
            refusal(
                lambda: unary(channel, "GetExtendedAgentCard", new("GetExtendedAgentCardRequest"))
            ),
        ]
    with GRPCServer(declared) as server, grpc.insecure_channel(server.address) as channel:
        found.append(
            refusal(
                lambda: unary(channel, "GetExtendedAgentCard", new("GetExtendedAgentCardRequest"))
            )
        )
    bare.close(WAIT)
    declared.close(WAIT)
    precondition = grpc.StatusCode.FAILED_PRECONDITION
    assert [(code, reason) for code, _, reason, _ in found] == [
        (precondition, "UNSUPPORTED_OPERATION"),
        (precondition, "UNSUPPORTED_OPERATION"),
        (precondition, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (precondition, "UNSUPPORTED_OPERATION"),
        (precondition, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
    ]


# -- the client side of §10 ------------------------------------------------------------------


@requirement("a2a-1.0-§10.2-client-service-parameters-in-metadata")
def test_the_grpc_client_sends_service_parameters_as_metadata() -> None:
    """a2a_sync's gRPC client calls ``/lf.a2a.v1.A2AService/SendMessage`` with
    ``a2a-version: 1.0`` and the requested extensions comma-separated in one
    ``a2a-extensions`` entry, keys lowercase; checked on a recording grpcio server (no
    a2a_sync server code)."""
    seen: list[tuple[str, list[tuple[str, Any]]]] = []
    answer = message_class("SendMessageResponse")()
    answer.task.id = "t-1"
    answer.task.context_id = "c-1"
    answer.task.status.state = 3

    def send(request: bytes, context: Any) -> bytes:
        seen.append(("SendMessage", list(context.invocation_metadata())))
        return bytes(answer.SerializeToString())

    handler = grpc.method_handlers_generic_handler(
        "lf.a2a.v1.A2AService", {"SendMessage": grpc.unary_unary_rpc_method_handler(send)}
    )
    with futures.ThreadPoolExecutor(2, thread_name_prefix="a2a-sync-test-grpc") as pool:
        server = grpc.server(pool, handlers=[handler])
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        try:
            extensions = ["https://example.com/ext/a", "https://example.com/ext/b"]
            with A2AClient(
                f"127.0.0.1:{port}", binding="GRPC", extensions=extensions, timeout=WAIT
            ) as client:
                result = client.send_message("hello")
            assert isinstance(result, Task)
            assert result.id == "t-1"
        finally:
            server.stop(None).wait(WAIT)
    [(_, metadata)] = seen
    pairs = [(k, v) for k, v in metadata if k.startswith("a2a-")]
    assert all(k == k.lower() for k, _ in metadata)
    assert sorted(pairs) == [
        ("a2a-extensions", "https://example.com/ext/a,https://example.com/ext/b"),
        ("a2a-version", "1.0"),
    ]
