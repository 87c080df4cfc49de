"""Interop with the official python-sdk ``MCPServer`` (mcp 2.3.0) over HTTP.

Three ways in, one feature set: Streamable HTTP in the legacy era (session, SSE answers,
server requests on the POST's stream answered by a second POST), Streamable HTTP in the
modern era (header mirroring, MRTR, closing the stream is the cancel), and the 2024-11-05
HTTP+SSE transport (``sse_app``: every answer on the GET stream). Plus the HTTP-only
behaviours: era detection and the HTTP+SSE fallback, resuming a cut response stream,
session expiry, x-mcp-header mismatch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.errors import Cancelled, ConfigurationError, DeadlineExceeded
from a2a_sync.mcp import (
    ERA_CACHE,
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

from .peers.launch import mcpserver_http

pytestmark = pytest.mark.peer

WAYS = ["legacy", "modern", "sse"]


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


@pytest.fixture(scope="module")
def streamable_url() -> Iterator[str]:
    with mcpserver_http("http") as base:
        yield base + "/mcp"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    with mcpserver_http("sse") as base:
        yield base + "/sse"


def connect(url: str, era: str, recorder: Recorder, **options: Any) -> MCPConnection:
    return MCPConnection.http(
        url,
        era=era,
        sampling_callback=recorder.sample,
        elicitation_callback=recorder.elicit,
        roots_callback=lambda: [Root(uri="file:///work", name="work")],
        logging_callback=recorder.logs.append,
        log_level="debug",
        **options,
    )


@pytest.fixture(scope="module", params=WAYS)
def peer(
    request: pytest.FixtureRequest, streamable_url: str, sse_url: str
) -> Iterator[tuple[MCPConnection, Recorder, str]]:
    way = request.param
    recorder = Recorder()
    if way == "sse":
        conn = connect(sse_url, "legacy", recorder, transport="sse")
    else:
        conn = connect(streamable_url, "auto" if way == "modern" else "legacy", recorder)
    with conn:
        yield conn, recorder, way


@pytest.fixture
def client(peer: tuple[MCPConnection, Recorder, str]) -> MCPClient:
    return peer[0].client(timeout=10)


def test_negotiation_reports_the_era_and_the_session(
    peer: tuple[MCPConnection, Recorder, str],
) -> None:
    conn, _, way = peer
    assert conn.server_info.name == "Peer"
    assert conn.server_info.instructions == "A test peer."
    expected = "2026-07-28" if way == "modern" else "2025-11-25"
    assert (conn.era, conn.protocol_version) == (
        "modern" if way == "modern" else "legacy",
        expected,
    )
    if way == "legacy":
        assert conn.transport.has_session  # type: ignore[attr-defined]
    if way == "modern":
        assert not conn.transport.has_session  # type: ignore[attr-defined]


def test_structured_output_is_validated_and_typed(client: MCPClient) -> None:
    assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    assert client.call_tool_typed("point", {"x": 1, "y": 2}, into=Point) == Point(1, 2)


def test_image_content_is_decoded(client: MCPClient) -> None:
    block = client.call_tool("picture").content[0]
    assert isinstance(block, ImageContent)
    assert block.data == b"\x89PNG fake"


def test_progress_arrives_in_order_before_the_call_returns(client: MCPClient) -> None:
    seen: list[tuple[float, str | None]] = []
    result = client.call_tool(
        "long_task", {"steps": 3}, progress=lambda p: seen.append((p.progress, p.message))
    )
    assert result.text == "done 3"
    assert seen == [(1, "step 1"), (2, "step 2"), (3, "step 3")]


def test_sampling_is_answered_while_the_call_is_open(
    client: MCPClient, peer: tuple[MCPConnection, Recorder, str]
) -> None:
    assert client.call_tool("sampled").text == "hi from the model"
    assert peer[1].sampling[-1].max_tokens == 20


def test_elicitation_accept_and_decline(
    client: MCPClient, peer: tuple[MCPConnection, Recorder, str]
) -> None:
    assert client.call_tool("greet").text == "Hello, Ada!"
    assert peer[1].elicitations[-1].message == "What is your name?"
    peer[1].elicit_answer = ElicitResult.decline()
    try:
        assert client.call_tool("greet").is_error is True
    finally:
        peer[1].elicit_answer = ElicitResult.accept({"name": "Ada"})


def test_roots_reach_the_server(client: MCPClient) -> None:
    assert client.call_tool("roots").structured_content == {"result": ["file:///work"]}


def test_log_messages_reach_the_logging_callback(
    client: MCPClient, peer: tuple[MCPConnection, Recorder, str]
) -> None:
    peer[1].logs.clear()
    assert client.call_tool("chatty").text == "said things"
    peer[0].session.flush_callbacks()
    assert [(m.level, m.data) for m in peer[1].logs] == [
        ("debug", "debug detail"),
        ("warning", "careful"),
    ]


def test_resources_templates_and_reads(client: MCPClient) -> None:
    assert {r.uri for r in client.list_resources()} == {"config://app", "data://bytes"}
    assert [t.uri_template for t in client.list_resource_templates()] == ["greeting://{name}"]
    (text,) = client.read_resource("config://app")
    assert isinstance(text, TextResourceContents)
    assert text.text == "debug=true"
    (blob,) = client.read_resource("data://bytes")
    assert isinstance(blob, BlobResourceContents)
    assert blob.blob == b"\x00\x01\x02"


def test_prompts_and_completion(client: MCPClient) -> None:
    rendered = client.get_prompt("review", {"code": "x = 1", "language": "rust"})
    assert rendered.messages[0].content.text == "Please review this rust:\nx = 1"  # type: ignore[union-attr]
    completion = client.complete(PromptReference(name="review"), "language", "p")
    assert completion.values == ("python", "perl", "php")


def test_timeout_cancels_the_call_on_the_server(
    client: MCPClient, peer: tuple[MCPConnection, Recorder, str]
) -> None:
    tag = f"timeout-{peer[2]}"
    with pytest.raises(DeadlineExceeded):
        client.call_tool("slow", {"seconds": 30, "tag": tag}, timeout=0.5)
    # Legacy eras: notifications/cancelled; modern: the closed response stream.
    assert _eventually_cancelled(client, tag)
    assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_cancel_from_another_thread(
    client: MCPClient, peer: tuple[MCPConnection, Recorder, str]
) -> None:
    tag = f"cancel-{peer[2]}"
    running = threading.Event()
    call = client.start_tool_call(
        "slow", {"seconds": 30, "tag": tag}, progress=lambda p: running.set()
    )
    assert running.wait(5)  # the server has the call: a cancel must reach it
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
    assert _eventually_cancelled(client, tag)


def _eventually_cancelled(client: MCPClient, tag: str) -> bool:
    """The server records cancelled calls; it learns of the cancel asynchronously."""
    for _ in range(50):
        if tag in client.call_tool("cancelled").structured_content["result"]:
            return True
        threading.Event().wait(0.1)
    return False


def test_ping(client: MCPClient) -> None:
    client.ping()


def test_listen_in_the_modern_era(
    client: MCPClient, peer: tuple[MCPConnection, Recorder, str]
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


# --- HTTP-specific behaviour -----------------------------------------------------------------


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
    recorder = Recorder()
    with connect(streamable_url, "legacy", recorder) as conn:
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
