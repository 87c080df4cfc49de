"""The Streamable HTTP transport against scripted servers (raw sockets, real HTTP).

Each test scripts the server's answers byte by byte, so the cases the official servers
never produce on demand are reachable: cut streams, session expiry, refusals, redirects.
Case ids from reliability-cases.md §8 (MH-xx) name what each test pins.
"""

from __future__ import annotations

import json
import logging
import queue
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from a2a_sync.errors import (
    ConfigurationError,
    ConnectionClosed,
    ConnectionLost,
    DeadlineExceeded,
    HTTPStatusError,
    InvalidParams,
    ProtocolError,
    RedirectRefused,
    SessionExpired,
    StreamInterrupted,
)
from a2a_sync.mcp import CreateMessageRequest, CreateMessageResult, HTTPOptions, MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from a2a_sync.mcp.transports.http import StreamableHTTPTransport
from a2a_sync.policies import ReconnectPolicy
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import (
    RecordedRequest,
    close_connection,
    respond,
    respond_json,
    write_chunk,
    write_head,
)

SESSION = "s3ss10n-0001"
TOKEN = "t0ken-very-secret"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
INIT_RESULT = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}, "logging": {}, "resources": {"subscribe": True}},
    "serverInfo": {"name": "scripted", "version": "1"},
}
DISCOVER_RESULT = {
    "resultType": "complete",
    "supportedVersions": [MODERN],
    "capabilities": {"tools": {}},
}

Handler = Callable[[socket.socket, RecordedRequest, dict[str, Any]], None]


# --- the scripted MCP server ------------------------------------------------------------------


def result_of(message: dict[str, Any], value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}


def text_result(message: dict[str, Any], text: str) -> dict[str, Any]:
    return result_of(message, {"content": [{"type": "text", "text": text}]})


def sse_head(sock: socket.socket) -> None:
    write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})


def sse_event(
    sock: socket.socket, data: Any = None, *, event_id: str | None = None, retry: int | None = None
) -> None:
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    lines.append("data: " + ("" if data is None else json.dumps(data)))
    write_chunk(sock, ("\n".join(lines) + "\n\n").encode())


def sse_end(sock: socket.socket) -> None:
    write_chunk(sock, b"")


def wait_closed(sock: socket.socket, timeout: float = 5) -> bool:
    """Block until the client closes the connection; True if it did in time."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


class Script:
    """A Streamable HTTP server: per-method handlers, with plain defaults.

    Defaults: ``initialize`` answers JSON with a session id, ``server/discover`` is
    refused like a legacy TypeScript server does, ``tools/list`` lists none,
    ``tools/call`` answers "ok", other requests get ``{}``,
    notifications and responses get 202, GET gets 405, DELETE gets 200.
    """

    def __init__(self, **handlers: Handler) -> None:
        self.on: dict[str, Handler] = {
            "initialize": self.initialize,
            "server/discover": self.not_initialized,
        }
        self.on.update({k.replace("__", "/"): v for k, v in handlers.items()})
        self.get: Callable[[socket.socket, RecordedRequest], None] = lambda s, r: respond(s, 405)
        self.delete: Callable[[socket.socket, RecordedRequest], None] = lambda s, r: respond(s, 200)
        self.session = SESSION
        self.posts: queue.Queue[dict[str, Any]] = queue.Queue()

    def __call__(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method == "GET":
            self.get(sock, request)
            return
        if request.method == "DELETE":
            self.delete(sock, request)
            return
        message = request.json()
        self.posts.put(message)
        handler = self.on.get(message.get("method", "(response)"))
        if handler is not None:
            handler(sock, request, message)
        elif message.get("method") == "tools/list":
            respond_json(sock, result_of(message, {"tools": []}))
        elif message.get("method") == "tools/call":
            respond_json(sock, text_result(message, "ok"))
        elif "id" in message and "method" in message:
            respond_json(sock, result_of(message, {}))
        else:
            respond(sock, 202)

    def initialize(self, sock: socket.socket, request: RecordedRequest, message: Any) -> None:
        respond_json(
            sock, result_of(message, INIT_RESULT), headers={"Mcp-Session-Id": self.session}
        )

    @staticmethod
    def not_initialized(sock: socket.socket, request: RecordedRequest, message: Any) -> None:
        error = {"code": -32000, "message": "Bad Request: Server not initialized"}
        respond_json(sock, {"jsonrpc": "2.0", "id": None, "error": error}, status=400)

    @staticmethod
    def discover(sock: socket.socket, request: RecordedRequest, message: Any) -> None:
        respond_json(sock, result_of(message, DISCOVER_RESULT))


@pytest.fixture
def serve(scripted_server: ScriptedServerFactory) -> Callable[[Script], str]:
    """Serve a script; returns the MCP endpoint URL."""

    def start(script: Script) -> str:
        server = scripted_server(script)
        start.servers.append(server)  # type: ignore[attr-defined]
        return server.url + "/mcp"

    start.servers = []  # type: ignore[attr-defined]
    return start


@pytest.fixture(autouse=True)
def _fresh_era_cache() -> Iterator[None]:
    ERA_CACHE.clear()
    yield
    ERA_CACHE.clear()


def connect(url: str, era: str = "legacy", **options: Any) -> MCPConnection:
    # No output validation: it would list tools after the first call.
    return MCPConnection.http(url, era=era, auth=TOKEN, timeout=5, validate_output=False, **options)


def with_policy(url: str, policy: ReconnectPolicy, era: str = "legacy") -> MCPConnection:
    return MCPConnection(
        lambda: StreamableHTTPTransport(url, HTTPOptions(auth=TOKEN), reconnect_policy=policy),
        era=era,
        timeout=5,
        validate_output=False,
    )


def recorded(serve: Callable[[Script], str]) -> list[RecordedRequest]:
    return serve.servers[-1].requests  # type: ignore[attr-defined,no-any-return]


def bodies(requests: list[RecordedRequest]) -> list[dict[str, Any]]:
    return [r.json() for r in requests if r.method == "POST"]


class LogWatch(logging.Handler):
    """Sets an event when a record containing ``text`` is logged."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.DEBUG)
        self.text = text
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.seen.set()


