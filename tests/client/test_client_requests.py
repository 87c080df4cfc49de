"""What A2AClient puts on the wire: method names, params, headers, per revision.

``responses`` stands in for the agent (tests/client/fakes.py); the behaviour of a real
agent is covered by test_client_interop.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
import responses

from a2a_sync.client import A2AClient
from a2a_sync.types import (
    AuthenticationInfo,
    Message,
    PushNotificationConfig,
    Task,
    TaskState,
    TaskStatus,
)

from .fakes import RPC_URL, TASK_0_3, TASK_1_0, FakeAgent, card_json

PUSH_1_0 = {"taskId": "t1", "id": "c1", "url": "https://hook.example/x"}
PUSH_0_3 = {"taskId": "t1", "pushNotificationConfig": {"id": "c1", "url": "https://hook.example/x"}}
CARD_1_0 = card_json((RPC_URL, "JSONRPC", "1.0"), name="Extended")


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


@pytest.fixture
def agent(rsps: responses.RequestsMock) -> FakeAgent:
    return FakeAgent(rsps)


def client_for(agent: FakeAgent, revision: str, **kwargs: Any) -> A2AClient:
    return A2AClient(agent.rpc_url, revision=revision, **kwargs)  # type: ignore[arg-type]


# -- method names and params per operation -------------------------------------------------

Op = Callable[[A2AClient], Any]
OPERATIONS: list[tuple[str, Op, str, Any, Any, str, Any, Any]] = [
    # id, call, 1.0 method, 1.0 params, 1.0 result, 0.3 method, 0.3 params, 0.3 result
    (
        "get_task",
        lambda c: c.get_task("t1", history_length=2),
        "GetTask",
        {"id": "t1", "historyLength": 2},
        TASK_1_0,
        "tasks/get",
        {"id": "t1", "historyLength": 2},
        TASK_0_3,
    ),
    (
        "cancel_task",
        lambda c: c.cancel_task("t1", metadata={"why": "test"}),
        "CancelTask",
        {"id": "t1", "metadata": {"why": "test"}},
        TASK_1_0,
        "tasks/cancel",
        {"id": "t1", "metadata": {"why": "test"}},
        TASK_0_3,
    ),
    (
        "create_push_config",
        lambda c: c.create_push_config(
            "t1",
            PushNotificationConfig(
                url="https://hook.example/x",
                id="c1",
                token="tok",
                authentication=AuthenticationInfo(scheme="Bearer", credentials="cred"),
            ),
        ),
        "CreateTaskPushNotificationConfig",
        {
            "taskId": "t1",
            "id": "c1",
            "url": "https://hook.example/x",
            "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "cred"},
        },
        PUSH_1_0,
        "tasks/pushNotificationConfig/set",
        {
            "taskId": "t1",
            "pushNotificationConfig": {
                "id": "c1",
                "url": "https://hook.example/x",
                "token": "tok",
                "authentication": {"schemes": ["Bearer"], "credentials": "cred"},
            },
        },
        PUSH_0_3,
    ),
    (
        "get_push_config",
        lambda c: c.get_push_config("t1", "c1"),
        "GetTaskPushNotificationConfig",
        {"taskId": "t1", "id": "c1"},
        PUSH_1_0,
        "tasks/pushNotificationConfig/get",
        {"id": "t1", "pushNotificationConfigId": "c1"},
        PUSH_0_3,
    ),
    (
        "list_push_configs",
        lambda c: c.list_push_configs("t1"),
        "ListTaskPushNotificationConfigs",
        {"taskId": "t1"},
        {"configs": [PUSH_1_0]},
        "tasks/pushNotificationConfig/list",
        {"id": "t1"},
        [PUSH_0_3],
    ),
    (
        "delete_push_config",
        lambda c: c.delete_push_config("t1", "c1"),
        "DeleteTaskPushNotificationConfig",
        {"taskId": "t1", "id": "c1"},
        {},
        "tasks/pushNotificationConfig/delete",
        {"id": "t1", "pushNotificationConfigId": "c1"},
        None,
    ),
    (
        "get_extended_card",
        lambda c: c.get_extended_card(),
        "GetExtendedAgentCard",
        {},
        CARD_1_0,
        "agent/getAuthenticatedExtendedCard",
        {},
        CARD_1_0,
    ),
]


@pytest.mark.parametrize("operation", OPERATIONS, ids=[op[0] for op in OPERATIONS])
@pytest.mark.parametrize("revision", ["1.0", "0.3"])
def test_operation_method_and_params(
    agent: FakeAgent, revision: str, operation: tuple[str, Op, str, Any, Any, str, Any, Any]
) -> None:
    _, call, *wire = operation
    method, params, result = wire[:3] if revision == "1.0" else wire[3:]
    agent.results[method] = result
    with client_for(agent, revision) as client:
        call(client)
    (sent,) = agent.calls
    assert sent.method == method
    assert sent.params == params
    assert sent.body["jsonrpc"] == "2.0"
    assert isinstance(sent.id, int)


def test_send_message_1_0_shape(agent: FakeAgent) -> None:
    agent.results["SendMessage"] = {"task": TASK_1_0}
    message = Message.user("hi", message_id="m1")
    with client_for(agent, "1.0") as client:
        task = client.send_message(message)
        client.send_message(
            "again",
            context_id="ctx",
            return_immediately=True,
            history_length=0,
            accepted_output_modes=["text/plain"],
            metadata={"k": "v"},
        )
    assert isinstance(task, Task)
    assert task.state is TaskState.completed
    first, second = agent.calls
    assert first.method == "SendMessage"
    assert first.params == {
        "message": {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": "m1"}
    }
    assert second.params["message"]["contextId"] == "ctx"
    assert second.params["configuration"] == {
        "acceptedOutputModes": ["text/plain"],
        "historyLength": 0,
        "returnImmediately": True,
    }
    assert second.params["metadata"] == {"k": "v"}
    assert second.id > first.id


def test_send_message_0_3_shape_states_blocking(agent: FakeAgent) -> None:
    agent.results["message/send"] = TASK_0_3
    with client_for(agent, "0.3") as client:
        client.send_message(Message.user("hi", message_id="m1"))
        client.send_message("later", return_immediately=True)
    first, second = agent.calls
    assert first.method == "message/send"
    assert first.params == {
        "message": {
            "kind": "message",
            "role": "user",
            "parts": [{"kind": "text", "text": "hi"}],
            "messageId": "m1",
        },
        "configuration": {"blocking": True},
    }
    assert second.params["configuration"] == {"blocking": False}


@pytest.mark.parametrize(("revision", "result"), [("1.0", {"task": TASK_1_0}), ("0.3", TASK_0_3)])
def test_reply_continues_the_task_and_its_context(
    agent: FakeAgent, revision: str, result: Any
) -> None:
    agent.results["SendMessage" if revision == "1.0" else "message/send"] = result
    task = Task(id="t9", context_id="ctx9", status=TaskStatus(state=TaskState.input_required))
    with client_for(agent, revision) as client:
        client.reply(task, "Paris")
    message = agent.calls[0].params["message"]
    assert (message["taskId"], message["contextId"]) == ("t9", "ctx9")
    assert message["parts"][0]["text"] == "Paris"


def test_list_tasks_sends_filters_in_1_0(agent: FakeAgent) -> None:
    agent.results["ListTasks"] = {"tasks": [TASK_1_0], "nextPageToken": "", "totalSize": 1}
    with client_for(agent, "1.0") as client:
        page = client.list_tasks(
            context_id="ctx",
            status=TaskState.working,
            page_size=10,
            page_token="p2",
            history_length=1,
            status_timestamp_after=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
            include_artifacts=True,
        )
    assert [t.id for t in page.tasks] == ["t1"]
    assert agent.calls[0].method == "ListTasks"
    assert agent.calls[0].params == {
        "contextId": "ctx",
        "status": "TASK_STATE_WORKING",
        "pageSize": 10,
        "pageToken": "p2",
        "historyLength": 1,
        "statusTimestampAfter": "2026-01-02T03:04:05Z",
        "includeArtifacts": True,
    }


def test_iter_tasks_follows_page_tokens(agent: FakeAgent) -> None:
    pages = {
        None: {"tasks": [TASK_1_0], "nextPageToken": "p2"},
        "p2": {"tasks": [{**TASK_1_0, "id": "t2"}], "nextPageToken": ""},
    }
    agent.results["ListTasks"] = lambda call: pages[call.params.get("pageToken")]
    with client_for(agent, "1.0") as client:
        assert [t.id for t in client.iter_tasks(page_size=1)] == ["t1", "t2"]
    assert [c.params.get("pageToken") for c in agent.calls] == [None, "p2"]


# -- streaming requests ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "method", "item"),
    [("1.0", "SendStreamingMessage", {"task": TASK_1_0}), ("0.3", "message/stream", TASK_0_3)],
)
def test_stream_message_asks_for_an_event_stream(
    agent: FakeAgent, revision: str, method: str, item: Any
) -> None:
    agent.events[method] = [item]
    with client_for(agent, revision) as client, client.stream_message("go") as stream:
        assert stream.get_final_task().id == "t1"
    (sent,) = agent.calls
    assert sent.method == method
    assert sent.params["message"]["parts"][0]["text"] == "go"
    assert sent.headers["Accept"] == "text/event-stream"
    assert sent.headers["Accept-Encoding"] == "identity"
    assert "configuration" not in sent.params or sent.params["configuration"] == {"blocking": True}


@pytest.mark.parametrize(
    ("revision", "method", "item"),
    [("1.0", "SubscribeToTask", {"task": TASK_1_0}), ("0.3", "tasks/resubscribe", TASK_0_3)],
)
def test_subscribe_names_the_task(agent: FakeAgent, revision: str, method: str, item: Any) -> None:
    agent.events[method] = [item]
    with client_for(agent, revision) as client, client.subscribe("t1") as stream:
        list(stream)
    assert agent.calls[0].method == method
    assert agent.calls[0].params == {"id": "t1"}


# -- headers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "version", "extensions_header"),
    [("1.0", "1.0", "A2A-Extensions"), ("0.3", None, "X-A2A-Extensions")],
)
def test_version_and_extension_headers(
    agent: FakeAgent, revision: str, version: str | None, extensions_header: str
) -> None:
    agent.results["GetTask" if revision == "1.0" else "tasks/get"] = (
        TASK_1_0 if revision == "1.0" else TASK_0_3
    )
    agent.events["SendStreamingMessage" if revision == "1.0" else "message/stream"] = [
        {"task": TASK_1_0} if revision == "1.0" else TASK_0_3
    ]
    extensions = ["https://ext.example/a", "https://ext.example/b"]
    with client_for(agent, revision, extensions=extensions) as client:
        client.get_task("t1")
        with client.stream_message("go") as stream:
            list(stream)
    for sent in agent.calls:
        assert sent.headers.get("A2A-Version") == version
        assert sent.headers["Content-Type"] == "application/json"
        assert sent.headers[extensions_header] == ",".join(extensions)
        other = "X-A2A-Extensions" if extensions_header == "A2A-Extensions" else "A2A-Extensions"
        assert other not in sent.headers


def test_extra_headers_go_on_every_request(agent: FakeAgent) -> None:
    agent.results["GetTask"] = TASK_1_0
    with client_for(agent, "1.0", headers={"X-Trace": "abc"}) as client:
        client.get_task("t1")
    assert agent.calls[0].headers["X-Trace"] == "abc"


def test_tenant_of_the_interface_is_sent_in_1_0_params(rsps: responses.RequestsMock) -> None:
    card = card_json((RPC_URL, "JSONRPC", "1.0"))
    card["supportedInterfaces"][0]["tenant"] = "acme"
    agent = FakeAgent(rsps, card)
    agent.results["GetTask"] = TASK_1_0
    with A2AClient.from_url(agent.base_url) as client:
        assert client.tenant == "acme"
        client.get_task("t1")
    assert agent.calls[0].params == {"id": "t1", "tenant": "acme"}
