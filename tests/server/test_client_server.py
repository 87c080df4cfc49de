"""Our own A2AClient drives our server over loopback, on A2A 1.0 and 0.3."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from a2a_sync.client import A2AClient, BearerToken
from a2a_sync.errors import (
    ConfigurationError,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
)
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.auth import BearerTokens
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.types import Message, PushNotificationConfig, Task, TaskArtifactUpdateEvent, TaskState
from tests.server.agents import WAIT, EchoAgent, card


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture(params=["1.0", "0.3"])
def client(request: pytest.FixtureRequest, agent: EchoAgent) -> Iterator[A2AClient]:
    extended = card(extended=True)
    app = A2AApplication(
        attrs.evolve(extended, supported_interfaces=[]),
        agent,
        authenticate=BearerTokens({"tok": "alice"}),
        extended_card=attrs.evolve(extended, name="Test agent (extended)"),
    )
    with serve_in_thread(app) as url:
        with A2AClient.from_url(
            url, revisions=[request.param], credentials=BearerToken("tok")
        ) as made:
            assert made.revision == request.param
            yield made
        agent.release.set()


def test_send_get_and_history(client: A2AClient) -> None:
    task = client.send_message("hello")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.completed
    assert task.text == "echo: hello"
    assert client.get_task(task.id) == task
    assert client.get_task(task.id, history_length=0).history == []


def test_stream_folds_to_the_stored_task(client: A2AClient) -> None:
    with client.stream_message("chunks 4") as stream:
        events = list(stream)
        final = stream.get_final_task()
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert len(chunks) == 4
    assert final == client.get_task(final.id)
    assert final.text == "c0;c1;c2;c3;"


def test_direct_reply(client: A2AClient) -> None:
    result = client.send_message("reply")
    assert isinstance(result, Message)
    assert result.text == "echo: reply"


def test_input_required_then_reply(client: A2AClient) -> None:
    first = client.send_message("need input")
    assert isinstance(first, Task)
    assert first.status.state is TaskState.input_required
    second = client.send_message("Paris", task_id=first.id)
    assert isinstance(second, Task)
    assert second.status.state is TaskState.completed
    assert second.text == "answer: Paris"


def test_cancel_and_subscribe(client: A2AClient, agent: EchoAgent) -> None:
    running = client.send_message("wait", return_immediately=True)
    assert isinstance(running, Task)
    assert agent.started.wait(WAIT)
    with client.subscribe(running.id) as stream:
        first = next(iter(stream))
        assert isinstance(first, Task)
        assert first.status.state is TaskState.working
        canceled = client.cancel_task(running.id)
        assert canceled.status.state is TaskState.canceled
        rest = list(stream)
    assert rest[-1].status.state is TaskState.canceled  # type: ignore[union-attr]
    if client.revision == "0.3":  # 0.3: every terminal task is not cancelable
        with pytest.raises(TaskNotCancelable):
            client.cancel_task(running.id)
    else:  # 1.0 §3.3.1: cancel is idempotent
        assert client.cancel_task(running.id).status.state is TaskState.canceled
    done = client.send_message("hello")
    assert isinstance(done, Task)
    with pytest.raises(TaskNotCancelable):
        client.cancel_task(done.id)
    with pytest.raises(UnsupportedOperation), client.subscribe(done.id) as stream:
        list(stream)
    with pytest.raises(TaskNotFound):
        client.get_task("no-such-task")


def test_push_config_crud(client: A2AClient) -> None:
    task = client.send_message("need input")
    assert isinstance(task, Task)
    created = client.create_push_config(
        task.id, PushNotificationConfig(url="https://hooks.example/a", id="c1", token="t")
    )
    assert created.id == "c1"
    assert client.get_push_config(task.id, "c1").url == "https://hooks.example/a"
    assert [c.id for c in client.list_push_configs(task.id).configs] == ["c1"]
    client.delete_push_config(task.id, "c1")
    assert client.list_push_configs(task.id).configs == []


def test_extended_card_for_the_authenticated_caller(client: A2AClient) -> None:
    assert client.get_extended_card().name == "Test agent (extended)"


def test_list_tasks_pages_on_1_0_and_does_not_exist_in_0_3(client: A2AClient) -> None:
    if client.revision == "0.3":
        with pytest.raises((UnsupportedOperation, ConfigurationError)):
            client.list_tasks()
        return
    ids = {client.send_message(t).id for t in ("a", "b")}  # type: ignore[union-attr]
    listed = client.list_tasks(page_size=1)
    assert len(listed.tasks) == 1
    assert listed.next_page_token
    assert ids <= {t.id for t in client.iter_tasks()}
