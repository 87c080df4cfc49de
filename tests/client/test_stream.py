"""TaskStream over real sockets (ScriptedServer): where a stream ends, how it folds, how
it fails, and closing it from another thread."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from a2a_sync.client import A2AClient
from a2a_sync.errors import (
    Cancelled,
    HTTPStatusError,
    InternalError,
    ProtocolError,
    StreamInterrupted,
    TaskNotFound,
    UnsupportedOperation,
)
from a2a_sync.types import Message, Task, TaskState
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import (
    RecordedRequest,
    close_connection,
    hold,
    respond_json,
    write_chunk,
    write_head,
)

WAIT = 5.0

# Stream items, 1.0 (ProtoJSON) and 0.3 (kind-tagged).
TASK = {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}
TASK_03 = {"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "working"}}


def chunk(index: int, *, append: bool, last: bool) -> dict[str, Any]:
    update: dict[str, Any] = {
        "taskId": "t1",
        "contextId": "c1",
        "artifact": {"artifactId": "a1", "parts": [{"text": f"{index},"}]},
    }
    if append:
        update["append"] = True
    if last:
        update["lastChunk"] = True
    return {"artifactUpdate": update}


def status(state: str) -> dict[str, Any]:
    return {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": state}}}


def status_03(state: str, *, final: bool) -> dict[str, Any]:
    return {
        "kind": "status-update",
        "taskId": "t1",
        "contextId": "c1",
        "status": {"state": state},
        "final": final,
    }


def data_event(request_id: Any, result: Any, newline: str = "\n") -> bytes:
    envelope = {"jsonrpc": "2.0", "id": request_id, "result": result}
    return f"data: {json.dumps(envelope)}{newline}{newline}".encode()


Writer = Callable[[Any], Sequence[bytes]]
STREAM_METHODS = {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}


def sse_handler(
    write: Writer,
    *,
    release: threading.Event | None = None,
    end: str = "finish",
    on_other: Callable[[socket.socket, RecordedRequest], None] | None = None,
) -> Callable[[socket.socket, RecordedRequest], None]:
    """Answer a stream request with the pieces ``write(request_id)`` returns (one chunk
    each); then optionally wait for ``release``; then end the body cleanly ("finish"), or
    drop the connection mid-body ("cut"). Other requests go to ``on_other``."""

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        body = request.json()
        if body["method"] not in STREAM_METHODS:
            assert on_other is not None
            on_other(sock, request)
            return
        write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        for piece in write(body["id"]):
            write_chunk(sock, piece)
        if release is not None:
            hold(release)
        with contextlib.suppress(OSError):  # the client may have gone already
            if end == "finish":
                write_chunk(sock, b"")
            else:
                close_connection(sock)

    return handler


def client_of(url: str, revision: str = "1.0") -> A2AClient:
    return A2AClient(url + "/", revision=revision, timeout=WAIT)  # type: ignore[arg-type]


# -- where a stream ends ------------------------------------------------------------------------


def test_crlf_comments_and_empty_events_are_tolerated(
    scripted_server: ScriptedServerFactory,
) -> None:
    def write(rid: Any) -> list[bytes]:
        return [
            b": keep-alive\r\n\r\n",
            data_event(rid, TASK, "\r\n"),
            b":ping\r\n\r\nevent: noop\r\n\r\n",
            data_event(rid, chunk(0, append=False, last=False), "\r\n"),
            data_event(rid, chunk(1, append=True, last=True), "\r\n")[:30],  # split mid-line
            data_event(rid, chunk(1, append=True, last=True), "\r\n")[30:],
            data_event(rid, status("TASK_STATE_COMPLETED"), "\r\n"),
        ]

    server = scripted_server(sse_handler(write))
    with client_of(server.url) as client, client.stream_message("go") as stream:
        events = list(stream)
        final = stream.get_final_task()
    assert len(events) == 4
    assert final.state is TaskState.completed
    assert final.artifacts[0].text == "0,1,"


@pytest.mark.parametrize("state", ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"])
def test_1_0_stream_ends_at_an_interrupted_state_without_waiting_for_close(
    scripted_server: ScriptedServerFactory, state: str
) -> None:
    release = threading.Event()
    server = scripted_server(
        sse_handler(
            lambda rid: [data_event(rid, TASK), data_event(rid, status(state))], release=release
        )
    )
    with client_of(server.url) as client, client.stream_message("go") as stream:
        assert stream.get_final_task().status.state.is_interrupted
        assert stream.done
    release.set()


def test_0_3_stream_ends_at_input_required_even_when_not_final(
    scripted_server: ScriptedServerFactory,
) -> None:
    # a2a-sdk's 0.3 layer sends final:false with input-required; the task waits anyway.
    release = threading.Event()

    def write(rid: Any) -> list[bytes]:
        return [data_event(rid, TASK_03), data_event(rid, status_03("input-required", final=False))]

    server = scripted_server(sse_handler(write, release=release))
    with client_of(server.url, "0.3") as client, client.stream_message("go") as stream:
        assert stream.get_final_task().state is TaskState.input_required
    release.set()


def test_0_3_final_flag_ends_the_stream(scripted_server: ScriptedServerFactory) -> None:
    release = threading.Event()

    def write(rid: Any) -> list[bytes]:
        return [data_event(rid, TASK_03), data_event(rid, status_03("working", final=True))]

    server = scripted_server(sse_handler(write, release=release))
    with client_of(server.url, "0.3") as client, client.stream_message("go") as stream:
        assert len(list(stream)) == 2
    release.set()


def test_stream_closed_before_the_task_settled_is_interrupted(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(sse_handler(lambda rid: [data_event(rid, TASK)]))
    with client_of(server.url) as client, client.stream_message("go") as stream:
        assert isinstance(next(stream), Task)
        with pytest.raises(StreamInterrupted) as info:
            next(stream)
    assert info.value.task_id == "t1"


def test_stream_cut_mid_body_is_interrupted_and_names_the_task(
    scripted_server: ScriptedServerFactory,
) -> None:
    def write(rid: Any) -> list[bytes]:
        return [data_event(rid, TASK), data_event(rid, chunk(0, append=False, last=False))]

    server = scripted_server(sse_handler(write, end="cut"))
    with client_of(server.url) as client, client.stream_message("go") as stream:
        with pytest.raises(StreamInterrupted) as info:
            list(stream)
        partial = stream.task
    assert info.value.task_id == "t1"
    assert partial is not None
    assert partial.artifacts[0].text == "0,"


def test_reply_message_stream_ends_after_the_message(
    scripted_server: ScriptedServerFactory,
) -> None:
    release = threading.Event()
    reply = {"message": {"role": "ROLE_AGENT", "messageId": "m9", "parts": [{"text": "hi"}]}}
    server = scripted_server(sse_handler(lambda rid: [data_event(rid, reply)], release=release))
    with client_of(server.url) as client, client.stream_message("go") as stream:
        result = stream.get_final_result()
        with pytest.raises(ProtocolError):
            stream.get_final_task()
    release.set()
    assert isinstance(result, Message)
    assert result.text == "hi"


def test_continued_task_stream_without_snapshot_reads_the_stored_task(
    scripted_server: ScriptedServerFactory,
) -> None:
    stored = {
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "history": [
            {"role": "ROLE_USER", "messageId": "u1", "parts": [{"text": "need input"}]},
            {"role": "ROLE_USER", "messageId": "u2", "parts": [{"text": "Paris"}]},
        ],
        "artifacts": [{"artifactId": "a1", "parts": [{"text": "0,"}]}],
    }

    def get_task(sock: socket.socket, request: RecordedRequest) -> None:
        body = request.json()
        assert body["method"] == "GetTask"
        respond_json(sock, {"jsonrpc": "2.0", "id": body["id"], "result": stored})

    def write(rid: Any) -> list[bytes]:
        return [
            data_event(rid, status("TASK_STATE_WORKING")),
            data_event(rid, chunk(0, append=False, last=True)),
            data_event(rid, status("TASK_STATE_COMPLETED")),
        ]

    server = scripted_server(sse_handler(write, on_other=get_task))
    with client_of(server.url) as client, client.stream_message("Paris", task_id="t1") as stream:
        events = list(stream)
        running = stream.task
        final = stream.get_final_task()
        assert final == client.get_task("t1")
    assert len(events) == 3
    assert running is not None
    assert running.id == "t1"
    assert running.artifacts[0].text == "0,"
    assert len(final.history) == 2


# -- errors inside and instead of a stream ------------------------------------------------------


def test_error_member_in_a_later_event_raises_its_type(
    scripted_server: ScriptedServerFactory,
) -> None:
    def write(rid: Any) -> list[bytes]:
        error = {"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": "boom"}}
        return [data_event(rid, TASK), f"data: {json.dumps(error)}\n\n".encode()]

    server = scripted_server(sse_handler(write))
    with client_of(server.url) as client, client.stream_message("go") as stream:
        assert isinstance(next(stream), Task)
        with pytest.raises(InternalError):
            next(stream)
        assert stream.done
        assert list(stream) == []


@pytest.mark.parametrize(
    ("status_code", "code", "error"),
    [(200, -32001, TaskNotFound), (400, -32004, UnsupportedOperation)],
)
def test_json_error_body_instead_of_a_stream_raises_its_type(
    scripted_server: ScriptedServerFactory, status_code: int, code: int, error: type[Exception]
) -> None:
    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        envelope = {
            "jsonrpc": "2.0",
            "id": request.json()["id"],
            "error": {"code": code, "message": "no"},
        }
        respond_json(sock, envelope, status=status_code)

    server = scripted_server(handler)
    client = client_of(server.url)
    with client, pytest.raises(error), client.subscribe("t1") as stream:
        list(stream)


def test_html_instead_of_a_stream_is_a_protocol_or_status_error(
    scripted_server: ScriptedServerFactory,
) -> None:
    pages = iter([(200, b"<html>portal</html>"), (502, b"<html>bad gateway</html>")])

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        code, page = next(pages)
        write_head(sock, code, {"Content-Type": "text/html", "Content-Length": str(len(page))})
        sock.sendall(page)

    server = scripted_server(handler)
    with client_of(server.url) as client:
        with pytest.raises(ProtocolError):
            client.stream_message("go")
        with pytest.raises(HTTPStatusError) as info:
            client.stream_message("go")
    assert info.value.status_code == 502


@pytest.mark.parametrize(
    "bad",
    [
        {
            "statusUpdate": {
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "TASK_STATE_DONE"},
            }
        },
        {"mystery": {}},
        {"task": {"id": 5}},
    ],
    ids=["unknown-state", "unknown-member", "wrong-type"],
)
def test_undecodable_event_is_a_protocol_error(
    scripted_server: ScriptedServerFactory, bad: dict[str, Any]
) -> None:
    server = scripted_server(sse_handler(lambda rid: [data_event(rid, TASK), data_event(rid, bad)]))
    with client_of(server.url) as client, client.stream_message("go") as stream:
        assert isinstance(next(stream), Task)
        with pytest.raises(ProtocolError):
            next(stream)
        assert stream.done
        snapshot = stream.task
    assert snapshot is not None
    assert snapshot.state is TaskState.working  # nothing of the bad event was applied


@pytest.mark.parametrize("payload", [b"data: not json\n\n", b"data: [1,2]\n\n"])
def test_non_json_or_non_envelope_event_is_a_protocol_error(
    scripted_server: ScriptedServerFactory, payload: bytes
) -> None:
    server = scripted_server(sse_handler(lambda rid: [payload]))
    with (
        client_of(server.url) as client,
        client.stream_message("go") as stream,
        pytest.raises(ProtocolError),
    ):
        list(stream)


def test_event_answering_another_request_is_a_protocol_error(
    scripted_server: ScriptedServerFactory,
) -> None:
    server = scripted_server(sse_handler(lambda rid: [data_event(rid + 100, TASK)]))
    with (
        client_of(server.url) as client,
        client.stream_message("go") as stream,
        pytest.raises(ProtocolError),
    ):
        next(stream)


# -- closing ------------------------------------------------------------------------------------


def test_close_from_another_thread_unblocks_a_waiting_reader(
    scripted_server: ScriptedServerFactory,
) -> None:
    release = threading.Event()
    server = scripted_server(sse_handler(lambda rid: [data_event(rid, TASK)], release=release))
    # Idle timeout 30 s: the reader must be woken by close(), not by a timeout.
    client = A2AClient(server.url + "/", timeout=WAIT, stream_idle_timeout=30.0)
    got_task = threading.Event()
    outcome: list[BaseException] = []

    def consume() -> None:
        try:
            with client.stream_message("go") as stream:
                holder.append(stream)
                for _ in stream:
                    got_task.set()
        except BaseException as exc:
            outcome.append(exc)

    holder: list[Any] = []
    reader = threading.Thread(target=consume, name="a2a-sync-test-reader")
    reader.start()
    try:
        assert got_task.wait(WAIT)
        holder[0].close()
        reader.join(WAIT)
        assert not reader.is_alive()
        assert len(outcome) == 1
        assert isinstance(outcome[0], Cancelled)
    finally:
        release.set()
        client.close()


def test_closing_the_client_cancels_open_streams(scripted_server: ScriptedServerFactory) -> None:
    release = threading.Event()
    server = scripted_server(sse_handler(lambda rid: [data_event(rid, TASK)], release=release))
    client = A2AClient(server.url + "/", timeout=WAIT, stream_idle_timeout=30.0)
    try:
        stream = client.stream_message("go")
        assert isinstance(next(stream), Task)
        timer = threading.Timer(0.05, client.close)
        timer.start()
        with pytest.raises(Cancelled):
            next(stream)
        timer.join(WAIT)
    finally:
        release.set()
        client.close()
