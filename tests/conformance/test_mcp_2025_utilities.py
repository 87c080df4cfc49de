"""MCP 2025-11-25 client requirements for sampling, logging, completion, cancellation and
tasks, over stdio against a scripted server (:mod:`.mcp_stdio_peer`) that records every
message it reads. Sections are pages of modelcontextprotocol/modelcontextprotocol
``docs/specification/2025-11-25/``.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import A2ASyncError, DeadlineExceeded
from a2a_sync.mcp import (
    CreateMessageRequest,
    CreateMessageResult,
    LoggingMessage,
    MCPConnection,
    Root,
)
from a2a_sync.mcp.types import PromptReference

from .mcp_peer import answers_to, methods, peer, received, requests_named

requirement = pytest.mark.requirement
ERA = "2025-11-25"
WAIT = 10.0
TEXT = {"content": [{"type": "text", "text": "ok"}]}
SAMPLING: dict[str, Any] = {
    "id": "srv-sample",
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
        "maxTokens": 10,
    },
}


def plan(capabilities: dict[str, Any], replies: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"version": ERA, "capabilities": capabilities, "replies": replies, **extra}


@requirement("mcp-2025-11-25-§sampling-capability-declared")
@requirement("mcp-2025-11-25-§sampling-result-shape")
def test_sampling_is_declared_and_answered_with_a_message(tmp_path: Path) -> None:
    """With a sampling callback the client declares ``sampling`` and answers the server's
    ``sampling/createMessage`` with role, content and model."""
    record = tmp_path / "received.jsonl"
    asked: list[CreateMessageRequest] = []

    def sample(request: CreateMessageRequest) -> CreateMessageResult:
        asked.append(request)
        return CreateMessageResult.from_text("4", model="test-model")

    replies = {"tools/call": [{"send": [SAMPLING], "result": TEXT}]}
    argv = peer(record, plan({"tools": {}}, replies))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, sampling_callback=sample) as conn:
        assert conn.client().call_tool("t", {}).text == "ok"
    messages = received(record)
    assert "sampling" in messages[0]["params"]["capabilities"]
    assert asked[0].max_tokens == 10
    (answer,) = answers_to(messages, "srv-sample")
    result = answer["result"]
    assert result["role"] == "assistant"
    assert result["model"] == "test-model"
    assert result["content"] == {"type": "text", "text": "4"}


@requirement("mcp-2025-11-25-§sampling-not-declared-without-callback")
def test_without_a_callback_sampling_is_not_declared_and_a_request_is_refused(
    tmp_path: Path,
) -> None:
    """No sampling callback: no ``sampling`` capability, and a server that asks anyway
    gets a JSON-RPC error (never a made-up message)."""
    record = tmp_path / "received.jsonl"
    replies = {"tools/call": [{"send": [SAMPLING], "result": TEXT}]}
    with MCPConnection.stdio(peer(record, plan({"tools": {}}, replies)), era=ERA) as conn:
        conn.client().call_tool("t", {})
    messages = received(record)
    assert "sampling" not in messages[0]["params"]["capabilities"]
    (answer,) = answers_to(messages, "srv-sample")
    assert "result" not in answer
    assert isinstance(answer["error"]["code"], int)


@requirement("mcp-2025-11-25-§logging-set-level-only-when-declared")
@requirement("mcp-2025-11-25-§logging-messages-delivered")
def test_log_level_is_set_only_on_a_logging_server_and_messages_arrive(tmp_path: Path) -> None:
    """``log_level`` sends ``logging/setLevel`` (a valid RFC 5424 level) to a server that
    declared ``logging``, and its ``notifications/message`` reach the callback; to a
    server without ``logging`` nothing is sent."""
    record = tmp_path / "received.jsonl"
    heard: list[LoggingMessage] = []
    arrived = threading.Event()

    def on_log(message: LoggingMessage) -> None:
        heard.append(message)
        arrived.set()

    log = {
        "method": "notifications/message",
        "params": {"level": "error", "logger": "db", "data": {"detail": "disk full"}},
    }
    replies = {
        "logging/setLevel": [{"result": {}}],
        "tools/call": [{"send": [log], "result": TEXT}],
    }
    argv = peer(record, plan({"tools": {}, "logging": {}}, replies))
    with MCPConnection.stdio(
        argv, era=ERA, timeout=WAIT, log_level="warning", logging_callback=on_log
    ) as conn:
        conn.client().call_tool("t", {})
        assert arrived.wait(WAIT)
    (set_level,) = requests_named(received(record), "logging/setLevel")
    assert set_level["params"] == {"level": "warning"}
    assert heard == [LoggingMessage(level="error", data={"detail": "disk full"}, logger="db")]

    quiet = tmp_path / "quiet.jsonl"
    argv = peer(quiet, plan({"tools": {}}, {"tools/list": [{"result": {"tools": []}}]}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, log_level="warning") as conn:
        conn.client().list_tools()
    assert "logging/setLevel" not in methods(received(quiet))


@requirement("mcp-2025-11-25-§completion-request-shape")
def test_completion_request_names_the_reference_argument_and_context(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    values = {"completion": {"values": ["Paris", "Parma"], "total": 2, "hasMore": False}}
    replies = {"completion/complete": [{"result": values}]}
    argv = peer(record, plan({"prompts": {}, "completions": {}}, replies))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        completion = conn.client().complete(
            PromptReference(name="trip"), "city", "Par", context={"country": "FR"}
        )
    assert completion.values == ("Paris", "Parma")
    (sent,) = requests_named(received(record), "completion/complete")
    assert sent["params"] == {
        "ref": {"type": "ref/prompt", "name": "trip"},
        "argument": {"name": "city", "value": "Par"},
        "context": {"arguments": {"country": "FR"}},
    }


@requirement("mcp-2025-11-25-§completion-only-when-declared")
def test_completion_is_not_asked_of_a_server_without_the_capability(tmp_path: Path) -> None:
    """A server that did not declare ``completions`` is not sent ``completion/complete``
    (both parties use only negotiated capabilities)."""
    record = tmp_path / "received.jsonl"
    argv = peer(record, plan({"prompts": {}}, {}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        client = conn.client()
        # refusing locally, or surfacing the server's error, are both fine
        with contextlib.suppress(A2ASyncError):
            client.complete(PromptReference(name="trip"), "city", "Par")
        client.ping()  # the server has read everything before this
    assert "completion/complete" not in methods(received(record))


@requirement("mcp-2025-11-25-§logging-explicit-set-level-only-when-declared")
def test_an_explicit_set_level_is_not_sent_to_a_server_without_logging(tmp_path: Path) -> None:
    """``set_logging_level()`` on a connection whose server did not declare ``logging``
    sends no ``logging/setLevel``."""
    record = tmp_path / "received.jsonl"
    argv = peer(record, plan({"tools": {}}, {}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        client = conn.client()
        # refusing locally, or surfacing the server's error, are both fine
        with contextlib.suppress(A2ASyncError):
            client.set_logging_level("info")
        client.ping()  # the server has read everything before this
    assert "logging/setLevel" not in methods(received(record))


@requirement("mcp-2025-11-25-§cancellation-late-response-ignored")
def test_an_answer_after_the_cancellation_is_ignored(tmp_path: Path) -> None:
    """The server answers a request after the client gave up on it (and cancelled it):
    the late answer is dropped and the next call gets its own answer."""
    record = tmp_path / "received.jsonl"
    held = {"hold": True}
    late = {"id": "$last:tools/call", "result": {"content": [{"type": "text", "text": "late"}]}}
    replies = {
        "tools/call": [held, {"send": [], "result": TEXT}],
        # the ping's answer is preceded by the late answer to the cancelled call
        "ping": [{"send": [late], "result": {}}],
    }
    argv = peer(record, plan({"tools": {}}, replies))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        client = conn.client()
        with pytest.raises(DeadlineExceeded):
            client.call_tool("slow", {}, timeout=0.3)
        client.ping()  # answered after the late answer: that one has been read
        assert client.call_tool("next", {}).text == "ok"
    messages = received(record)
    (slow,) = [m for m in requests_named(messages, "tools/call") if m["params"]["name"] == "slow"]
    cancelled = [m for m in messages if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancelled] == [slow["id"]]


@requirement("mcp-2025-11-25-§cancellation-unknown-request-ignored")
def test_a_cancellation_for_an_unknown_request_is_ignored(tmp_path: Path) -> None:
    """The server cancels a request id the client never received: the client ignores it
    (no answer, no error) and carries on."""
    record = tmp_path / "received.jsonl"
    bogus = {"method": "notifications/cancelled", "params": {"requestId": "never-sent"}}
    replies = {"tools/call": [{"send": [bogus], "result": TEXT}]}
    argv = peer(record, plan({"tools": {}}, replies))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        client = conn.client()
        assert client.call_tool("t", {}).text == "ok"
        assert client.call_tool("t", {}).text == "ok"
    assert not answers_to(received(record), "never-sent")


@requirement("mcp-2025-11-25-§tasks-no-augmentation-without-support")
def test_the_client_declares_no_tasks_and_never_augments_a_request(tmp_path: Path) -> None:
    """a2a_sync does not implement the experimental tasks utility: it declares no
    ``tasks`` capability and never asks for task-augmented execution (``params.task``),
    even of a server that offers ``tasks.requests.tools.call``."""
    record = tmp_path / "received.jsonl"
    tasks: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    argv = peer(record, plan({"tools": {}, "tasks": tasks}, {"tools/call": [{"result": TEXT}]}))
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT) as conn:
        conn.client().call_tool("t", {})
    messages = received(record)
    assert "tasks" not in messages[0]["params"]["capabilities"]
    (call,) = requests_named(messages, "tools/call")
    assert "task" not in call["params"]


@requirement("mcp-2025-11-25-§roots-list-changed-notification")
def test_changed_roots_are_announced_with_a_notification(tmp_path: Path) -> None:
    """A client that declares ``roots.listChanged`` tells the server with
    ``notifications/roots/list_changed`` (a notification: no id) when its roots change."""
    record = tmp_path / "received.jsonl"
    argv = peer(record, plan({"tools": {}}, {}))
    roots = [Root(uri="file:///work", name="work")]
    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, roots_callback=lambda: roots) as conn:
        client = conn.client()
        client.notify_roots_changed()
        client.ping()  # the server has read the notification before this
    messages = received(record)
    assert messages[0]["params"]["capabilities"]["roots"] == {"listChanged": True}
    (changed,) = [m for m in messages if m.get("method") == "notifications/roots/list_changed"]
    assert "id" not in changed


@requirement("mcp-2025-11-25-§tasks-undeclared-augmentation-ignored")
def test_a_task_augmented_request_to_the_client_is_processed_normally(tmp_path: Path) -> None:
    """The client declared no ``tasks``: a sampling request that asks for a task anyway is
    processed normally (a plain result, no CreateTaskResult)."""
    record = tmp_path / "received.jsonl"
    augmented = {**SAMPLING, "params": {**SAMPLING["params"], "task": {"ttl": 60000}}}
    replies = {"tools/call": [{"send": [augmented], "result": TEXT}]}
    argv = peer(record, plan({"tools": {}}, replies))

    def sample(_request: CreateMessageRequest) -> CreateMessageResult:
        return CreateMessageResult.from_text("4", model="test-model")

    with MCPConnection.stdio(argv, era=ERA, timeout=WAIT, sampling_callback=sample) as conn:
        conn.client().call_tool("t", {})
    (answer,) = answers_to(received(record), "srv-sample")
    assert answer["result"]["model"] == "test-model"
    assert "task" not in answer["result"]


@pytest.mark.peer
@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_the_official_server_accepts_the_same_answers() -> None:
    """The same client behaviour against the official ``mcp`` 2.3.0 server (in process,
    handshake era), to show the scripted tests above expect what a real server accepts:
    it takes our sampling answer and our completion request, and its log messages reach
    the callback."""
    pytest.importorskip("mcp")
    from a2a_sync.testing.mcp_sdk import SDKServerTransport

    from .mcp_official import official_server

    heard: list[LoggingMessage] = []
    logged = threading.Event()

    def on_log(message: LoggingMessage) -> None:
        heard.append(message)
        logged.set()

    def sample(_request: CreateMessageRequest) -> CreateMessageResult:
        return CreateMessageResult.from_text("hi from the model", model="test-model")

    server = official_server()
    with MCPConnection(
        lambda: SDKServerTransport(server),
        era=ERA,
        timeout=WAIT,
        sampling_callback=sample,
        logging_callback=on_log,
    ) as conn:
        client = conn.client()
        assert client.call_tool("sampled", {}).text == "hi from the model"
        completion = client.complete(PromptReference(name="review"), "language", "p")
        assert set(completion.values) == {"python", "perl", "php"}
        assert client.call_tool("chatty", {}).text == "said things"
        assert logged.wait(WAIT)
    assert [m.level for m in heard] == ["warning"]
