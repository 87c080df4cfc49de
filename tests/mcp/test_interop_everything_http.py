"""Interop with ``@modelcontextprotocol/server-everything`` 2026.8.31 over Streamable HTTP.

The server speaks the legacy era only (TypeScript SDK 1.32): sessions, SSE answers that
start with a priming event, server requests (sampling, elicitation, roots) on the POST's
stream, and notifications unrelated to a request (resource updates, simulated logs) on the
GET stream. After a session ends it answers 400 "No valid session ID provided" (not 404).
Needs ``npm ci`` at the repository top.
"""

from __future__ import annotations

import json
import queue
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from a2a_sync.mcp import (
    ERA_CACHE,
    BlobResourceContents,
    CreateMessageRequest,
    CreateMessageResult,
    ElicitRequest,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    LoggingMessage,
    MCPClient,
    MCPConnection,
    PromptReference,
    ResourceLink,
    ResourceTemplateReference,
    Root,
    TextContent,
    TextResourceContents,
)

from .peers.launch import EVERYTHING, everything_http

pytestmark = pytest.mark.peer

if not EVERYTHING.exists() or shutil.which("node") is None:
    pytest.skip(
        "server-everything not installed (run `npm ci` at the repo top)", allow_module_level=True
    )

DOC = "demo://resource/static/document/architecture.md"


class Events:
    def __init__(self) -> None:
        self.sampling: list[CreateMessageRequest] = []
        self.elicitations: list[ElicitRequest] = []
        self.logs: queue.Queue[LoggingMessage] = queue.Queue()
        self.updates: queue.Queue[str] = queue.Queue()
        self.changed: queue.Queue[str] = queue.Queue()
        self.roots_asked = threading.Event()

    def roots(self) -> list[Root]:
        self.roots_asked.set()
        return [Root(uri="file:///work", name="work")]

    def sample(self, request: CreateMessageRequest) -> CreateMessageResult:
        self.sampling.append(request)
        return CreateMessageResult.from_text("the model says hi", model="test-model")

    def elicit(self, request: ElicitRequest) -> ElicitResult:
        self.elicitations.append(request)
        if request.mode == "url":
            return ElicitResult.accept()
        return ElicitResult.accept({"name": "Ada Lovelace", "check": True})

    def drain(self) -> None:
        for q in (self.logs, self.updates):
            while not q.empty():
                q.get_nowait()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with everything_http() as mcp_url:
        yield mcp_url


def connect(url: str, events: Events, **options: Any) -> MCPConnection:
    return MCPConnection.http(
        url,
        sampling_callback=events.sample,
        elicitation_callback=events.elicit,
        roots_callback=events.roots,
        logging_callback=events.logs.put,
        resource_updated_callback=events.updates.put,
        list_changed_callback=events.changed.put,
        **options,
    )


@pytest.fixture(scope="module")
def everything(url: str) -> Iterator[tuple[MCPConnection, Events]]:
    ERA_CACHE.clear()
    events = Events()
    with connect(url, events) as conn:
        yield conn, events


@pytest.fixture
def client(everything: tuple[MCPConnection, Events]) -> MCPClient:
    return everything[0].client(timeout=15)


def test_auto_detection_falls_back_to_legacy_with_a_session(
    everything: tuple[MCPConnection, Events],
) -> None:
    conn = everything[0]
    assert (conn.era, conn.protocol_version) == ("legacy", "2025-11-25")
    assert conn.server_info.name == "mcp-servers/everything"
    assert conn.transport.kind == "streamable-http"  # type: ignore[attr-defined]
    assert conn.transport.has_session  # type: ignore[attr-defined]
    assert ERA_CACHE.get(conn.transport.era_key) == "legacy"


def test_a_server_request_on_the_get_stream_is_answered(
    everything: tuple[MCPConnection, Events],
) -> None:
    # 350 ms after initialization the server asks for roots, outside any request: the
    # question comes on the GET stream, the answer goes back in a POST.
    assert everything[1].roots_asked.wait(5)


def test_capability_dependent_tools_are_listed(client: MCPClient) -> None:
    # (Their tools/list_changed goes out while notifications/initialized is answered, to a
    # GET stream no client can have opened yet: over HTTP it is lost by design.)
    names = {tool.name for tool in client.list_tools()}
    assert {
        "echo",
        "get-annotated-message",
        "get-env",
        "get-resource-links",
        "get-resource-reference",
        "get-structured-content",
        "get-sum",
        "get-tiny-image",
        "gzip-file-as-resource",
        "toggle-simulated-logging",
        "toggle-subscriber-updates",
        "trigger-long-running-operation",
        "get-roots-list",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
    } <= names


def test_echo_and_sum(client: MCPClient) -> None:
    assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
    assert "3.5" in client.call_tool("get-sum", {"a": 1, "b": 2.5}).text


def test_get_env(client: MCPClient) -> None:
    assert isinstance(json.loads(client.call_tool("get-env").text), dict)


def test_annotated_message_and_images(client: MCPClient) -> None:
    result = client.call_tool(
        "get-annotated-message", {"messageType": "error", "includeImage": True}
    )
    text, image = result.content[0], result.content[1]
    assert isinstance(text, TextContent)
    assert text.annotations is not None
    assert text.annotations.priority == 1.0
    assert isinstance(image, ImageContent)
    assert image.data.startswith(b"\x89PNG")
    tiny = [b for b in client.call_tool("get-tiny-image").content if isinstance(b, ImageContent)]
    assert tiny[0].mime_type == "image/png"


