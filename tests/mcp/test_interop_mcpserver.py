"""Interop with the official python-sdk ``MCPServer`` (mcp 2.3.0), over every way in.

Five ways, one feature set (the connection fixture ``peer`` is parametrized over them, one
module-scoped connection per way):

* ``stdio-legacy`` / ``stdio-modern``: the peer as a subprocess, pinned to the legacy era or
  auto-detected as modern.
* ``http-legacy``: Streamable HTTP with a session; server requests (sampling, elicitation,
  roots) arrive on the POST's stream and are answered by a second POST.
* ``http-modern``: Streamable HTTP auto-detected as modern: header mirroring, MRTR, closing
  the response stream is the cancel.
* ``http+sse``: the 2024-11-05 HTTP+SSE transport (``sse_app``: every answer on the GET
  stream).

A shared test runs over every way where its feature exists; a feature that only exists in
some ways is parametrized over those (``over(...)``), never skipped. The HTTP-only scenarios
(era detection and the HTTP+SSE fallback, resuming a cut response stream, session expiry,
x-mcp-header mismatch) stay at the end of this module rather than in a module of their own:
they reuse the HTTP servers this module already runs (no second start-up), and the whole
module stays well under the size limit.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

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
    ToolCall,
)
from a2a_sync.mcp.eras import ERA_CACHE

from .peers.launch import MCPSERVER_PEER, mcpserver_http

pytestmark = pytest.mark.peer

STDIO_ARGV = [sys.executable, MCPSERVER_PEER]
MODERN = ("stdio-modern", "http-modern")
LEGACY = ("stdio-legacy", "http-legacy", "http+sse")
WAYS = ("stdio-legacy", "stdio-modern", "http-legacy", "http-modern", "http+sse")
#: How long the peer waits for a cancel to reach a ``slow`` call (well under the call timeout).
CANCEL_SEEN_TIMEOUT = 5.0


def over(*ways: str) -> pytest.MarkDecorator:
    """Run a test only over ``ways``: the ones where its feature exists."""
    return pytest.mark.parametrize("peer", ways, indirect=True)


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

    def callbacks(self) -> dict[str, Any]:
        """The connection options that route the server's requests to this recorder."""
        return {
            "sampling_callback": self.sample,
            "elicitation_callback": self.elicit,
            "roots_callback": lambda: [Root(uri="file:///work", name="work")],
            "logging_callback": self.logs.append,
            "log_level": "debug",
        }


@attrs.frozen
class Peer:
    """A connection to the peer, the recorder behind its callbacks, and the way in."""

    conn: MCPConnection
    recorder: Recorder
    way: str


@pytest.fixture(scope="module")
def streamable_url() -> Iterator[str]:
    with mcpserver_http("http") as base:
        yield base + "/mcp"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    with mcpserver_http("sse") as base:
        yield base + "/sse"


def connect(url: str, era: str, recorder: Recorder, **options: Any) -> MCPConnection:
    return MCPConnection.http(url, era=era, **recorder.callbacks(), **options)


@pytest.fixture(scope="module", params=WAYS)
def peer(request: pytest.FixtureRequest) -> Iterator[Peer]:
    way: str = request.param
    recorder = Recorder()
    era = "auto" if way in MODERN else "legacy"  # auto detects modern on this peer
    if way.startswith("stdio"):
        conn = MCPConnection.stdio(STDIO_ARGV, era=era, **recorder.callbacks())
    elif way == "http+sse":
        conn = connect(request.getfixturevalue("sse_url"), era, recorder, transport="sse")
    else:
        conn = connect(request.getfixturevalue("streamable_url"), era, recorder)
    with conn:
        yield Peer(conn, recorder, way)


@pytest.fixture
def client(peer: Peer) -> MCPClient:
    return peer.conn.client(timeout=10)


# --- every way ---------------------------------------------------------------------------------


