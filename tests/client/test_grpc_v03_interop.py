"""a2a_sync's client over A2A 0.3 gRPC (``a2a.v1.A2AService``) against a2a-sdk 1.3's
``CompatGrpcHandler``.

The scripted agent (tests/peers) serves a2a-sdk's 1.0 ``GrpcHandler`` and its 0.3
``CompatGrpcHandler`` on one gRPC port and lists ``GRPC`` 0.3 in its card (a2a-sdk's 0.3
view of the card names it in ``additionalInterfaces``). A client asked for 0.3 picks that
interface and speaks 0.3's service; errors are the same a2a_sync exception types as over
0.3 JSON-RPC (a2a-sdk's 0.3 server sends the error name in the status message, no
ErrorInfo).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.a2a.card_codec import load_card  # noqa: E402
from a2a_sync.client import A2AClient, ResilientA2AClient  # noqa: E402
from a2a_sync.errors import (  # noqa: E402
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
)
from a2a_sync.types import (  # noqa: E402
    Message,
    PushNotificationConfig,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from tests.peers.fixtures import AgentProcess  # noqa: E402
from tests.support.fixtures import FaultProxyFactory  # noqa: E402

from .conftest import PEER_TIMEOUT  # noqa: E402
from .test_resilient import Sleeps, delivered_text  # noqa: E402
from .test_resilient_interop import CONFIG  # noqa: E402

pytestmark = pytest.mark.peer


@pytest.fixture
def client(a2a_sdk_grpc_agent: AgentProcess) -> Iterator[A2AClient]:
    with A2AClient.from_url(
        a2a_sdk_grpc_agent.url, bindings=["GRPC"], revisions=["0.3"], timeout=PEER_TIMEOUT
    ) as opened:
        yield opened


def test_the_card_selects_the_0_3_grpc_interface(client: A2AClient) -> None:
    assert (client.binding, client.revision) == ("GRPC", "0.3")
    assert client.url.startswith("127.0.0.1:")


def test_a_0_3_card_preferring_grpc_selects_it() -> None:
    """A card in 0.3's own layout: ``url`` + ``preferredTransport: GRPC``."""
    card = load_card(
        {
            "protocolVersion": "0.3.0",
            "name": "Legacy",
            "description": "a 0.3 agent",
            "version": "1",
            "url": "127.0.0.1:50051",
            "preferredTransport": "GRPC",
            "additionalInterfaces": [
                {"url": "127.0.0.1:50051", "transport": "GRPC"},
                {"url": "http://127.0.0.1:8000/", "transport": "JSONRPC"},
            ],
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
        }
    )
    with A2AClient.from_card(card) as chosen:
        assert (chosen.binding, chosen.revision, chosen.url) == ("GRPC", "0.3", "127.0.0.1:50051")


def test_send_get_reply_and_input_required(client: A2AClient) -> None:
    task = client.send_message("echo over grpc 0.3")
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "over grpc 0.3")
    assert client.get_task(task.id) == task
    assert client.get_task(task.id, history_length=1).history[-1:] == task.history[-1:]
    reply = client.send_message("reply")
    assert isinstance(reply, Message)
    assert reply.text == "hello from reply"
    asking = client.send_message("need input")
    assert isinstance(asking, Task)
    assert asking.state is TaskState.input_required
    answered = client.reply(asking, "Paris")
    assert isinstance(answered, Task)
    assert (answered.state, answered.text) == (TaskState.completed, "city: Paris")


def test_stream_delivers_every_event(client: A2AClient) -> None:
    with client.stream_message("chunks 3") as stream:
        events = list(stream)
        final = stream.get_final_task()
    assert isinstance(events[0], Task)
    assert [type(e) for e in events[1:]] == [TaskArtifactUpdateEvent] * 3 + [TaskStatusUpdateEvent]
    assert final.text == "0,1,2,"
    assert final == client.get_task(final.id)


def test_subscribe_cancel_and_their_errors(client: A2AClient) -> None:
    started = client.send_message("slow 40", return_immediately=True)
    assert isinstance(started, Task)
    with client.subscribe(started.id) as stream:
        first = next(iter(stream))
        assert getattr(first, "id", getattr(first, "task_id", None)) == started.id
        canceled = client.cancel_task(started.id)
        assert canceled.state is TaskState.canceled
        rest = list(stream)
    assert any(
        isinstance(e, TaskStatusUpdateEvent) and e.status.state is TaskState.canceled
        for e in [first, *rest]
    )
    with pytest.raises(TaskNotCancelable):
        client.cancel_task(started.id)
    with pytest.raises(UnsupportedOperation):
        list(client.subscribe(started.id))


@pytest.mark.parametrize("call", ["get", "cancel", "subscribe"])
def test_task_not_found_is_the_same_type_as_over_jsonrpc(call: str, client: A2AClient) -> None:
    def attempt() -> None:
        if call == "get":
            client.get_task("no-such-task")
        elif call == "cancel":
            client.cancel_task("no-such-task")
        else:
            list(client.subscribe("no-such-task"))

    with pytest.raises(TaskNotFound) as caught:
        attempt()
    assert caught.value.code == -32001


def test_push_config_crud(client: A2AClient) -> None:
    task = client.send_message("echo push")
    assert isinstance(task, Task)
    config = PushNotificationConfig(url="https://hooks.example/a2a", id="cfg-1", token="t0k")
    created = client.create_push_config(task.id, config)
    assert (created.id, created.url, created.task_id) == ("cfg-1", config.url, task.id)
    assert client.get_push_config(task.id, "cfg-1").url == config.url
    assert [c.id for c in client.list_push_configs(task.id).configs] == ["cfg-1"]
    assert client.delete_push_config(task.id, "cfg-1") is None
    assert client.list_push_configs(task.id).configs == []


def test_list_tasks_has_no_0_3_rpc(client: A2AClient) -> None:
    with pytest.raises(UnsupportedOperation):  # as over 0.3 JSON-RPC: 0.3 has no ListTasks
        client.list_tasks()


def test_extended_card_over_get_agent_card(client: A2AClient) -> None:
    """0.3's GetAgentCard, which a2a-sdk answers with the extended card."""
    card = client.get_extended_card()
    assert card.name == "Scripted (extended)"
    assert [s.id for s in card.skills] == ["script", "secret"]


def test_resilient_stream_cut_is_resumed_over_0_3_grpc(
    client: A2AClient, fault_proxy: FaultProxyFactory
) -> None:
    """The connection is reset under a running 0.3 stream: StreamInterrupted, and the
    resilient client, unchanged, resubscribes (0.3's TaskSubscription)."""
    proxy = fault_proxy("http://" + client.url)
    through = A2AClient(proxy.url, binding="GRPC", revision="0.3", timeout=PEER_TIMEOUT)
    resilient = ResilientA2AClient(through, CONFIG, sleep=Sleeps())
    try:
        stream = resilient.stream_message("slow 10")
        events = [next(iter(stream))]
        proxy.reset_peer()
        events += list(stream)
        assert stream.reconnects >= 1
        assert delivered_text(events) == "".join(f"{i}," for i in range(10))
        final = stream.get_final_task()
        assert final == client.get_task(final.id)
    finally:
        resilient.close()
        through.close()
