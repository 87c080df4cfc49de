"""The client against A2A agents nobody here wrote: fasta2a 2.1 (plain worker and
pydantic-ai's bridge) and VoltAgent 2 (issue 22; their deviations: docs/interop.md).

Each test runs once per peer (:func:`tests.peers.third_party.third_party_agent`): stream,
subscribe, cut-and-recover through the fault proxy with the resilient client, and error
mapping. The peers answer "chunks N"/"slow N" with the text ``0,1,...`` — fasta2a as an
artifact, VoltAgent as the status message — and "fail" by failing the task.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Iterator

import attrs
import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync.a2a.accumulate import accumulate
from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.errors import (
    InternalError,
    MethodNotFound,
    TaskFailed,
    TaskNotFound,
    TaskWaitTimeout,
)
from a2a_sync.types import StreamEvent, Task, TaskState
from tests.peers.third_party import ThirdPartyAgent, third_party_agent  # noqa: F401
from tests.support.faultproxy import FaultProxy
from tests.support.fixtures import FaultProxyFactory

from .conftest import PEER_TIMEOUT
from .test_resilient_interop import CONFIG, ClearProxy

pytestmark = pytest.mark.peer


def lenient_fold(events: Iterable[StreamEvent]) -> Task:
    """The task a consumer folding every event gets (tolerating a first ``append``)."""
    task: Task | None = None
    for event in events:
        task = accumulate(task, event, notes=[])
    assert task is not None
    return task


def answer_text(task: Task) -> str:
    """What the agent answered: its artifacts' text, else its status message's."""
    if task.artifacts:
        return "".join(a.text for a in task.artifacts)
    return task.status.message.text if task.status.message is not None else ""


@pytest.fixture
def client(third_party_agent: ThirdPartyAgent) -> Iterator[A2AClient]:  # noqa: F811
    with A2AClient.from_url(third_party_agent.card_url, timeout=PEER_TIMEOUT) as client:
        yield client


def via(proxy: FaultProxy, agent: ThirdPartyAgent, direct: A2AClient) -> A2AClient:
    """A client of ``agent`` through ``proxy`` (the endpoint's path kept)."""
    path = direct.url.removeprefix(agent.base_url)
    transport = HTTPTransport(timeout=PEER_TIMEOUT)
    return A2AClient(proxy.url + path, revision=direct.revision, transport=transport)


def test_the_card_is_read_and_an_interface_chosen(
    third_party_agent: ThirdPartyAgent,  # noqa: F811
    client: A2AClient,
) -> None:
    # fasta2a serves a 1.0 card; VoltAgent a 0.3 card without protocolVersion.
    expected = "0.3" if third_party_agent.name == "voltagent" else "1.0"
    assert client.revision == expected
    assert client.url.startswith(third_party_agent.base_url)


def test_a_streamed_task_folds_to_the_stored_one(client: A2AClient) -> None:
    with client.stream_message("chunks 3") as stream:
        events = list(stream)
        final = stream.get_final_task()

    assert isinstance(events[0], Task)
    assert final.state is TaskState.completed
    assert answer_text(final) == "0,1,2,"
    stored = client.get_task(final.id)
    assert (stored.state, answer_text(stored)) == (final.state, answer_text(final))


def test_send_and_get_round_trip(client: A2AClient) -> None:
    sent = client.send_message("chunks 2")
    assert isinstance(sent, Task)
    task = ResilientA2AClient(client, CONFIG).wait_for_task(sent.id)
    assert answer_text(task) == "0,1,"


def test_subscribe_follows_a_running_task(
    third_party_agent: ThirdPartyAgent,  # noqa: F811
    client: A2AClient,
) -> None:
    with client.stream_message("slow 5") as started:
        first = next(iter(started))
        assert isinstance(first, Task)
        if not third_party_agent.resubscribe:
            with pytest.raises(MethodNotFound):
                client.subscribe(first.id).get_final_task()
            return
        with client.subscribe(first.id) as subscription:
            final = subscription.get_final_task()

    assert final.state is TaskState.completed
    assert answer_text(final) == "0,1,2,3,4,"


class ClearThenWait(ClearProxy):
    """Clears the proxy's cut, then really waits (polls of a real agent run in real time)."""

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        threading.Event().wait(seconds)


@pytest.mark.parametrize("cut_after", [2, 3])
def test_a_cut_stream_is_recovered_by_the_resilient_client(
    third_party_agent: ThirdPartyAgent,  # noqa: F811
    client: A2AClient,
    fault_proxy: FaultProxyFactory,
    cut_after: int,
) -> None:
    """fasta2a: resubscribe (its snapshot lags the stream until the task ends); the
    consumer folds exactly the stored task. VoltAgent has no tasks/resubscribe and stops
    working on a task whose stream was cut (docs/interop.md): polling finds it stuck, and
    the error says which task, that the stream dropped and what was tried."""
    proxy = fault_proxy(third_party_agent.base_url)
    config = CONFIG if third_party_agent.resubscribe else attrs.evolve(CONFIG, task_timeout=1.0)
    resilient = ResilientA2AClient(
        via(proxy, third_party_agent, client), config, sleep=ClearThenWait(proxy)
    )

    proxy.cut_after_events(cut_after)
    stream = resilient.stream_message("slow 5", context_id=str(uuid.uuid4()))
    if not third_party_agent.resubscribe:
        with pytest.raises(TaskWaitTimeout) as info:
            list(stream)
        message = str(info.value)
        assert "stream dropped" in message
        assert "1 resubscribe(s)" in message
        assert client.get_task(info.value.task_id).state is TaskState.working
        return
    events: list[StreamEvent] = list(stream)

    final = stream.get_final_task()
    assert stream.reconnects >= 1
    assert final.state is TaskState.completed
    assert answer_text(final) == "0,1,2,3,4,"
    assert answer_text(lenient_fold(events)) == "0,1,2,3,4,"
    assert answer_text(client.get_task(final.id)) == "0,1,2,3,4,"


def test_an_unknown_task_is_task_not_found(client: A2AClient) -> None:
    with pytest.raises(TaskNotFound):
        client.get_task(str(uuid.uuid4()))


def test_a_failing_agent_is_reported_as_the_peer_says(
    third_party_agent: ThirdPartyAgent,  # noqa: F811
    client: A2AClient,
) -> None:
    """fasta2a fails the task; VoltAgent answers message/send with a JSON-RPC internal
    error carrying the model's message (and leaves the task working)."""
    resilient = ResilientA2AClient(client, CONFIG)
    if third_party_agent.name == "voltagent":
        with pytest.raises(InternalError, match="failed on purpose"):
            resilient.send_and_wait("fail")
        return
    with pytest.raises(TaskFailed) as info:
        resilient.send_and_wait("fail")
    assert info.value.task_id
