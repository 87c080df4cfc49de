"""Bad answers become typed errors (reliability-cases CT-10, CT-14, CT-15): JSON-RPC error
codes, HTTP statuses, HTML and non-JSON bodies, broken envelopes, schema violations,
oversized bodies, silent and vanishing peers. Nothing hangs, nothing is half-parsed."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest

from a2a_sync import errors
from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.jsonrpc import A2A_ERRORS
from a2a_sync.client import A2AClient
from a2a_sync.errors import (
    A2AError,
    ConnectionLost,
    HTTPStatusError,
    ProtocolError,
    ReadTimeout,
    ResponseTooLarge,
    RPCError,
)
from a2a_sync.policies import RetryPolicy, Timeout
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import (
    RecordedRequest,
    close_connection,
    hold,
    respond,
    respond_json,
    write_head,
)

WAIT = 5.0
TASK: dict[str, Any] = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}

Handler = Callable[[socket.socket, RecordedRequest], None]


def answer(result: Any = None, *, error: Any = None, status: int = 200, **envelope: Any) -> Handler:
    """A handler answering every request with one JSON-RPC envelope (its id echoed)."""

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request.json()["id"]}
        if error is not None:
            body["error"] = error
        else:
            body["result"] = result
        body.update(envelope)
        respond_json(sock, {k: v for k, v in body.items() if v is not ...}, status=status)

    return handler


def raw(body: bytes, *, status: int = 200, content_type: str = "application/json") -> Handler:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, status, body, headers={"Content-Type": content_type})

    return handler


def client_of(url: str, revision: str = "1.0", **kwargs: Any) -> A2AClient:
    kwargs.setdefault("timeout", WAIT)
    return A2AClient(url + "/", revision=revision, **kwargs)  # type: ignore[arg-type]


# -- JSON-RPC error codes ------------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(A2A_ERRORS), ids=lambda c: A2A_ERRORS[c].__name__)
def test_every_known_code_raises_its_exception_class(
    scripted_server: ScriptedServerFactory, code: int
) -> None:
    data = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "X"}]
    server = scripted_server(answer(error={"code": code, "message": "nope", "data": data}))
    with client_of(server.url) as client, pytest.raises(RPCError) as info:
        client.get_task("t1")
    assert type(info.value) is A2A_ERRORS[code]
    assert (info.value.code, info.value.message, info.value.data) == (code, "nope", data)


def test_a2a_codes_cover_32001_to_32009() -> None:
    a2a = {code: cls for code, cls in A2A_ERRORS.items() if issubclass(cls, A2AError)}
    assert sorted(a2a) == list(range(-32009, -32000))
    assert A2A_ERRORS[-32001] is errors.TaskNotFound
    assert A2A_ERRORS[-32009] is errors.VersionNotSupported


@pytest.mark.parametrize(("code", "cls"), [(-32050, A2AError), (-1, A2AError), (42, A2AError)])
def test_unknown_codes_raise_the_generic_class(
    scripted_server: ScriptedServerFactory, code: int, cls: type[RPCError]
) -> None:
    server = scripted_server(answer(error={"code": code, "message": "custom"}))
    with client_of(server.url) as client, pytest.raises(RPCError) as info:
        client.get_task("t1")
    assert type(info.value) is cls
    assert info.value.code == code


def test_error_body_with_an_http_error_status_is_still_typed(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(answer(error={"code": -32009, "message": "v"}, status=400))
    with client_of(server.url) as client, pytest.raises(errors.VersionNotSupported):
        client.get_task("t1")


# -- HTTP statuses --------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 403, 404, 405, 413, 415, 500])
def test_http_errors_are_typed_and_not_retried(
    scripted_server: ScriptedServerFactory, status: int
) -> None:
    server = scripted_server(
        raw(b"<html><h1>Error</h1></html>", status=status, content_type="text/html")
    )
    with client_of(server.url) as client:
        with pytest.raises(HTTPStatusError) as info:
            client.send_message("hi")
        with pytest.raises(HTTPStatusError):
            client.get_task("t1")
    assert info.value.status_code == status
    assert info.value.body.startswith(b"<html>")
    assert len(server.requests) == 2  # one per call


# -- broken bodies and envelopes ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html><body>Proxy login</body></html>", "text/html"),
        (b"<!DOCTYPE html><p>oops</p>", "application/json"),
        (b"not json at all", "text/plain"),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"id": "t1", "sta', "application/json"),
        (b"", "application/json"),
        (b"\xff\xfe\x00garbage", "application/json"),
        (b"[" * 100_000, "application/json"),
    ],
    ids=["html", "html-as-json", "text", "truncated", "empty", "binary", "deep"],
)
def test_non_json_bodies_are_protocol_errors(
    scripted_server: ScriptedServerFactory, body: bytes, content_type: str
) -> None:
    server = scripted_server(raw(body, content_type=content_type))
    with client_of(server.url) as client, pytest.raises(ProtocolError) as info:
        client.get_task("t1")
    assert len(str(info.value)) < 1000  # an excerpt, not the whole body


@pytest.mark.parametrize(
    "envelope",
    [
        {"jsonrpc": "2.0", "id": 999, "result": TASK},
        {"jsonrpc": "2.0", "id": "1", "result": TASK},
        {"jsonrpc": "2.0", "id": None, "result": TASK},
        {"id": 1, "result": TASK},
        {"jsonrpc": "1.0", "id": 1, "result": TASK},
        {"jsonrpc": "2.0", "id": 1, "result": TASK, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "error": "boom"},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
        {"jsonrpc": "2.0", "id": 999, "error": {"code": -32001, "message": "m"}},
        [{"jsonrpc": "2.0", "id": 1, "result": TASK}],
        "a string",
    ],
    ids=[
        "wrong-id",
        "id-as-string",
        "null-id",
        "no-jsonrpc",
        "jsonrpc-1.0",
        "result-and-error",
        "neither",
        "error-not-object",
        "code-not-int",
        "error-wrong-id",
        "batch",
        "string",
    ],
)
def test_broken_envelopes_are_protocol_errors(
    scripted_server: ScriptedServerFactory, envelope: Any
) -> None:
    server = scripted_server(raw(json.dumps(envelope).encode()))
    with client_of(server.url) as client, pytest.raises(ProtocolError):
        client.get_task("t1")


@pytest.mark.parametrize(
    ("revision", "result"),
    [
        ("1.0", {"id": "t1", "status": {"state": "TASK_STATE_FINISHED"}}),
        ("1.0", {**TASK, "history": [{"role": "ROLE_ROBOT", "messageId": "m", "parts": []}]}),
        ("1.0", {"id": 7, "status": {"state": "TASK_STATE_COMPLETED"}}),
        ("1.0", {"status": {"state": "TASK_STATE_COMPLETED"}}),
        ("1.0", {"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": "a message"}]}),
        ("1.0", None),
        ("0.3", {"kind": "task", "id": "t1", "status": {"state": "done"}}),
        ("0.3", {"kind": "task", "id": "t1", "status": {"state": "completed"},
                 "artifacts": [{"artifactId": "a", "parts": [{"kind": "video"}]}]}),
    ],
    ids=["state", "role", "id-type", "no-id", "message", "null", "0.3-state", "0.3-part-kind"],
)  # fmt: skip
def test_schema_violations_are_protocol_errors_naming_the_path(
    scripted_server: ScriptedServerFactory, revision: str, result: Any
) -> None:
    server = scripted_server(answer(result))
    with client_of(server.url, revision) as client, pytest.raises(ProtocolError) as info:
        client.get_task("t1")
    assert info.value.details
    assert all("@ $" in detail for detail in info.value.details)


def test_a_list_with_one_bad_task_is_rejected_whole(scripted_server: ScriptedServerFactory) -> None:
    bad = {"id": "t2", "status": {"state": "TASK_STATE_NOPE"}}
    server = scripted_server(answer({"tasks": [TASK, TASK, bad], "nextPageToken": ""}))
    with client_of(server.url) as client, pytest.raises(ProtocolError) as info:
        client.list_tasks()
    assert any("tasks" in detail for detail in info.value.details)


def test_unknown_fields_are_ignored(scripted_server: ScriptedServerFactory) -> None:
    task = {**TASK, "futureField": {"x": 1}, "status": {**TASK["status"], "extra": True}}
    server = scripted_server(answer(task))
    with client_of(server.url) as client:
        assert client.get_task("t1").id == "t1"


# -- size and silence -----------------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_oversized_response_is_refused(
    scripted_server: ScriptedServerFactory, chunked: bool
) -> None:
    big = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "result": {**TASK, "metadata": {"pad": "x" * 70_000}}}
    ).encode()

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        pieces = [big[i : i + 8192] for i in range(0, len(big), 8192)]
        respond(
            sock,
            200,
            pieces if chunked else big,
            headers={"Content-Type": "application/json"},
            chunked=chunked,
        )

    server = scripted_server(handler)
    transport = HTTPTransport(max_response_bytes=64 * 1024, timeout=WAIT)
    with (
        A2AClient(server.url + "/", transport=transport) as client,
        pytest.raises(ResponseTooLarge) as info,
    ):
        client.get_task("t1")
    assert info.value.limit == 64 * 1024
    transport.close()


def test_silent_peer_times_out(scripted_server: ScriptedServerFactory) -> None:
    release = threading.Event()

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Content-Type": "application/json", "Content-Length": "100"})
        hold(release)

    server = scripted_server(handler)
    timeout = Timeout(connect=WAIT, read=0.2, total=WAIT)
    try:
        client = client_of(server.url, timeout=timeout, retry=RetryPolicy(max_retries=0))
        with client, pytest.raises(ReadTimeout):
            client.get_task("t1")
    finally:
        release.set()


def test_vanishing_peer_does_not_get_the_message_twice(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(lambda sock, request: close_connection(sock))
    with client_of(server.url) as client, pytest.raises(ConnectionLost) as info:
        client.send_message("charge my card")
    assert info.value.outcome_unknown
    assert len(server.requests) == 1


def test_0_3_push_config_delete_without_result_is_accepted(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(answer(result=...))  # a2a-sdk 0.3: {"id":..,"jsonrpc":"2.0"}
    with client_of(server.url, "0.3") as client:
        client.delete_push_config("t1", "c1")
        with pytest.raises(ProtocolError):
            client.get_task("t1")  # elsewhere a missing result is still an error
