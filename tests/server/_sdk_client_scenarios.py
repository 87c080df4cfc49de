"""The scenarios the official a2a-sdk 1.3 client plays against our server, once.

Each binding's interop module (``test_interop_a2a_sdk_client`` for JSON-RPC,
``test_rest_interop``, ``test_grpc_interop``, ``test_grpc_v03_interop``) defines an
``agent`` (:class:`EchoAgent`) and a ``served`` fixture: the a2a-sdk ``AgentCard`` of our
server listing exactly one interface, so the a2a-sdk client speaks exactly that binding and
revision. The module then star-imports the scenarios below (``__all__``: pytest collects
them there, under its skips and markers). A scenario reads the binding and revision from
``served``; where a revision lacks an operation (0.3 has no ListTasks, a2a-sdk's 0.3 REST
client no push list/delete) the scenario says so where it branches.

Errors must come back as the a2a-sdk error classes of the same A2A error on every binding.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from a2a_sync.client import A2AClient
from tests.server.agents import WAIT, EchoAgent

#: The scenarios, collected by each module that star-imports them.
__all__ = [
    "test_cancel_and_its_errors",
    "test_errors_raised_by_the_agent_map_to_their_classes",
    "test_input_required_continuation_and_reply",
    "test_push_config_crud",
    "test_send_get_and_list",
    "test_stream_with_chunked_artifacts",
    "test_subscribe_mid_task_and_to_a_settled_one",
]


def sdk_card(interface: Any, *, extended: bool = False) -> Any:
    """The a2a-sdk card of our test agent listing only ``interface`` (an a2a-sdk
    ``AgentInterface``)."""
    from a2a.types import AgentCapabilities, AgentCard

    return AgentCard(
        name="Test agent",
        description="test",
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=True, extended_agent_card=extended
        ),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[interface],
    )


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, WAIT * 2))


def spoken(served: Any) -> tuple[str, str]:
    """The binding and revision of ``served``'s one interface."""
    interface = served.supported_interfaces[0]
    return interface.protocol_binding, interface.protocol_version


async def client_for(sdk_card: Any, *, streaming: bool) -> Any:
    """An a2a-sdk client of ``sdk_card``'s one interface (a ``grpc.aio`` channel for
    GRPC; for GRPC 0.3, a2a-sdk's compat transport, checked)."""
    from a2a.client import ClientConfig, create_client

    binding, revision = spoken(sdk_card)
    if binding != "GRPC":
        config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding])
        return await create_client(sdk_card, client_config=config)
    import grpc.aio

    config = ClientConfig(
        streaming=streaming,
        supported_protocol_bindings=["GRPC"],
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    client = await create_client(sdk_card, client_config=config)
    if revision == "0.3":
        from a2a.compat.v0_3.grpc_transport import CompatGrpcTransport

        assert isinstance(client._transport, CompatGrpcTransport)  # the 0.3 service is spoken
    return client


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
            if spoken(served) != ("GRPC", "0.3"):
                # (0.3's proto has a plain int32 history_length: 0 there means "not set")
                got = await client.get_task(GetTaskRequest(id=task_id, history_length=0))
                assert (got.id, len(got.history)) == (task_id, 0)
            full = await client.get_task(GetTaskRequest(id=task_id))
            assert full.id == task_id
            assert [m.parts[0].text for m in full.history] == ["hello"]
            if spoken(served)[1] == "0.3":
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
            # answered without the token (a2a_sync.server.push_policy)
            assert (got.task_id, got.id, got.url) == (task_id, "cfg-1", "https://hooks.example/a")
            if spoken(served) == ("HTTP+JSON", "0.3"):
                # a2a-sdk's 0.3 REST client has no list/delete: our client drives those routes
                url = served.supported_interfaces[0].url
                with A2AClient(url, revision="0.3", binding="HTTP+JSON") as ours:
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