def test_negotiation_reports_server_capabilities_and_era(peer: Peer) -> None:
    info = peer.conn.server_info
    assert info.name == "Peer"
    assert info.instructions == "A test peer."
    assert info.capabilities.tools is not None
    assert info.capabilities.completions is not None
    expected = ("modern", "2026-07-28") if peer.way in MODERN else ("legacy", "2025-11-25")
    assert (peer.conn.era, peer.conn.protocol_version) == expected


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


def test_sampling_request_is_answered_while_the_call_is_open(client: MCPClient, peer: Peer) -> None:
    assert client.call_tool("sampled").text == "hi from the model"
    request = peer.recorder.sampling[-1]
    assert request.max_tokens == 20
    assert request.messages[0].content.text == "Say hi"  # type: ignore[union-attr]


def test_elicitation_request_reaches_the_callback(client: MCPClient, peer: Peer) -> None:
    assert client.call_tool("greet").text == "Hello, Ada!"
    request = peer.recorder.elicitations[-1]
    assert request.message == "What is your name?"
    assert request.mode == "form"
    assert request.requested_schema is not None
    assert "name" in request.requested_schema["properties"]


def test_declined_elicitation_fails_the_tool(client: MCPClient, peer: Peer) -> None:
    peer.recorder.elicit_answer = ElicitResult.decline()
    try:
        assert client.call_tool("greet").is_error is True
    finally:
        peer.recorder.elicit_answer = ElicitResult.accept({"name": "Ada"})


def test_roots_reach_the_server(client: MCPClient) -> None:
    assert client.call_tool("roots").structured_content == {"result": ["file:///work"]}


