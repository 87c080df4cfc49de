"""A2A client requirements: what a2a_sync's client puts on the wire, checked on a scripted
server that records every request (no a2a_sync server code involved).

The scripted agent serves a card (its ``supportedInterfaces`` chosen per test) and answers
every JSON-RPC call with a completed task (1.0 or 0.3 shape by method name), plus fields
no revision defines, which a client must ignore.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from a2a_sync.client import A2AClient, BearerToken
from a2a_sync.types import Task, TaskState, TaskStatusUpdateEvent
from tests.support.servers import (
    RecordedRequest,
    ScriptedServer,
    hold,
    respond_json,
    write_chunk,
    write_head,
)

requirement = pytest.mark.requirement

TASK10 = {
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.678Z"},
    "artifacts": [{"artifactId": "a-1", "parts": [{"text": "done", "futurePartField": 1}]}],
    "futureTaskField": {"nested": True},
}
TASK03 = {
    "kind": "task",
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "completed", "timestamp": "2026-01-02T03:04:05.678Z"},
    "artifacts": [{"artifactId": "a-1", "parts": [{"kind": "text", "text": "done"}]}],
    "futureTaskField": 1,
}


class ScriptedAgent:
    """A recording A2A agent: the card's interfaces are set by the test."""

    def __init__(self) -> None:
        self.interfaces: list[dict[str, Any]] = []
        self.card03 = False
        self.release = threading.Event()  # ends a stream the server keeps open
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url

    def card(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "name": "scripted",
            "description": "records requests",
            "version": "1.0.0",
            "capabilities": {"streaming": True, "extendedAgentCard": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "s", "description": "s", "tags": ["s"]}],
        }
        if self.card03:
            document.update(url=self.url + "/rpc03", protocolVersion="0.3.0")
            document["capabilities"] = {"streaming": True}
        else:
            document["supportedInterfaces"] = self.interfaces
        return document

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method == "GET":
            respond_json(sock, self.card())
            return
        body = request.json()
        method = body.get("method", "")
        if method == "message/stream":
            self.stream03(sock, body["id"])
            return
        if method == "GetExtendedAgentCard":
            result: Any = self.card()
        elif "/" in method:
            result = TASK03
        else:
            result = {"task": TASK10} if method == "SendMessage" else TASK10
        respond_json(sock, {"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    def stream03(self, sock: socket.socket, request_id: Any) -> None:
        """A 0.3 stream: the task, then its final status update; the connection then
        stays open (until ``release``) to show the client stops at ``final`` by itself."""
        final = {
            "kind": "status-update",
            "taskId": "t-1",
            "contextId": "c-1",
            "status": {"state": "completed"},
            "final": True,
        }
        write_head(
            sock, 200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]
        )
        for result in ({**TASK03, "status": {"state": "working"}}, final):
            event = {"jsonrpc": "2.0", "id": request_id, "result": result}
            write_chunk(sock, f"data: {json.dumps(event)}\n\n".encode())
        hold(self.release)
        write_chunk(sock, b"")

    def posts(self) -> list[RecordedRequest]:
        return [r for r in self.server.requests if r.method == "POST"]

    def interface(self, binding: str, version: str, path: str) -> dict[str, str]:
        return {"url": self.url + path, "protocolBinding": binding, "protocolVersion": version}


@pytest.fixture(scope="module")
def scripted() -> Iterator[ScriptedAgent]:
    agent = ScriptedAgent()
    with agent.server:
        yield agent
        agent.release.set()


@pytest.fixture
def agent(scripted: ScriptedAgent) -> ScriptedAgent:
    """The module's scripted agent, reset: a 1.0 card with one JSON-RPC interface."""
    scripted.card03 = False
    scripted.interfaces = [scripted.interface("JSONRPC", "1.0", "/rpc")]
    return scripted


def last_post(agent: ScriptedAgent, count: int) -> RecordedRequest:
    return agent.server.wait_for_requests(count)[-1]


@requirement("a2a-1.0-§8.3.2-client-picks-first-supported-interface")
def test_the_client_uses_the_first_interface_it_supports(agent: ScriptedAgent) -> None:
    """Of SOAP (not an A2A binding), JSON-RPC 1.0 at /first and JSON-RPC 1.0 at /second, the
    client calls /first: the earliest entry it supports, at that entry's URL."""
    agent.interfaces = [
        agent.interface("SOAP", "1.0", "/soap"),
        agent.interface("JSONRPC", "1.0", "/first"),
        agent.interface("JSONRPC", "1.0", "/second"),
    ]
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url) as client:
        client.send_message("hello")
    sent = agent.server.wait_for_requests(before + 2)[before:]
    assert [r.path for r in sent if r.method == "POST"] == ["/first"]


@requirement("a2a-1.0-§8.3.2-client-order-beats-revision")
def test_an_earlier_supported_interface_wins_over_a_newer_revision(agent: ScriptedAgent) -> None:
    """JSON-RPC 0.3 listed before JSON-RPC 1.0: both are supported, so the earlier entry
    (0.3) is the one to use. a2a_sync prefers its newest revision instead."""
    agent.interfaces = [
        agent.interface("JSONRPC", "0.3", "/old"),
        agent.interface("JSONRPC", "1.0", "/new"),
    ]
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url) as client:
        client.send_message("hello")
    sent = agent.server.wait_for_requests(before + 2)[before:]
    assert [r.path for r in sent if r.method == "POST"] == ["/old"]


