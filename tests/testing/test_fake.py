"""FakeAgent, driven by the real A2A client through a real server (agent_server)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import pytest

from a2a_sync import A2AClient
from a2a_sync.errors import ConfigurationError, InvalidParams
from a2a_sync.server.executor import RequestContext, TaskUpdater
from a2a_sync.testing import DEFAULT_HOLD_TIMEOUT, FakeAgent, Script, agent_server
from a2a_sync.types import Message, Task, TaskArtifactUpdateEvent, TaskState

WAIT = 5.0


@pytest.fixture
def agent() -> FakeAgent:
    return FakeAgent("Scripted")


@pytest.fixture
def client(agent: FakeAgent) -> Iterator[A2AClient]:
    with agent_server(agent) as url, A2AClient.from_url(url, timeout=WAIT) as client:
        yield client


def test_a_reply_rule_answers_with_one_direct_message(agent: FakeAgent, client: A2AClient) -> None:
    agent.on("hello", reply="hi {text}")
    result = client.send_message("hello")
    assert isinstance(result, Message)
    assert result.text == "hi hello"


def test_chunks_stream_as_one_artifact_in_order(agent: FakeAgent, client: A2AClient) -> None:
    agent.on("report", chunks=["part 1, ", "part 2, ", "part 3"], delay=0.01)
    with client.stream_message("report") as stream:
        chunks = [e.artifact.text for e in stream if isinstance(e, TaskArtifactUpdateEvent)]
        task = stream.get_final_task()
    assert chunks == ["part 1, ", "part 2, ", "part 3"]
    assert task.state is TaskState.completed
    assert task.text == "part 1, part 2, part 3"


def test_ask_waits_for_input_and_the_answer_continues_the_task(
    agent: FakeAgent, client: A2AClient
) -> None:
    agent.on("weather?", ask="Which city?").on("Oslo", artifact="sunny in {text}")
    asked = client.send_message("weather?")
    assert isinstance(asked, Task)
    assert asked.state is TaskState.input_required
    assert asked.text == "Which city?"
    answered = client.reply(asked, "Oslo")
    assert isinstance(answered, Task)
    assert answered.id == asked.id
    assert (answered.state, answered.text) == (TaskState.completed, "sunny in Oslo")


def test_a_final_state_carries_its_message(agent: FakeAgent, client: A2AClient) -> None:
    agent.on("nope", state="failed", message="cannot do {text}")
    task = client.send_message("nope")
    assert isinstance(task, Task)
    assert task.state is TaskState.failed
    assert task.status.message is not None
    assert task.status.message.text == "cannot do nope"


def test_an_rpc_error_reaches_the_client_with_its_code(agent: FakeAgent, client: A2AClient) -> None:
    agent.on("bad", error=InvalidParams("the agent refuses this"))
    with pytest.raises(InvalidParams) as caught:
        client.send_message("bad")
    assert caught.value.code == -32602


def test_the_first_matching_rule_wins_and_patterns_and_predicates_match(
    agent: FakeAgent, client: A2AClient
) -> None:
    agent.on(re.compile(r"^sum \d+"), reply="pattern")
    agent.on(lambda text: text.endswith("!"), reply="predicate")
    agent.on(None, reply="anything")
    assert client.send_message("sum 1 2!").text == "pattern"
    assert client.send_message("stop!").text == "predicate"
    assert client.send_message("other").text == "anything"


def test_a_message_no_rule_matches_is_echoed(client: A2AClient) -> None:
    task = client.send_message("ping")
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "echo: ping")


def test_run_rules_call_your_own_executor(agent: FakeAgent, client: A2AClient) -> None:
    def shout(context: RequestContext, updater: TaskUpdater) -> None:
        updater.add_artifact(context.text.upper())
        updater.complete()

    agent.on("quiet", run=shout)
    assert client.send_message("quiet").text == "QUIET"


def test_messages_are_recorded_in_order(agent: FakeAgent, client: A2AClient) -> None:
    for text in ("one", "two", "three"):
        client.send_message(text)
    assert agent.wait_for_messages(3, WAIT)
    assert [m.text for m in agent.messages] == ["one", "two", "three"]


def test_a_held_run_finishes_only_after_release(agent: FakeAgent, client: A2AClient) -> None:
    agent.on("slow", artifact="done", hold=True)
    task = client.send_message("slow", return_immediately=True)
    assert isinstance(task, Task)
    assert agent.wait_for_messages(1, WAIT)
    assert client.get_task(task.id).state is TaskState.working
    with client.subscribe(task.id) as stream:
        agent.release()
        settled = stream.get_final_task()
    assert (settled.state, settled.text) == (TaskState.completed, "done")


def test_cancel_stops_a_held_run_and_is_recorded(agent: FakeAgent, client: A2AClient) -> None:
    agent.on("slow", hold=True)
    task = client.send_message("slow", return_immediately=True)
    assert isinstance(task, Task)
    assert agent.wait_for_messages(1, WAIT)
    assert client.cancel_task(task.id).state is TaskState.canceled
    assert agent.canceled == [task.id]


class _ReportingAgent(FakeAgent):
    """A FakeAgent that reports each run's end (an Event set when ``execute`` returns)."""

    def __init__(self) -> None:
        super().__init__()
        self.returned = threading.Event()

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        try:
            super().execute(context, updater)
        finally:
            self.returned.set()