@pytest.fixture
def watch_log() -> Iterator[Callable[[str], LogWatch]]:
    logger = logging.getLogger("a2a_sync.mcp")
    handlers: list[LogWatch] = []
    old_level = logger.level
    logger.setLevel(logging.DEBUG)

    def add(text: str) -> LogWatch:
        handler = LogWatch(text)
        handlers.append(handler)
        logger.addHandler(handler)
        return handler

    yield add
    for handler in handlers:
        logger.removeHandler(handler)
    logger.setLevel(old_level)


# --- MH-01: JSON, event streams, 202 ----------------------------------------------------------


def test_answers_come_as_json_or_as_an_event_stream_with_a_priming_event(
    serve: Callable[[Script], str],
) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        if message["params"]["name"] == "json":
            respond_json(sock, text_result(message, "as json"))
            return
        sse_head(sock)
        sse_event(sock, event_id="p1")  # priming: an id and empty data (S-12)
        sse_event(sock, text_result(message, "as events"), event_id="p2")
        sse_end(sock)

    url = serve(Script(tools__call=call))
    with connect(url) as conn:
        client = conn.client()
        assert client.call_tool("json").text == "as json"
        assert client.call_tool("sse").text == "as events"
    posts = [r for r in recorded(serve) if r.method == "POST"]
    assert [r.json().get("method") for r in posts] == [
        "initialize",
        "notifications/initialized",  # answered 202
        "tools/call",
        "tools/call",
    ]
    for post in posts:
        assert post.headers["Accept"] == "application/json, text/event-stream"
        assert post.headers["Content-Type"] == "application/json"


def test_a_stream_kept_open_after_the_answer_is_let_go_soon(
    serve: Callable[[Script], str],
) -> None:
    let_go = threading.Event()

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        sse_event(sock, text_result(message, "answered"))
        if wait_closed(sock, timeout=10):  # the client drops it after DRAIN_TIMEOUT (1 s)
            let_go.set()

    with connect(serve(Script(tools__call=call))) as conn:
        assert conn.client().call_tool("x").text == "answered"  # not held back meanwhile
        assert let_go.wait(5)


def test_a_server_error_fails_only_that_request(serve: Callable[[Script], str]) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        if message["params"]["name"] == "broken":
            respond(sock, 500, b"<html>oops</html>", headers={"Content-Type": "text/html"})
        else:
            respond_json(sock, text_result(message, "fine"))

    with connect(serve(Script(tools__call=call))) as conn:
        with pytest.raises(HTTPStatusError) as caught:
            conn.client().call_tool("broken")
        assert caught.value.status_code == 500
        assert conn.client().call_tool("ok").text == "fine"