@requirement("a2a-1.0-§3.6.1-client-sends-version")
@requirement("a2a-1.0-§3.6-client-sends-no-patch-version")
def test_the_client_names_major_minor_version_on_every_request(agent: ScriptedAgent) -> None:
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url) as client:
        client.send_message("hello")
        client.get_task("t-1")
    posts = [r for r in agent.server.wait_for_requests(before + 3)[before:] if r.method == "POST"]
    assert [r.headers.get("A2A-Version") for r in posts] == ["1.0", "1.0"]
    assert all(re.fullmatch(r"\d+\.\d+", r.headers["A2A-Version"]) for r in posts)


@requirement("a2a-1.0-§9.2-client-service-parameters-as-headers")
def test_requested_extensions_travel_in_one_header(agent: ScriptedAgent) -> None:
    """Extensions the client asks for go in ``A2A-Extensions``, comma-separated in one
    header field."""
    uris = ["https://example.com/ext/a/v1", "https://example.com/ext/b/v2"]
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url, extensions=uris) as client:
        client.send_message("hello")
    request = last_post(agent, before + 2)
    assert [u.strip() for u in request.headers["A2A-Extensions"].split(",")] == uris


@requirement("a2a-1.0-§9.3-client-jsonrpc-2-requests")
@requirement("a2a-1.0-§9.1-client-json-content-type")
def test_client_requests_are_jsonrpc_2_objects(agent: ScriptedAgent) -> None:
    """POSTed ``application/json`` JSON-RPC 2.0 requests with an id and the PascalCase
    method name; ids differ between requests."""
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url) as client:
        client.send_message("hello")
        client.get_task("t-1")
        client.cancel_task("t-1")
    posts = [r for r in agent.server.wait_for_requests(before + 4)[before:] if r.method == "POST"]
    bodies = [r.json() for r in posts]
    assert [b["method"] for b in bodies] == ["SendMessage", "GetTask", "CancelTask"]
    assert all(b["jsonrpc"] == "2.0" and b["id"] is not None for b in bodies)
    assert len({repr(b["id"]) for b in bodies}) == 3
    assert all(r.headers["Content-Type"].startswith("application/json") for r in posts)


@requirement("a2a-1.0-§5.5-client-camel-case-field-names")
def test_client_request_fields_are_camel_case(agent: ScriptedAgent) -> None:
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url) as client:
        client.send_message("hello", context_id="c-1", history_length=2)
    body = last_post(agent, before + 2).json()
    names: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                names.append(key)
                if key != "metadata":
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body["params"])
    assert "messageId" in names
    assert not [n for n in names if "_" in n]


@requirement("a2a-1.0-§5.7-client-ignores-unknown-fields")
@requirement("a2a-1.0-§5.6.1-client-parses-iso-timestamps")
def test_the_client_reads_answers_with_unknown_fields(agent: ScriptedAgent) -> None:
    with A2AClient.from_url(agent.url) as client:
        task = client.get_task("t-1")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.completed
    assert task.status.timestamp is not None
    assert (task.status.timestamp.year, task.status.timestamp.microsecond) == (2026, 678000)


@requirement("a2a-1.0-§3.1.11-client-authenticates-extended-card")
def test_the_extended_card_request_carries_the_credentials(agent: ScriptedAgent) -> None:
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url, credentials=BearerToken("tok-1")) as client:
        client.get_extended_card()
    request = last_post(agent, before + 2)
    assert request.json()["method"] == "GetExtendedAgentCard"
    assert request.headers["Authorization"] == "Bearer tok-1"


@requirement("a2a-0.3-§6.5-client-parts-carry-kind")
@requirement("a2a-0.3-§7.1-client-uses-slash-method-names")
def test_a_0_3_card_gets_0_3_requests(agent: ScriptedAgent) -> None:
    """A pure 0.3 card: ``message/send`` to the card's ``url`` with ``kind``-tagged
    message and parts."""
    agent.card03 = True
    before = len(agent.server.requests)
    with A2AClient.from_url(agent.url) as client:
        client.send_message("hello")
    request = last_post(agent, before + 2)
    body = request.json()
    assert request.path == "/rpc03"
    assert body["method"] == "message/send"
    message = body["params"]["message"]
    assert message["kind"] == "message"
    assert [p["kind"] for p in message["parts"]] == ["text"]


@requirement("a2a-0.3-§7.2-client-ends-at-final")
def test_a_0_3_stream_ends_at_the_final_update(agent: ScriptedAgent) -> None:
    """The 0.3 stream is over once a status update says ``final: true``, even while the
    server keeps the connection open."""
    agent.card03 = True
    with A2AClient.from_url(agent.url) as client, client.stream_message("hello") as stream:
        events = list(stream)
    agent.release.set()
    assert len(events) == 2
    last = events[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.completed
