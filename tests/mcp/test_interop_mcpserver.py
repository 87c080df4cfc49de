"""Interop with the official python-sdk ``MCPServer`` (mcp 2.3.0) over stdio, both eras."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.errors import Cancelled, ConfigurationError, DeadlineExceeded
from a2a_sync.mcp import (
    BlobResourceContents,
    CreateMessageRequest,
    CreateMessageResult,
    ElicitRequest,
    ElicitResult,
    ImageContent,
    LoggingMessage,
    MCPClient,
    MCPConnection,
    PromptReference,
    Root,
    TextResourceContents,
)

from .peers import PEERS

pytestmark = pytest.mark.peer

PEER = [sys.executable, str(PEERS / "mcpserver_peer.py")]


@attrs.define
class Point:
    x: int
    y: int


class Recorder:
    """Callbacks that record what the server asked and answer from a script."""

    def __init__(self) -> None:
        self.sampling: list[CreateMessageRequest] = []
        self.elicitations: list[ElicitRequest] = []
        self.logs: list[LoggingMessage] = []
        self.elicit_answer = ElicitResult.accept({"name": "Ada"})

    def sample(self, request: CreateMessageRequest) -> CreateMessageResult:
        self.sampling.append(request)
        return CreateMessageResult.from_text("hi from the model", model="test-model")

    def elicit(self, request: ElicitRequest) -> ElicitResult:
        self.elicitations.append(request)
        return self.elicit_answer


@pytest.fixture(scope="module", params=["legacy", "modern"])
def peer(request: pytest.FixtureRequest) -> Iterator[tuple[MCPConnection, Recorder]]:
    recorder = Recorder()
    era = "auto" if request.param == "modern" else "legacy"  # auto detects modern here
    conn = MCPConnection.stdio(
        PEER,
        era=era,
        sampling_callback=recorder.sample,
        elicitation_callback=recorder.elicit,
        roots_callback=lambda: [Root(uri="file:///work", name="work")],
        logging_callback=recorder.logs.append,
        log_level="debug",
    )
    assert conn.era == request.param
    with conn:
        yield conn, recorder


@pytest.fixture
def client(peer: tuple[MCPConnection, Recorder]) -> MCPClient:
    return peer[0].client(timeout=10)


def test_negotiation_reports_server_and_capabilities(peer: tuple[MCPConnection, Any]) -> None:
    conn = peer[0]
    info = conn.server_info
    assert info.name == "Peer"
    assert info.instructions == "A test peer."
    assert info.capabilities.tools is not None
    assert info.capabilities.completions is not None
    expected = "2026-07-28" if conn.era == "modern" else "2025-11-25"
    assert conn.protocol_version == expected


def test_tools_are_listed_with_schemas(client: MCPClient) -> None:
    tools = {tool.name: tool for tool in client.list_tools()}
    assert {"add", "echo", "point", "long_task", "greet", "sampled", "roots"} <= set(tools)
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["point"].output_schema is not None


def test_structured_output_is_validated_and_typed(client: MCPClient) -> None:
    result = client.call_tool("add", {"a": 2, "b": 3})
    assert result.structured_content == {"result": 5}
    assert result.text == "5"
    assert client.call_tool_typed("add", {"a": 2, "b": 3}, into=int) == 5
    assert client.call_tool_typed("point", {"x": 1, "y": 2}, into=Point) == Point(1, 2)


def test_image_content_is_decoded(client: MCPClient) -> None:
    block = client.call_tool("picture").content[0]
    assert isinstance(block, ImageContent)
    assert block.data == b"\x89PNG fake"
    assert block.mime_type == "image/png"


def test_tool_failure_is_an_error_result(client: MCPClient) -> None:
    assert client.call_tool("fail").is_error is True


def test_progress_updates_arrive_in_order_before_the_call_returns(client: MCPClient) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    result = client.call_tool(
        "long_task", {"steps": 3}, progress=lambda p: seen.append((p.progress, p.total, p.message))
    )
    assert result.text == "done 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_sampling_request_reaches_the_callback(
    client: MCPClient, peer: tuple[MCPConnection, Recorder]
) -> None:
    assert client.call_tool("sampled").text == "hi from the model"
    request = peer[1].sampling[-1]
    assert request.max_tokens == 20
    assert request.messages[0].content.text == "Say hi"  # type: ignore[union-attr]


def test_elicitation_request_reaches_the_callback(
    client: MCPClient, peer: tuple[MCPConnection, Recorder]
) -> None:
    assert client.call_tool("greet").text == "Hello, Ada!"
    request = peer[1].elicitations[-1]
    assert request.message == "What is your name?"
    assert request.mode == "form"
    assert request.requested_schema is not None
    assert "name" in request.requested_schema["properties"]


def test_declined_elicitation_fails_the_tool(
    client: MCPClient, peer: tuple[MCPConnection, Recorder]
) -> None:
    peer[1].elicit_answer = ElicitResult.decline()
    try:
        assert client.call_tool("greet").is_error is True
    finally:
        peer[1].elicit_answer = ElicitResult.accept({"name": "Ada"})


def test_roots_reach_the_server(client: MCPClient) -> None:
    assert client.call_tool("roots").structured_content == {"result": ["file:///work"]}


def test_log_messages_reach_the_logging_callback(
    client: MCPClient, peer: tuple[MCPConnection, Recorder]
) -> None:
    peer[1].logs.clear()
    assert client.call_tool("chatty").text == "said things"
    peer[0].session.flush_callbacks()
    assert [(m.level, m.data) for m in peer[1].logs] == [
        ("debug", "debug detail"),
        ("warning", "careful"),
    ]


def test_resources_list_templates_and_read(client: MCPClient) -> None:
    assert {r.uri for r in client.list_resources()} == {"config://app", "data://bytes"}
    templates = client.list_resource_templates()
    assert [t.uri_template for t in templates] == ["greeting://{name}"]
    (text,) = client.read_resource("config://app")
    assert isinstance(text, TextResourceContents)
    assert text.text == "debug=true"
    (blob,) = client.read_resource("data://bytes")
    assert isinstance(blob, BlobResourceContents)
    assert blob.blob == b"\x00\x01\x02"
    (greeting,) = client.read_resource("greeting://Bo")
    assert greeting.text == "Hello, Bo!"  # type: ignore[union-attr]


def test_prompts_list_and_get(client: MCPClient) -> None:
    (prompt,) = client.list_prompts()
    assert prompt.name == "review"
    assert [(a.name, a.required) for a in prompt.arguments] == [
        ("code", True),
        ("language", False),
    ]
    rendered = client.get_prompt("review", {"code": "x = 1", "language": "rust"})
    assert rendered.messages[0].role == "user"
    assert rendered.messages[0].content.text == "Please review this rust:\nx = 1"  # type: ignore[union-attr]


def test_completion(client: MCPClient) -> None:
    completion = client.complete(PromptReference(name="review"), "language", "p")
    assert completion.values == ("python", "perl", "php")


def test_timeout_cancels_and_the_connection_stays_usable(client: MCPClient) -> None:
    with pytest.raises(DeadlineExceeded):
        client.call_tool("slow", {"seconds": 30}, timeout=0.3)
    assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_explicit_cancel_from_another_thread(client: MCPClient) -> None:
    call = client.start_tool_call("slow", {"seconds": 30})
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            call.result()
        except Cancelled as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait)
    thread.start()
    assert call.cancel("user stop")
    thread.join(5)
    assert len(errors) == 1
    assert client.call_tool("echo", {"text": "after cancel"}).text == "after cancel"


def test_ping(client: MCPClient) -> None:
    client.ping()


def test_listen_delivers_change_events_in_the_modern_era(
    client: MCPClient, peer: tuple[MCPConnection, Recorder]
) -> None:
    if peer[0].era == "legacy":
        with pytest.raises(ConfigurationError):
            client.listen(tools=True)
        return
    with client.listen(tools=True, resource_uris=["config://app"], timeout=5) as subscription:
        assert subscription.granted["toolsListChanged"] is True
        assert client.call_tool("change").text == "changed"
        events = [subscription.get_event(5), subscription.get_event(5)]
    assert {(e.kind, e.uri) for e in events if e} == {
        ("tools", None),
        ("resource_updated", "config://app"),
    }