def test_a_json_rpc_error_at_an_http_error_status_is_the_answer(
    serve: Callable[[Script], str],
) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        error = {"code": -32602, "message": "bad arguments"}
        respond_json(sock, {"jsonrpc": "2.0", "id": None, "error": error}, status=400)

    with connect(serve(Script(tools__call=call))) as conn, pytest.raises(InvalidParams):
        conn.client().call_tool("x")


# --- MH-02 / MH-10: session id and protocol version -------------------------------------------


def test_session_id_and_protocol_version_ride_on_every_later_request(
    serve: Callable[[Script], str], watch_log: Callable[[str], LogWatch]
) -> None:
    no_get = watch_log("offers no GET stream (405)")
    with connect(serve(Script())) as conn:
        assert no_get.seen.wait(5)
        conn.client().list_tools()
    initialize, *later = recorded(serve)
    assert "Mcp-Session-Id" not in initialize.headers
    # notifications/initialized, the GET stream (refused), tools/list, DELETE on close.
    assert [r.method for r in later] == ["POST", "GET", "POST", "DELETE"]
    for request in later:
        assert request.headers["Mcp-Session-Id"] == SESSION
        assert request.headers["MCP-Protocol-Version"] == LEGACY


def test_a_session_id_that_is_not_visible_ascii_is_refused(serve: Callable[[Script], str]) -> None:
    script = Script()
    script.session = "bad id\x7f"
    with pytest.raises(ProtocolError) as caught:
        connect(serve(script))
    assert "bad id" not in str(caught.value)


def test_a_refused_delete_does_not_fail_close(serve: Callable[[Script], str]) -> None:
    script = Script()
    script.delete = lambda sock, request: respond(sock, 405)
    conn = connect(serve(script))
    conn.close()  # does not raise
    assert [r.method for r in recorded(serve)].count("DELETE") == 1


def test_credentials_and_the_session_id_never_reach_logs_errors_or_reprs(
    serve: Callable[[Script], str], caplog: pytest.LogCaptureFixture
) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        respond(sock, 401, b"no", headers={"WWW-Authenticate": 'Bearer resource_metadata="m"'})

    caplog.set_level(logging.DEBUG)
    with connect(serve(Script(tools__call=call))) as conn:
        with pytest.raises(HTTPStatusError) as caught:
            conn.client().call_tool("x")
        texts = [caplog.text, repr(conn), repr(conn.transport), str(caught.value)]
    assert caught.value.status_code == 401
    assert "resource_metadata" in str(caught.value)  # the challenge is named (MH-09)
    for text in texts:
        assert SESSION not in text
        assert TOKEN not in text


# --- MH-03: an expired session ----------------------------------------------------------------


def test_an_expired_session_is_initialized_again_and_the_refused_request_resent(
    serve: Callable[[Script], str],
) -> None:
    script = Script()
    sessions = iter(["s-1", "s-2"])
    expired = threading.Event()

    def initialize(sock: socket.socket, request: RecordedRequest, message: Any) -> None:
        script.session = next(sessions)
        Script.initialize(script, sock, request, message)

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        if expired.is_set() and request.headers["Mcp-Session-Id"] == "s-1":
            respond_json(
                sock,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                },
                status=404,
            )
        else:
            respond_json(sock, text_result(message, request.headers["Mcp-Session-Id"]))

    script.on.update({"initialize": initialize, "tools/call": call})
    with connect(serve(script), log_level="debug") as conn:
        client = conn.client()
        client.subscribe_resource("file:///watched")
        assert client.call_tool("x").text == "s-1"
        expired.set()
        assert client.call_tool("x").text == "s-2"
    posts = bodies(recorded(serve))
    renewal = posts[posts.index(next(p for p in posts[1:] if p.get("method") == "initialize")) :]
    assert [p.get("method") for p in renewal[:5]] == [
        "initialize",
        "notifications/initialized",
        "logging/setLevel",
        "resources/subscribe",
        "tools/call",
    ]
    refused, resent = [p for p in posts if p.get("method") == "tools/call"][-2:]
    assert refused["id"] == resent["id"]  # the same request: the server never ran it
    renewed = [r for r in recorded(serve) if r.method == "POST"][-len(renewal) :]
    assert "Mcp-Session-Id" not in renewed[0].headers
    assert all(r.headers["Mcp-Session-Id"] == "s-2" for r in renewed[1:])


