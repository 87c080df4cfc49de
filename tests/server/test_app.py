"""A2AApplication in-process (through wsgiref.validate): card, envelope rules, versions,
errors, auth, Host/Origin, streams (framing, heartbeats, cap, cleanup), shutdown."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2a_sync import errors as e
from a2a_sync.a2a.methods import Operation
from a2a_sync.errors import TaskNotFound
from a2a_sync.server.app import LOOPBACK_HOSTS, A2AApplication
from a2a_sync.server.auth import BearerTokens
from a2a_sync.server.context import CallContext
from a2a_sync.types import Message, StreamEvent, Task, TaskState, TaskStatus
from tests.server.agents import WAIT, EchoAgent, card
from tests.server.wsgi import CountingInput, call, rpc, sse_events

SEND_1_0 = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}}
SEND_0_3 = {
    "message": {
        "kind": "message",
        "role": "user",
        "messageId": "m2",
        "parts": [{"kind": "text", "text": "hello"}],
    }
}


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture
def app(agent: EchoAgent) -> Iterator[A2AApplication]:
    application = A2AApplication(card(extended=True), agent, heartbeat_interval=0.05, max_streams=2)
    yield application
    agent.release.set()
    assert application.close(WAIT)


# -- card ---------------------------------------------------------------------------------------


def test_card_has_etag_and_cache_control_and_answers_304(app: A2AApplication) -> None:
    response = call(app, "GET", "/.well-known/agent-card.json")
    assert response.code == 200
    assert response.headers["content-type"] == "application/json"
    assert "max-age=" in response.headers["cache-control"]
    etag = response.headers["etag"]
    document = response.json()
    assert document["name"] == "Test agent"
    versions = [i["protocolVersion"] for i in document["supportedInterfaces"]]
    assert versions == ["1.0", "0.3"]
    assert document["protocolVersion"] == "0.3"  # merged 0.3 fields for 0.3 clients
    again = call(app, "GET", "/.well-known/agent-card.json", headers={"If-None-Match": etag})
    assert again.code == 304
    assert again.read() == b""
    other = call(app, "GET", "/.well-known/agent-card.json", headers={"If-None-Match": 'W/"x"'})
    assert other.code == 200
    other.close()
    assert call(app, "POST", "/.well-known/agent-card.json", body=b"{}").finish() == 405


def test_card_without_interfaces_advertises_the_url_it_was_reached_at(agent: EchoAgent) -> None:
    bare = card()
    import attrs

    application = A2AApplication(
        attrs.evolve(bare, supported_interfaces=[]),
        agent,
        rpc_path="/rpc",
        allowed_hosts=["agent.example"],
    )
    try:
        response = call(
            application,
            "GET",
            "/.well-known/agent-card.json",
            headers={"Host": "agent.example:9000"},
        )
        document = response.json()
        urls = {i["url"] for i in document["supportedInterfaces"]}
        assert urls == {"http://agent.example:9000/rpc"}
    finally:
        application.close(WAIT)


def test_card_can_be_signed(agent: EchoAgent) -> None:
    from a2a_sync.signing import sign_card, verify_card

    key = b"k" * 32
    application = A2AApplication(
        card(), agent, sign_card=lambda c: sign_card(c, key, alg="HS256", kid="k1")
    )
    try:
        body = call(application, "GET", "/.well-known/agent-card.json").read()
        verified = verify_card(
            body, lambda kid, jku: key if kid == "k1" else None, algorithms=["HS256"]
        )
        assert verified.name == "Test agent"
    finally:
        application.close(WAIT)


# -- envelope rules ------------------------------------------------------------------------------


def test_http_envelope_rules(app: A2AApplication) -> None:
    assert call(app, "GET", "/").finish() == 405
    assert call(app, "POST", "/elsewhere", body=b"{}").finish() == 404
    assert call(app, body=b"{}").finish() == 400  # no Content-Type
    assert call(app, body=b"hi", headers={"Content-Type": "text/plain"}).finish() == 415
    ok = rpc(app, "GetTask", {"id": "x"})
    assert ok.code == 200
    ok.close()
    typed = call(app, body=b"{}", headers={"Content-Type": "application/json; charset=utf-8"})
    assert typed.code == 200
    typed.close()


def test_body_over_the_limit_is_413_before_or_after_reading_at_most_limit_plus_one(
    agent: EchoAgent,
) -> None:
    application = A2AApplication(card(), agent, max_body_bytes=100)
    try:
        declared = CountingInput(b"x" * 1000)
        response = call(
            application,
            body=b"x" * 1000,
            headers={"Content-Type": "application/json"},
            wsgi_input=declared,
        )
        assert response.finish() == 413
        assert declared.consumed == 0
        chunked = CountingInput(b"x" * 1000)
        environ_body = call(
            application,
            body=b"x" * 1000,
            headers={"Content-Type": "application/json"},
            content_length=False,
            wsgi_input=chunked,
            input_terminated=True,
        )
        assert environ_body.finish() == 413
        assert chunked.consumed <= 101
    finally:
        application.close(WAIT)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":NaN}}', -32700),
        (b'{"jsonrpc":"2.0","id":1,"id":2,"method":"GetTask"}', -32700),
        (b"\xff\xfe{}", -32700),
        (b"[" * 200_000, -32700),
        (b"[]", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]', -32600),
        (b'"just a string"', -32600),
        (b'{"jsonrpc":"2.0","id":1}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600),
        (b'{"jsonrpc":"1.0","id":1,"method":"GetTask"}', -32600),
        (b'{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}', -32601),
        (b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":5}}', -32602),
    ],
)
def test_bad_requests_get_json_rpc_errors_never_500(
    app: A2AApplication, body: bytes, code: int
) -> None:
    response = call(
        app, body=body, headers={"Content-Type": "application/json", "A2A-Version": "1.0"}
    )
    assert response.code == 200
    assert response.headers["content-type"] == "application/json"
    envelope = response.json()
    assert envelope["error"]["code"] == code
    assert envelope["jsonrpc"] == "2.0"


def test_the_request_id_comes_back_even_on_errors(app: A2AApplication) -> None:
    response = rpc(app, "NoSuchMethod", request_id="abc")
    assert response.json()["id"] == "abc"
    malformed = call(
        app, body=b'{"jsonrpc":"2.0","id":9}', headers={"Content-Type": "application/json"}
    )
    assert malformed.json()["id"] == 9


# -- versions -------------------------------------------------------------------------------------


def test_both_revisions_on_one_url_with_the_version_header_rules(app: A2AApplication) -> None:
    v1 = rpc(app, "SendMessage", SEND_1_0).json()
    assert v1["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    v03 = rpc(app, "message/send", SEND_0_3, version=None).json()
    assert v03["result"]["kind"] == "task"
    assert v03["result"]["status"]["state"] == "completed"
    missing = rpc(app, "SendMessage", SEND_1_0, version=None).json()
    assert missing["error"]["code"] == -32009
    wrong = rpc(app, "message/send", SEND_0_3, version="1.0").json()
    assert wrong["error"]["code"] == -32009
    unknown = rpc(app, "GetTask", {"id": "x"}, version="2.0").json()
    assert unknown["error"]["code"] == -32009
    query = call(
        app,
        body=json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        ).encode(),
        headers={"Content-Type": "application/json", "QUERY_STRING": "A2A-Version=1.0"},
    ).json()
    assert query["error"]["code"] == -32001


def test_1_0_errors_carry_error_info_and_field_violations(app: A2AApplication) -> None:
    missing = rpc(app, "GetTask", {"id": "nope"}).json()["error"]
    assert missing["code"] == -32001
    assert missing["data"][0]["reason"] == "TASK_NOT_FOUND"
    assert missing["data"][0]["domain"] == "a2a-protocol.org"
    invalid = rpc(app, "GetTask", {"id": 5}).json()["error"]
    assert invalid["code"] == -32602
    violations = invalid["data"][1]["fieldViolations"]
    assert violations[0]["field"] == "id"
    legacy = rpc(app, "tasks/get", {"id": "nope"}, version=None).json()["error"]
    assert legacy["code"] == -32001
    assert "data" not in legacy


class _Broken:
    def dispatch(self, operation: Operation, params: Any, call: CallContext) -> Any:
        if operation is Operation.GET_TASK:
            raise TaskNotFound("no such task here")
        raise RuntimeError("db password is hunter2")

    def dispatch_stream(
        self, operation: Operation, params: Any, call: CallContext
    ) -> Iterator[StreamEvent]:
        yield Task(id="t", context_id="c", status=TaskStatus(state=TaskState.working))
        raise RuntimeError("db password is hunter2")


def test_handler_exceptions_are_internal_errors_without_their_text(
    caplog: pytest.LogCaptureFixture,
) -> None:
    application = A2AApplication(card(), handler=_Broken())
    with caplog.at_level(logging.ERROR):
        body = rpc(application, "CancelTask", {"id": "t"}).read()
    assert json.loads(body)["error"] == {
        "code": -32603,
        "message": "Internal error",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "INTERNAL_ERROR",
                "domain": "a2a-protocol.org",
                "metadata": {},
            }
        ],
    }
    assert b"hunter2" not in body
    assert "RuntimeError" in caplog.text
    assert (
        rpc(application, "GetTask", {"id": "t"}).json()["error"]["message"] == "no such task here"
    )


def test_an_error_mid_stream_is_one_error_event_then_the_end() -> None:
    application = A2AApplication(card(), handler=_Broken())
    response = rpc(application, "SendStreamingMessage", SEND_1_0, request_id=7)
    assert response.headers["content-type"] == "text/event-stream"
    raw = response.read().decode()
    blocks = [b for b in raw.split("\n\n") if b]
    assert len(blocks) == 2
    assert blocks[1].startswith("event: error\ndata: ")
    error = json.loads(blocks[1].split("data: ", 1)[1])
    assert error["id"] == 7
    assert error["error"]["code"] == -32603
    assert "hunter2" not in raw
    assert application.active_streams == 0


# -- streams ---------------------------------------------------------------------------


def test_stream_frames_every_event_with_the_request_id(app: A2AApplication) -> None:
    params = {"message": {"role": "ROLE_USER", "messageId": "s1", "parts": [{"text": "chunks 3"}]}}
    response = rpc(app, "SendStreamingMessage", params, request_id="req-9")
    assert response.code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    events = sse_events(response)
    assert all(e["id"] == "req-9" and e["jsonrpc"] == "2.0" for e in events)
    kinds = [next(iter(e["result"])) for e in events]
    assert kinds == [
        "task",
        "statusUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "artifactUpdate",
        "statusUpdate",
    ]
    assert app.active_streams == 0


def test_0_3_stream_marks_the_last_status_final(app: A2AApplication) -> None:
    params = {
        "message": {
            "kind": "message",
            "role": "user",
            "messageId": "s2",
            "parts": [{"kind": "text", "text": "hi"}],
        }
    }
    events = sse_events(rpc(app, "message/stream", params, version=None))
    assert [e["result"]["kind"] for e in events] == [
        "task",
        "status-update",
        "artifact-update",
        "status-update",
    ]
    assert events[-1]["result"]["final"] is True


def test_upfront_stream_errors_are_plain_json_rpc_errors(app: A2AApplication) -> None:
    response = rpc(app, "SubscribeToTask", {"id": "nope"})
    assert response.headers["content-type"] == "application/json"
    assert response.json()["error"]["code"] == -32001
    assert app.active_streams == 0


def test_idle_stream_sends_heartbeats_and_close_unsubscribes(
    app: A2AApplication, agent: EchoAgent
) -> None:
    params = {"message": {"role": "ROLE_USER", "messageId": "w1", "parts": [{"text": "wait"}]}}
    response = rpc(app, "SendStreamingMessage", params)
    first = response.next_chunk()
    assert first.startswith(b"data: ")
    task_id = json.loads(first[6:])["result"]["task"]["id"]
    assert agent.started.wait(WAIT)
    chunks = [response.next_chunk() for _ in range(3)]
    assert b": keep-alive\n\n" in chunks
    store = app.handler.store
    assert store._broker.subscriber_count(task_id) == 1
    response.close()  # what the server does when the client goes away
    assert store._broker.subscriber_count(task_id) == 0
    assert app.active_streams == 0
    agent.release.set()  # the task itself keeps running to completion
    done = rpc(app, "GetTask", {"id": task_id})
    assert done.json()["result"]["id"] == task_id


def test_stream_cap_refuses_more_streams_with_503_while_unary_calls_work(
    app: A2AApplication, agent: EchoAgent
) -> None:
    open_streams = []
    for i in range(2):
        params = {
            "message": {"role": "ROLE_USER", "messageId": f"cap{i}", "parts": [{"text": "wait"}]}
        }
        response = rpc(app, "SendStreamingMessage", params)
        response.next_chunk()
        open_streams.append(response)
    assert app.active_streams == 2
    refused = rpc(
        app,
        "SendStreamingMessage",
        {"message": {"role": "ROLE_USER", "messageId": "cap3", "parts": [{"text": "x"}]}},
    )
    assert refused.code == 503
    assert refused.headers["retry-after"].isdigit()
    refused.close()
    unary = rpc(app, "SendMessage", SEND_1_0)
    assert unary.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for response in open_streams:
        response.close()
    assert app.active_streams == 0


def test_close_ends_streams_and_refuses_new_calls(agent: EchoAgent) -> None:
    application = A2AApplication(card(), agent, heartbeat_interval=0.05)
    params = {"message": {"role": "ROLE_USER", "messageId": "z", "parts": [{"text": "wait"}]}}
    response = rpc(application, "SendStreamingMessage", params)
    response.next_chunk()
    closed = threading.Event()
    threading.Thread(target=lambda: (application.close(WAIT), closed.set())).start()
    rest = response.read()  # ends instead of waiting for the agent
    assert b"data:" not in rest or rest.count(b"data:") <= 1
    agent.release.set()
    assert closed.wait(WAIT)
    late = rpc(application, "GetTask", {"id": "x"})
    assert late.code == 503
    late.close()


# -- auth, Host and Origin -------------------------------------------------------------


def test_authentication_scopes_tasks_and_guards_the_extended_card(agent: EchoAgent) -> None:
    extended = card(extended=True)
    application = A2AApplication(
        extended,
        agent,
        authenticate=BearerTokens({"tok-a": "alice", "tok-b": "bob"}),
        extended_card=extended,
    )
    alice = {"Authorization": "Bearer tok-a"}
    bob = {"Authorization": "Bearer tok-b"}
    try:
        refused = rpc(application, "SendMessage", SEND_1_0)
        assert refused.code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        refused.close()
        assert call(application, "GET", "/.well-known/agent-card.json").finish() == 200
        task = rpc(application, "SendMessage", SEND_1_0, headers=alice).json()["result"]["task"]
        assert (
            rpc(application, "GetTask", {"id": task["id"]}, headers=alice).json()["result"]["id"]
            == task["id"]
        )
        hidden = rpc(application, "GetTask", {"id": task["id"]}, headers=bob).json()
        assert hidden["error"]["code"] == -32001
        listed = rpc(application, "ListTasks", {}, headers=bob).json()["result"]
        assert listed.get("tasks", []) == []
        got = rpc(application, "GetExtendedAgentCard", {}, headers=alice).json()["result"]
        assert got["name"] == "Test agent"
    finally:
        application.close(WAIT)


def test_extended_card_needs_credentials_even_when_anonymous_calls_are_allowed(
    agent: EchoAgent,
) -> None:
    application = A2AApplication(
        card(extended=True),
        agent,
        authenticate=BearerTokens({"t": "a"}),
        allow_anonymous=True,
        extended_card=lambda call: None,  # configured, but without a card for this caller
    )
    try:
        anonymous = rpc(application, "GetExtendedAgentCard", {})
        assert anonymous.code == 401
        anonymous.close()
        ok = rpc(application, "GetTask", {"id": "x"})
        assert ok.json()["error"]["code"] == -32001
        missing = rpc(
            application, "GetExtendedAgentCard", {}, headers={"Authorization": "Bearer t"}
        )
        assert missing.json()["error"]["code"] == -32007
    finally:
        application.close(WAIT)


def test_loopback_protection_checks_host_and_origin(agent: EchoAgent) -> None:
    application = A2AApplication(card(), agent, allowed_hosts=LOOPBACK_HOSTS)
    try:
        evil = rpc(application, "GetTask", {"id": "x"}, headers={"Host": "evil.example:8000"})
        assert evil.code == 421
        evil.close()
        for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
            ok = rpc(application, "GetTask", {"id": "x"}, headers={"Host": host})
            assert ok.code == 200, host
            ok.close()
        foreign = rpc(
            application, "GetTask", {"id": "x"}, headers={"Origin": "http://evil.example"}
        )
        assert foreign.code == 403
        foreign.close()
        same = rpc(application, "GetTask", {"id": "x"}, headers={"Origin": "http://127.0.0.1:8000"})
        assert same.code == 200
        same.close()
        card_evil = call(
            application, "GET", "/.well-known/agent-card.json", headers={"Host": "evil.example"}
        )
        assert card_evil.code == 421
        card_evil.close()
    finally:
        application.close(WAIT)


def test_a_raising_authenticator_is_a_401_not_a_traceback(
    agent: EchoAgent, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(environ: Any) -> Any:
        raise KeyError("boom")

    application = A2AApplication(card(), agent, authenticate=broken)
    try:
        response = rpc(
            application, "GetTask", {"id": "x"}, headers={"Authorization": "Bearer secret-xyz"}
        )
        assert response.code == 401
        response.close()
        assert "secret-xyz" not in caplog.text
    finally:
        application.close(WAIT)


def test_direct_reply_over_http_both_revisions(app: A2AApplication) -> None:
    v1 = rpc(
        app,
        "SendMessage",
        {"message": {"role": "ROLE_USER", "messageId": "r1", "parts": [{"text": "reply"}]}},
    )
    assert v1.json()["result"]["message"]["parts"] == [{"text": "echo: reply"}]
    v03 = rpc(
        app,
        "message/send",
        {
            "message": {
                "kind": "message",
                "role": "user",
                "messageId": "r2",
                "parts": [{"kind": "text", "text": "reply"}],
            }
        },
        version=None,
    )
    assert v03.json()["result"]["kind"] == "message"


def test_push_config_delete_answers_null_result(app: A2AApplication) -> None:
    task = rpc(app, "SendMessage", SEND_1_0).json()["result"]["task"]
    created = rpc(
        app,
        "CreateTaskPushNotificationConfig",
        {"taskId": task["id"], "url": "https://hooks.example/x"},
    ).json()["result"]
    deleted = rpc(
        app, "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": created["id"]}
    ).json()
    assert deleted == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert Message  # imported for type references in helpers


class _Raises:
    def __init__(self, error: Exception) -> None:
        self.error = error

    def dispatch(self, operation: Operation, params: Any, call: CallContext) -> Any:
        raise self.error

    def dispatch_stream(self, operation: Operation, params: Any, call: CallContext) -> Any:
        raise self.error


@pytest.mark.parametrize(
    "error",
    [
        e.TaskNotFound(),
        e.TaskNotCancelable(),
        e.PushNotificationNotSupported(),
        e.UnsupportedOperation(),
        e.ContentTypeNotSupported(),
        e.InvalidAgentResponse(),
        e.ExtendedAgentCardNotConfigured(),
        e.ExtensionSupportRequired(),
        e.VersionNotSupported(),
    ],
    ids=lambda err: type(err).__name__,
)
@pytest.mark.parametrize(("method", "version"), [("CancelTask", "1.0"), ("tasks/cancel", None)])
def test_every_a2a_error_code_reaches_the_client_on_both_revisions(
    error: e.RPCError, method: str, version: str | None
) -> None:
    application = A2AApplication(card(), handler=_Raises(error))
    got = rpc(application, method, {"id": "t"}, version=version).json()["error"]
    assert got["code"] == error.code
    assert got["message"] == error.message


def test_credentials_and_tokens_never_reach_the_logs(
    agent: EchoAgent, caplog: pytest.LogCaptureFixture
) -> None:
    application = A2AApplication(
        card(), agent, authenticate=BearerTokens({"bearer-secret-1": "alice"})
    )
    headers = {"Authorization": "Bearer bearer-secret-1", "X-Api-Key": "key-secret-2"}
    try:
        with caplog.at_level(logging.DEBUG):
            task = rpc(application, "SendMessage", SEND_1_0, headers=headers).json()["result"][
                "task"
            ]
            rpc(
                application,
                "CreateTaskPushNotificationConfig",
                {
                    "taskId": task["id"],
                    "url": "https://hooks.example/x",
                    "token": "push-secret-3",
                    "authentication": {"scheme": "Bearer", "credentials": "push-secret-4"},
                },
                headers=headers,
            ).read()
            rpc(
                application,
                "SendMessage",
                {"message": {"role": "ROLE_USER", "messageId": "b", "parts": [{"text": "boom"}]}},
                headers=headers,
            ).read()
            rpc(
                application,
                "GetTask",
                {"id": "nope"},
                headers={"Authorization": "Bearer wrong-secret-5"},
            ).read()
        for secret in (
            "bearer-secret-1",
            "key-secret-2",
            "push-secret-3",
            "push-secret-4",
            "wrong-secret-5",
        ):
            assert secret not in caplog.text
    finally:
        application.close(WAIT)


def test_extended_card_without_interfaces_is_completed_for_both_revisions(agent: EchoAgent) -> None:
    import attrs

    bare = attrs.evolve(card(extended=True), supported_interfaces=[])
    application = A2AApplication(
        bare,
        agent,
        authenticate=BearerTokens({"t": "a"}),
        extended_card=attrs.evolve(bare, name="X"),
    )
    auth = {"Authorization": "Bearer t"}
    try:
        v1 = rpc(application, "GetExtendedAgentCard", {}, headers=auth).json()["result"]
        assert v1["supportedInterfaces"][0]["url"] == "http://127.0.0.1:8000/"
        v03 = rpc(
            application, "agent/getAuthenticatedExtendedCard", {}, version=None, headers=auth
        ).json()
        assert v03["result"]["url"] == "http://127.0.0.1:8000/"
        assert v03["result"]["name"] == "X"
    finally:
        application.close(WAIT)
