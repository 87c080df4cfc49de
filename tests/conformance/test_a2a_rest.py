"""A2A 1.0 HTTP+JSON/REST binding (§11) and A2A 0.3 HTTP+JSON transport (0.3 §3.2.3),
black-box over HTTP: routes, query parameters, error bodies and statuses, content types,
service parameters and SSE streams.

Every test runs against a2a_sync's server (``rest_path="/rest"``) and (``peer``) the
official a2a-sdk 1.3.0 server with its REST routes under ``/rest``, running the same
script. The stored 1.0 draft (§11.3) writes the routes with a ``/v1`` prefix and errors as
RFC 9457 problem details (§11.6); the normative proto's ``google.api.http`` annotations,
the v1.0.0 tag and a2a-sdk use unprefixed 1.0 routes (``/v1`` is 0.3) and
``google.rpc.Status`` bodies. The catalogue records those as spec conflicts; the tests
check the proto's reading on both servers.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs
import pytest
import requests

from a2a_sync import A2AClient
from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.types import AgentExtension, Task, TaskState, TaskStatusUpdateEvent
from tests.peers.fixtures import AGENT_TOKEN
from tests.server.agents import card
from tests.support.servers import (
    RecordedRequest,
    ScriptedServer,
    respond_json,
    write_chunk,
    write_head,
)

from .a2a_wire import TERMINAL, V1, WAIT, user
from .agents import ConformanceAgent

requirement = pytest.mark.requirement
ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
JSON_TYPES = ("application/json", "application/a2a+json")


@pytest.fixture(scope="module")
def own_rest(agent: ConformanceAgent) -> Iterator[str]:
    """a2a_sync's server with the REST binding; its REST root (no trailing ``/``)."""
    public = attrs.evolve(card(extended=True), supported_interfaces=[])
    app = A2AApplication(
        public,
        agent,
        authenticate=BearerTokens({AGENT_TOKEN: "alice"}),
        allow_anonymous=True,
        extended_card=attrs.evolve(public, name="Test agent (extended)"),
        rest_path="/rest",
    )
    with serve_in_thread(app) as url:
        yield url + "/rest"
    agent.release.set()


@pytest.fixture(
    scope="module", params=["a2a_sync", pytest.param("a2a_sdk", marks=pytest.mark.peer)]
)
def rest(request: pytest.FixtureRequest) -> str:
    """The REST root of the server under test: a2a_sync's, or the official a2a-sdk one."""
    if request.param == "a2a_sdk":
        return str(request.getfixturevalue("a2a_sdk_rest_agent").url) + "rest"
    return str(request.getfixturevalue("own_rest"))


def call(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None, **kw: Any
) -> requests.Response:
    return requests.request(
        method, url, json=body, headers=V1 if headers is None else headers, timeout=WAIT, **kw
    )


def sent(rest: str, text: str, **params: Any) -> dict[str, Any]:
    """POST /message:send (``message`` overrides the plain text message); its Task."""
    params.setdefault("message", user(text))
    response = call("POST", f"{rest}/message:send", params)
    assert response.status_code == 200, response.text
    return dict(response.json()["task"])


def reason(response: requests.Response) -> str:
    """The ErrorInfo reason of a ``google.rpc.Status`` error body."""
    details = response.json()["error"]["details"]
    return next(str(d["reason"]) for d in details if d.get("@type") == ERROR_INFO)


def sse(response: requests.Response) -> Iterator[Any]:
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("data:"):
            yield json.loads(line[5:])


# -- §11.3 routes --------------------------------------------------------------------------


