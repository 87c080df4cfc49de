"""The official a2a-sdk 1.3 client, with its REST transport, drives our HTTP+JSON binding.

Each test runs an asyncio a2a-sdk client against our WSGI app on waitress over loopback.
The card handed to the client lists one ``HTTP+JSON`` 1.0 interface (optionally with a
tenant), so every call goes through our REST routes; errors must come back as the
a2a-sdk error classes of the same A2A error.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.client import A2AClient
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.types import AgentInterface
from tests.server.agents import WAIT, EchoAgent, card

pytestmark = pytest.mark.peer

TENANT = "acme"


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture(params=[("1.0", ""), ("1.0", TENANT), ("0.3", "")])
def served(request: pytest.FixtureRequest, agent: EchoAgent) -> Iterator[Any]:
    """Our app serving REST under /rest; the a2a-sdk card of it (1.0 with or without
    tenant; 0.3, which the a2a-sdk client speaks at ``/rest/v1/...``)."""
    from a2a.types import AgentCapabilities, AgentCard
    from a2a.types import AgentInterface as SdkInterface

    revision, tenant = request.param
    ours = attrs.evolve(
        card(extended=True),
        supported_interfaces=[
            AgentInterface(
                url="http://127.0.0.1:1/rest",
                protocol_binding="HTTP+JSON",
                protocol_version="1.0",
                tenant=TENANT,
            )
        ],
    )
    app = A2AApplication(ours, agent, rest_path="/rest", extended_card=ours)
    with serve_in_thread(app) as url:
        yield AgentCard(
            name="Test agent",
            description="test",
            version="1.0.0",
            capabilities=AgentCapabilities(
                streaming=True, push_notifications=True, extended_agent_card=True
            ),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            supported_interfaces=[
                SdkInterface(
                    protocol_binding="HTTP+JSON",
                    protocol_version=revision,
                    url=url + "/rest",
                    tenant=tenant,
                )
            ],
        )
        agent.release.set()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WAIT * 2))


async def client_for(sdk_card: Any, *, streaming: bool) -> Any:
    from a2a.client import ClientConfig, create_client

    config = ClientConfig(streaming=streaming, supported_protocol_bindings=["HTTP+JSON"])
    return await create_client(sdk_card, client_config=config)


def user(text: str, task_id: str = "") -> Any:
    from a2a.types import Message, Part, Role

    return Message(
        role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)], task_id=task_id
    )


async def collect(client: Any, message: Any, **config: Any) -> list[Any]:
    from a2a.types import SendMessageConfiguration, SendMessageRequest

    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(**config))
    return [event async for event in client.send_message(request)]


def test_send_get_and_list(served: Any) -> None:
    from a2a.helpers import get_stream_response_text
    from a2a.types import GetTaskRequest, ListTasksRequest, TaskState

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            events = await collect(client, user("hello"))
            assert [e.WhichOneof("payload") for e in events] == ["task"]
            assert events[0].task.status.state == TaskState.TASK_STATE_COMPLETED
            assert get_stream_response_text(events[0]) == "echo: hello"
            task_id = events[0].task.id
            got = await client.get_task(GetTaskRequest(id=task_id, history_length=0))
            assert (got.id, len(got.history)) == (task_id, 0)
            full = await client.get_task(GetTaskRequest(id=task_id))
            assert [m.parts[0].text for m in full.history] == ["hello"]
            if served.supported_interfaces[0].protocol_version == "0.3":
                return  # 0.3 has no ListTasks
            listed = await client.list_tasks(
                ListTasksRequest(include_artifacts=True, page_size=50, history_length=1)
            )
            assert task_id in [t.id for t in listed.tasks]
            working = await client.list_tasks(ListTasksRequest(status=TaskState.TASK_STATE_WORKING))
            assert task_id not in [t.id for t in working.tasks]
        finally:
            await client.close()

    run(scenario())


def test_stream_with_chunked_artifacts(served: Any) -> None:
    from a2a.types import TaskState

    async def scenario() -> None:
        client = await client_for(served, streaming=True)
        try:
            events = await collect(client, user("chunks 3"))
            kinds = [e.WhichOneof("payload") for e in events]
            assert kinds == ["task", "status_update", *["artifact_update"] * 3, "status_update"]
            chunks = [e.artifact_update for e in events[2:5]]
            assert [c.append for c in chunks] == [False, True, True]
            assert [c.last_chunk for c in chunks] == [False, False, True]
            assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()

    run(scenario())


def test_cancel_and_its_errors(served: Any, agent: EchoAgent) -> None:
    from a2a.types import CancelTaskRequest, GetTaskRequest, TaskState
    from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            events = await collect(client, user("wait"), return_immediately=True)
            task_id = events[0].task.id
            assert agent.started.wait(WAIT)
            canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            done = await collect(client, user("hello"))
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=done[0].task.id))
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
            with pytest.raises(TaskNotFoundError):
                await client.cancel_task(CancelTaskRequest(id="no-such-task"))
        finally:
            await client.close()

    run(scenario())


def test_subscribe_mid_task_and_to_a_settled_one(served: Any, agent: EchoAgent) -> None:
    from a2a.types import SubscribeToTaskRequest, TaskState
    from a2a.utils.errors import UnsupportedOperationError

    async def scenario() -> None:
        starter = await client_for(served, streaming=False)
        client = await client_for(served, streaming=True)
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
            with pytest.raises(UnsupportedOperationError):
                async for _ in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                    pass
        finally:
            await starter.close()
            await client.close()

    run(scenario())


def test_push_config_crud(served: Any) -> None:
    from a2a.types import (
        DeleteTaskPushNotificationConfigRequest,
        GetTaskPushNotificationConfigRequest,
        ListTaskPushNotificationConfigsRequest,
        TaskPushNotificationConfig,
    )
    from a2a.utils.errors import TaskNotFoundError

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            task_id = (await collect(client, user("need input")))[0].task.id
            created = await client.create_task_push_notification_config(
                TaskPushNotificationConfig(
                    task_id=task_id, id="cfg-1", url="https://hooks.example/a", token="t"
                )
            )
            assert (created.id, created.url) == ("cfg-1", "https://hooks.example/a")
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task_id, id="cfg-1")
            )
            assert got.url == "https://hooks.example/a"
            interface = served.supported_interfaces[0]
            if interface.protocol_version == "0.3":
                # a2a-sdk's 0.3 REST client has no list/delete: our client drives those routes
                with A2AClient(interface.url, revision="0.3", binding="HTTP+JSON") as ours:
                    assert [c.id for c in ours.list_push_configs(task_id).configs] == ["cfg-1"]
                    ours.delete_push_config(task_id, "cfg-1")
                    assert ours.list_push_configs(task_id).configs == []
                return
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
            with pytest.raises(TaskNotFoundError):
                await client.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id="no-such-task")
                )
        finally:
            await client.close()

    run(scenario())


@pytest.mark.parametrize("streaming", [False, True])
def test_input_required_continuation_and_reply(served: Any, streaming: bool) -> None:
    from a2a.types import TaskState

    def state_of(event: Any) -> Any:
        if event.WhichOneof("payload") == "task":
            return event.task.status.state
        return event.status_update.status.state

    async def scenario() -> None:
        client = await client_for(served, streaming=streaming)
        try:
            first = await collect(client, user("need input"))
            assert state_of(first[-1]) == TaskState.TASK_STATE_INPUT_REQUIRED
            second = await collect(client, user("Paris", task_id=first[0].task.id))
            assert state_of(second[-1]) == TaskState.TASK_STATE_COMPLETED
            reply = await collect(client, user("reply"))
            assert reply[0].WhichOneof("payload") == "message"
            assert reply[0].message.parts[0].text == "echo: reply"
        finally:
            await client.close()

    run(scenario())


def test_errors_raised_by_the_agent_map_to_their_classes(served: Any) -> None:
    from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            done = await collect(client, user("hello"))
            with pytest.raises(UnsupportedOperationError):
                await collect(client, user("again", task_id=done[0].task.id))
            with pytest.raises(InvalidParamsError):
                await collect(client, user("hello"), history_length=-1)
        finally:
            await client.close()

    run(scenario())


def test_extended_card_is_refused_to_anonymous_callers(served: Any) -> None:
    """The app has no authenticator: every caller is anonymous, so GET /extendedAgentCard
    answers 401 (as the JSON-RPC path does)."""
    from a2a.client import A2AClientError
    from a2a.types import GetExtendedAgentCardRequest

    async def scenario() -> None:
        client = await client_for(served, streaming=False)
        try:
            with pytest.raises(A2AClientError, match="401"):
                await client.get_extended_agent_card(GetExtendedAgentCardRequest())
        finally:
            await client.close()

    run(scenario())
