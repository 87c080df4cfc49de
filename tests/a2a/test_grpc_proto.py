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