@requirement("a2a-1.0-§11.3.1-message-send-route")
@requirement("a2a-1.0-§11.4-bodies-are-proto-json")
@requirement("a2a-1.0-§11.3-route-prefix")
def test_message_send_route_answers_a_send_message_response(rest: str) -> None:
    """``POST /message:send`` (no ``/v1``: the proto's route) takes a SendMessageRequest
    and answers a SendMessageResponse in ProtoJSON (camelCase, TASK_STATE_* enums)."""
    response = call("POST", f"{rest}/message:send", {"message": user("hello")})
    assert response.status_code == 200, response.text
    body = response.json()
    assert list(body) == ["task"]
    task = body["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["contextId"]
    assert "context_id" not in task


@requirement("a2a-1.0-§11.3.2-task-routes")
def test_task_routes_get_list_and_cancel(rest: str) -> None:
    """``GET /tasks/{id}`` answers the Task, ``GET /tasks`` lists it and
    ``POST /tasks/{id}:cancel`` cancels a running task and answers it."""
    done = sent(rest, "hello")
    got = call("GET", f"{rest}/tasks/{done['id']}")
    assert got.status_code == 200
    assert got.json()["id"] == done["id"]
    listed = call("GET", f"{rest}/tasks", params={"contextId": done["contextId"]})
    assert [t["id"] for t in listed.json()["tasks"]] == [done["id"]]
    running = sent(rest, "slow 200", configuration={"returnImmediately": True})
    canceled = call("POST", f"{rest}/tasks/{running['id']}:cancel", {})
    assert canceled.status_code == 200, canceled.text
    assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"


@requirement("a2a-1.0-§11.3.2-subscribe-method")
@requirement("a2a-1.0-§11.3.2-subscribe-terminal-refused")
def test_subscribe_route_takes_post_and_get_and_refuses_finished_tasks(rest: str) -> None:
    """``/tasks/{id}:subscribe`` streams the task (first event the Task) whether called
    with POST (§11.3.2) or GET (the proto's annotation), and refuses a finished task with
    UNSUPPORTED_OPERATION before any stream."""
    task = sent(rest, "need input")
    for method in ("POST", "GET"):
        with call(method, f"{rest}/tasks/{task['id']}:subscribe", stream=True) as response:
            assert response.status_code == 200
            assert response.headers["Content-Type"].startswith("text/event-stream")
            assert next(sse(response))["task"]["id"] == task["id"]
    done = sent(rest, "hello")
    for method in ("POST", "GET"):
        refused = call(method, f"{rest}/tasks/{done['id']}:subscribe")
        assert refused.status_code == 400
        assert reason(refused) == "UNSUPPORTED_OPERATION"


@requirement("a2a-1.0-§11.3.3-push-config-routes")
def test_push_config_routes_create_get_list_and_delete(rest: str) -> None:
    task = sent(rest, "need input")
    base = f"{rest}/tasks/{task['id']}/pushNotificationConfigs"
    created = call("POST", base, {"taskId": task["id"], "url": "https://example.com/hook"})
    assert created.status_code == 200, created.text
    config_id = created.json()["id"]
    got = call("GET", f"{base}/{config_id}")
    assert got.status_code == 200
    assert got.json()["url"] == "https://example.com/hook"
    assert [c["id"] for c in call("GET", base).json()["configs"]] == [config_id]
    for _ in range(2):  # deleting twice has the same effect
        assert call("DELETE", f"{base}/{config_id}").status_code == 200
    assert call("GET", base).json().get("configs", []) == []


@requirement("a2a-1.0-§11.3.4-extended-card-route")
def test_extended_card_route_needs_the_declared_credentials(rest: str) -> None:
    anonymous = call("GET", f"{rest}/extendedAgentCard")
    assert anonymous.status_code == 401
    assert "bearer" in anonymous.headers.get("WWW-Authenticate", "").lower()
    bearer = call(
        "GET", f"{rest}/extendedAgentCard", headers={**V1, "Authorization": "Bearer test-token"}
    )
    assert bearer.status_code == 200
    assert bearer.json()["name"]


# -- §11.5 query parameters ----------------------------------------------------------------


@requirement("a2a-1.0-§11.5-query-parameters-camel-case")
@requirement("a2a-1.0-§11.5-query-values-url-encoded")
@requirement("a2a-1.0-§11.5-enum-query-values")
def test_get_and_list_take_camel_case_query_parameters(rest: str) -> None:
    """``historyLength``, ``pageSize``, ``contextId``, the boolean ``includeArtifacts``
    (lowercase ``true``) and the enum ``status`` (its proto name) travel in the query
    string by their JSON names, URL-encoded (a context id with reserved characters)."""
    context = f"ctx a&b=c/é?#{uuid.uuid4()}"
    first = sent(rest, "hello", message=user("hello", contextId=context))
    waiting = sent(rest, "need input", message=user("need input", contextId=context))
    assert first["contextId"] == waiting["contextId"] == context
    no_history = call("GET", f"{rest}/tasks/{first['id']}", params={"historyLength": 0})
    assert no_history.status_code == 200
    assert "history" not in no_history.json()
    page = call("GET", f"{rest}/tasks", params={"contextId": context, "pageSize": 1}).json()
    assert len(page["tasks"]) == 1
    assert page["nextPageToken"]
    plain = call("GET", f"{rest}/tasks", params={"contextId": context}).json()
    assert len(plain["tasks"]) == 2
    assert all("artifacts" not in t for t in plain["tasks"])
    full = call(
        "GET", f"{rest}/tasks", params={"contextId": context, "includeArtifacts": "true"}
    ).json()
    assert [bool(t.get("artifacts")) for t in full["tasks"]].count(True) == 1
    status = {"contextId": context, "status": "TASK_STATE_INPUT_REQUIRED"}
    filtered = call("GET", f"{rest}/tasks", params=status).json()
    assert [t["id"] for t in filtered["tasks"]] == [waiting["id"]]


# -- §11.6, §5.4 errors --------------------------------------------------------------------


@requirement("a2a-1.0-§11.6-error-body-format")
def test_an_error_is_a_status_body_with_an_error_info(rest: str) -> None:
    """An unknown task: HTTP 404 with ``{"error": {code, status, message, details}}``
    whose ErrorInfo names TASK_NOT_FOUND in the ``a2a-protocol.org`` domain."""
    response = call("GET", f"{rest}/tasks/no-such-task")
    assert response.status_code == 404
    assert response.headers["Content-Type"].split(";")[0] in JSON_TYPES
    error = response.json()["error"]
    assert error["code"] == 404
    assert error["status"] == "NOT_FOUND"
    assert error["message"]
    info = next(d for d in error["details"] if d["@type"] == ERROR_INFO)
    assert (info["reason"], info["domain"]) == ("TASK_NOT_FOUND", "a2a-protocol.org")


@requirement("a2a-1.0-§5.4-http-status-per-error")
@requirement("a2a-1.0-§11.6-validation-error-is-400")
def test_each_error_has_its_http_status(rest: str) -> None:
    """TaskNotCancelable 400 (v1.0.0; the draft's table says 409), UnsupportedOperation
    400, VersionNotSupported 400, TaskNotFound 404, and a Message without parts 400
    INVALID_ARGUMENT, each with its ErrorInfo reason."""
    done = sent(rest, "hello")
    cases = [
        (call("POST", f"{rest}/tasks/{done['id']}:cancel", {}), 400, "TASK_NOT_CANCELABLE"),
        (
            call("POST", f"{rest}/message:send", {"message": user("x", taskId=done["id"])}),
            400,
            "UNSUPPORTED_OPERATION",
        ),
        (
            call("GET", f"{rest}/tasks/{done['id']}", headers={"A2A-Version": "9.9"}),
            400,
            "VERSION_NOT_SUPPORTED",
        ),
        (call("POST", f"{rest}/tasks/no-such-task:cancel", {}), 404, "TASK_NOT_FOUND"),
        (
            call("POST", f"{rest}/message:send", {"message": user("x") | {"parts": []}}),
            400,
            "INVALID_PARAMS",
        ),
    ]
    assert [(r.status_code, reason(r)) for r, _, _ in cases] == [(s, n) for _, s, n in cases]
    assert cases[-1][0].json()["error"]["status"] == "INVALID_ARGUMENT"


@requirement("a2a-1.0-§11.6-capability-errors")
def test_capability_errors_have_their_http_status(agent: ConformanceAgent) -> None:
    """Over REST, an agent without streaming, push or an extended card answers
    UNSUPPORTED_OPERATION, PUSH_NOTIFICATION_NOT_SUPPORTED and UNSUPPORTED_OPERATION with
    HTTP 400; one that declares an extended card it lacks EXTENDED_AGENT_CARD_NOT_CONFIGURED
    and one with a required extension EXTENSION_SUPPORT_REQUIRED, also 400. (a2a_sync
    only: the peer's card declares every capability.)"""
    bare = attrs.evolve(card(streaming=False, push=False), supported_interfaces=[])
    declared = attrs.evolve(card(extended=True), supported_interfaces=[])
    required = attrs.evolve(
        declared,
        capabilities=attrs.evolve(
            declared.capabilities,
            extensions=[AgentExtension(uri="https://example.com/ext/must", required=True)],
        ),
    )
    found = []
    with serve_in_thread(A2AApplication(bare, agent, rest_path="/rest")) as url:
        task = sent(url + "/rest", "need input")
        found += [
            call("POST", f"{url}/rest/message:stream", {"message": user("hi")}),
            call("GET", f"{url}/rest/tasks/{task['id']}:subscribe"),
            call("GET", f"{url}/rest/tasks/{task['id']}/pushNotificationConfigs"),
            call("GET", f"{url}/rest/extendedAgentCard"),
        ]
    with serve_in_thread(A2AApplication(declared, agent, rest_path="/rest")) as url:
        found.append(call("GET", f"{url}/rest/extendedAgentCard"))
    with serve_in_thread(A2AApplication(required, agent, rest_path="/rest")) as url:
        found.append(call("POST", f"{url}/rest/message:send", {"message": user("hi")}))
    assert [(r.status_code, reason(r)) for r in found] == [
        (400, "UNSUPPORTED_OPERATION"),
        (400, "UNSUPPORTED_OPERATION"),
        (400, "PUSH_NOTIFICATION_NOT_SUPPORTED"),
        (400, "UNSUPPORTED_OPERATION"),
        (400, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        (400, "EXTENSION_SUPPORT_REQUIRED"),
    ]


# -- §11.1 content types, §11.2 service parameters -----------------------------------------


@requirement("a2a-1.0-§11.1-content-type")
def test_json_bodies_in_either_json_media_type(rest: str) -> None:
    """A request body sent as ``application/json`` or ``application/a2a+json`` is read;
    the answer is JSON in one of the two (a2a_sync: ``application/json``, as §11.1 says;
    a2a-sdk: ``application/a2a+json``, as the §6 examples show)."""
    for media_type in JSON_TYPES:
        response = requests.post(
            f"{rest}/message:send",
            data=json.dumps({"message": user("hello")}),
            headers={**V1, "Content-Type": media_type},
            timeout=WAIT,
        )
        assert response.status_code == 200, response.text
        assert response.headers["Content-Type"].split(";")[0] in JSON_TYPES


@requirement("a2a-1.0-§11.2-service-parameters-as-headers")
def test_version_travels_as_a_case_insensitive_header(rest: str) -> None:
    """``A2A-Version`` is an HTTP header, its name case-insensitive; a 1.0 route without
    it (0.3 semantics) or with an unsupported version answers VERSION_NOT_SUPPORTED."""
    body = {"message": user("hello")}
    for name in ("A2A-Version", "a2a-version", "A2A-VERSION"):
        assert call("POST", f"{rest}/message:send", body, {name: "1.0"}).status_code == 200
    for headers in ({}, {"A2A-Version": "0.5"}):
        refused = call("POST", f"{rest}/message:send", body, headers)
        assert refused.status_code == 400
        assert reason(refused) == "VERSION_NOT_SUPPORTED"


@requirement("a2a-1.0-§14.1.1-utf-8-json")
def test_json_text_is_utf_8(rest: str) -> None:
    """Non-ASCII text sent as UTF-8 JSON comes back intact in UTF-8 JSON."""
    text = "héllo ✓ 東京"
    raw = json.dumps({"message": user(text)}, ensure_ascii=False).encode("utf-8")
    headers = {**V1, "Content-Type": "application/json"}
    response = requests.post(f"{rest}/message:send", data=raw, headers=headers, timeout=WAIT)
    assert response.status_code == 200, response.text
    body = json.loads(response.content.decode("utf-8"))
    history = body["task"].get("history") or []
    echoed = [p["text"] for m in history for p in m["parts"] if "text" in p]
    artifacts = [p["text"] for a in body["task"]["artifacts"] for p in a["parts"] if "text" in p]
    assert text in echoed + artifacts


# -- §11.7 streaming -----------------------------------------------------------------------


@requirement("a2a-1.0-§11.7-sse-of-bare-stream-responses")
def test_message_stream_is_sse_of_bare_stream_responses(rest: str) -> None:
    """``POST /message:stream``: ``text/event-stream`` whose ``data`` are StreamResponse
    objects with no JSON-RPC envelope: the Task first, updates, then the stream ends at
    the terminal state."""
    with call("POST", f"{rest}/message:stream", {"message": user("chunks 3")}, stream=True) as r:
        assert r.status_code == 200
        assert r.headers["Content-Type"].startswith("text/event-stream")
        events = list(sse(r))
    assert all("jsonrpc" not in e and len(e) == 1 for e in events)
    assert next(iter(events[0])) == "task"
    assert {next(iter(e)) for e in events[1:]} <= {"statusUpdate", "artifactUpdate"}
    assert events[-1]["statusUpdate"]["status"]["state"] in TERMINAL


# -- A2A 0.3 HTTP+JSON ---------------------------------------------------------------------


@requirement("a2a-0.3-§3.2.3-rest-url-patterns")
@requirement("a2a-0.3-§3.2.3-rest-status-codes")
@requirement("a2a-0.3-§3.2.3-rest-json-content-type")
def test_0_3_routes_under_v1(rest: str) -> None:
    """0.3's routes: ``POST /v1/message:send`` with the 0.3 proto JSON answers
    ``{"task": ...}`` as ``application/json`` and ``GET /v1/tasks/{id}`` reads it back; an
    unknown task is 404."""
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "content": [{"text": "hello"}]}
    response = requests.post(f"{rest}/v1/message:send", json={"message": message}, timeout=WAIT)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].split(";")[0] == "application/json"
    task = response.json()["task"]
    assert requests.get(f"{rest}/v1/tasks/{task['id']}", timeout=WAIT).json()["id"] == task["id"]
    assert requests.get(f"{rest}/v1/tasks/no-such-task", timeout=WAIT).status_code == 404


