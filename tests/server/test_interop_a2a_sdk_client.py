"""The official a2a-sdk 1.3 client drives our server, on A2A 1.0 and on 0.3.

Each test runs an asyncio client (a2a-sdk has no synchronous one) against our WSGI app
on waitress over loopback. The card handed to the client lists one interface, so the
client speaks exactly the revision under test.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from tests.server.agents import WAIT, EchoAgent, card

pytestmark = pytest.mark.peer

REVISIONS = ["1.0", "0.3"]


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture(params=REVISIONS)
def served(request: pytest.FixtureRequest, agent: EchoAgent) -> Iterator[tuple[str, Any]]:
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface

    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent)
    with serve_in_thread(app) as url:
        sdk_card = AgentCard(
            name="Test agent",
            description="test",
            version="1.0.0",
            capabilities=AgentCapabilities(streaming=True, push_notifications=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            supported_interfaces=[
                AgentInterface(
                    protocol_binding="JSONRPC", protocol_version=request.param, url=url + "/"
                )
            ],
        )
        yield request.param, sdk_card
        agent.release.set()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WAIT * 2))


async def client_for(sdk_card: Any, *, streaming: bool) -> Any:
    from a2a.client import ClientConfig, create_client

    return await create_client(sdk_card, client_config=ClientConfig(streaming=streaming))


def user(text: str, task_id: str = "") -> Any:
    from a2a.types import Message, Part, Role

    return Message(
        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)], task_id=task_id
    )


async def collect(client: Any, message: Any, **config: Any) -> list[Any]:
    from a2a.types import SendMessageConfiguration, SendMessageRequest

    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(**config))
    return [event async for event in client.send_message(request)]


def test_send_returns_the_completed_task(served: tuple[str, Any]) -> None:
    from a2a.helpers import get_stream_response_text
    from a2a.types import TaskState

    async def scenario() -> None:
        client = await client_for(served[1], streaming=False)
        try:
            events = await collect(client, user("hello"))
            assert len(events) == 1
            assert events[0].WhichOneof("payload") == "task"
            assert events[0].task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_stream_response_text(events[0]) == "echo: hello"
        finally:
            await client.close()

    run(scenario())


def test_stream_with_chunked_artifacts(served: tuple[str, Any]) -> None:
    from a2a.types import TaskState

    async def scenario() -> None:
        client = await client_for(served[1], streaming=True)
        try:
            events = await collect(client, user("chunks 3"))
            kinds = [e.WhichOneof("payload") for e in events]
            assert kinds == [
                "task",
                "status_update",
                "artifact_update",
                "artifact_update",
                "artifact_update",
                "status_update",
            ]
            chunks = [
                e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update"
            ]
            assert [c.append for c in chunks] == [False, True, True]
            assert [c.last_chunk for c in chunks] == [False, False, True]
            assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()

    run(scenario())


def test_get_and_list_tasks(served: tuple[str, Any]) -> None:
    from a2a.types import GetTaskRequest, ListTasksRequest

    revision = served[0]

    async def scenario() -> None:
        client = await client_for(served[1], streaming=False)
        try:
            events = await collect(client, user("hello"))
            task_id = events[0].task.id
            got = await client.get_task(GetTaskRequest(id=task_id, history_length=0))
            assert got.id == task_id
            assert len(got.history) == 0
            full = await client.get_task(GetTaskRequest(id=task_id))
            assert [m.parts[0].text for m in full.history] == ["hello"]
            if revision == "1.0":
                listed = await client.list_tasks(ListTasksRequest(include_artifacts=True))
                assert task_id in [t.id for t in listed.tasks]
        finally:
            await client.close()

    run(scenario())


def test_unknown_task_is_task_not_found(served: tuple[str, Any]) -> None:
    from a2a.types import GetTaskRequest
    from a2a.utils.errors import TaskNotFoundError

    async def scenario() -> None:
        client = await client_for(served[1], streaming=False)
        try:
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
        finally:
            await client.close()

    run(scenario())


def test_cancel_a_running_task(served: tuple[str, Any], agent: EchoAgent) -> None:
    from a2a.types import CancelTaskRequest, TaskState
    from a2a.utils.errors import TaskNotCancelableError

    async def scenario() -> None:
        client = await client_for(served[1], streaming=False)
        try:
            events = await collect(client, user("wait"), return_immediately=True)
            task_id = events[0].task.id
            assert agent.started.wait(WAIT)
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            done = await collect(client, user("hello"))
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=done[0].task.id))
        finally:
            await client.close()

    run(scenario())


def test_resubscribe_mid_task(served: tuple[str, Any], agent: EchoAgent) -> None:
    from a2a.types import SubscribeToTaskRequest, TaskState

    async def scenario() -> None:
        starter = await client_for(served[1], streaming=False)
        client = await client_for(served[1], streaming=True)
        try:
            first = await collect(starter, user("wait"), return_immediately=True)
            task_id = first[0].task.id
            assert agent.started.wait(WAIT)
            kinds = []
            last = None
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                kind = event.WhichOneof("payload")
                kinds.append(kind)
                if kind == "task":
                    assert event.task.status.state == TaskState.TASK_STATE_WORKING
                    agent.release.set()
                last = event
            assert kinds[0] == "task"
            assert last is not None
            assert last.status_update.status.state == TaskState.TASK_STATE_COMPLETED
        finally:
            await starter.close()
            await client.close()

    run(scenario())


def test_push_config_crud(served: tuple[str, Any]) -> None:
    from a2a.types import (
        DeleteTaskPushNotificationConfigRequest,
        GetTaskPushNotificationConfigRequest,
        ListTaskPushNotificationConfigsRequest,
        TaskPushNotificationConfig,
    )

    async def scenario() -> None:
        client = await client_for(served[1], streaming=False)
        try:
            task_id = (await collect(client, user("need input")))[0].task.id
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task_id, id="cfg-1", url="https://hooks.example/a", token="t"
                )
            )
            assert created.id == "cfg-1"
            assert created.url == "https://hooks.example/a"
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
            )
            assert got.url == "https://hooks.example/a"
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            assert [c.id for c in listed.configs] == ["cfg-1"]
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
            )
            after = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            assert list(after.configs) == []
        finally:
            await client.close()

    run(scenario())


@pytest.mark.parametrize("streaming", [False, True])
def test_input_required_continuation(served: tuple[str, Any], streaming: bool) -> None:
    from a2a.types import TaskState

    async def scenario() -> None:
        client = await client_for(served[1], streaming=streaming)
        try:
            first = await collect(client, user("need input"))
            task = first[0].task
            last = first[-1]
            state = (
                last.task.status.state
                if last.WhichOneof("payload") == "task"
                else last.status_update.status.state
            )
            assert state == TaskState.TASK_STATE_INPUT_REQUIRED
            second = await collect(client, user("Paris", task_id=task.id))
            final = second[-1]
            final_state = (
                final.task.status.state
                if final.WhichOneof("payload") == "task"
                else final.status_update.status.state
            )
            assert final_state == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()

    run(scenario())


def test_direct_reply_message(served: tuple[str, Any]) -> None:
    async def scenario() -> None:
        client = await client_for(served[1], streaming=False)
        try:
            events = await collect(client, user("reply"))
            assert events[0].WhichOneof("payload") == "message"
            assert events[0].message.parts[0].text == "echo: reply"
        finally:
            await client.close()

    run(scenario())


def test_card_resolution_by_url(served: tuple[str, Any]) -> None:
    """The a2a-sdk client reads our card from the well-known path and picks 1.0."""
    from a2a.client import ClientConfig, create_client

    url = served[1].supported_interfaces[0].url.rstrip("/")

    async def scenario() -> None:
        client = await create_client(url, client_config=ClientConfig(streaming=False))
        try:
            events = await collect(client, user("hello"))
            assert events[0].task.artifacts[0].parts[0].text == "echo: hello"
        finally:
            await client.close()

    run(scenario())
