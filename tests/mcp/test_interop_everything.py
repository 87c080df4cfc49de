"""Interop with ``@modelcontextprotocol/server-everything`` 2026.8.31 over stdio (legacy era).

Needs ``npm ci`` at the repository top (installs ``node_modules/.bin/mcp-server-everything``).
Every tool it offers is called; the task-augmented ``simulate-research-query`` (experimental
tasks, not supported by this client) must come back as an error result.
"""

from __future__ import annotations

import json
import queue
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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

pytestmark = pytest.mark.peer

SERVER = Path(__file__).parents[2] / "node_modules" / ".bin" / "mcp-server-everything"

if not SERVER.exists() or shutil.which("node") is None:
    pytest.skip(
        "server-everything not installed (run `npm ci` at the repo top)", allow_module_level=True
    )


class Events:
    def __init__(self) -> None:
        self.sampling: list[CreateMessageRequest] = []
        self.elicitations: list[ElicitRequest] = []
        self.logs: queue.Queue[LoggingMessage] = queue.Queue()
        self.updates: queue.Queue[str] = queue.Queue()
        self.changed: queue.Queue[str] = queue.Queue()

    def sample(self, request: CreateMessageRequest) -> CreateMessageResult:
        self.sampling.append(request)
        return CreateMessageResult.from_text("the model says hi", model="test-model")

    def elicit(self, request: ElicitRequest) -> ElicitResult:
        self.elicitations.append(request)
        if request.mode == "url":
            return ElicitResult.accept()
        return ElicitResult.accept({"name": "Ada Lovelace", "check": True})


@pytest.fixture(scope="module")
def everything() -> Iterator[tuple[MCPConnection, Events]]:
    events = Events()
    conn = MCPConnection.stdio(
        [str(SERVER)],
        sampling_callback=events.sample,
        elicitation_callback=events.elicit,
        roots_callback=lambda: [Root(uri="file:///work", name="work")],
        logging_callback=events.logs.put,
        resource_updated_callback=events.updates.put,
        list_changed_callback=events.changed.put,
    )
    with conn:
        yield conn, events


@pytest.fixture
def client(everything: tuple[MCPConnection, Events]) -> MCPClient:
    return everything[0].client(timeout=15)


def test_auto_detection_falls_back_to_legacy_and_is_cached(
    everything: tuple[MCPConnection, Events],
) -> None:
    conn = everything[0]
    assert (conn.era, conn.protocol_version) == ("legacy", "2025-11-25")
    assert conn.server_info.name == "mcp-servers/everything"
    assert conn.server_info.instructions
    assert ERA_CACHE.get(conn.transport.era_key) == "legacy"


def test_capability_dependent_tools_are_announced_and_listed(
    client: MCPClient, everything: tuple[MCPConnection, Events]
) -> None:
    assert everything[1].changed.get(timeout=5) == "tools"
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


def test_echo(client: MCPClient) -> None:
    assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"


def test_get_sum(client: MCPClient) -> None:
    assert "3.5" in client.call_tool("get-sum", {"a": 1, "b": 2.5}).text


def test_get_env_shows_only_the_allow_listed_environment(client: MCPClient) -> None:
    env = json.loads(client.call_tool("get-env").text)
    assert set(env) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


def test_annotated_message_with_image(client: MCPClient) -> None:
    result = client.call_tool(
        "get-annotated-message", {"messageType": "error", "includeImage": True}
    )
    text, image = result.content[0], result.content[1]
    assert isinstance(text, TextContent)
    assert text.annotations is not None
    assert text.annotations.priority == 1.0
    assert isinstance(image, ImageContent)
    assert image.data.startswith(b"\x89PNG")


def test_tiny_image(client: MCPClient) -> None:
    images = [b for b in client.call_tool("get-tiny-image").content if isinstance(b, ImageContent)]
    assert images[0].mime_type == "image/png"


def test_resource_links(client: MCPClient) -> None:
    links = [
        b
        for b in client.call_tool("get-resource-links", {"count": 2}).content
        if isinstance(b, ResourceLink)
    ]
    assert len(links) == 2
    assert all(link.uri.startswith("demo://resource/dynamic/") for link in links)


@pytest.mark.parametrize(
    ("kind", "contents"), [("Text", TextResourceContents), ("Blob", BlobResourceContents)]
)
def test_embedded_resource_reference(client: MCPClient, kind: str, contents: type) -> None:
    result = client.call_tool("get-resource-reference", {"resourceType": kind, "resourceId": 2})
    embedded = [b for b in result.content if isinstance(b, EmbeddedResource)]
    assert isinstance(embedded[0].resource, contents)


def test_structured_content_is_validated_against_the_output_schema(client: MCPClient) -> None:
    result = client.call_tool("get-structured-content", {"location": "Chicago"})
    assert set(result.structured_content) == {"temperature", "conditions", "humidity"}
    typed = client.call_tool_typed(
        "get-structured-content", {"location": "Chicago"}, into=dict[str, Any]
    )
    assert typed == result.structured_content