@requirement("a2a-0.3-§3.3.3-rest-streaming-is-sse")
def test_0_3_message_stream_is_sse(rest: str) -> None:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "content": [{"text": "chunks 2"}],
    }
    with requests.post(
        f"{rest}/v1/message:stream", json={"message": message}, stream=True, timeout=WAIT
    ) as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = list(sse(response))
    assert "task" in events[0]
    assert events[-1]["statusUpdate"]["final"] is True


# -- the client side of §11 ------------------------------------------------------------------

TASK10 = {
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.678Z"},
}


class RestRecorder:
    """A scripted HTTP+JSON agent recording every request (no a2a_sync server code)."""

    def __init__(self) -> None:
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        path = request.path.split("?", 1)[0]
        if path.endswith("agent-card.json"):
            interface = {
                "url": self.url + "/api",
                "protocolBinding": "HTTP+JSON",
                "protocolVersion": "1.0",
            }
            respond_json(
                sock,
                {
                    "name": "rest recorder",
                    "description": "records requests",
                    "version": "1.0.0",
                    "supportedInterfaces": [interface],
                    "capabilities": {"streaming": True},
                    "defaultInputModes": ["text/plain"],
                    "defaultOutputModes": ["text/plain"],
                    "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["s"]}],
                },
            )
        elif path == "/api/message:stream":
            write_head(
                sock, 200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]
            )
            working = {**TASK10, "status": {"state": "TASK_STATE_WORKING"}}
            done = {"taskId": "t-1", "contextId": "c-1", "status": TASK10["status"]}
            for event in ({"task": working}, {"statusUpdate": done}):
                write_chunk(sock, f"data: {json.dumps(event)}\n\n".encode())
            write_chunk(sock, b"")
        elif path == "/api/message:send":
            respond_json(sock, {"task": TASK10})
        elif path == "/api/tasks":
            respond_json(sock, {"tasks": [TASK10], "nextPageToken": "", "pageSize": 1})
        else:
            respond_json(sock, TASK10)

    def since(self, count: int) -> list[RecordedRequest]:
        return [r for r in self.server.requests[count:] if "agent-card" not in r.path]


