"""The binding-neutral pieces of HTTP+JSON: the error table, the route table and the 0.3
proto-JSON translation (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest

from a2a_sync import errors as e
from a2a_sync.a2a.codec import codec_for
from a2a_sync.a2a.error_codes import TABLE, error_from_status, status_body
from a2a_sync.a2a.methods import Operation
from a2a_sync.a2a.rest_routes import ROUTES, build, match, route_for
from a2a_sync.a2a.rest_v03 import (
    event_from_wire,
    event_to_wire,
    from_wire,
    result_from_wire,
    result_to_wire,
    to_wire,
)
from a2a_sync.server._wire import error_object
from a2a_sync.types import (
    Artifact,
    Message,
    Part,
    PushNotificationConfig,
    SendMessageConfiguration,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

# -- the error table --------------------------------------------------------------------------


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.reason)
def test_every_error_round_trips_on_both_bindings(row: Any) -> None:
    exc = row.error("boom")
    status, body = status_body(exc)
    assert status == row.http
    assert body["error"]["status"] == row.grpc
    again = error_from_status(body, status)
    assert type(again) is row.error
    assert again is not None
    assert again.message == "boom"
    # JSON-RPC carries the same reason in data (1.0), and the code types it back
    assert error_object(exc, "1.0")["data"][0]["reason"] == row.reason
    assert error_object(exc, "1.0")["code"] == row.jsonrpc


def test_status_codes_follow_the_spec_table() -> None:
    http = {row.error: (row.http, row.grpc) for row in TABLE}
    assert http[e.TaskNotFound] == (404, "NOT_FOUND")
    assert http[e.TaskNotCancelable] == (400, "FAILED_PRECONDITION")
    assert http[e.UnsupportedOperation] == (400, "FAILED_PRECONDITION")
    assert http[e.InvalidParams] == (400, "INVALID_ARGUMENT")
    assert http[e.InternalError] == (500, "INTERNAL")
    assert http[e.InvalidAgentResponse] == (500, "INTERNAL")
    assert http[e.VersionNotSupported] == (400, "FAILED_PRECONDITION")


def test_other_error_bodies() -> None:
    # RFC 7807 (A2A 1.0 §6.4's version-error example)
    problem = {
        "type": "https://a2a-protocol.org/errors/version-not-supported",
        "title": "Protocol Version Not Supported",
        "status": 400,
        "detail": "use 1.0",
    }
    found = error_from_status(problem, 400)
    assert isinstance(found, e.VersionNotSupported)
    assert found.message == "use 1.0"
    # 0.3 REST (a2a-sdk): the error's name in "type"
    assert isinstance(error_from_status({"type": "TaskNotFoundError"}, 404), e.TaskNotFound)
    _, body = status_body(e.TaskNotCancelable("no"), "0.3")
    assert (body["type"], body["message"]) == ("TaskNotCancelableError", "no")
    # ... and the JSON-RPC code at the top (@a2a-js/sdk's 0.3 REST client types by it)
    assert body["code"] == -32002
    assert "code" not in status_body(e.TaskNotCancelable("no"))[1]  # 1.0: google.rpc.Status only
    found = error_from_status({"code": -32001, "message": "gone", "data": {"id": "t1"}}, 404)
    assert isinstance(found, e.TaskNotFound)
    assert (found.message, found.data) == ("gone", {"id": "t1"})
    assert error_from_status({"code": 404, "message": "not an A2A code"}, 418) is None
    assert error_from_status({"code": True, "message": "a bool is no code"}, 418) is None
    # a Status without a reason: the HTTP status decides; foreign bodies are not A2A errors
    assert isinstance(error_from_status({"error": {"message": "x"}}, 404), e.MethodNotFound)
    assert error_from_status({"error": {"message": "x"}}, 418) is None
    assert error_from_status(["not", "an", "object"], 400) is None
    assert error_from_status({"detail": "nothing typed"}, 400) is None


# -- the route table ----------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.revision} {r.method} {r.template}")
def test_every_route_matches_what_build_makes(route: Any) -> None:
    params = {member: "a b:c?%é" for member in route.params.values()}
    path = build(route, params)
    found = match(route.method, path)
    assert found is not None
    assert found.route is not None
    assert found.route.operation is route.operation
    assert found.values == params  # spaces, colons, percent signs survive as values
    if route.params:
        with pytest.raises(ValueError, match="path segment"):
            build(route, dict.fromkeys(route.params.values(), "../x"))


def test_tenants_and_refusals() -> None:
    route = route_for(Operation.GET_TASK, "1.0")
    assert route is not None
    path = build(route, {"id": "t1"}, tenant="acme")
    assert path == "/acme/tasks/t1"
    found = match("GET", path)
    assert found is not None
    assert (found.tenant, found.values) == ("acme", {"id": "t1"})
    assert match("GET", "/acme/v1/tasks/t1") is None  # no tenant form in 0.3
    assert match("GET", "/tasks/a%2Fb") is None  # an encoded slash never matches
    assert match("GET", "/tasks/a/b") is None
    assert match("GET", "/tasks/%2e%2e") is None
    refused = match("PUT", "/tasks/t1")
    assert refused is not None
    assert refused.route is None
    assert refused.allowed == ("GET",)
    with pytest.raises(ValueError):
        match("GET", "/tasks/%ff")


# -- 0.3 proto JSON ------------------------------------------------------------------------------

V03 = codec_for("0.3")
TASK = Task(
    id="t1",
    context_id="c1",
    status=TaskStatus(state=TaskState.canceled, message=Message.agent("stopped")),
    history=[
        Message(
            role=Message.user("x").role,
            parts=[
                Part(text="hi"),
                Part(url="https://files.example/a.png", media_type="image/png", filename="a"),
                Part(raw=b"\x00\x01", media_type="application/octet-stream"),
                Part(data={"k": [1, 2]}),
            ],
            message_id="m1",
            context_id="c1",
            task_id="t1",
        )
    ],
    artifacts=[Artifact(artifact_id="a1", parts=[Part(text="out")], name="n")],
)


def test_a_task_survives_the_0_3_proto_json() -> None:
    wire = result_to_wire(Operation.GET_TASK, V03.dump_task(TASK))
    assert wire["status"]["state"] == "TASK_STATE_CANCELLED"
    content = wire["history"][0]["content"]
    assert content[0] == {"text": "hi"}
    assert content[1]["file"]["fileWithUri"] == "https://files.example/a.png"
    assert "fileWithBytes" in content[2]["file"]
    assert content[3] == {"data": {"data": {"k": [1, 2]}}}
    assert V03.load_task(result_from_wire(Operation.GET_TASK, wire)) == TASK


@pytest.mark.parametrize(
    "event",
    [
        TASK,
        Message.agent("direct"),
        TaskStatusUpdateEvent(
            task_id="t1",
            context_id="c1",
            status=TaskStatus(state=TaskState.completed),
            final=True,
        ),
        TaskArtifactUpdateEvent(
            task_id="t1",
            context_id="c1",
            artifact=Artifact(artifact_id="a1", parts=[Part(text="x")]),
            append=True,
            last_chunk=True,
        ),
    ],
    ids=lambda v: type(v).__name__,
)
def test_stream_events_survive_the_0_3_proto_json(event: Any) -> None:
    wire = event_to_wire(V03.dump_stream_event(event))
    assert len(wire) == 1
    assert V03.load_stream_event(event_from_wire(wire)) == event


def test_send_params_accept_both_proto_spellings_and_keep_blocking() -> None:
    params = V03.dump_send_params(Message.user("hi"), SendMessageConfiguration(history_length=2))
    wire = to_wire(Operation.SEND_MESSAGE, params)
    assert wire["configuration"]["blocking"] is True
    assert V03.load_send_params(from_wire(Operation.SEND_MESSAGE, wire)) == V03.load_send_params(
        params
    )
    snake = {"request": {"message_id": "m", "role": "ROLE_USER", "content": [{"text": "x"}]}}
    loaded = V03.load_send_params(from_wire(Operation.SEND_MESSAGE, snake))
    assert (loaded.message.message_id, loaded.message.text) == ("m", "x")
    assert loaded.configuration is None  # no configuration: the server's default (blocking)
    unblocked = from_wire(Operation.SEND_MESSAGE, {**snake, "configuration": {}})
    assert unblocked["configuration"]["blocking"] is False  # proto3: absent bool is false


def test_push_configs_survive_the_0_3_proto_json() -> None:
    config = PushNotificationConfig(url="https://hooks.example/x", id="c1", task_id="t1")
    params = V03.dump_push_config(config)
    wire = to_wire(Operation.CREATE_PUSH_CONFIG, params)
    assert wire["taskId"] == "t1"
    assert wire["config"]["name"] == "tasks/t1/pushNotificationConfigs/c1"
    back = V03.load(from_wire(Operation.CREATE_PUSH_CONFIG, wire), PushNotificationConfig)
    assert back == config
    answer = result_to_wire(Operation.LIST_PUSH_CONFIGS, [params])
    listed = V03.load_push_config_list(result_from_wire(Operation.LIST_PUSH_CONFIGS, answer))
    assert listed.configs == [config]
