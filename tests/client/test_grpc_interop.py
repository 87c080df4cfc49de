"""a2a_sync's client over gRPC against a2a-sdk 1.3's gRPC server (``grpc.aio``).

The scripted agent (tests/peers) serves a2a-sdk's ``GrpcHandler`` on a second port and
lists that ``GRPC`` 1.0 interface first in its card. Every operation runs over gRPC; error
cases must raise the same a2a_sync exception types as over JSON-RPC (the ErrorInfo reason
of ``grpc-status-details-bin``, through the one error table). Streams are read on the
binding's reader thread and can be closed from another thread.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.client import A2AClient, ResilientA2AClient  # noqa: E402
from a2a_sync.errors import (  # noqa: E402
    Cancelled,
    ConnectError,
    DeadlineExceeded,
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
from tests.support.ports import refused_port  # noqa: E402

from .conftest import PEER_TIMEOUT  # noqa: E402
from .test_resilient import Sleeps, delivered_text  # noqa: E402
from .test_resilient_interop import CONFIG  # noqa: E402

pytestmark = pytest.mark.peer


@pytest.fixture
def grpc_client(a2a_sdk_grpc_agent: AgentProcess) -> Iterator[A2AClient]:
    with A2AClient.from_url(
        a2a_sdk_grpc_agent.url,
        bindings=["GRPC", "JSONRPC"],
        timeout=PEER_TIMEOUT,
    ) as client:
        yield client


@pytest.fixture
def jsonrpc_client(a2a_sdk_grpc_agent: AgentProcess) -> Iterator[A2AClient]:
    with A2AClient.from_url(
        a2a_sdk_grpc_agent.url, bindings=["JSONRPC"], timeout=PEER_TIMEOUT
    ) as client:
        yield client


def test_from_url_picks_the_grpc_interface_by_preference(
    grpc_client: A2AClient, jsonrpc_client: A2AClient
) -> None:
    assert grpc_client.binding == "GRPC"
    assert grpc_client.revision == "1.0"
    assert grpc_client.url.startswith("127.0.0.1:")
    assert jsonrpc_client.binding == "JSONRPC"


def test_send_get_list_and_history_length(grpc_client: A2AClient) -> None:
    context_id = str(uuid.uuid4())
    task = grpc_client.send_message("echo over grpc", context_id=context_id)
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "over grpc")
    assert grpc_client.get_task(task.id) == task
    assert grpc_client.get_task(task.id, history_length=0).history == []
    listed = grpc_client.list_tasks(context_id=context_id, page_size=10, include_artifacts=True)
    assert [t.id for t in listed.tasks] == [task.id]
    assert listed.tasks[0].text == task.text
    assert grpc_client.list_tasks(context_id=context_id, status=TaskState.working).tasks == []


def test_reply_message_and_input_required_turn(grpc_client: A2AClient) -> None:
    reply = grpc_client.send_message("reply")
    assert isinstance(reply, Message)
    assert reply.text == "hello from reply"
    asking = grpc_client.send_message("need input")
    assert isinstance(asking, Task)
    assert asking.state is TaskState.input_required
    answered = grpc_client.reply(asking, "Paris")
    assert isinstance(answered, Task)
    assert (answered.state, answered.text) == (TaskState.completed, "city: Paris")


def test_stream_delivers_every_event_as_the_task_settles(grpc_client: A2AClient) -> None:
    with grpc_client.stream_message("chunks 3") as stream:
        events = list(stream)
        final = stream.get_final_task()
    assert isinstance(events[0], Task)
    assert [type(e) for e in events[1:]] == [TaskArtifactUpdateEvent] * 3 + [TaskStatusUpdateEvent]
    assert final.text == "0,1,2,"
    assert final == grpc_client.get_task(final.id)


def test_subscribe_follows_a_running_task_and_cancel(grpc_client: A2AClient) -> None:
    started = grpc_client.send_message("slow 40", return_immediately=True)
    assert isinstance(started, Task)
    with grpc_client.subscribe(started.id) as stream:
        first = next(iter(stream))
        assert getattr(first, "id", getattr(first, "task_id", None)) == started.id
        canceled = grpc_client.cancel_task(started.id)
        assert canceled.state is TaskState.canceled
        rest = list(stream)
    assert any(
        isinstance(e, TaskStatusUpdateEvent) and e.status.state is TaskState.canceled
        for e in [first, *rest]
    )
    with pytest.raises(TaskNotCancelable):
        grpc_client.cancel_task(started.id)
    with pytest.raises(UnsupportedOperation):  # §10.4.6: terminal task
        list(grpc_client.subscribe(started.id))


def test_push_config_crud(grpc_client: A2AClient) -> None:
    task = grpc_client.send_message("echo push")
    assert isinstance(task, Task)
    config = PushNotificationConfig(url="https://hooks.example/a2a", id="cfg-1", token="t0k")
    created = grpc_client.create_push_config(task.id, config)
    assert (created.id, created.url, created.task_id) == ("cfg-1", config.url, task.id)
    assert grpc_client.get_push_config(task.id, "cfg-1").url == config.url
    assert [c.id for c in grpc_client.list_push_configs(task.id).configs] == ["cfg-1"]
    assert grpc_client.delete_push_config(task.id, "cfg-1") is None
    assert grpc_client.list_push_configs(task.id).configs == []


def test_extended_card_over_grpc(grpc_client: A2AClient) -> None:
    card = grpc_client.get_extended_card()
    assert card.name == "Scripted (extended)"
    assert [s.id for s in card.skills] == ["script", "secret"]


@pytest.mark.parametrize("call", ["get", "cancel", "subscribe"])
def test_errors_are_the_same_types_as_over_jsonrpc(
    call: str, grpc_client: A2AClient, jsonrpc_client: A2AClient
) -> None:
    def attempt(client: A2AClient) -> None:
        if call == "get":
            client.get_task("no-such-task")
        elif call == "cancel":
            client.cancel_task("no-such-task")
        else:
            list(client.subscribe("no-such-task"))

    for client in (grpc_client, jsonrpc_client):
        with pytest.raises(TaskNotFound) as caught:
            attempt(client)
        assert caught.value.code == -32001


@pytest.mark.parametrize("threaded", [True, False])
def test_a_stream_closed_from_another_thread_stops_the_reader(
    grpc_client: A2AClient, threaded: bool
) -> None:
    """Read ahead by the binding's thread or by the consumer (``threaded_streams``): a
    close from another thread ends a blocked read with Cancelled."""
    started = grpc_client.send_message("slow 200", return_immediately=True)
    assert isinstance(started, Task)
    with A2AClient(
        grpc_client.url, binding="GRPC", timeout=PEER_TIMEOUT, threaded_streams=threaded
    ) as client:
        stream = client.subscribe(started.id)
        next(iter(stream))
        blocked = threading.Event()
        outcome: list[BaseException] = []

        def read() -> None:
            blocked.set()
            try:
                for _ in stream:
                    pass
            except BaseException as exc:
                outcome.append(exc)

        reader = threading.Thread(target=read, name="a2a-sync-test-reader")
        reader.start()
        assert blocked.wait(PEER_TIMEOUT)
        stream.close()
        reader.join(PEER_TIMEOUT)
        assert not reader.is_alive()
        assert outcome == [] or isinstance(outcome[0], Cancelled)
    grpc_client.cancel_task(started.id)
    assert not [t for t in threading.enumerate() if t.name.startswith("a2a-sync-grpc-stream")]


def test_deadline_from_the_timeout(grpc_client: A2AClient) -> None:
    started = grpc_client.send_message("slow 100", return_immediately=True)
    assert isinstance(started, Task)
    blocking = grpc_client.with_options(timeout=0.2)
    with pytest.raises(DeadlineExceeded):
        # a blocking send on the running task waits for it to settle (5 s)
        blocking.send_message("echo late", task_id=started.id, context_id=started.context_id)
    grpc_client.cancel_task(started.id)


def test_nothing_listening_is_a_connect_error() -> None:
    port = refused_port()  # bound and never listening: nothing else can take it meanwhile
    with (
        A2AClient(f"127.0.0.1:{port}", binding="GRPC", timeout=2.0) as client,
        pytest.raises(ConnectError),
    ):
        client.get_task("t")


def test_closing_the_client_closes_its_channel(a2a_sdk_grpc_agent: AgentProcess) -> None:
    client = A2AClient.from_url(a2a_sdk_grpc_agent.url, bindings=["GRPC"], timeout=PEER_TIMEOUT)
    task = client.send_message("echo once")
    assert isinstance(task, Task)
    copy = client.with_options(timeout=PEER_TIMEOUT)
    copy.close()  # a copy does not own the channel
    assert client.get_task(task.id).id == task.id
    client.close()
    with pytest.raises(Cancelled):
        client.get_task(task.id)


def test_resilient_stream_cut_is_resumed_over_grpc(
    grpc_client: A2AClient, fault_proxy: FaultProxyFactory
) -> None:
    """The connection is reset under a running stream: the binding reports the drop as
    StreamInterrupted and the resilient client, unchanged, resubscribes over gRPC."""
    proxy = fault_proxy("http://" + grpc_client.url)
    through = A2AClient(proxy.url, binding="GRPC", timeout=PEER_TIMEOUT)
    sleeps = Sleeps()
    client = ResilientA2AClient(through, CONFIG, sleep=sleeps)
    try:
        stream = client.stream_message("slow 10")
        events = [next(iter(stream))]
        proxy.reset_peer()
        events += list(stream)
        assert stream.reconnects >= 1
        assert delivered_text(events) == "".join(f"{i}," for i in range(10))
        final = stream.get_final_task()
        assert final == grpc_client.get_task(final.id)
    finally:
        client.close()
        through.close()