def test_a_second_expiry_right_after_renewal_surfaces(serve: Callable[[Script], str]) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        respond(sock, 404)

    with connect(serve(Script(tools__call=call))) as conn:
        with pytest.raises(SessionExpired):
            conn.client().call_tool("x")
        inits = [p for p in bodies(recorded(serve)) if p.get("method") == "initialize"]
        assert len(inits) == 2  # the handshake and exactly one renewal


# --- resumption (MH-05, MH-07) ----------------------------------------------------------------


def test_a_cut_stream_resumes_with_the_same_last_event_id_until_an_event_with_an_id(
    serve: Callable[[Script], str],
) -> None:
    calls: list[dict[str, Any]] = []

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        calls.append(message)
        sse_head(sock)
        sse_event(sock, event_id="e1", retry=20)
        progress = {"progressToken": message["id"], "progress": 1, "total": 2}
        sse_event(
            sock,
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress},
            event_id="e2",
        )
        close_connection(sock)  # cut before the answer

    gets: list[str | None] = []

    def get(sock: socket.socket, request: RecordedRequest) -> None:
        if request.headers.get("Last-Event-ID") is None:
            respond(sock, 405)  # the session's own GET stream: none
            return
        gets.append(request.headers.get("Last-Event-ID"))
        sse_head(sock)
        if len(gets) == 1:
            close_connection(sock)  # resumed, then dropped before any event with an id
            return
        sse_event(sock, text_result(calls[0], "resumed"), event_id="e3")
        sse_end(sock)

    script = Script(tools__call=call)
    script.get = get
    seen: list[float] = []
    with connect(serve(script)) as conn:
        result = conn.client().call_tool("x", progress=lambda p: seen.append(p.progress))
    assert result.text == "resumed"
    assert seen == [1]
    assert gets == ["e2", "e2"]  # MH-07
    # A dropped stream is not a cancellation in this era (MH-08).
    assert "notifications/cancelled" not in [p.get("method") for p in bodies(recorded(serve))]


def test_a_cut_stream_without_an_event_id_fails_the_request(serve: Callable[[Script], str]) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        close_connection(sock)

    with connect(serve(Script(tools__call=call))) as conn, pytest.raises(ConnectionLost):
        conn.client().call_tool("x")


def test_resumption_gives_up_after_its_budget(serve: Callable[[Script], str]) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        sse_event(sock, event_id="e1", retry=1)
        close_connection(sock)

    script = Script(tools__call=call)
    script.get = lambda sock, request: respond(sock, 500)  # (503 is retried per request too)
    policy = ReconnectPolicy(max_attempts=2, initial_delay=0.01, backoff_max=0.01)
    with with_policy(serve(script), policy) as conn, pytest.raises(StreamInterrupted):
        conn.client().call_tool("x")
    resumes = [r for r in recorded(serve) if r.headers.get("Last-Event-ID") == "e1"]
    assert len(resumes) == 2


def test_resumption_refused_for_good_fails_the_request(serve: Callable[[Script], str]) -> None:
    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        sse_event(sock, event_id="e1", retry=1)
        close_connection(sock)

    with connect(serve(Script(tools__call=call))) as conn, pytest.raises(HTTPStatusError) as caught:
        conn.client().call_tool("x")  # the default GET answer is 405: no resuming
    assert caught.value.status_code == 405


# --- MH-06: the GET stream --------------------------------------------------------------------


def test_a_get_stream_that_ends_at_once_is_reopened_a_bounded_number_of_times(
    serve: Callable[[Script], str], watch_log: Callable[[str], LogWatch]
) -> None:
    def get(sock: socket.socket, request: RecordedRequest) -> None:
        sse_head(sock)
        sse_end(sock)

    script = Script()
    script.get = get
    gave_up = watch_log("ended at once 3 times")
    policy = ReconnectPolicy(max_attempts=2, initial_delay=0.01)
    with with_policy(serve(script), policy):
        assert gave_up.seen.wait(10)
        assert len([r for r in recorded(serve) if r.method == "GET"]) == 3


def test_a_get_stream_delivers_server_messages_and_a_405_means_none(
    serve: Callable[[Script], str], watch_log: Callable[[str], LogWatch]
) -> None:
    updates: queue.Queue[str] = queue.Queue()

    def get(sock: socket.socket, request: RecordedRequest) -> None:
        sse_head(sock)
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "a://b"},
        }
        sse_event(sock, note, event_id="g1")
        wait_closed(sock)

    script = Script()
    script.get = get
    with MCPConnection.http(serve(script), era="legacy", resource_updated_callback=updates.put):
        assert updates.get(timeout=5) == "a://b"
    no_get = watch_log("offers no GET stream (405)")
    with connect(serve(Script())):
        assert no_get.seen.wait(5)
    assert len([r for r in recorded(serve) if r.method == "GET"]) == 1


