"""Interop with ``@modelcontextprotocol/server-everything`` 2026.8.31, over stdio and HTTP.

The server speaks the legacy era only (TypeScript SDK 1.32), so auto-detection falls back
to it on both ways in (the connection fixture ``everything`` is parametrized over them, one
module-scoped connection per way):

* ``stdio``: the server as a subprocess.
* ``streamable-http``: a session; SSE answers that start with a priming event; server
  requests (sampling, elicitation, roots) on the POST's stream, and what is unrelated to a
  request (the roots request after start-up, resource updates, simulated logs) on the GET
  stream. After a session ends it answers 400 "No valid session ID provided" (not 404).

Every tool it offers is called over both; the task-augmented ``simulate-research-query``
(experimental tasks, not supported by this client) must come back as an error result. A
test whose feature exists on one way only is parametrized over that way (``over(...)``),
never skipped. The HTTP session scenarios stay at the end of this module rather than in one
of their own: they reuse the server this module already runs (no second start-up of node).
Needs ``npm ci`` at the repository top.
"""

from __future__ import annotations

import json
import queue
import shutil
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.mcp import (
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
from a2a_sync.mcp.eras import ERA_CACHE

from .peers.launch import EVERYTHING, everything_http

pytestmark = pytest.mark.peer

if not EVERYTHING.exists() or shutil.which("node") is None:
    pytest.skip(
        "server-everything not installed (run `npm ci` at the repo top)", allow_module_level=True
    )

WAYS = ("stdio", "streamable-http")
DOC = "demo://resource/static/document/architecture.md"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def over(*ways: str) -> pytest.MarkDecorator:
    """Run a test only over ``ways``: the ones where its feature exists."""
    return pytest.mark.parametrize("everything", ways, indirect=True)


class Events:
    """Callbacks that record what the server sent or asked, and answer from a script."""

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

    def callbacks(self) -> dict[str, Any]:
        """The connection options that route the server's messages here."""
        return {
            "sampling_callback": self.sample,
            "elicitation_callback": self.elicit,
            "roots_callback": self.roots,
            "logging_callback": self.logs.put,
            "resource_updated_callback": self.updates.put,
            "list_changed_callback": self.changed.put,
        }


@attrs.frozen
class Everything:
    """A connection to server-everything, the events it produced, and the way in."""

    conn: MCPConnection
    events: Events
    way: str


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with everything_http() as mcp_url:
        yield mcp_url


def connect(url: str, events: Events) -> MCPConnection:
    return MCPConnection.http(url, **events.callbacks())


@pytest.fixture(scope="module", params=WAYS)
def everything(request: pytest.FixtureRequest) -> Iterator[Everything]:
    way: str = request.param
    ERA_CACHE.clear()  # auto-detection must really probe
    events = Events()
    if way == "stdio":
        conn = MCPConnection.stdio([str(EVERYTHING)], **events.callbacks())
    else:
        conn = connect(request.getfixturevalue("url"), events)
    with conn:
        yield Everything(conn, events, way)


@pytest.fixture
def client(everything: Everything) -> MCPClient:
    return everything.conn.client(timeout=15)


# --- both ways ---------------------------------------------------------------------------------


def test_auto_detection_falls_back_to_legacy_and_is_cached(everything: Everything) -> None:
    conn = everything.conn
    assert (conn.era, conn.protocol_version) == ("legacy", "2025-11-25")
    assert conn.server_info.name == "mcp-servers/everything"
    assert conn.server_info.instructions
    assert ERA_CACHE.get(conn.transport.era_key) == "legacy"


def test_the_roots_request_the_server_sends_on_its_own_is_answered(
    everything: Everything,
) -> None:
    # 350 ms after initialization the server asks for roots, outside any request (over
    # HTTP the question comes on the GET stream, the answer goes back in a POST).
    assert everything.events.roots_asked.wait(5)


def test_capability_dependent_tools_are_listed(client: MCPClient) -> None:
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


def test_get_env_answers_with_the_servers_environment(client: MCPClient) -> None:
    assert isinstance(json.loads(client.call_tool("get-env").text), dict)


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


def test_roots_are_answered_mid_call(client: MCPClient) -> None:
    assert "file:///work" in client.call_tool("get-roots-list").text


def test_sampling_request(client: MCPClient, everything: Everything) -> None:
    result = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 5})
    assert "the model says hi" in result.text
    request = everything.events.sampling[-1]
    assert request.max_tokens == 5
    assert request.system_prompt == "You are a helpful test server."


def test_form_elicitation(client: MCPClient, everything: Everything) -> None:
    result = client.call_tool("trigger-elicitation-request")
    assert "Ada Lovelace" in result.text
    request = everything.events.elicitations[-1]
    assert request.mode == "form"
    assert request.requested_schema is not None
    assert "name" in request.requested_schema["properties"]


def test_url_elicitation(client: MCPClient, everything: Everything) -> None:
    result = client.call_tool("trigger-url-elicitation", {"url": "https://example.com/auth"})
    assert not result.is_error
    request = everything.events.elicitations[-1]
    assert (request.mode, request.url) == ("url", "https://example.com/auth")
    assert request.elicitation_id


def test_task_augmented_tool_is_refused_as_an_error_result(client: MCPClient) -> None:
    assert client.call_tool("simulate-research-query", {"topic": "x"}).is_error is True


def test_simulated_logging_respects_the_level(client: MCPClient, everything: Everything) -> None:
    # Over HTTP these messages are unrelated to any request: they come on the GET stream.
    everything.events.drain()
    client.set_logging_level("debug")
    client.call_tool("toggle-simulated-logging")
    try:
        assert everything.events.logs.get(timeout=8).level in LEVELS
    finally:
        client.call_tool("toggle-simulated-logging")


def test_resource_subscription_updates(client: MCPClient, everything: Everything) -> None:
    # Over HTTP the updates come on the GET stream.
    everything.events.drain()
    client.subscribe_resource(DOC)
    client.call_tool("toggle-subscriber-updates")
    try:
        assert everything.events.updates.get(timeout=8) == DOC
    finally:
        client.call_tool("toggle-subscriber-updates")
        client.unsubscribe_resource(DOC)


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


# --- stdio only --------------------------------------------------------------------------------


@over("stdio")
def test_capability_dependent_tools_are_announced(everything: Everything) -> None:
    # Over HTTP their tools/list_changed goes out while notifications/initialized is
    # answered, to a GET stream no client can have opened yet: it is lost by design.
    assert everything.events.changed.get(timeout=5) == "tools"


@over("stdio")
def test_the_server_process_sees_only_the_allow_listed_environment(client: MCPClient) -> None:
    env = json.loads(client.call_tool("get-env").text)
    assert set(env) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


# --- Streamable HTTP only ----------------------------------------------------------------------


@over("streamable-http")
def test_streamable_http_falls_back_to_legacy_with_a_session(everything: Everything) -> None:
    assert everything.conn.transport.kind == "streamable-http"  # type: ignore[attr-defined]
    assert everything.conn.transport.has_session  # type: ignore[attr-defined]


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
