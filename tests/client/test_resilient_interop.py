"""ResilientA2AClient against the official a2a-sdk 1.3 agent behind the fault proxy.

The scenarios of test_resilient.py with a real server: the agent (tests/peers) runs the
task while the proxy cuts the client's connection, and the agent itself is the witness of
what happened — ``ListTasks(context_id)`` shows how many tasks a message created and each
task's history how many user messages reached it. Stream scenarios run on A2A 1.0
(``SubscribeToTask``) and 0.3 (``tasks/resubscribe``).

The resilient client's ``sleep`` is the hook that makes cuts deterministic: it runs right
before each resubscribe, so clearing the proxy there leaves the new connection alone.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import attrs
import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.errors import (
    AuthRequired,
    InputRequired,
    OutcomeUnknown,
    TaskFailed,
    TaskRejected,
)
from a2a_sync.policies import PollPolicy, ResilienceConfig, Timeout
from a2a_sync.types import Message, Role, Task, TaskState
from tests.peers.fixtures import AgentProcess
from tests.support.faultproxy import FaultProxy
from tests.support.fixtures import FaultProxyFactory
from tests.support.polling import wait_until
from tests.support.ports import refused_url

from .conftest import PEER_TIMEOUT
from .test_resilient import Sleeps, delivered_text, fold

pytestmark = pytest.mark.peer

WAIT = 5.0

#: Short, real delays: the agent runs in real time ("slow N": a chunk every 50 ms).
CONFIG = ResilienceConfig(
    retry_base_delay=0.01,
    retry_max_delay=0.05,
    task_timeout=WAIT,
    poll=PollPolicy(initial_interval=0.02, max_interval=0.1),
)


@pytest.fixture
def proxy(a2a_sdk_agent: AgentProcess, fault_proxy: FaultProxyFactory) -> FaultProxy:
    return fault_proxy(a2a_sdk_agent.url)


@pytest.fixture
def direct(a2a_sdk_agent: AgentProcess) -> Iterator[A2AClient]:
    """A client of the agent that bypasses the proxy: the witness (ListTasks is 1.0)."""
    with A2AClient(a2a_sdk_agent.url, transport=HTTPTransport(timeout=PEER_TIMEOUT)) as client:
        yield client


def via(proxy: FaultProxy, revision: str = "1.0", **kwargs: object) -> A2AClient:
    transport = HTTPTransport(timeout=kwargs.pop("timeout", PEER_TIMEOUT))  # type: ignore[arg-type]
    return A2AClient(proxy.url + "/", revision=revision, transport=transport, **kwargs)  # type: ignore[arg-type]


class ClearProxy(Sleeps):
    """The resilient client's ``sleep``: records the wait and clears the proxy's cut."""

    def __init__(self, proxy: FaultProxy) -> None:
        super().__init__()
        self._proxy = proxy

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        self._proxy.clear()


def tasks_of(direct: A2AClient, context_id: str) -> list[Task]:
    return direct.list_tasks(context_id=context_id, history_length=10).tasks


def user_messages(task: Task) -> list[Message]:
    return [m for m in task.history if m.role is Role.user]


def await_tasks(direct: A2AClient, context_id: str, count: int) -> list[Task]:
    """ListTasks until ``count`` tasks of the context exist and are settled."""
    latest: list[Task] = []

    def settled() -> bool:
        latest[:] = tasks_of(direct, context_id)
        return len(latest) >= count and all(t.is_terminal for t in latest)

    # polling the agent itself (another process): no event to wait on
    wait_until(settled, f"{count} settled tasks in context {context_id}", WAIT)
    return latest


# -- L2 -------------------------------------------------------------------------------------------


def test_stream_cut_after_the_task_event_is_resumed_with_one_message_sent(
    proxy: FaultProxy, direct: A2AClient, revision: str
) -> None:
    """CR-01 on a real agent: exactly one task, one user message, every chunk once."""
    sleeps = ClearProxy(proxy)
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=sleeps)
    context_id = str(uuid.uuid4())

    proxy.cut_after_events(1)
    stream = client.stream_message("slow 10", context_id=context_id)
    events = list(stream)

    assert stream.reconnects >= 1
    assert not stream.polled
    assert isinstance(events[0], Task)
    assert delivered_text(events) == "".join(f"{i}," for i in range(10))
    final = stream.get_final_task()
    assert final.state is TaskState.completed
    assert final == direct.get_task(final.id)  # artifacts reassembled as the agent has them
    assert fold(events).artifacts == final.artifacts
    (task,) = tasks_of(direct, context_id)
    assert len(user_messages(task)) == 1


def test_fast_task_resumed_after_a_cut_delivers_every_chunk_once(
    proxy: FaultProxy, direct: A2AClient, revision: str
) -> None:
    """CR-03 on a real agent: a2a-sdk may repeat updates its subscription snapshot holds."""
    sleeps = ClearProxy(proxy)
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=sleeps)

    for _ in range(5):  # the repeat depends on timing inside the agent: several chances
        proxy.cut_after_events(1)
        stream = client.stream_message("chunks 30")
        events = list(stream)

        assert delivered_text(events) == "".join(f"{i}," for i in range(30))
        final = stream.get_final_task()
        assert final == direct.get_task(final.id)
        assert fold(events).artifacts == final.artifacts


def test_subscribe_follows_a_running_task_to_its_end(
    proxy: FaultProxy, direct: A2AClient, revision: str
) -> None:
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=Sleeps())
    started = direct.send_message("slow 5", return_immediately=True)
    assert isinstance(started, Task)

    stream = client.subscribe(started.id)
    events = list(stream)

    assert isinstance(events[0], Task)
    assert stream.get_final_task() == direct.get_task(started.id)
    assert delivered_text(events) == "0,1,2,3,4,"


def test_resubscribe_budget_spent_falls_through_to_polling(
    proxy: FaultProxy, direct: A2AClient, revision: str
) -> None:
    """CR-04: no resubscribe allowed; GetTask polling delivers the rest, once."""
    config = attrs.evolve(CONFIG, max_reconnect_attempts=0)
    client = ResilientA2AClient(via(proxy, revision), config, sleep=ClearProxy(proxy))
    context_id = str(uuid.uuid4())

    proxy.cut_after_events(2)
    stream = client.stream_message("slow 5", context_id=context_id)
    events = list(stream)

    assert stream.polled
    assert stream.reconnects == 0
    assert delivered_text(events) == "0,1,2,3,4,"
    assert stream.get_final_task() == direct.get_task(stream.get_final_task().id)
    assert len(tasks_of(direct, context_id)) == 1


def test_subscribing_to_a_finished_task_reads_it_once(
    proxy: FaultProxy, direct: A2AClient, revision: str
) -> None:
    """CR-05: a2a-sdk answers UnsupportedOperation; one GetTask gives the final task."""
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=Sleeps())
    done = client.send_message("chunks 3")
    assert isinstance(done, Task)

    stream = client.subscribe(done.id)

    assert list(stream) == [direct.get_task(done.id)]
    assert stream.get_final_task().text == "0,1,2,"
    assert not stream.polled


def test_agent_whose_card_says_no_streaming_is_sent_to_and_polled(
    proxy: FaultProxy, direct: A2AClient, a2a_sdk_agent: AgentProcess
) -> None:
    """CR-07: the card (not the agent) decides: SendMessage + GetTask, no stream."""
    card = A2AClient.from_url(a2a_sdk_agent.url).card
    assert card is not None
    no_streams = attrs.evolve(card, capabilities=attrs.evolve(card.capabilities, streaming=False))
    client = ResilientA2AClient(via(proxy, card=no_streams), CONFIG, sleep=Sleeps())

    stream = client.stream_message("slow 5")
    events = list(stream)

    assert stream.polled
    assert delivered_text(events) == "0,1,2,3,4,"
    assert fold(events).artifacts == direct.get_task(stream.get_final_task().id).artifacts


# -- L1 / CR-02: the outcome of a cut send is unknown ---------------------------------------------


def test_stream_cut_before_any_event_is_reported_and_not_resent(
    proxy: FaultProxy, direct: A2AClient
) -> None:
    """CR-02: the agent did get the message — which is why it is not sent again."""
    client = ResilientA2AClient(via(proxy), CONFIG, sleep=Sleeps())
    context_id = str(uuid.uuid4())
    message = Message.user("echo once", context_id=context_id)

    proxy.cut_after(0)  # the request goes up; not one byte of the answer comes back
    with pytest.raises(OutcomeUnknown) as info:
        client.stream_message(message)
    assert info.value.message_id == message.message_id

    (task,) = await_tasks(direct, context_id, 1)
    assert [m.message_id for m in user_messages(task)] == [message.message_id]


def test_a2a_sdk_runs_a_resent_message_again(direct: A2AClient) -> None:
    """Why resending is opt-in: a2a-sdk 1.3 does not deduplicate by messageId."""
    context_id = str(uuid.uuid4())
    message = Message.user("echo twice", context_id=context_id)

    direct.send_message(message)
    direct.send_message(message)

    assert len(tasks_of(direct, context_id)) == 2


# -- L3: outcomes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [("fail", TaskFailed), ("reject", TaskRejected), ("need auth", AuthRequired)],
)
def test_send_and_wait_maps_the_agents_outcomes(
    proxy: FaultProxy, revision: str, text: str, error: type[Exception]
) -> None:
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=Sleeps())

    with pytest.raises(error) as info:
        client.send_and_wait(text)
    assert info.value.task is not None  # type: ignore[attr-defined]


def test_send_and_wait_polls_a_slow_task_to_completion(proxy: FaultProxy, revision: str) -> None:
    sleeps = Sleeps()
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=sleeps)

    # The agent answers at once (return_immediately); the wait polls with real sleeps.
    result = client.send_and_wait("slow 5")

    assert isinstance(result, Task)
    assert result.text == "0,1,2,3,4,"


def test_input_required_is_answered_with_one_call(proxy: FaultProxy, revision: str) -> None:
    client = ResilientA2AClient(via(proxy, revision), CONFIG, sleep=Sleeps())

    with pytest.raises(InputRequired) as info:
        client.send_and_wait("need input")
    assert info.value.prompt == "which city?"

    answered = client.reply(info.value.task_id, "Paris")
    assert isinstance(answered, Task)
    assert answered.text == "city: Paris"


# -- L4 -------------------------------------------------------------------------------------------


def test_falls_back_to_the_a2a_sdk_agent_when_the_primary_is_down(proxy: FaultProxy) -> None:
    down = A2AClient(refused_url(), transport=HTTPTransport(timeout=PEER_TIMEOUT, sleep=Sleeps()))
    client = ResilientA2AClient(down, CONFIG, fallbacks=[via(proxy)], sleep=Sleeps())

    result = client.send_and_wait("echo hi")

    assert isinstance(result, Task)
    assert result.text == "hi"
    assert client.get_task(result.id) == result  # owned by the fallback now


# -- CT-18 ----------------------------------------------------------------------------------------


def test_twenty_threads_recover_when_the_agent_comes_back(
    proxy: FaultProxy, direct: A2AClient
) -> None:
    """The proxy black-holes every connection until each thread has tried twice."""
    threads = 20
    tasks = [direct.send_message("chunks 2", return_immediately=True) for _ in range(threads)]
    config = attrs.evolve(CONFIG, max_transport_retries=1)
    client = ResilientA2AClient(
        via(proxy, timeout=Timeout(connect=1.0, read=0.3, total=WAIT)), config
    )
    results: list[Task] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work(task_id: str) -> None:
        try:
            task = client.wait_for_task(task_id)
            with lock:
                results.append(task)
        except Exception as exc:
            with lock:
                errors.append(exc)

    proxy.blackhole()
    workers = [
        threading.Thread(target=work, args=(t.id,), name=f"a2a-sync-test-w{i}", daemon=True)
        for i, t in enumerate(tasks)
        if isinstance(t, Task)
    ]
    for worker in workers:
        worker.start()
    proxy.wait_for_connections(2 * threads)  # every call so far hangs unanswered
    proxy.clear()
    for worker in workers:
        worker.join(2 * WAIT)

    assert errors == []
    assert len(results) == threads
    assert all(task.text == "0,1," for task in results)
    # One poll per thread hangs in the black hole (1 + max_transport_retries connections),
    # the next one gets through: about 3 per thread here; twice that is the alarm bell.
    assert proxy.connections_accepted <= 2 * threads * (1 + config.max_transport_retries)
