"""The scenarios a2a_sync's client plays against a2a-sdk 1.3's servers, once.

Each binding's interop module (``test_rest_interop``, ``test_grpc_interop``,
``test_grpc_v03_interop``) defines a ``client`` fixture: an :class:`A2AClient` of the
scripted a2a-sdk agent (tests/peers) pinned to one binding and revision. The module
star-imports the scenarios every binding plays (``__all__``: pytest collects them there,
under its skips and markers); the gRPC modules star-import
:mod:`tests.client._sdk_grpc_server_scenarios`, which adds the gRPC ones.
A scenario reads ``client.binding`` and ``client.revision``; where a revision or an a2a-sdk
server lacks an operation the scenario says so where it branches.
"""

from __future__ import annotations

import uuid

import pytest

from a2a_sync.client import A2AClient
from a2a_sync.errors import HTTPStatusError, UnsupportedOperation
from a2a_sync.types import (
    Message,
    PushNotificationConfig,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)

#: The scenarios of every binding, collected by each module that star-imports them.
__all__ = [
    "test_push_config_crud",
    "test_reply_message_and_input_required_turn",
    "test_send_get_list_and_history_length",
    "test_stream_delivers_every_event_as_the_task_settles",
]


def test_send_get_list_and_history_length(client: A2AClient) -> None:
    context_id = str(uuid.uuid4())
    task = client.send_message("echo over the wire", context_id=context_id)
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "over the wire")
    assert client.get_task(task.id) == task
    if client.revision == "1.0":
        assert client.get_task(task.id, history_length=0).history == []
    else:  # a2a-sdk's 0.3 layer reads historyLength 0 as "no limit"; 1 is honoured
        last = client.get_task(task.id, history_length=1).history
        assert len(last) == 1
        assert last == task.history[-1:]
        with pytest.raises(UnsupportedOperation):  # 0.3 has no ListTasks
            client.list_tasks()
        return
    listed = client.list_tasks(context_id=context_id, page_size=10, include_artifacts=True)
    assert [t.id for t in listed.tasks] == [task.id]
    # a2a-sdk lists tasks with default values spelled out (mediaType ""): compare content
    assert listed.tasks[0].text == task.text
    assert client.list_tasks(context_id=context_id, status=TaskState.working).tasks == []


def test_reply_message_and_input_required_turn(client: A2AClient) -> None:
    reply = client.send_message("reply")
    assert isinstance(reply, Message)
    assert reply.text == "hello from reply"
    asking = client.send_message("need input")
    assert isinstance(asking, Task)
    assert asking.state is TaskState.input_required
    answered = client.reply(asking, "Paris")
    assert isinstance(answered, Task)
    assert (answered.state, answered.text) == (TaskState.completed, "city: Paris")


def test_stream_delivers_every_event_as_the_task_settles(client: A2AClient) -> None:
    with client.stream_message("chunks 3") as stream:
        events = list(stream)
        final = stream.get_final_task()
    assert isinstance(events[0], Task)
    assert [type(e) for e in events[1:]] == [TaskArtifactUpdateEvent] * 3 + [TaskStatusUpdateEvent]
    assert final.text == "0,1,2,"
    assert final == client.get_task(final.id)


def test_push_config_crud(client: A2AClient) -> None:
    task = client.send_message("echo push")
    assert isinstance(task, Task)
    config = PushNotificationConfig(url="https://hooks.example/a2a", id="cfg-1", token="t0k")
    created = client.create_push_config(task.id, config)
    assert (created.id, created.url, created.task_id) == ("cfg-1", config.url, task.id)
    assert client.get_push_config(task.id, "cfg-1").url == config.url
    assert [c.id for c in client.list_push_configs(task.id).configs] == ["cfg-1"]
    if (client.binding, client.revision) == ("HTTP+JSON", "0.3"):
        # a2a-sdk's 0.3 compat routes have no DELETE (its proto has one): a plain 404
        with pytest.raises(HTTPStatusError) as caught:
            client.delete_push_config(task.id, "cfg-1")
        assert caught.value.status_code == 404
        return
    assert client.delete_push_config(task.id, "cfg-1") is None
    assert client.list_push_configs(task.id).configs == []
