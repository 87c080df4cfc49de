"""Issue 20 items 7 and 8: contextIds scoped per caller; ListTasks page tokens validated.

Black-box over HTTP against a2a_sync's server on every task store (in memory, SQLite,
PostgreSQL on the session's throwaway cluster).
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.server.stores import InMemoryTaskStore, SQLiteTaskStore, TaskStore
from tests.server.agents import WAIT, EchoAgent, card

ALICE = {"A2A-Version": "1.0", "Authorization": "Bearer alice-token"}
BOB = {"A2A-Version": "1.0", "Authorization": "Bearer bob-token"}


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    made: TaskStore
    if request.param == "memory":
        made = InMemoryTaskStore()
    elif request.param == "sqlite":
        made = SQLiteTaskStore(str(tmp_path / "t.db"))
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        from a2a_sync.server.stores.postgres import PostgresTaskStore

        made = PostgresTaskStore(dsn)
    with made:
        yield made


@pytest.fixture
def url(store: TaskStore) -> Iterator[str]:
    app = A2AApplication(
        card(),
        EchoAgent(),
        task_store=store,
        authenticate=BearerTokens({"alice-token": "alice", "bob-token": "bob"}),
    )
    with serve_in_thread(app) as base:
        yield base + "/"


def rpc(url: str, method: str, params: Any, headers: dict[str, str]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = requests.post(url, json=body, headers=headers, timeout=WAIT)
    assert response.status_code == 200, response.text
    return response.json()


def send(url: str, headers: dict[str, str], text: str, context_id: str) -> dict[str, Any]:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "contextId": context_id,
    }
    answer = rpc(url, "SendMessage", {"message": message}, headers)
    assert "result" in answer, answer
    return dict(answer["result"]["task"])


# -- 20.7 ----------------------------------------------------------------------------------


def test_context_ids_are_scoped_per_caller(url: str) -> None:
    """Bob naming a contextId Alice uses gets the same answer as for an unused id (his
    own conversation); neither caller sees the other's tasks in it (A2A 1.0 §13.1: no
    answer reveals another client's resources)."""
    alices = send(url, ALICE, "hello", "shared-ctx")
    bobs = send(url, BOB, "hi", "shared-ctx")
    unused = send(url, BOB, "hi", f"unused-{uuid.uuid4()}")
    assert bobs["status"]["state"] == unused["status"]["state"] == "TASK_STATE_COMPLETED"
    assert bobs["contextId"] == "shared-ctx"
    assert bobs["id"] != alices["id"]
    for headers, own in ((ALICE, alices), (BOB, bobs)):
        listed = rpc(url, "ListTasks", {"contextId": "shared-ctx"}, headers)["result"]
        assert [t["id"] for t in listed["tasks"]] == [own["id"]]
    # Alice's conversation goes on untouched by Bob's.
    again = send(url, ALICE, "more", "shared-ctx")
    listed = rpc(url, "ListTasks", {"contextId": "shared-ctx"}, ALICE)["result"]
    assert {t["id"] for t in listed["tasks"]} == {alices["id"], again["id"]}


# -- 20.8 ----------------------------------------------------------------------------------


def _unsigned(micros: int, task_id: str) -> str:
    raw = json.dumps([micros, task_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_forged_page_tokens_are_invalid_params(url: str, caplog: pytest.LogCaptureFixture) -> None:
    """A token the store did not issue (out-of-range number, other content, tampered
    tag, garbage) is -32602 with a message saying what to do; never -32603, nothing
    logged as an error. Genuine tokens page as before."""
    for index in range(3):
        send(url, ALICE, f"task {index}", "ctx")
    first = rpc(url, "ListTasks", {"pageSize": 2}, ALICE)["result"]
    token = first.get("nextPageToken", "")
    assert token, first
    second = rpc(url, "ListTasks", {"pageSize": 2, "pageToken": token}, ALICE)["result"]
    assert len(second["tasks"]) == 1
    assert not second.get("nextPageToken")
    tampered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    forged = [
        _unsigned(10**30, "x"),
        _unsigned(2**63, "x"),
        _unsigned(-(10**30), "x"),
        _unsigned(0, "x"),
        tampered,
        "not a token!",
    ]
    with caplog.at_level(logging.ERROR):
        for bad in forged:
            answer = rpc(url, "ListTasks", {"pageToken": bad}, ALICE)
            assert answer["error"]["code"] == -32602, (bad, answer)
            assert "pageToken" in answer["error"]["message"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    # A genuine token names a position, not a caller: Bob's listing stays his own.
    foreign = rpc(url, "ListTasks", {"pageToken": token}, BOB)
    assert "result" in foreign
    assert foreign["result"].get("tasks", []) == []