@pytest.fixture(scope="module")
def recorder() -> Iterator[RestRecorder]:
    recording = RestRecorder()
    with recording.server:
        yield recording


@requirement("a2a-1.0-§11.3-client-rest-routes")
@requirement("a2a-1.0-§11.2-client-service-parameters-as-headers")
@requirement("a2a-1.0-§11.1-client-json-bodies")
def test_the_rest_client_uses_the_routes_and_headers(recorder: RestRecorder) -> None:
    """a2a_sync's client on an HTTP+JSON interface: send, get and cancel go to the
    proto's routes under the interface URL, every request carries ``A2A-Version: 1.0``
    as a header (never in the query or body), and bodies are JSON."""
    before = len(recorder.server.requests)
    with A2AClient.from_url(recorder.url) as client:
        client.send_message("hello")
        client.get_task("t-1")
        client.cancel_task("t-1")
    made = recorder.since(before)
    assert [(r.method, r.path.split("?")[0]) for r in made] == [
        ("POST", "/api/message:send"),
        ("GET", "/api/tasks/t-1"),
        ("POST", "/api/tasks/t-1:cancel"),
    ]
    for request in made:
        assert request.headers["A2A-Version"] == "1.0"
        assert "A2A-Version" not in request.path
    sent_body = made[0]
    assert sent_body.headers["Content-Type"].split(";")[0] in JSON_TYPES
    assert "A2A-Version" not in sent_body.body.decode()
    assert sent_body.json()["message"]["parts"] == [{"text": "hello"}]


