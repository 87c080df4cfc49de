"""The official @a2a-js/sdk client (1.3) drives our server over JSON-RPC and HTTP+JSON.

Our app serves both bindings (``rest_path="/rest"``) and, with an empty
``supported_interfaces``, lists each for A2A 1.0 and 0.3 in its card. Each test runs one
scenario of :file:`tests/peers/a2a_js_client.mjs` in node: the JS client resolves that card,
picks the binding and revision under test (0.3 through the SDK's ``legacyCompat``
transports), makes its calls and prints what it saw as JSON; the assertions are here.
Where the scenario needs the agent in a given state (a task still running, released once a
subscriber is attached), the script stops at a ``sync`` line until this test has done its
part and answers on the script's stdin.

Errors are checked as the JS SDK's own classes (``err instanceof TaskNotFoundError`` ...):
TaskNotFound is TaskNotFound whichever binding carried it.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs
import pytest

from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from tests.peers import PEERS
from tests.peers.third_party import NODE_MODULES
from tests.server.agents import WAIT, EchoAgent, card

pytestmark = pytest.mark.peer

CLIENT: Final = str(PEERS / "a2a_js_client.mjs")
#: Longest one scenario may take, node start included (a loaded 2-core machine).
SCENARIO_TIMEOUT: Final = 60.0
BINDINGS: Final = ["JSONRPC", "HTTP+JSON"]
REVISIONS: Final = ["1.0", "0.3"]


@attrs.frozen
class Served:
    url: str
    binding: str
    revision: str
    agent: EchoAgent


@pytest.fixture(
    params=[(b, r) for b in BINDINGS for r in REVISIONS], ids=lambda p: f"{p[0]}-{p[1]}"
)
def served(request: pytest.FixtureRequest) -> Iterator[Served]:
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "@a2a-js" / "sdk" / "dist" / "client").is_dir():
        pytest.skip("node or @a2a-js/sdk 1.x is not installed (npm ci)")
    binding, revision = request.param
    agent = EchoAgent()
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, rest_path="/rest")
    with serve_in_thread(app) as url:
        yield Served(url, binding, revision, agent)
        agent.release.set()


def _lines(proc: subprocess.Popen[bytes], deadline: float) -> Iterator[str]:
    """Lines of ``proc``'s stdout until it closes; each wait bounded by ``deadline``."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                yield line.decode("utf-8")
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not selector.select(remaining):
                raise TimeoutError(f"no output from the JS client within {SCENARIO_TIMEOUT} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                if buffer:
                    yield buffer.decode("utf-8")
                return
            buffer += chunk


def run_js(
    served: Served, scenario: str, on_sync: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Run one scenario of the JS client against ``served``; its ``result`` object.

    ``on_sync`` is called for every ``{"sync": ...}`` line; the script goes on once it
    has returned."""
    argv = [
        str(shutil.which("node")),
        CLIENT,
        served.url,
        served.binding,
        served.revision,
        scenario,
    ]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=str(NODE_MODULES.parent),
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        result = None
        try:
            for line in _lines(proc, time.monotonic() + SCENARIO_TIMEOUT):
                message = json.loads(line)
                if "sync" in message:
                    assert on_sync is not None, f"unexpected sync: {message}"
                    on_sync(message)
                    proc.stdin.write(b"go\n")
                    proc.stdin.flush()
                else:
                    result = message["result"]
            code = proc.wait(SCENARIO_TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(SCENARIO_TIMEOUT)
            proc.stdin.close()
            proc.stdout.close()
            stderr.seek(0)
            errors = stderr.read()[-4000:].decode("utf-8", "replace")
        assert code == 0, f"the JS client failed ({scenario}): {errors}"
        assert result is not None, f"the JS client reported nothing ({scenario}): {errors}"
        return dict(result)


def sdk_error(found: dict[str, Any], name: str, served: Served) -> None:
    """``found`` (a call's outcome) is the JS SDK's ``name`` error class, as the binding
    carries it."""
    assert found["raised"], found
    assert found["classes"] == [name], found
    assert found["a2aError"] is True
    if served.revision == "1.0":  # the 1.0 transports say which binding carried it
        assert found["transport"] == {"JSONRPC": "jsonrpc", "HTTP+JSON": "rest"}[served.binding]


def _v03_rest_stream_appends(url: str) -> list[bool]:
    """``append`` of each artifact update on our 0.3 REST stream, as sent."""
    body = {"message": {"messageId": "m1", "role": "ROLE_USER", "content": [{"text": "chunks 3"}]}}
    request = urllib.request.Request(
        url + "/rest/v1/message:stream",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
    )
    with urllib.request.urlopen(request, timeout=WAIT) as response:
        events = [
            json.loads(line[len(b"data:") :])
            for line in response.read().splitlines()
            if line.startswith(b"data:")
        ]
    return [e["artifactUpdate"].get("append", False) for e in events if "artifactUpdate" in e]


def test_card_resolution_picks_the_binding_and_revision(served: Served) -> None:
    result = run_js(served, "card")
    base = served.url
    assert result["interfaces"] == [
        ["JSONRPC", "1.0", base + "/"],
        ["JSONRPC", "0.3", base + "/"],
        ["HTTP+JSON", "1.0", base + "/rest"],
        ["HTTP+JSON", "0.3", base + "/rest"],
    ]
    assert (result["transport"], result["protocolVersion"]) == (served.binding, served.revision)
    assert (result["name"], result["heldName"], result["skills"]) == (
        "Test agent",
        "Test agent",
        ["echo"],
    )
    assert result["streaming"] is True


def test_send_message_and_get_task(served: Served) -> None:
    result = run_js(served, "send")
    task = result["task"]
    assert (task["kind"], task["state"]) == ("task", "TASK_STATE_COMPLETED")
    assert task["artifacts"] == [{"name": "echo", "text": "echo: hello"}]
    assert task["history"] == ["hello"]
    assert result["reply"] == {"kind": "message", "role": "ROLE_AGENT", "text": "echo: reply"}
    assert (result["trimmed"]["id"], result["trimmed"]["history"]) == (task["id"], [])
    assert result["full"] == task
    assert served.agent.calls == 2


def test_stream_with_chunks_and_an_input_required_round_trip(served: Served) -> None:
    result = run_js(served, "stream")
    events = result["events"]
    assert [e["kind"] for e in events] == [
        "task",
        "statusUpdate",
        *["artifactUpdate"] * 3,
        "statusUpdate",
    ]
    task_id = events[0]["id"]
    assert all(e.get("taskId", task_id) == task_id for e in events)
    chunks = events[2:5]
    assert [c["text"] for c in chunks] == ["c0;", "c1;", "c2;"]
    assert len({c["artifactId"] for c in chunks}) == 1
    assert [c["lastChunk"] for c in chunks] == [False, False, True]
    if (served.binding, served.revision) == ("HTTP+JSON", "0.3"):
        # Our /v1 stream carries "append": true on chunks 2 and 3, but @a2a-js/sdk 1.3.0's
        # 0.3 REST transport drops the field (compat FromProto.taskArtifactUpdateEvent
        # copies lastChunk only).
        assert [c["append"] for c in chunks] == [False, False, False]
        assert _v03_rest_stream_appends(served.url) == [False, True, True]
    else:
        assert [c["append"] for c in chunks] == [False, True, True]
    assert events[-1]["state"] == "TASK_STATE_COMPLETED"

    question, answer = result["question"], result["answer"]
    assert question[-1] == {
        "kind": "statusUpdate",
        "taskId": question[0]["id"],
        "state": "TASK_STATE_INPUT_REQUIRED",
    }
    assert answer[0]["id"] == question[0]["id"]  # the same task carries on
    assert answer[0]["history"] == ["need input", "which city?", "Paris"]
    assert [e["text"] for e in answer if e["kind"] == "artifactUpdate"] == ["answer: Paris"]
    assert answer[-1]["state"] == "TASK_STATE_COMPLETED"


def test_cancel_a_running_task_and_a_finished_one(served: Served) -> None:
    def on_sync(message: dict[str, Any]) -> None:
        assert message["sync"] == "started"
        assert served.agent.started.wait(WAIT), "the agent never started"

    result = run_js(served, "cancel", on_sync)
    assert result["started"]["state"] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert result["canceled"]["id"] == result["started"]["id"]
    assert result["canceled"]["state"] == "TASK_STATE_CANCELED"
    sdk_error(result["notCancelable"], "TaskNotCancelableError", served)


def test_subscribe_mid_task_then_to_a_finished_task(served: Served) -> None:
    def on_sync(message: dict[str, Any]) -> None:
        if message["sync"] == "started":
            assert served.agent.started.wait(WAIT), "the agent never started"
        else:  # the subscriber has its first event: let the agent finish
            assert message["sync"] == "subscribed"
            served.agent.release.set()

    result = run_js(served, "subscribe", on_sync)
    events = result["events"]
    assert events[0]["kind"] == "task"
    assert (events[0]["id"], events[0]["state"]) == (result["taskId"], "TASK_STATE_WORKING")
    assert [e["text"] for e in events if e["kind"] == "artifactUpdate"] == ["echo: wait"]
    assert events[-1] == {
        "kind": "statusUpdate",
        "taskId": result["taskId"],
        "state": "TASK_STATE_COMPLETED",
    }
    sdk_error(result["settled"], "UnsupportedOperationError", served)


def test_push_notification_config_crud(served: Served) -> None:
    result = run_js(served, "push")
    created = result["created"]
    assert (created["id"], created["url"]) == ("cfg-1", "https://hooks.example/a")
    assert result["got"] == {"id": "cfg-1", "url": "https://hooks.example/a"}
    assert result["listed"] == ["cfg-1"]
    assert result["after"] == []
    sdk_error(result["missingTask"], "TaskNotFoundError", served)
    sdk_error(result["missingConfig"], "TaskNotFoundError", served)


def test_errors_map_to_the_sdk_classes_on_every_binding(served: Served) -> None:
    result = run_js(served, "errors")
    for call in ("getTask", "cancelTask", "subscribe", "unknownTaskMessage"):
        sdk_error(result[call], "TaskNotFoundError", served)
    sdk_error(result["finishedTaskMessage"], "UnsupportedOperationError", served)
    if served.revision == "1.0" and served.binding == "HTTP+JSON":
        assert result["getTask"]["statusCode"] == 404
        assert result["finishedTaskMessage"]["statusCode"] == 400
    if served.revision == "1.0" and served.binding == "JSONRPC":
        assert result["getTask"]["envelopeCode"] == -32001
    assert result["getTask"]["message"] == "Task not found"
