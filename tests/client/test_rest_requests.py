"""What the HTTP+JSON binding puts on the wire, and how it reads odd answers.

``responses`` stands in for the agent (request shapes only); real peers are in
test_rest_interop.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl

import pytest
import responses

from a2a_sync.client import A2AClient
from a2a_sync.errors import (
    HTTPStatusError,
    InvalidParams,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
)
from a2a_sync.types import PushNotificationConfig, TaskState

from .fakes import TASK_1_0

BASE = "https://agent.test/rest"


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=True) as mock:
        yield mock


def rest(revision: str = "1.0", **kwargs: Any) -> A2AClient:
    return A2AClient(BASE + "/", revision=revision, binding="HTTP+JSON", **kwargs)  # type: ignore[arg-type]


def body_of(request: Any) -> bytes:
    assert isinstance(request.body, bytes)
    return request.body


def test_get_and_list_use_protojson_query_parameters(rsps: responses.RequestsMock) -> None:
    rsps.get(BASE + "/tasks/t%201", json=TASK_1_0)
    rsps.get(BASE + "/tasks", json={"tasks": [TASK_1_0], "nextPageToken": ""})
    client = rest()
    client.get_task("t 1", history_length=0)
    client.list_tasks(
        status=TaskState.working,
        page_size=5,
        include_artifacts=False,
        status_timestamp_after=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
    )
    get, listing = (call.request for call in rsps.calls)
    assert get.url == BASE + "/tasks/t%201?historyLength=0"
    assert get.body is None
    assert "Content-Type" not in get.headers
    assert get.headers["A2A-Version"] == "1.0"
    assert listing.url is not None
    query = dict(parse_qsl(listing.url.split("?", 1)[1]))
    assert query == {
        "status": "TASK_STATE_WORKING",
        "pageSize": "5",
        "includeArtifacts": "false",
        "statusTimestampAfter": "2026-01-02T03:04:05Z",
    }


def test_bodies_tenant_and_path_members(rsps: responses.RequestsMock) -> None:
    rsps.post(BASE + "/acme/tasks/t1:cancel", json=TASK_1_0)
    rsps.post(
        BASE + "/acme/tasks/t1/pushNotificationConfigs",
        json={"taskId": "t1", "id": "c1", "url": "https://hook.example/x"},
    )
    rsps.delete(BASE + "/acme/tasks/t1/pushNotificationConfigs/c1", body="")
    client = A2AClient(BASE, binding="HTTP+JSON", tenant="acme")
    client.cancel_task("t1", metadata={"why": "test"})
    client.create_push_config("t1", PushNotificationConfig(url="https://hook.example/x", id="c1"))
    client.delete_push_config("t1", "c1")
    cancel, create, delete = (call.request for call in rsps.calls)
    assert json.loads(body_of(cancel)) == {"metadata": {"why": "test"}}  # id is in the path
    assert json.loads(body_of(create)) == {"id": "c1", "url": "https://hook.example/x"}
    assert delete.body is None


def test_0_3_sends_proto_json_under_v1_without_a_version_header(
    rsps: responses.RequestsMock,
) -> None:
    task = {
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "done"}]}],
    }
    rsps.post(BASE + "/v1/message:send", json={"task": task})
    result = rest("0.3").send_message("hi")
    assert result.text == "done"
    request = rsps.calls[0].request
    assert "A2A-Version" not in request.headers
    body = json.loads(body_of(request))
    assert body["message"]["role"] == "ROLE_USER"
    assert body["message"]["content"] == [{"text": "hi"}]
    assert body["configuration"]["blocking"] is True
    with pytest.raises(UnsupportedOperation):
        rest("0.3").list_tasks()  # no request: 0.3 has no ListTasks


def test_ids_that_no_route_can_carry_are_refused_before_sending() -> None:
    with pytest.raises(InvalidParams, match="path segment"):
        rest().get_task("../etc")


@pytest.mark.parametrize(
    ("status", "body", "content_type", "error"),
    [
        (
            404,
            {
                "error": {
                    "code": 404,
                    "status": "NOT_FOUND",
                    "message": "gone",
                    "details": [
                        {
                            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                            "reason": "TASK_NOT_FOUND",
                        }
                    ],
                }
            },
            "application/json",
            TaskNotFound,
        ),
        (
            400,
            {"type": "https://a2a-protocol.org/errors/version-not-supported", "title": "no"},
            "application/problem+json",
            VersionNotSupported,
        ),
        (404, {"type": "TaskNotFoundError", "message": "gone"}, "application/json", TaskNotFound),
    ],
)
def test_error_bodies_become_typed_errors(
    rsps: responses.RequestsMock, status: int, body: Any, content_type: str, error: type
) -> None:
    rsps.get(BASE + "/tasks/t1", json=body, status=status, content_type=content_type)
    with pytest.raises(error):
        rest().get_task("t1")


def test_a_proxy_error_page_is_an_http_status_error(rsps: responses.RequestsMock) -> None:
    rsps.get(BASE + "/tasks/t1", body="<html>bad gateway</html>", status=502)
    with pytest.raises(HTTPStatusError) as caught:
        rest().get_task("t1")
    assert caught.value.status_code == 502


def test_a_401_refreshes_credentials_once(rsps: responses.RequestsMock) -> None:
    class Rotating:
        """A credential whose refresh() switches to a new token."""

        def __init__(self) -> None:
            self.token = "old"
            self.refreshed = 0

        def headers(self, card: Any) -> dict[str, str]:
            return {"Authorization": f"Bearer {self.token}"}

        def refresh(self) -> None:
            self.refreshed += 1
            self.token = "new"

    credentials = Rotating()
    rsps.get(BASE + "/tasks/t1", status=401)
    rsps.get(BASE + "/tasks/t1", json=TASK_1_0)
    task = rest(credentials=credentials).get_task("t1")
    assert task.id == TASK_1_0["id"]
    assert [c.request.headers["Authorization"] for c in rsps.calls] == [
        "Bearer old",
        "Bearer new",
    ]
    assert credentials.refreshed == 1