@requirement("a2a-1.0-§11.5-client-query-parameters")
def test_the_rest_client_puts_get_parameters_in_the_query(recorder: RestRecorder) -> None:
    """GET parameters travel as camelCase query parameters, URL-encoded, the enum by its
    proto name."""
    before = len(recorder.server.requests)
    with A2AClient.from_url(recorder.url) as client:
        client.get_task("t-1", history_length=3)
        client.list_tasks(context_id="c 1&x=é", page_size=2, status=TaskState.working)
    made = recorder.since(before)
    queries = [dict(parse_qsl(urlsplit(r.path).query)) for r in made]
    assert queries[0] == {"historyLength": "3"}
    assert queries[1] == {
        "contextId": "c 1&x=é",
        "pageSize": "2",
        "status": "TASK_STATE_WORKING",
    }
    assert " " not in made[1].path
    assert "&x=" not in made[1].path


@requirement("a2a-1.0-§11.7-client-reads-bare-sse")
def test_the_rest_client_reads_a_stream_of_bare_stream_responses(
    recorder: RestRecorder,
) -> None:
    """``POST /message:stream`` answered with SSE of bare StreamResponse objects: the
    client yields the Task, then the status update, and ends when the stream closes."""
    with A2AClient.from_url(recorder.url) as client, client.stream_message("hi") as events:
        seen = list(events)
    assert isinstance(seen[0], Task)
    assert isinstance(seen[-1], TaskStatusUpdateEvent)
    assert seen[-1].status.state is TaskState.completed
