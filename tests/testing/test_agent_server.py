"""agent_server: what it serves, where tasks live, and that it leaves nothing running."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from a2a_sync import A2AClient
from a2a_sync.errors import ConfigurationError
from a2a_sync.server import A2AApplication, AgentExecutor, SQLiteTaskStore
from a2a_sync.server.auth import ANONYMOUS
from a2a_sync.server.executor import RequestContext, TaskUpdater
from a2a_sync.testing import agent_card, agent_server
from a2a_sync.types import Task, TaskState

WAIT = 5.0


def shout(context: RequestContext, updater: TaskUpdater) -> None:
    updater.add_artifact(context.text.upper())
    updater.complete()


class Shout(AgentExecutor):
    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        shout(context, updater)


def serving_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("a2a-sync-serve")]


@pytest.mark.parametrize("agent", [shout, Shout()], ids=["function", "executor"])
def test_an_executor_is_served_with_the_default_card(agent: object) -> None:
    with agent_server(agent) as url, A2AClient.from_url(url, timeout=WAIT) as client:
        assert url.startswith("http://127.0.0.1:")
        assert client.card is not None
        assert client.card.name == agent_card().name
        assert client.send_message("hi").text == "HI"
    assert not serving_threads()


def test_an_application_is_served_as_it_is() -> None:
    app = A2AApplication(agent_card("Mine"), shout)
    with agent_server(app) as url, A2AClient.from_url(url, timeout=WAIT) as client:
        assert client.card is not None
        assert client.card.name == "Mine"
        assert client.send_message("x").text == "X"


def test_a_card_of_your_own_is_advertised() -> None:
    card = agent_card("Custom", streaming=False)
    with agent_server(shout, card=card) as url, A2AClient.from_url(url, timeout=WAIT) as client:
        assert client.card is not None
        assert (client.card.name, client.card.capabilities.streaming) == ("Custom", False)


def test_tasks_go_to_the_sqlite_file_and_stay_there(tmp_path: Path) -> None:
    database = str(tmp_path / "tasks.sqlite3")
    with agent_server(shout, database=database) as url, A2AClient.from_url(url) as client:
        task = client.send_message("keep me")
    assert isinstance(task, Task)
    store = SQLiteTaskStore(database)
    try:
        stored = store.get_task(task.id, principal=ANONYMOUS.name)
        assert stored is not None
        assert (stored.task.state, stored.task.text) == (TaskState.completed, "KEEP ME")
    finally:
        store.close()


def test_application_options_reach_the_application() -> None:
    with agent_server(shout, max_streams=1) as url, A2AClient.from_url(url) as client:
        assert client.send_message("ok").text == "OK"


@pytest.mark.parametrize(
    "options", [{"card": agent_card()}, {"database": "x.sqlite3"}, {"max_streams": 1}]
)
def test_options_for_a_ready_application_are_refused(options: dict[str, Any]) -> None:
    app = A2AApplication(agent_card(), shout)
    with pytest.raises(ConfigurationError), agent_server(app, **options):
        pass


def test_something_that_is_no_agent_is_refused() -> None:
    with pytest.raises(ConfigurationError), agent_server("not an agent"):
        pass
