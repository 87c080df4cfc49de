"""The vendored proto, its compiled descriptor and the conversion edge of the gRPC binding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.grpc import import_grpc
from tests.support.postgres import _under_ci

import_grpc()

from google.protobuf import descriptor_pb2  # noqa: E402
from google.rpc import status_pb2  # noqa: E402

from a2a_sync import errors  # noqa: E402
from a2a_sync.a2a.error_codes import TABLE  # noqa: E402
from a2a_sync.a2a.grpc import convert  # noqa: E402
from a2a_sync.a2a.grpc._descriptor import SERIALIZED  # noqa: E402
from a2a_sync.a2a.grpc.messages import METHODS, message_class  # noqa: E402
from a2a_sync.a2a.methods import Operation  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.peer  # grpcio-tools comes with the full test extra, not test-unit
def test_regenerating_the_descriptor_gives_the_checked_in_module() -> None:
    try:
        import grpc_tools  # noqa: F401
    except ImportError:
        if _under_ci():
            pytest.fail("grpcio-tools is missing under CI (the dev/test extras)")
        pytest.skip("grpcio-tools is not installed (the dev/test extras)")
    done = subprocess.run(
        [sys.executable, "scripts/gen_grpc.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.peer
def test_the_descriptor_equals_a2a_sdks_v1_0_0_one() -> None:
    """a2a-sdk 1.3.0 generated its stubs from the specification's v1.0.0 tag: every
    message, enum, field option and rpc is the same; only buf's file options (java/php/
    ruby packages) differ."""
    from a2a.types import a2a_pb2

    theirs = descriptor_pb2.FileDescriptorProto.FromString(a2a_pb2.DESCRIPTOR.serialized_pb)
    ours = descriptor_pb2.FileDescriptorProto.FromString(SERIALIZED)
    assert ours.package == theirs.package == "lf.a2a.v1"
    for proto in (theirs, ours):
        proto.ClearField("name")
        proto.ClearField("options")
        proto.ClearField("source_code_info")
    assert ours == theirs


def test_every_1_0_operation_has_its_rpc() -> None:
    assert set(METHODS) == set(Operation)
    assert {m.name for m in METHODS.values() if m.streaming} == {
        "SendStreamingMessage",
        "SubscribeToTask",
    }
    assert METHODS[Operation.GET_TASK].path == "/lf.a2a.v1.A2AService/GetTask"


def test_import_a2a_sync_imports_neither_grpc_nor_protobuf() -> None:
    code = (
        "import sys, json, a2a_sync, a2a_sync.client, a2a_sync.server;"
        "print(json.dumps(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('grpc', 'google'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(done.stdout) == []


def test_protojson_round_trip_of_a_task() -> None:
    wire = {
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-02T03:04:05Z"},
        "artifacts": [{"artifactId": "a", "parts": [{"data": {"k": [1, "x", None]}}]}],
        "metadata": {"nested": {"ok": True}},
    }
    message = convert.to_message(message_class("Task"), wire, "GetTask")
    again = convert.from_message(message_class("Task").FromString(message.SerializeToString()))
    assert again["status"] == wire["status"]
    assert again["metadata"] == wire["metadata"]
    assert again["artifacts"][0]["parts"][0]["data"] == {"k": [1.0, "x", None]}


def test_params_that_do_not_fit_are_invalid_params() -> None:
    with pytest.raises(errors.InvalidParams, match="GetTask"):
        convert.to_message(message_class("GetTaskRequest"), {"id": 5, "nope": 1}, "GetTask")


@pytest.mark.parametrize("row", TABLE, ids=lambda r: r.reason)
def test_every_error_of_the_table_round_trips_through_a_status(row: object) -> None:
    error_class = row.error  # type: ignore[attr-defined]
    exc = error_class("something went wrong")
    code = convert.grpc_status_of(exc)
    assert code == row.grpc  # type: ignore[attr-defined]
    details = convert.status_details(exc)
    status = status_pb2.Status.FromString(details)
    assert status.message == "something went wrong"
    back = convert.error_from_grpc(code, status.message, details)
    assert type(back) is error_class


def test_a_status_without_details_falls_back_by_code() -> None:
    assert type(convert.error_from_grpc("INVALID_ARGUMENT", "x", None)) is errors.InvalidParams
    assert type(convert.error_from_grpc("INTERNAL", "x", b"\xff broken")) is errors.InternalError
    assert convert.error_from_grpc("UNAVAILABLE", "x", None) is None


SAMPLES = [
    (
        "AgentCard",
        {
            "name": "n",
            "description": "d",
            "version": "1",
            "supportedInterfaces": [
                {"url": "h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {"streaming": True, "pushNotifications": False, "extensions": []},
            "securitySchemes": {
                "bearer": {"httpAuthSecurityScheme": {"scheme": "bearer"}},
                "oauth": {
                    "oauth2SecurityScheme": {
                        "flows": {
                            "clientCredentials": {"tokenUrl": "https://t", "scopes": {"a": "b"}}
                        }
                    }
                },
            },
            "securityRequirements": [{"schemes": {"bearer": {"list": ["x", "y"]}}}],
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "S", "description": "d", "tags": ["t"]}],
            "signatures": [{"protected": "p", "signature": "s", "header": {"kid": "k"}}],
            "iconUrl": "https://i",
        },
    ),
    (
        "StreamResponse",
        {
            "artifactUpdate": {
                "taskId": "t",
                "contextId": "c",
                "artifact": {
                    "artifactId": "a",
                    "parts": [
                        {"raw": "aGVsbG8=", "mediaType": "text/plain", "filename": "f"},
                        {"data": {"x": [1, None, "s", {"y": False}]}},
                        {"url": "https://u"},
                    ],
                },
                "append": True,
                "lastChunk": False,
                "metadata": {"m": 1},
            }
        },
    ),
    (
        "ListTasksRequest",
        {
            "tenant": "x",
            "status": "TASK_STATE_WORKING",
            "pageSize": 0,
            "historyLength": 3,
            "statusTimestampAfter": "2026-01-02T03:04:05.123Z",
            "includeArtifacts": False,
        },
    ),
    ("ListTasksResponse", {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 7}),
    (
        "TaskPushNotificationConfig",
        {"taskId": "t", "id": "i", "url": "https://h", "authentication": {"scheme": "Bearer"}},
    ),
]


@pytest.mark.parametrize(("name", "wire"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_the_fast_protojson_agrees_with_json_format(name: str, wire: dict[str, object]) -> None:
    from google.protobuf import json_format

    from a2a_sync.a2a.grpc import protojson

    cls = message_class(name)
    ours = protojson.parse(wire, cls())
    theirs = json_format.ParseDict(wire, cls())
    assert ours == theirs
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True
    )
    assert protojson.to_dict(theirs) == json_format.MessageToDict(theirs)


@pytest.mark.parametrize(
    "wire",
    [
        {"id": 5},
        {"historyLength": "x"},
        {"historyLength": True},
        {"nope": 1},
        {"id": "t", "historyLength": 1.5},
    ],
)
def test_the_fast_protojson_refuses_what_json_format_refuses(wire: dict[str, object]) -> None:
    from google.protobuf import json_format

    from a2a_sync.a2a.grpc import protojson

    cls = message_class("GetTaskRequest")
    with pytest.raises(protojson.ProtoJSONError):
        protojson.parse(wire, cls())
    with pytest.raises(json_format.ParseError):
        json_format.ParseDict(wire, cls())


def test_an_unknown_enum_number_is_kept_as_a_number() -> None:
    from google.protobuf import json_format

    from a2a_sync.a2a.grpc import protojson

    message = message_class("Message")(role=7)
    assert protojson.to_dict(message) == json_format.MessageToDict(message) == {"role": 7}


@pytest.mark.parametrize(
    ("seconds", "nanos"),
    [
        (0, 0),
        (1_767_322_895, 0),
        (1_767_322_895, 123_000_000),
        (1_767_322_895, 123_456_000),
        (1_767_322_895, 123_456_789),
        (-1, 1),
        (-86_401, 999_999_999),
        (-62_135_596_800, 0),  # 0001-01-01
        (253_402_300_799, 999_000_000),  # 9999-12-31
    ],
)
def test_timestamps_are_written_as_json_format_writes_them(seconds: int, nanos: int) -> None:
    """The fast path for Timestamp fields (issue 19, client CPU) against json_format."""
    from google.protobuf import json_format

    from a2a_sync.a2a.grpc import protojson

    status = message_class("TaskStatus")(state=3)
    status.timestamp.seconds, status.timestamp.nanos = seconds, nanos
    assert protojson.to_dict(status) == json_format.MessageToDict(status)


def test_an_out_of_range_timestamp_fails_as_in_json_format() -> None:
    from a2a_sync.a2a.grpc import protojson

    status = message_class("TaskStatus")(state=3)
    status.timestamp.seconds = 10**12
    with pytest.raises(ValueError, match="Timestamp"):
        protojson.to_dict(status)