def test_log_messages_reach_the_logging_callback(client: MCPClient, peer: Peer) -> None:
    peer.recorder.logs.clear()
    assert client.call_tool("chatty").text == "said things"
    peer.conn.session.flush_callbacks()
    assert [(m.level, m.data) for m in peer.recorder.logs] == [
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


def test_timeout_cancels_the_call_on_the_server_and_the_connection_stays_usable(
    client: MCPClient, peer: Peer
) -> None:
    tag = f"timeout-{peer.way}"
    with pytest.raises(DeadlineExceeded):
        client.call_tool("slow", {"seconds": 30, "tag": tag}, timeout=0.5)
    # Legacy era and stdio: notifications/cancelled; modern HTTP: the closed response stream.
    assert tag in _cancelled_on_the_server(client, tag)
    assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_cancel_from_another_thread_reaches_the_server(client: MCPClient, peer: Peer) -> None:
    tag = f"cancel-{peer.way}"
    running = threading.Event()
    call = client.start_tool_call(
        "slow", {"seconds": 30, "tag": tag}, progress=lambda p: running.set()
    )
    assert running.wait(5)  # the server has the call: a cancel must reach it
    assert len(_cancel_while_another_thread_waits(call)) == 1
    assert tag in _cancelled_on_the_server(client, tag)
    assert client.call_tool("echo", {"text": "after cancel"}).text == "after cancel"


def test_a_call_cancelled_right_after_it_starts_leaves_the_connection_usable(
    client: MCPClient,
) -> None:
    # No wait for the server to have the call: the cancel may overtake it.
    call = client.start_tool_call("slow", {"seconds": 30})
    assert len(_cancel_while_another_thread_waits(call)) == 1
    assert client.call_tool("echo", {"text": "after cancel"}).text == "after cancel"


def _cancel_while_another_thread_waits(call: ToolCall) -> list[Cancelled]:
    """Cancel ``call`` while a second thread blocks on its result; what that thread raised."""
    errors: list[Cancelled] = []

    def wait() -> None:
        try:
            call.result()
        except Cancelled as exc:
            errors.append(exc)

    thread = threading.Thread(target=wait, name="a2a-sync-test-waiter")
    thread.start()
    assert call.cancel("user stop")
    thread.join(5)
    assert not thread.is_alive()
    return errors


def _cancelled_on_the_server(client: MCPClient, tag: str) -> list[str]:
    """The tags the server saw cancelled, once ``tag`` is among them or the peer gave up."""
    arguments = {"wait_for": tag, "timeout": CANCEL_SEEN_TIMEOUT}
    result: list[str] = client.call_tool("cancelled", arguments).structured_content["result"]
    return result


def test_ping(client: MCPClient) -> None:
    client.ping()


@over(*MODERN)
def test_listen_delivers_change_events_in_the_modern_era(client: MCPClient) -> None:
    with client.listen(tools=True, resource_uris=["config://app"], timeout=5) as subscription:
        assert subscription.granted["toolsListChanged"] is True
        assert client.call_tool("change").text == "changed"
        events = [subscription.get_event(5), subscription.get_event(5)]
    assert {(e.kind, e.uri) for e in events if e} == {
        ("tools", None),
        ("resource_updated", "config://app"),
    }


@over(*LEGACY)
def test_listen_is_refused_in_the_legacy_era(client: MCPClient) -> None:
    with pytest.raises(ConfigurationError):
        client.listen(tools=True)


# --- HTTP only ---------------------------------------------------------------------------------


@over("http-legacy", "http-modern")
def test_streamable_http_has_a_session_only_in_the_legacy_era(peer: Peer) -> None:
    assert peer.conn.transport.has_session is (peer.way == "http-legacy")  # type: ignore[attr-defined]


def test_x_mcp_header_mismatch_relists_tools_and_retries(streamable_url: str) -> None:
    # A fresh modern connection has not listed tools, so its first call lacks the
    # Mcp-Param-Region header the tool declares: the server answers HeaderMismatch.
    with MCPConnection.http(streamable_url, era="modern") as conn:
        client = conn.client(timeout=10)
        assert client.call_tool("regional", {"region": "eu-west"}).text == "region eu-west"
        assert conn.session.param_headers["regional"] == {"region": "Region"}
        assert client.call_tool("regional", {"region": "ünïcode"}).text == "region ünïcode"


def test_auto_detects_the_modern_era_and_caches_it(streamable_url: str) -> None:
    ERA_CACHE.clear()
    with MCPConnection.http(streamable_url) as conn:
        assert conn.era == "modern"
        assert ERA_CACHE.get(conn.transport.era_key) == "modern"


def test_auto_falls_back_to_http_sse_and_remembers_the_endpoint(sse_url: str) -> None:
    ERA_CACHE.clear()
    for _ in range(2):  # the second connection goes straight to HTTP+SSE
        with MCPConnection.http(sse_url) as conn:
            assert conn.transport.kind == "http+sse"  # type: ignore[attr-defined]
            assert conn.era == "legacy"
            assert conn.client(timeout=10).call_tool("add", {"a": 1, "b": 1}).text == "2"
    ERA_CACHE.clear()


def test_a_cut_response_stream_is_resumed_with_last_event_id() -> None:
    with (
        mcpserver_http("http", "--resumable") as base,
        MCPConnection.http(base + "/mcp", era="legacy") as conn,
    ):
        seen: list[str | None] = []
        result = conn.client(timeout=15).call_tool(
            "interrupted", progress=lambda p: seen.append(p.message)
        )
        assert result.text == "resumed"
        assert seen == ["before the cut", "after the cut"]


def test_an_expired_session_is_initialized_again_once(streamable_url: str) -> None:
    with connect(streamable_url, "legacy", Recorder()) as conn:
        client = conn.client(timeout=10)
        old = conn.transport._session.id  # type: ignore[attr-defined]
        # End the session behind the client's back: the server answers 404 from now on.
        assert requests.delete(
            streamable_url,
            headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-11-25"},
            timeout=5,
        ).ok
        assert client.call_tool("add", {"a": 2, "b": 2}).text == "4"
        assert conn.transport._session.id not in (None, old)  # type: ignore[attr-defined]
        assert client.call_tool("sampled").text == "hi from the model"  # callbacks still work