def test_leaving_agent_server_interrupts_held_runs_at_once() -> None:
    agent = _ReportingAgent()
    agent.on("slow", hold=30.0)
    with agent_server(agent) as url, A2AClient.from_url(url, timeout=WAIT) as client:
        client.send_message("slow", return_immediately=True)
        assert agent.wait_for_messages(1, WAIT)
        assert not agent.returned.is_set()
    # The exit interrupted the 30 s hold: the run had ended when the block was left (the
    # server's 2 s grace would otherwise have run out with the agent still holding).
    assert agent.returned.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("a2a-sync-serve")]


@pytest.mark.parametrize(
    "options",
    [
        {"reply": "x", "chunks": ["y"]},
        {"reply": "x", "error": InvalidParams("e")},
        {"artifact": "x", "chunks": ["y"]},
        {"ask": "x", "message": "y"},
        {"run": lambda context, updater: None, "hold": True},
        {"delay": -1.0},
        {"state": "no-such-state"},
    ],
)
def test_conflicting_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        FakeAgent().on("x", **options)


def test_a_script_value_is_a_rule_and_keywords_apply_onto_it(
    agent: FakeAgent, client: A2AClient
) -> None:
    failing = Script(state="failed", message="cannot {text}")
    agent.on("fly", failing).on("swim", failing, message="no water for {text}")
    flown, swum = client.send_message("fly"), client.send_message("swim")
    assert isinstance(flown, Task)
    assert isinstance(swum, Task)
    assert (flown.state, flown.text) == (TaskState.failed, "cannot fly")
    assert (swum.state, swum.text) == (TaskState.failed, "no water for swim")
    assert failing.message == "cannot {text}"  # the value itself is unchanged


def test_the_shorthands_expand_into_the_script() -> None:
    assert Script().evolve(artifact="a") == Script(chunks=("a",))
    assert Script().evolve(ask="Which city?") == Script(
        state=TaskState.input_required, message="Which city?"
    )
    assert Script(hold=True).hold == DEFAULT_HOLD_TIMEOUT


def test_an_unknown_option_is_refused_naming_the_closest() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'reply'"):
        FakeAgent().on("x", replay="hi")
    with pytest.raises(ConfigurationError, match="error and reply cannot be combined"):
        Script(reply="x", error=InvalidParams("e"))


def test_the_card_is_the_fake_agents_own(client: A2AClient) -> None:
    assert client.card is not None
    assert client.card.name == "Scripted"
    assert client.card.capabilities.streaming