# --- server requests and cancellation (MH-08) -------------------------------------------------


def test_a_reply_to_a_server_request_is_posted_while_the_stream_stays_open(
    serve: Callable[[Script], str],
) -> None:
    replied = threading.Event()

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        ask = {
            "maxTokens": 5,
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        }
        sse_event(
            sock,
            {"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage", "params": ask},
        )
        assert replied.wait(5)  # the reply arrives on another connection meanwhile
        sse_event(sock, text_result(message, "after the reply"))
        sse_end(sock)

    def response(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        assert message["id"] == "srv-1"
        assert message["result"]["content"]["text"] == "sampled"
        respond(sock, 202)
        replied.set()

    def sample(request: CreateMessageRequest) -> CreateMessageResult:
        return CreateMessageResult.from_text("sampled", model="m")

    script = Script(tools__call=call)
    script.on["(response)"] = response
    with MCPConnection.http(
        serve(script), era="legacy", sampling_callback=sample, validate_output=False
    ) as conn:
        assert conn.client(timeout=10).call_tool("x").text == "after the reply"
    assert serve.servers[-1].connections_accepted >= 2  # type: ignore[attr-defined]


def test_legacy_timeout_closes_the_stream_and_sends_cancelled(
    serve: Callable[[Script], str],
) -> None:
    closed = threading.Event()

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        sse_event(sock, event_id="c1")
        if wait_closed(sock):
            closed.set()

    script = Script(tools__call=call)
    with connect(serve(script)) as conn:
        with pytest.raises(DeadlineExceeded):
            conn.client().call_tool("slow", timeout=0.3)
        assert closed.wait(5)
    cancels = [p for p in bodies(recorded(serve)) if p.get("method") == "notifications/cancelled"]
    call_id = next(p["id"] for p in bodies(recorded(serve)) if p.get("method") == "tools/call")
    assert [c["params"]["requestId"] for c in cancels] == [call_id]


def modern_script(**handlers: Handler) -> Script:
    return Script(server__discover=Script.discover, **handlers)


def test_modern_cancellation_is_closing_the_stream(serve: Callable[[Script], str]) -> None:
    closed = threading.Event()

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        if wait_closed(sock):
            closed.set()

    with connect(serve(modern_script(tools__call=call)), era="auto") as conn:
        assert conn.era == "modern"
        with pytest.raises(DeadlineExceeded):
            conn.client().call_tool("slow", timeout=0.3)
        assert closed.wait(5)
    methods = [p.get("method") for p in bodies(recorded(serve))]
    assert methods == ["server/discover", "tools/call"]  # no notifications/cancelled


def test_modern_requests_mirror_method_name_and_version_headers(
    serve: Callable[[Script], str],
) -> None:
    with connect(serve(modern_script()), era="auto") as conn:
        conn.client().call_tool("weather", {"city": "Oslo"})
    discover, call = [r for r in recorded(serve) if r.method == "POST"]
    assert discover.headers["MCP-Protocol-Version"] == MODERN
    assert discover.headers["Mcp-Method"] == "server/discover"
    assert call.headers["Mcp-Method"] == "tools/call"
    assert call.headers["Mcp-Name"] == "weather"
    assert "Mcp-Session-Id" not in call.headers
    assert not [r for r in recorded(serve) if r.method in ("GET", "DELETE")]


def test_a_broken_modern_stream_reissues_reads_with_a_new_id_but_not_tool_calls(
    serve: Callable[[Script], str],
) -> None:
    def broken(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        if isinstance(message["id"], str):  # the re-issued request
            respond_json(sock, result_of(message, {"tools": []}))
            return
        sse_head(sock)
        close_connection(sock)

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        sse_head(sock)
        close_connection(sock)

    script = modern_script(tools__list=broken, tools__call=call)
    with connect(serve(script), era="auto") as conn:
        assert conn.client().list_tools() == []
        with pytest.raises(ConnectionLost):
            conn.client().call_tool("x")
    lists = [p for p in bodies(recorded(serve)) if p.get("method") == "tools/list"]
    assert [type(p["id"]) for p in lists] == [int, str]
    assert len([p for p in bodies(recorded(serve)) if p.get("method") == "tools/call"]) == 1


# --- era detection over HTTP ------------------------------------------------------------------


@pytest.mark.parametrize(
    "refusal",
    [Script.not_initialized, lambda s, r, m: respond(s, 405), lambda s, r, m: respond(s, 404)],
    ids=["400-json-rpc-error", "405", "404"],
)
def test_a_4xx_to_the_discover_probe_means_legacy(
    serve: Callable[[Script], str], refusal: Handler
) -> None:
    url = serve(Script(server__discover=refusal))
    with connect(url, era="auto") as conn:
        assert (conn.era, conn.protocol_version) == ("legacy", LEGACY)
        assert ERA_CACHE.get(conn.transport.era_key) == "legacy"
    with connect(url, era="auto"):
        pass  # the verdict is cached: no second probe
    methods = [p.get("method") for p in bodies(recorded(serve))]
    assert methods.count("server/discover") == 1


def test_a_5xx_to_the_discover_probe_is_an_error_not_a_verdict(
    serve: Callable[[Script], str],
) -> None:
    with pytest.raises(HTTPStatusError):
        connect(serve(Script(server__discover=lambda s, r, m: respond(s, 503))), era="auto")


# --- MH-09: credentials, redirects ------------------------------------------------------------


def test_the_bearer_token_goes_on_every_request_and_never_in_the_query(
    serve: Callable[[Script], str],
) -> None:
    tokens = iter(f"tok-{n}" for n in range(100))
    asked: list[str] = []

    def token() -> str:
        asked.append(next(tokens))
        return asked[-1]

    script = Script()
    with MCPConnection.http(
        serve(script), era="legacy", auth=token, headers={"X-Tenant": "t1"}
    ) as conn:
        conn.client().list_tools()
    requests = recorded(serve)
    # One fresh token per request (the GET stream may go out while tools/list does).
    assert sorted(r.headers["Authorization"] for r in requests) == sorted(
        f"Bearer {t}" for t in asked
    )
    assert all(r.headers["X-Tenant"] == "t1" for r in requests)
    assert all("tok-" not in r.path for r in requests)


def test_a_redirect_is_refused_and_the_other_host_sees_nothing(
    serve: Callable[[Script], str], scripted_server: ScriptedServerFactory
) -> None:
    elsewhere = scripted_server(Script())

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        respond(sock, 307, headers={"Location": elsewhere.url + "/mcp"})

    with connect(serve(Script(tools__call=call))) as conn, pytest.raises(RedirectRefused):
        conn.client().call_tool("x")
    assert elsewhere.requests == []


@pytest.mark.parametrize(
    ("url", "headers"),
    [
        ("ftp://127.0.0.1/mcp", {}),
        ("http://user:pw@127.0.0.1/mcp", {}),
        ("http://127.0.0.1/mcp", {"Mcp-Session-Id": "forged"}),
        ("http://127.0.0.1/mcp", {"Mcp-Param-Region": "x"}),
        ("http://127.0.0.1/mcp", {"X-Bad": "a\r\nInjected: yes"}),
        ("http://127.0.0.1/mcp", {"Authorization": "Basic x"}),  # and auth= too
    ],
)
def test_bad_endpoints_and_headers_are_configuration_errors(
    url: str, headers: dict[str, str]
) -> None:
    with pytest.raises(ConfigurationError):
        MCPConnection.http(url, headers=headers, auth=TOKEN)


# --- shutdown ---------------------------------------------------------------------------------


def test_close_is_prompt_while_a_request_waits_and_leaves_no_threads(
    serve: Callable[[Script], str],
) -> None:
    started = threading.Event()

    def call(sock: socket.socket, request: RecordedRequest, message: dict[str, Any]) -> None:
        started.set()
        wait_closed(sock, timeout=30)  # never answers on its own

    before = set(threading.enumerate())
    conn = connect(serve(Script(tools__call=call)))
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            conn.client(timeout=60).call_tool("x")
        except ConnectionClosed as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert started.wait(5)
    conn.close()
    waiter.join(5)  # well before the 30 s the server would hold it
    assert not waiter.is_alive()
    assert len(errors) == 1
    leftovers = [
        t.name for t in set(threading.enumerate()) - before if t.name.startswith("a2a-sync-mcp")
    ]
    assert leftovers == []