def test_gzip_file_as_resource_creates_a_session_resource(client: MCPClient) -> None:
    result = client.call_tool(
        "gzip-file-as-resource",
        {"name": "hello.gz", "data": "data:text/plain;base64,aGVsbG8="},
    )
    (link,) = [b for b in result.content if isinstance(b, ResourceLink)]
    assert link.uri == "demo://resource/session/hello.gz"
    assert link.uri in {r.uri for r in client.list_resources()}
    (blob,) = client.read_resource(link.uri)
    assert isinstance(blob, BlobResourceContents)
    assert blob.blob.startswith(b"\x1f\x8b")  # gzip magic


def test_long_running_operation_reports_progress(client: MCPClient) -> None:
    seen: list[tuple[float, float | None]] = []
    result = client.call_tool(
        "trigger-long-running-operation",
        {"duration": 0.3, "steps": 3},
        progress=lambda p: seen.append((p.progress, p.total)),
    )
    assert "completed" in result.text
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_roots_are_answered(client: MCPClient) -> None:
    assert "file:///work" in client.call_tool("get-roots-list").text


def test_sampling_request(client: MCPClient, everything: tuple[MCPConnection, Events]) -> None:
    result = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 5})
    assert "the model says hi" in result.text
    request = everything[1].sampling[-1]
    assert request.max_tokens == 5
    assert request.system_prompt == "You are a helpful test server."


def test_form_elicitation(client: MCPClient, everything: tuple[MCPConnection, Events]) -> None:
    result = client.call_tool("trigger-elicitation-request")
    assert "Ada Lovelace" in result.text
    request = everything[1].elicitations[-1]
    assert request.mode == "form"
    assert request.requested_schema is not None
    assert "name" in request.requested_schema["properties"]


def test_url_elicitation(client: MCPClient, everything: tuple[MCPConnection, Events]) -> None:
    result = client.call_tool("trigger-url-elicitation", {"url": "https://example.com/auth"})
    assert not result.is_error
    request = everything[1].elicitations[-1]
    assert (request.mode, request.url) == ("url", "https://example.com/auth")
    assert request.elicitation_id


def test_task_augmented_tool_is_refused_as_an_error_result(client: MCPClient) -> None:
    assert client.call_tool("simulate-research-query", {"topic": "x"}).is_error is True


def test_simulated_logging_respects_the_level(
    client: MCPClient, everything: tuple[MCPConnection, Events]
) -> None:
    logs = everything[1].logs
    client.set_logging_level("debug")
    client.call_tool("toggle-simulated-logging")
    try:
        message = logs.get(timeout=8)
        assert message.level in (
            "debug",
            "info",
            "notice",
            "warning",
            "error",
            "critical",
            "alert",
            "emergency",
        )
    finally:
        client.call_tool("toggle-simulated-logging")


def test_resource_subscription_updates(
    client: MCPClient, everything: tuple[MCPConnection, Events]
) -> None:
    uri = "demo://resource/static/document/architecture.md"
    client.subscribe_resource(uri)
    client.call_tool("toggle-subscriber-updates")
    try:
        assert everything[1].updates.get(timeout=8) == uri
    finally:
        client.call_tool("toggle-subscriber-updates")
        client.unsubscribe_resource(uri)


def test_resources_and_templates(client: MCPClient) -> None:
    uris = {r.uri for r in client.list_resources()}
    assert "demo://resource/static/document/features.md" in uris
    templates = {t.uri_template for t in client.list_resource_templates()}
    assert "demo://resource/dynamic/text/{resourceId}" in templates
    (doc,) = client.read_resource("demo://resource/static/document/features.md")
    assert isinstance(doc, TextResourceContents)
    assert doc.text
    (text,) = client.read_resource("demo://resource/dynamic/text/3")
    assert "Resource 3" in text.text  # type: ignore[union-attr]


def test_prompts(client: MCPClient) -> None:
    names = {p.name for p in client.list_prompts()}
    assert names == {"simple-prompt", "args-prompt", "completable-prompt", "resource-prompt"}
    assert client.get_prompt("simple-prompt").messages
    args = client.get_prompt("args-prompt", {"city": "Paris"})
    assert "Paris" in args.messages[0].content.text  # type: ignore[union-attr]
    embedded = client.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "1"})
    assert any(isinstance(m.content, EmbeddedResource) for m in embedded.messages)


def test_completions_for_prompts_and_templates(client: MCPClient) -> None:
    prompt = PromptReference(name="completable-prompt")
    assert client.complete(prompt, "department", "E").values == ("Engineering",)
    names = client.complete(prompt, "name", "", context={"department": "Engineering"})
    assert "Alice" in names.values
    template = ResourceTemplateReference(uri="demo://resource/dynamic/text/{resourceId}")
    assert client.complete(template, "resourceId", "1").values == ("1",)


def test_ping(client: MCPClient) -> None:
    client.ping()
