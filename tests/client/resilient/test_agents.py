"""The AgentSet shared by the resilient client and its streams: the bounded owner table,
who is asked about a task, and waits that end when the set is closed.

No network: the agents are clients of loopback URLs that are never called.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from a2a_sync.client import A2AClient
from a2a_sync.client.resilient.agents import OWNER_MEMORY, AgentSet, OwnerTable
from a2a_sync.policies import ResilienceConfig
from a2a_sync.types import Message, Task, TaskState, TaskStatus

WAIT = 5.0  # bound of every wait on another thread


@pytest.fixture
def agents() -> Iterator[list[A2AClient]]:
    clients = [A2AClient(f"http://127.0.0.1:9/{name}/") for name in ("a", "b", "c")]
    yield clients
    for client in clients:
        client.close()


def task(task_id: str) -> Task:
    return Task(id=task_id, context_id="c1", status=TaskStatus(state=TaskState.working))


def test_a_full_owner_table_forgets_the_task_remembered_longest_ago(
    agents: list[A2AClient],
) -> None:
    table = OwnerTable(capacity=3)
    for index, task_id in enumerate(("t1", "t2", "t3", "t4")):
        table.remember(task_id, agents[index % 3])

    assert len(table) == 3
    assert table.task_ids() == ["t2", "t3", "t4"]
    assert table.get("t1") is None
    assert table.get("t4") is agents[0]


def test_remembering_a_task_again_makes_it_the_newest_with_its_new_owner(
    agents: list[A2AClient],
) -> None:
    table = OwnerTable(capacity=3)
    for task_id in ("t1", "t2", "t3"):
        table.remember(task_id, agents[0])
    table.remember("t1", agents[1])
    table.remember("t4", agents[2])

    assert table.task_ids() == ["t3", "t1", "t4"]  # t2 is now the oldest: forgotten
    assert table.get("t1") is agents[1]


def test_looking_a_task_up_does_not_keep_it_remembered(agents: list[A2AClient]) -> None:
    table = OwnerTable(capacity=2)
    table.remember("t1", agents[0])
    table.remember("t2", agents[0])
    assert table.get("t1") is agents[0]
    table.remember("t3", agents[0])

    assert table.task_ids() == ["t2", "t3"]


def test_the_owner_table_stays_bounded_under_concurrent_writers(
    agents: list[A2AClient],
) -> None:
    table = OwnerTable(capacity=100)
    start = threading.Barrier(8)

    def write(worker: int) -> None:
        start.wait(WAIT)
        for index in range(500):
            table.remember(f"w{worker}-{index}", agents[worker % 3])

    writers = [
        threading.Thread(target=write, args=(i,), name=f"a2a-sync-test-w{i}", daemon=True)
        for i in range(8)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(WAIT)
    assert not any(writer.is_alive() for writer in writers)

    assert len(table) == 100
    for task_id in table.task_ids():  # each kept task still names its own owner
        assert table.get(task_id) is agents[int(task_id[1 : task_id.index("-")]) % 3]


def test_a_task_is_asked_of_its_owner_when_known_and_of_every_agent_otherwise(
    agents: list[A2AClient],
) -> None:
    agent_set = AgentSet(agents, ResilienceConfig(), owner_memory=2)
    a, b, c = agent_set.agents
    assert agent_set.for_task("t1") == (a, b, c)
    assert agent_set.owner_of("t1") is a  # unknown: the primary

    agent_set.remember("t1", b)
    agent_set.remember("t2", None)  # no agent: nothing to remember
    assert agent_set.for_task("t1") == (b,)
    assert agent_set.owner_of("t1") is b
    assert agent_set.for_task("t2") == (a, b, c)

    agent_set.remember_result(task("t3"), c)
    agent_set.remember_result(Message.agent("hi", task_id="t4"), c)
    agent_set.remember_result(Message.agent("hi"), a)  # a reply without a task: nothing
    assert agent_set.for_task("t3") == (c,)
    assert agent_set.for_task("t4") == (c,)
    assert agent_set.for_task("t1") == (a, b, c)  # forgotten: the set remembers two


def test_the_default_owner_memory_is_bounded(agents: list[A2AClient]) -> None:
    agent_set = AgentSet(agents, ResilienceConfig())
    first = agent_set.agents[1]
    agent_set.remember("t0", first)
    for index in range(1, OWNER_MEMORY):
        agent_set.remember(f"t{index}", first)
    assert agent_set.for_task("t0") == (first,)  # exactly full: still known

    agent_set.remember(f"t{OWNER_MEMORY}", first)
    assert agent_set.for_task("t0") == agent_set.agents  # one more: the oldest is forgotten
    assert agent_set.for_task(f"t{OWNER_MEMORY}") == (first,)


def test_the_agents_are_copies_of_the_given_clients_in_order(
    agents: list[A2AClient],
) -> None:
    agent_set = AgentSet(agents, ResilienceConfig(max_transport_retries=4))
    assert [agent.url for agent in agent_set.agents] == [agent.url for agent in agents]
    assert all(
        agent is not original for agent, original in zip(agent_set.agents, agents, strict=True)
    )

    agent_set.close()
    assert agent_set.closing.is_set()


def test_a_wait_without_an_injected_sleep_ends_when_the_set_is_closed(
    agents: list[A2AClient],
) -> None:
    agent_set = AgentSet(agents, ResilienceConfig())
    waiting = threading.Thread(
        target=agent_set.wait, args=(60.0,), name="a2a-sync-test-waiter", daemon=True
    )
    waiting.start()
    agent_set.close()
    waiting.join(WAIT)
    assert not waiting.is_alive()  # well before the 60 s asked for


def test_a_wait_ends_on_the_callers_event_and_an_injected_sleep_replaces_it(
    agents: list[A2AClient],
) -> None:
    cancelled = threading.Event()
    cancelled.set()
    AgentSet(agents, ResilienceConfig()).wait(60.0, cancelled)  # returns at once

    slept: list[float] = []
    AgentSet(agents, ResilienceConfig(), sleep=slept.append).wait(2.5, cancelled)
    assert slept == [2.5]
