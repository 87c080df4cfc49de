"""The HTTP+JSON binding's edge: bad input on every route gets a typed JSON error and
stores nothing; auth, Origin, limits, version rules and shutdown are the app's.

Raw requests go through ``http.client`` to the app on waitress (loopback), so the path
reaches the binding exactly as sent (encoded slashes included, via ``REQUEST_URI``).
Whether something was stored is asked of the task store itself.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest

from a2a_sync.client import A2AClient, BearerToken
from a2a_sync.errors import HTTPStatusError, InvalidParams, TaskNotFound, UnsupportedOperation
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.auth import ANONYMOUS, BearerTokens
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.types import ListTasksParams, Task, TaskState, TaskStatus
from tests.server.agents import EchoAgent, card

V1 = {"A2A-Version": "1.0"}
JSON = {"Content-Type": "application/json", **V1}
SEND = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}


@attrs.frozen
class Served:
    app: A2AApplication
    url: str

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], Any]:
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            raw = response.read()
            heads = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
        return response.status, heads, json.loads(raw) if raw else None

    def stored(self) -> list[Task]:
        result = self.app.handler.store.list_tasks(ListTasksParams(), principal=ANONYMOUS.name)
        tasks: list[Task] = result.tasks
        return tasks


def reason(body: Any) -> str | None:
    for detail in body["error"].get("details", []):
        if detail["@type"].endswith("ErrorInfo"):
            return str(detail["reason"])
    return None


@pytest.fixture
def served() -> Iterator[Served]:
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        EchoAgent(),
        rest_path="/rest",
        max_body_bytes=4096,
    )
    with serve_in_thread(app) as url:
        yield Served(app, url)


def test_the_card_lists_the_rest_interface(served: Served) -> None:
    status, _, body = served.request("GET", "/.well-known/agent-card.json")
    assert status == 200
    bindings = [(i["protocolBinding"], i["protocolVersion"]) for i in body["supportedInterfaces"]]
    assert ("HTTP+JSON", "1.0") in bindings
    assert ("HTTP+JSON", "0.3") in bindings
    rest = next(i for i in body["supportedInterfaces"] if i["protocolBinding"] == "HTTP+JSON")
    assert rest["url"] == served.url + "/rest"
    # the merged 0.3 fields name it too (0.3 clients read additionalInterfaces)
    assert {"url": served.url + "/rest", "transport": "HTTP+JSON"} in body["additionalInterfaces"]


def test_our_client_uses_rest_when_preferred(served: Served) -> None:
    with A2AClient.from_url(served.url, bindings=["HTTP+JSON"]) as client:
        assert client.binding == "HTTP+JSON"
        task = client.send_message("over rest")
        assert isinstance(task, Task)
        assert task.text == "echo: over rest"
        with client.stream_message("chunks 2") as stream:
            assert stream.get_final_task().text == "c0;c1;"
        with pytest.raises(TaskNotFound):
            client.get_task("no-such-task")
        with pytest.raises(InvalidParams):
            client.list_tasks(page_size=0)


# -- bad input: typed errors, nothing stored --------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", "PARSE_ERROR"),
        (b'{"message": 1e999999, "message": 2}', "PARSE_ERROR"),  # duplicate member
        (b'{"message": {"text": "\xff\xfe"}}', "PARSE_ERROR"),  # invalid UTF-8
        (b"[1, 2]", "INVALID_REQUEST"),
        (b'{"message": {"messageId": 5, "role": "ROLE_USER", "parts": []}}', "INVALID_PARAMS"),
        (b'{"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}',
         "INVALID_PARAMS"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("path", ["/rest/message:send", "/rest/message:stream"])
def test_bad_bodies_are_400_with_a_reason(
    served: Served, path: str, body: bytes, expected: str
) -> None:
    status, heads, answer = served.request("POST", path, body, JSON)
    assert status == 400
    assert heads["content-type"] == "application/json"
    assert answer["error"]["code"] == 400
    assert reason(answer) == expected
    assert served.stored() == []


@pytest.mark.parametrize(
    "path",
    [
        "/rest/tasks/{id}:cancel",
        "/rest/tasks/{id}:subscribe",
        "/rest/tasks/{id}/pushNotificationConfigs",
        "/rest/v1/message:send",
        "/rest/v1/tasks/{id}:cancel",
        "/rest/v1/tasks/{id}/pushNotificationConfigs",
    ],
)
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"{not json", "PARSE_ERROR"),
        (b"\xff\xfe{}", "PARSE_ERROR"),
        (b'"just a string"', "INVALID_REQUEST"),
    ],
)
def test_every_body_route_refuses_bad_json_and_changes_nothing(
    served: Served, path: str, body: bytes, expected: str
) -> None:
    task = A2AClient(served.url + "/rest", binding="HTTP+JSON").send_message("keep me")
    assert isinstance(task, Task)
    headers = {"Content-Type": "application/json"} if "/v1/" in path else JSON
    status, _, answer = served.request("POST", path.format(id=task.id), body, headers)
    assert (status, reason(answer)) == (400, expected)
    stored = served.stored()
    assert [(t.id, t.status.state) for t in stored] == [(task.id, TaskState.completed)]
    assert served.app.handler.store.list_push_configs(task.id) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b'{"url": 5}', "url"),
        (b'{"url": "https://hooks.example/x", "authentication": "basic"}', "authentication"),
        (b'{"url": "https://hooks.example/x", "token": ["a"]}', "token"),
    ],
)
def test_push_config_with_wrong_types_is_invalid_params(
    served: Served, body: bytes, field: str
) -> None:
    task = A2AClient(served.url + "/rest", binding="HTTP+JSON").send_message("keep me")
    assert isinstance(task, Task)
    path = f"/rest/tasks/{task.id}/pushNotificationConfigs"
    status, _, answer = served.request("POST", path, body, JSON)
    assert (status, reason(answer)) == (400, "INVALID_PARAMS")
    assert field in json.dumps(answer)
    assert served.app.handler.store.list_push_configs(task.id) == []


@pytest.mark.parametrize(
    "query",
    [
        "pageSize=x",
        "pageSize=1.5",
        "historyLength=-",
        "includeArtifacts=yes",
        "status=TASK_STATE_NOPE",
        "statusTimestampAfter=yesterday",
        "contextId=%ff",
    ],
)
def test_wrong_query_parameters_are_invalid_params(served: Served, query: str) -> None:
    status, _, answer = served.request("GET", "/rest/tasks?" + query, headers=V1)
    assert status == 400
    assert reason(answer) == "INVALID_PARAMS"


@pytest.mark.parametrize(
    "path",
    [
        "/rest/tasks/..%2F..%2Fetc",
        "/rest/tasks/a%2Fb",
        "/rest/tasks/a%2Fb:cancel",
        "/rest/tasks/%2e%2e",
        "/rest/tasks/../tasks",
        "/rest/tasks/x/pushNotificationConfigs/a%2F..",
    ],
)
def test_path_traversal_and_encoded_slashes_never_reach_a_task(served: Served, path: str) -> None:
    task = A2AClient(served.url + "/rest", binding="HTTP+JSON").send_message("keep me")
    assert isinstance(task, Task)
    method = "POST" if path.endswith(":cancel") else "GET"
    status, heads, answer = served.request(method, path, b"{}" if method == "POST" else None, JSON)
    assert status in (400, 404)
    assert heads["content-type"] == "application/json"
    assert answer["error"]["code"] == status
    assert [t.status.state for t in served.stored()] == [TaskState.completed]


def test_invalid_utf8_in_the_path_is_400(served: Served) -> None:
    status, _, answer = served.request("GET", "/rest/tasks/%ff%fe", headers=V1)
    assert status == 400
    assert answer["error"]["status"] == "INVALID_ARGUMENT"


def test_unknown_tenant_is_404_and_stores_nothing(served: Served) -> None:
    body = json.dumps(SEND).encode()
    status, _, answer = served.request("POST", "/rest/evil/message:send", body, JSON)
    assert (status, answer["error"]["message"]) == (404, "unknown tenant")
    assert served.stored() == []


def test_huge_body_is_413_and_stores_nothing(served: Served) -> None:
    big = json.dumps({**SEND, "metadata": {"pad": "x" * 10_000}}).encode()
    status, _, answer = served.request("POST", "/rest/message:send", big, JSON)
    assert (status, answer["error"]["code"]) == (413, 413)
    assert served.stored() == []


def test_unknown_route_wrong_method_and_content_type(served: Served) -> None:
    status, _, answer = served.request("GET", "/rest/nothing/here", headers=V1)
    assert (status, answer["error"]["status"]) == (404, "NOT_FOUND")
    status, heads, answer = served.request("DELETE", "/rest/tasks/abc", headers=V1)
    assert status == 405
    assert heads["allow"] == "GET"
    assert answer["error"]["code"] == 405
    headers = {**V1, "Content-Type": "text/plain"}
    status, _, answer = served.request("POST", "/rest/message:send", b"hi", headers)
    assert (status, answer["error"]["code"]) == (415, 415)
    assert served.stored() == []


def test_0_3_routes_speak_the_0_3_proto_json(served: Served) -> None:
    """``/v1/...``: a 0.3 proto body in (``request``/``content``, snake_case as a2a-sdk's 0.3
    client sends it), a 0.3 proto answer out; errors also carry the 0.3 ``type``."""
    body = {
        "request": {
            "message_id": "m-03",
            "role": "ROLE_USER",
            "content": [{"text": "hi"}],
        },
        "configuration": {"blocking": True},
    }
    headers = {"Content-Type": "application/json"}
    status, _, answer = served.request(
        "POST", "/rest/v1/message:send", json.dumps(body).encode(), headers
    )
    assert status == 200
    task = answer["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "echo: hi"}]
    assert task["history"][0]["content"] == [{"text": "hi"}]
    assert task["history"][0]["role"] == "ROLE_USER"
    status, _, answer = served.request("GET", f"/rest/v1/tasks/{task['id']}", headers=headers)
    assert (status, answer["id"]) == (200, task["id"])
    status, _, answer = served.request("GET", "/rest/v1/tasks/nope", headers=headers)
    assert status == 404
    assert answer["type"] == "TaskNotFoundError"
    assert reason(answer) == "TASK_NOT_FOUND"
    status, _, _ = served.request("GET", "/rest/v1/tasks", headers=headers)
    assert status == 404  # 0.3 has no ListTasks
    status, _, answer = served.request(
        "POST", "/rest/v1/message:send", json.dumps(body).encode(), JSON
    )
    assert (status, reason(answer)) == (400, "VERSION_NOT_SUPPORTED")  # 1.0 header on 0.3


def test_a_missing_version_header_is_version_not_supported(served: Served) -> None:
    body = json.dumps(SEND).encode()
    headers = {"Content-Type": "application/json"}
    status, _, answer = served.request("POST", "/rest/message:send", body, headers)
    assert (status, reason(answer)) == (400, "VERSION_NOT_SUPPORTED")
    status, _, _ = served.request("POST", "/rest/message:send?A2A-Version=1.0", body, headers)
    assert status == 200


def test_foreign_origin_is_403(served: Served) -> None:
    headers = {**V1, "Origin": "http://evil.example"}
    status, _, answer = served.request("GET", "/rest/tasks", headers=headers)
    assert (status, answer["error"]["code"]) == (403, 403)


def test_closing_app_answers_503_with_retry_after(served: Served) -> None:
    served.app.close(grace=1.0)
    status, heads, answer = served.request("GET", "/rest/tasks", headers=V1)
    assert (status, answer["error"]["code"]) == (503, 503)
    assert heads["retry-after"]


# -- auth and the extended card -------------------------------------------------------------------


@pytest.fixture
def guarded() -> Iterator[Served]:
    extended = attrs.evolve(card(extended=True), name="Extended agent", supported_interfaces=[])
    app = A2AApplication(
        attrs.evolve(card(extended=True), supported_interfaces=[]),
        EchoAgent(),
        rest_path="/rest",
        authenticate=BearerTokens({"s3cret": "alice"}),
        extended_card=extended,
    )
    with serve_in_thread(app) as url:
        yield Served(app, url)


def test_authentication_applies_to_rest(guarded: Served) -> None:
    status, heads, answer = guarded.request("GET", "/rest/tasks", headers=V1)
    assert (status, answer["error"]["status"]) == (401, "UNAUTHENTICATED")
    assert heads["www-authenticate"] == "Bearer"
    with A2AClient.from_url(guarded.url, bindings=["HTTP+JSON"]) as anonymous:
        with pytest.raises(HTTPStatusError) as caught:
            anonymous.get_extended_card()
        assert caught.value.status_code == 401
    with A2AClient.from_url(
        guarded.url, bindings=["HTTP+JSON"], credentials=BearerToken("s3cret")
    ) as alice:
        assert alice.get_extended_card().name == "Extended agent"
        assert alice.list_tasks().tasks == []


# -- streams: cap, heartbeats ---------------------------------------------------------------------


@pytest.fixture
def waiting() -> Iterator[tuple[Served, EchoAgent]]:
    agent = EchoAgent()
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        agent,
        rest_path="/rest",
        max_streams=1,
        heartbeat_interval=0.05,
    )
    with serve_in_thread(app) as url:
        yield Served(app, url), agent
        agent.release.set()


def test_rest_streams_count_against_the_apps_cap(waiting: tuple[Served, EchoAgent]) -> None:
    served, agent = waiting
    client = A2AClient(served.url + "/rest", binding="HTTP+JSON")
    with client.stream_message("wait") as stream:
        assert isinstance(next(iter(stream)), Task)
        assert agent.started.wait(5.0)
        body = json.dumps(SEND).encode()
        status, heads, _ = served.request("POST", "/rest/message:stream", body, JSON)
        assert status == 503
        assert heads["retry-after"]
        agent.release.set()
        assert stream.get_final_task().state is TaskState.completed


def test_rest_streams_carry_heartbeats_and_bare_events(waiting: tuple[Served, EchoAgent]) -> None:
    served, agent = waiting
    parts = urlsplit(served.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    wait = {**SEND, "message": {**SEND["message"], "parts": [{"text": "wait"}]}}
    try:
        conn.request("POST", "/rest/message:stream", json.dumps(wait).encode(), JSON)
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"
        seen = b""
        while b": keep-alive" not in seen:  # bounded by the socket timeout
            line = response.readline()
            assert line, "the stream ended before a heartbeat"
            seen += line
        agent.release.set()
        seen += response.read()
    finally:
        conn.close()
    events = [json.loads(line[6:]) for line in seen.splitlines() if line.startswith(b"data: ")]
    assert "task" in events[0]
    assert "jsonrpc" not in events[0]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_get_subscribe_is_subscribe_not_get_task(waiting: tuple[Served, EchoAgent]) -> None:
    """The proto's ``GET /tasks/{id}:subscribe`` must not be read as GetTask of
    ``{id}:subscribe`` (both templates match the path's first segment)."""
    served, agent = waiting
    started = A2AClient(served.url + "/rest", binding="HTTP+JSON").send_message(
        "wait", return_immediately=True
    )
    assert isinstance(started, Task)
    assert agent.started.wait(5.0)
    parts = urlsplit(served.url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.request("GET", f"/rest/tasks/{started.id}:subscribe", headers=V1)
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"
        first = b""
        while not first.startswith(b"data: "):  # bounded by the socket timeout
            first = response.readline()
            assert first, "the stream ended before its first event"
        assert json.loads(first[6:])["task"]["id"] == started.id
        agent.release.set()
        response.read()
    finally:
        conn.close()


def test_rest_under_a_mount_prefix_keeps_its_routes_and_card() -> None:
    """Mounted under a prefix (what Flask's DispatcherMiddleware or Django do: SCRIPT_NAME
    set, PATH_INFO the rest, REQUEST_URI the whole path), REST routes, encoded-path
    checks and the card's REST URL all follow the prefix."""
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]), EchoAgent(), rest_path="/rest"
    )

    def mounted(environ: dict[str, Any], start_response: Any) -> Any:
        path = environ.get("PATH_INFO", "")
        if not path.startswith("/agents/echo"):
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"outside the mount"]
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + "/agents/echo"
        environ["PATH_INFO"] = path[len("/agents/echo") :]
        return app(environ, start_response)

    with serve_in_thread(mounted) as url:
        base = url + "/agents/echo"
        with A2AClient.from_url(base, bindings=["HTTP+JSON"]) as client:
            assert client.url == base + "/rest"
            task = client.send_message("mounted")
            assert isinstance(task, Task)
            assert client.get_task(task.id).text == "echo: mounted"
        served = Served(app, url)
        status, _, answer = served.request("GET", "/agents/echo/rest/tasks/a%2Fb", headers=V1)
        assert (status, answer["error"]["code"]) == (404, 404)
    app.close(1.0)