def test_resource_links_and_embedded_resources(client: MCPClient) -> None:
    result = client.call_tool("get-resource-links", {"count": 2})
    links = [b for b in result.content if isinstance(b, ResourceLink)]
    assert len(links) == 2
    for kind, contents in (("Text", TextResourceContents), ("Blob", BlobResourceContents)):
        reference = client.call_tool(
            "get-resource-reference", {"resourceType": kind, "resourceId": 2}
        )
        embedded = [b for b in reference.content if isinstance(b, EmbeddedResource)]
        assert isinstance(embedded[0].resource, contents)


def test_structured_content_is_validated(client: MCPClient) -> None:
    result = client.call_tool("get-structured-content", {"location": "Chicago"})
    assert set(result.structured_content) == {"temperature", "conditions", "humidity"}
    typed = client.call_tool_typed(
        "get-structured-content", {"location": "Chicago"}, into=dict[str, Any]
    )
    assert typed == result.structured_content


def test_gzip_file_as_resource(client: MCPClient) -> None:
    result = client.call_tool(
        "gzip-file-as-resource",
        {"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8="},
    )
    (link,) = [b for b in result.content if isinstance(b, ResourceLink)]
    (blob,) = client.read_resource(link.uri)
    assert isinstance(blob, BlobResourceContents)
    assert blob.blob.startswith(b"\x1f\x8b")


def test_long_running_operation_reports_progress_on_the_post_stream(client: MCPClient) -> None:
    seen: list[tuple[float, float | None]] = []
    result = client.call_tool(
        "trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        progress=lambda p: seen.append((p.progress, p.total)),
    )
    assert "completed" in result.text
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_roots_sampling_and_elicitation_are_answered_mid_stream(
    client: MCPClient, everything: tuple[MCPConnection, Events]
) -> None:
    assert "file:///work" in client.call_tool("get-roots-list").text
    sampled = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 5})
    assert "the model says hi" in sampled.text
    assert everything[1].sampling[-1].max_tokens == 5
    assert "Ada Lovelace" in client.call_tool("trigger-elicitation-request").text
    assert everything[1].elicitations[-1].mode == "form"
    url_result = client.call_tool("trigger-url-elicitation", {"url": "https://example.com/auth"})
    assert not url_result.is_error
    assert everything[1].elicitations[-1].url == "https://example.com/auth"


def test_task_augmented_tool_is_an_error_result(client: MCPClient) -> None:
    assert client.call_tool("simulate-research-query", {"topic": "x"}).is_error is True


def test_simulated_logging_arrives_on_the_get_stream(
    client: MCPClient, everything: tuple[MCPConnection, Events]
) -> None:
    everything[1].drain()
    client.set_logging_level("debug")
    client.call_tool("toggle-simulated-logging")
    try:
        assert everything[1].logs.get(timeout=8).level
    finally:
        client.call_tool("toggle-simulated-logging")


def test_resource_updates_arrive_on_the_get_stream(
    client: MCPClient, everything: tuple[MCPConnection, Events]
) -> None:
    everything[1].drain()
    client.subscribe_resource(DOC)
    client.call_tool("toggle-subscriber-updates")
    try:
        assert everything[1].updates.get(timeout=8) == DOC
    finally:
        client.call_tool("toggle-subscriber-updates")
        client.unsubscribe_resource(DOC)


def test_resources_prompts_and_completions(client: MCPClient) -> None:
    assert "demo://resource/static/document/features.md" in {r.uri for r in client.list_resources()}
    templates = {t.uri_template for t in client.list_resource_templates()}
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    (text,) = client.read_resource("demo://resource/dynamic/text/3")
    assert "Resource 3" in text.text  # type: ignore[union-attr]
    assert {p.name for p in client.list_prompts()} == {
        "simple-prompt",
        "args-prompt",
        "completable-prompt",
        "resource-prompt",
    }
    assert "Paris" in client.get_prompt("args-prompt", {"city": "Paris"}).messages[0].content.text  # type: ignore[union-attr]
    prompt = PromptReference(name="completable-prompt")
    assert client.complete(prompt, "department", "E").values == ("Engineering",)
    template = ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}")
    assert client.complete(template, "resourceId", "1").values == ("1",)


def test_ping(client: MCPClient) -> None:
    client.ping()


# --- sessions ------------------------------------------------------------------------------------


def _end_session(url: str, session_id: str) -> None:
    """DELETE the session behind the client's back (what a server restart looks like)."""
    response = requests.delete(
        url,
        headers={"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"},
        timeout=5,
    )
    assert response.ok


def test_an_ended_session_answered_400_is_initialized_again_with_its_subscriptions(
    url: str,
) -> None:
    events = Events()
    with connect(url, events) as conn:
        client = conn.client(timeout=15)
        client.subscribe_resource(DOC)
        old = conn.transport._session.id  # type: ignore[attr-defined]
        _end_session(url, old)
        # The next call gets 400 "No valid session ID provided": one new session, and the
        # refused call is sent again on it.
        assert client.call_tool("echo", {"message": "again"}).text == "Echo: again"
        assert conn.transport._session.id not in (None, old)  # type: ignore[attr-defined]
        # The subscription was replayed on the new session and its GET stream is open.
        client.call_tool("toggle-subscriber-updates")
        try:
            assert events.updates.get(timeout=8) == DOC
        finally:
            client.call_tool("toggle-subscriber-updates")


def test_close_deletes_the_session(url: str) -> None:
    conn = connect(url, Events())
    session_id = conn.transport._session.id  # type: ignore[attr-defined]
    conn.close()
    refused = requests.post(
        url,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": "2025-11-25",
            "Accept": "application/json, text/event-stream",
        },
        timeout=5,
    )
    assert refused.status_code == 400
    assert "session" in refused.json()["error"]["message"].lower()
