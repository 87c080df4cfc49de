"""A2A 0.3's vendored proto (``a2a.v1``), its descriptor and the 0.3 conversion edge.

The conversions are checked field by field against a2a-sdk 1.3's own 0.3 mapping
(``a2a.compat.v0_3.proto_utils``): the same 0.3 JSON object, turned into a message by
ours and by theirs, must be the same message (and back).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.grpc import import_grpc

import_grpc()

from google.protobuf import descriptor_pb2  # noqa: E402

from a2a_sync import errors  # noqa: E402
from a2a_sync.a2a.grpc_v03 import convert  # noqa: E402
from a2a_sync.a2a.grpc_v03._descriptor import SERIALIZED  # noqa: E402
from a2a_sync.a2a.grpc_v03.messages import METHODS  # noqa: E402
from a2a_sync.a2a.methods import Operation  # noqa: E402

TASK: dict[str, Any] = {
    "kind": "task",
    "id": "t-1",
    "contextId": "c-1",
    "status": {
        "state": "canceled",
        "timestamp": "2025-01-02T03:04:05Z",
        "message": {
            "kind": "message",
            "messageId": "s-1",
            "role": "agent",
            "parts": [{"kind": "text", "text": "stopped"}],
        },
    },
    "artifacts": [
        {
            "artifactId": "a-1",
            "name": "out",
            "parts": [
                {"kind": "file", "file": {"uri": "https://x.example/f", "mimeType": "a/b"}},
                {"kind": "file", "file": {"bytes": "aGk=", "name": "hi.txt"}},
                {"kind": "data", "data": {"k": "v"}},
            ],
        }
    ],
    "history": [
        {
            "kind": "message",
            "messageId": "m-1",
            "role": "user",
            "parts": [{"kind": "text", "text": "hi", "metadata": {"m": "x"}}],
            "extensions": ["urn:e"],
        }
    ],
    "metadata": {"k": "v"},
}


def _wire(message: Any) -> bytes:
    """Messages of two descriptor pools compare by their bytes."""
    data: bytes = message.SerializeToString(deterministic=True)
    return data


@pytest.mark.peer
def test_the_descriptor_equals_a2a_sdks_0_3_one() -> None:
    from a2a.compat.v0_3 import a2a_v0_3_pb2

    theirs = descriptor_pb2.FileDescriptorProto.FromString(a2a_v0_3_pb2.DESCRIPTOR.serialized_pb)
    ours = descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED)
    assert ours.package == theirs.package == "a2a.v1"
    for proto in (theirs, ours):
        proto.ClearField("name")
        proto.ClearField("options")
        proto.ClearField("source_code_info")
    assert ours == theirs


def test_the_method_table() -> None:
    assert set(METHODS) == set(Operation) - {Operation.LIST_TASKS}
    assert METHODS[Operation.GET_EXTENDED_CARD].name == "GetAgentCard"
    assert METHODS[Operation.SUBSCRIBE_TO_TASK].path == "/a2a.v1.A2AService/TaskSubscription"
    assert {m.name for m in METHODS.values() if m.streaming} == {
        "SendStreamingMessage",
        "TaskSubscription",
    }


@pytest.mark.peer
def test_a_task_converts_as_a2a_sdks_0_3_mapping_does() -> None:
    from a2a.compat.v0_3 import proto_utils
    from a2a.compat.v0_3 import types as types_v03

    method = METHODS[Operation.GET_TASK]
    ours = convert.result_to_message(method, TASK)
    theirs = proto_utils.ToProto.task(types_v03.Task.model_validate(TASK))
    # One reading differs: file bytes. 0.3 JSON carries them base64-encoded; the proto's
    # ``bytes file_with_bytes`` holds the content itself (ProtoJSON base64-encodes it
    # again on the REST wire, which is the JSON string). a2a-sdk puts the base64 *text*
    # into the bytes field (``file.bytes.encode('utf-8')``), one encoding too many.
    ours_file = ours.artifacts[0].parts[1].file
    theirs_file = theirs.artifacts[0].parts[1].file
    assert ours_file.file_with_bytes == b"hi"
    assert theirs_file.file_with_bytes == b"aGk="
    theirs_file.file_with_bytes = b"hi"
    assert _wire(ours) == _wire(theirs)
    back = convert.result_from_message(method, ours)
    assert back == TASK


@pytest.mark.peer
def test_send_params_convert_as_a2a_sdks_0_3_mapping_does() -> None:
    from a2a.compat.v0_3 import a2a_v0_3_pb2, proto_utils
    from a2a.compat.v0_3 import types as types_v03

    params = {
        "message": TASK["history"][0],
        "configuration": {
            "acceptedOutputModes": ["text/plain"],
            "historyLength": 2,
            "blocking": True,
            "pushNotificationConfig": {"url": "https://h.example/p", "token": "tk"},
        },
        "metadata": {"r": 1.0},
    }
    method = METHODS[Operation.SEND_MESSAGE]
    ours = convert.request_of(method, params)
    sdk = types_v03.MessageSendParams.model_validate(params)
    theirs = a2a_v0_3_pb2.SendMessageRequest(
        request=proto_utils.ToProto.message(sdk.message),
        configuration=proto_utils.ToProto.message_send_configuration(sdk.configuration),
        metadata=proto_utils.ToProto.metadata(sdk.metadata),
    )
    assert _wire(ours) == _wire(theirs)
    assert convert.params_from_message(method, theirs) == params


@pytest.mark.parametrize(
    ("operation", "params", "field", "value"),
    [
        (Operation.GET_TASK, {"id": "t-1", "historyLength": 3}, "name", "tasks/t-1"),
        (Operation.CANCEL_TASK, {"id": "t-1"}, "name", "tasks/t-1"),
        (Operation.SUBSCRIBE_TO_TASK, {"id": "t-1"}, "name", "tasks/t-1"),
        (
            Operation.GET_PUSH_CONFIG,
            {"id": "t-1", "pushNotificationConfigId": "c-1"},
            "name",
            "tasks/t-1/pushNotificationConfigs/c-1",
        ),
        (
            Operation.DELETE_PUSH_CONFIG,
            {"id": "t-1", "pushNotificationConfigId": "c-1"},
            "name",
            "tasks/t-1/pushNotificationConfigs/c-1",
        ),
        (Operation.LIST_PUSH_CONFIGS, {"id": "t-1"}, "parent", "tasks/t-1"),
        (
            Operation.CREATE_PUSH_CONFIG,
            {"taskId": "t-1", "pushNotificationConfig": {"id": "c-1", "url": "https://h/p"}},
            "parent",
            "tasks/t-1",
        ),
    ],
)
def test_resource_names_round_trip(
    operation: Operation, params: dict[str, Any], field: str, value: str
) -> None:
    method = METHODS[operation]
    message = convert.request_of(method, params)
    assert getattr(message, field) == value
    assert convert.params_from_message(method, message) == params


def test_a_malformed_resource_name_is_invalid_params() -> None:
    method = METHODS[Operation.GET_TASK]
    with pytest.raises(errors.InvalidParams, match="GetTask: name must be 'tasks/"):
        convert.params_from_message(method, method.request(name="task/x"))


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("TaskNotFoundError: no task t-1", errors.TaskNotFound),
        ("TaskNotCancelableError: done", errors.TaskNotCancelable),
        ("UnsupportedOperationError: settled", errors.UnsupportedOperation),
        ("InvalidParamsError: bad", errors.InvalidParams),
    ],
)
def test_0_3_status_messages_give_their_errors(message: str, expected: type[Exception]) -> None:
    found = convert.error_from_grpc_v03("NOT_FOUND", message, None)
    assert type(found) is expected
    assert found is not None
    assert found.message == message.partition(": ")[2]
    assert convert.status_message(expected(found.message)) == message  # type: ignore[call-arg]


def test_a_status_without_an_error_name_falls_back_to_its_code() -> None:
    assert type(convert.error_from_grpc_v03("NOT_FOUND", "gone", None)) is errors.MethodNotFound
    assert convert.error_from_grpc_v03("UNAVAILABLE", "Some: thing", None) is None


CARD: dict[str, Any] = {
    "protocolVersion": "0.3.0",
    "name": "Legacy",
    "description": "a 0.3 agent",
    "version": "1",
    "url": "127.0.0.1:50051",
    "preferredTransport": "GRPC",
    "additionalInterfaces": [{"url": "http://127.0.0.1:8000/", "transport": "JSONRPC"}],
    "provider": {"organization": "Org", "url": "https://org.example"},
    "capabilities": {
        "streaming": True,
        "pushNotifications": True,
        "extensions": [{"uri": "urn:x", "required": True, "params": {"a": "b"}}],
    },
    "securitySchemes": {
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
        "oauth": {
            "type": "oauth2",
            "flows": {"clientCredentials": {"tokenUrl": "https://t.example", "scopes": {"r": "R"}}},
        },
        "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://o.example"},
    },
    "security": [{"bearer": []}, {"oauth": ["r"]}],
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["text/plain"],
    "skills": [
        {"id": "s", "name": "S", "description": "d", "tags": ["t"], "security": [{"key": []}]}
    ],
    "supportsAuthenticatedExtendedCard": True,
}


@pytest.mark.peer
def test_a_card_converts_as_a2a_sdks_0_3_mapping_does() -> None:
    """GetAgentCard's answer: security schemes become the proto's oneof, requirements
    ``{"schemes": {name: {"list": scopes}}}``; and back to the same 0.3 JSON."""
    from a2a.compat.v0_3 import proto_utils
    from a2a.compat.v0_3 import types as types_v03

    method = METHODS[Operation.GET_EXTENDED_CARD]
    ours = convert.result_to_message(method, CARD)
    theirs = proto_utils.ToProto.agent_card(types_v03.AgentCard.model_validate(CARD))
    assert _wire(ours) == _wire(theirs)
    assert convert.result_from_message(method, ours) == CARD
