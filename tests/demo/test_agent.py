"""The demo agent: its arithmetic, its skill against a scripted MCP tool, the real bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

from a2a_sync import A2AClient
from a2a_sync.demo.agent import DemoAgent, FactorizeExecutor, demo_card, format_factors, numbers_in
from a2a_sync.demo.mcp_tools import LARGEST, factorize, prime_factors
from a2a_sync.mcp import MCPConnection
from a2a_sync.testing import agent_server, mcp_server_command
from a2a_sync.types import Task, TaskState

WAIT = 5.0


@pytest.mark.parametrize(
    ("n", "factors"),
    [(2, [2]), (360, [2, 2, 2, 3, 3, 5]), (65537, [65537]), (600851475143, [71, 839, 1471, 6857])],
)
def test_prime_factors_multiply_back_to_n(n: int, factors: list[int]) -> None:
    assert prime_factors(n) == factors


@pytest.mark.parametrize("n", [1, 0, -5, LARGEST + 1, "12", 2.5, True, None])
def test_the_tool_refuses_what_is_not_a_whole_number_in_range(n: object) -> None:
    with pytest.raises(ValueError, match="whole number"):
        factorize({"n": n})


def test_factors_are_written_with_powers_and_primes_are_named() -> None:
    assert format_factors(360, [2, 2, 2, 3, 3, 5]) == "360 = 2^3 * 3^2 * 5"
    assert format_factors(7, [7]) == "7 is prime"


def test_numbers_in_keeps_the_factorable_ones_up_to_the_limit() -> None:
    assert numbers_in("factor 360, 1 and 0 then 1001") == [360, 1001]
    assert len(numbers_in(" ".join(["12"] * 50))) == 12


def scripted_factorize(structured: dict[str, object] | None, is_error: bool = False) -> list[str]:
    tool: dict[str, object] = {"is_error": is_error, "reply": "refused" if is_error else None}
    if structured is not None:
        tool["structured"] = structured
    return mcp_server_command(
        {"tools": {"factorize": {k: v for k, v in tool.items() if v is not None}}}
    )


def test_the_skill_streams_one_chunk_per_number_from_the_tool() -> None:
    argv = scripted_factorize({"n": 12, "factors": [2, 2, 3]})
    with MCPConnection.stdio(argv, timeout=WAIT) as tools:
        executor = FactorizeExecutor(tools.client(), chunk_interval=0.0)
        with (
            agent_server(executor, card=demo_card()) as url,
            A2AClient.from_url(url) as client,
            client.stream_message("factor 12 12") as stream,
        ):
            task = stream.get_final_task()
    assert task.state is TaskState.completed
    assert task.text == "12 = 2^2 * 3\n12 = 2^2 * 3\n"
    assert executor.runs == 1


def test_a_refusing_tool_fails_the_task_with_its_reason() -> None:
    with MCPConnection.stdio(scripted_factorize(None, is_error=True), timeout=WAIT) as tools:
        executor = FactorizeExecutor(tools.client(), chunk_interval=0.0)
        with agent_server(executor, card=demo_card()) as url, A2AClient.from_url(url) as client:
            task = client.send_message("factor 12")
    assert isinstance(task, Task)
    assert task.state is TaskState.failed
    assert task.text == "the factorize tool refused 12: refused"


def test_a_message_without_numbers_asks_for_some() -> None:
    with MCPConnection.stdio(scripted_factorize({"n": 2, "factors": [2]}), timeout=WAIT) as tools:
        executor = FactorizeExecutor(tools.client(), chunk_interval=0.0)
        with agent_server(executor, card=demo_card()) as url, A2AClient.from_url(url) as client:
            task = client.send_message("hello")
    assert isinstance(task, Task)
    assert task.state is TaskState.input_required


def test_the_demo_agent_counts_calls_and_reaps_its_tool_server(tmp_path: Path) -> None:
    agent = DemoAgent(str(tmp_path / "tasks.sqlite3"), chunk_interval=0.0)
    try:
        assert agent.tool_names == ["factorize"]
        with agent_server(agent.app) as url, A2AClient.from_url(url) as client:
            task = client.send_message("factor 360")
            assert isinstance(task, Task)
            assert task.text == "360 = 2^3 * 3^2 * 5\n"
            client.get_task(task.id)
        assert agent.handler.received == {"SendMessage": 1, "GetTask": 1}
        assert agent.executor.runs == 1
    finally:
        agent.close()
    assert agent.tools_returncode == 0