class FailingMidStream:
    """A handler whose stream sends the task, then fails with a protocol error."""

    def dispatch(self, operation: Any, params: Any, call: Any) -> Any:
        raise UnsupportedOperation("no unary calls here")

    def dispatch_stream(self, operation: Any, params: Any, call: Any) -> Iterator[Any]:
        yield Task(id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.working))
        raise UnsupportedOperation("the agent gave up")


@pytest.mark.parametrize(
    ("binding", "revision"), [("HTTP+JSON", "1.0"), ("HTTP+JSON", "0.3"), ("JSONRPC", "1.0")]
)
def test_an_error_mid_stream_is_one_typed_error_event(binding: str, revision: str) -> None:
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]), handler=FailingMidStream(), rest_path="/rest"
    )
    with serve_in_thread(app) as url:
        client = A2AClient.from_url(url, bindings=[binding], revisions=(revision,))  # type: ignore[arg-type]
        with client.stream_message("hi") as stream:
            first = next(iter(stream))
            assert isinstance(first, Task)
            with pytest.raises(UnsupportedOperation, match="gave up"):
                next(iter(stream))
        if binding == "HTTP+JSON":  # the raw frame: event: error, data: a Status
            parts = urlsplit(url)
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
            path = "/rest/message:stream" if revision == "1.0" else "/rest/v1/message:stream"
            headers = JSON if revision == "1.0" else {"Content-Type": "application/json"}
            try:
                conn.request("POST", path, json.dumps(SEND).encode(), headers)
                raw = conn.getresponse().read()
            finally:
                conn.close()
            assert b"event: error\ndata: " in raw
            error = json.loads(raw.split(b"event: error\ndata: ")[1].split(b"\n")[0])
            assert reason(error) == "UNSUPPORTED_OPERATION"
    app.close(1.0)
