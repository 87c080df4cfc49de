"""MCP 2025-11-25 client requirements (handshake era): what a2a_sync's MCP client sends.

stdio: the client talks to a2a_sync.testing's scripted MCP server, which records every
message it receives (``record=``). Streamable HTTP: a scripted HTTP server that plays a
2025-11-25 server (session id, JSON or SSE answers) and records every request. Sections
are pages of modelcontextprotocol/modelcontextprotocol ``docs/specification/2025-11-25/``.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_sync.errors import A2ASyncError, DeadlineExceeded
from a2a_sync.mcp import ElicitResult, MCPConnection, Root
from a2a_sync.testing import mcp_server_command
from a2a_sync.testing.mcp_server import recorded_messages
from tests.support.servers import RecordedRequest, ScriptedServer, respond, respond_json

requirement = pytest.mark.requirement
ERA = "2025-11-25"
SCRIPT = {
    "tools": {
        "greet": "Hello, {name}!",
        "slow": {"reply": "late", "delay": 1.5},
        "steps": {"reply": "done", "progress": 3},
    },
    # two pages; the cursor has characters a client might be tempted to trim or escape
    "pages": {
        "tools": {
            "": {"items": ["greet", "slow"], "next": " c/2=+ "},
            " c/2=+ ": {"items": ["steps"]},
        }
    },
}


@pytest.fixture(scope="module")
def stdio_record(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """One stdio session (handshake, list, calls with progress and a timed-out call),
    closed; what the server received, in order."""
    record = tmp_path_factory.mktemp("mcp") / "received.jsonl"
    seen: list[Any] = []
    with MCPConnection.stdio(mcp_server_command(SCRIPT, record=record), era=ERA) as conn:
        client = conn.client()
        assert {tool.name for tool in client.list_tools()} == {"greet", "slow", "steps"}
        assert not client.list_resources()  # not offered by the server: nothing is asked
        assert not client.list_prompts()
        client.call_tool("greet", {"name": "Ada"})
        client.call_tool("steps", {}, progress=seen.append)
        with pytest.raises(DeadlineExceeded):
            client.call_tool("slow", {}, timeout=0.5)
        # The server answers in order: once this is answered, it has read the cancel.
        client.call_tool("greet", {"name": "again"})
    assert len(seen) == 3  # the progress the server sent reached the callback
    return recorded_messages(record)


def requests_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if "id" in m and "method" in m]


@requirement("mcp-2025-11-25-§lifecycle-initialize-first")
@requirement("mcp-2025-11-25-§lifecycle-initialize-params")
def test_initialize_is_the_first_message_and_carries_the_offer(
    stdio_record: list[dict[str, Any]],
) -> None:
    """The first message is ``initialize`` with a protocol version, capabilities and
    client information (name and version)."""
    first = stdio_record[0]
    assert first["method"] == "initialize"
    params = first["params"]
    assert isinstance(params["protocolVersion"], str)
    assert isinstance(params["capabilities"], dict)
    assert params["clientInfo"]["name"]
    assert params["clientInfo"]["version"]


@requirement("mcp-2025-11-25-§lifecycle-latest-version-offered")
def test_the_offered_version_is_the_latest_handshake_revision(
    stdio_record: list[dict[str, Any]],
) -> None:
    assert stdio_record[0]["params"]["protocolVersion"] == ERA


@requirement("mcp-2025-11-25-§lifecycle-initialized-notification")
@requirement("mcp-2025-11-25-§lifecycle-no-requests-before-initialize-answer")
def test_initialized_follows_before_any_other_request(stdio_record: list[dict[str, Any]]) -> None:
    """``notifications/initialized`` (a notification: no id) comes right after the
    handshake, before any other request."""
    second = stdio_record[1]
    assert second["method"] == "notifications/initialized"
    assert "id" not in second
    assert next(m["method"] for m in requests_of(stdio_record)) == "initialize"


@requirement("mcp-2025-11-25-§index-request-id-string-or-integer")
@requirement("mcp-2025-11-25-§index-request-id-unique")
@requirement("mcp-2025-11-25-§index-jsonrpc-2")
def test_requests_have_unique_string_or_integer_ids(stdio_record: list[dict[str, Any]]) -> None:
    sent = requests_of(stdio_record)
    assert len(sent) >= 5
    assert all(m["jsonrpc"] == "2.0" for m in stdio_record)
    ids = [m["id"] for m in sent]
    assert all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids)
    assert len(set(map(repr, ids))) == len(ids)


@requirement("mcp-2025-11-25-§lifecycle-only-negotiated-capabilities")
def test_features_the_server_did_not_offer_are_not_requested(
    stdio_record: list[dict[str, Any]],
) -> None:
    """The scripted server offered tools only; listing resources and prompts asked it
    nothing."""
    methods = {m["method"] for m in stdio_record}
    assert "tools/list" in methods
    assert not methods & {"resources/list", "prompts/list"}


@requirement("mcp-2025-11-25-§cancellation-never-initialize")
def test_an_unanswered_initialize_is_not_cancelled(tmp_path: Path) -> None:
    """The server never answers ``initialize``: the client gives up after its handshake
    timeout without sending ``notifications/cancelled`` for it."""
    record = tmp_path / "raw.bin"
    argv = [sys.executable, RAW_SERVER, str(record), "silent"]
    with pytest.raises(A2ASyncError):
        MCPConnection.stdio(argv, era=ERA, timeout=5, handshake_timeout=0.5)
    methods = [json.loads(line)["method"] for line in record.read_bytes().splitlines()]
    assert methods == ["initialize"]


@requirement("mcp-2025-11-25-§pagination-cursor-opaque")
def test_the_next_cursor_is_sent_back_unchanged(stdio_record: list[dict[str, Any]]) -> None:
    """The second page is asked for with the server's cursor exactly as given."""
    cursors = [
        (m.get("params") or {}).get("cursor")
        for m in stdio_record
        if m.get("method") == "tools/list"
    ]
    assert cursors[:2] == [None, " c/2=+ "]


@requirement("mcp-2025-11-25-§index-notifications-carry-no-id")
def test_notifications_carry_no_id(stdio_record: list[dict[str, Any]]) -> None:
    notes = [m for m in stdio_record if m["method"].startswith("notifications/")]
    assert notes
    assert all("id" not in m for m in notes)


@requirement("mcp-2025-11-25-§progress-token-string-or-integer-unique")
def test_progress_tokens_are_strings_or_integers_and_unique(
    stdio_record: list[dict[str, Any]],
) -> None:
    tokens = [
        m["params"]["_meta"]["progressToken"]
        for m in requests_of(stdio_record)
        if "progressToken" in m.get("params", {}).get("_meta", {})
    ]
    assert tokens  # the call with a progress callback asked for progress
    assert all(isinstance(t, (str, int)) and not isinstance(t, bool) for t in tokens)
    assert len(set(map(repr, tokens))) == len(tokens)


@requirement("mcp-2025-11-25-§lifecycle-timeout-sends-cancelled")
@requirement("mcp-2025-11-25-§cancellation-names-the-request")
def test_a_timed_out_request_is_cancelled_by_id(stdio_record: list[dict[str, Any]]) -> None:
    """When a request times out the client sends ``notifications/cancelled`` naming it."""
    slow = next(m for m in requests_of(stdio_record) if m.get("params", {}).get("name") == "slow")
    cancels = [m for m in stdio_record if m["method"] == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [slow["id"]]


RAW_SERVER = str(Path(__file__).with_name("raw_mcp_server.py"))


#: Requests the raw server sends after the handshake (besides ping and an unknown method).
CLIENT_FEATURE_REQUESTS = {
    "srv-roots": {"method": "roots/list"},
    "srv-elicit": {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    },
}


@pytest.fixture(scope="module")
def raw_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """One session with :mod:`.raw_mcp_server` (stderr noise; server requests: ping, an
    unknown method, roots/list, elicitation/create; a call with newlines and non-ASCII
    text); the raw lines it read."""
    record = tmp_path_factory.mktemp("raw") / "raw.bin"
    argv = [sys.executable, RAW_SERVER, str(record), ERA, json.dumps(CLIENT_FEATURE_REQUESTS)]
    with MCPConnection.stdio(
        argv,
        era=ERA,
        roots_callback=lambda: [Root(uri="file:///srv/project", name="project")],
        elicitation_callback=lambda request: ElicitResult.accept({"name": "Ada"}),
    ) as conn:
        result = conn.client().call_tool("say", {"text": TRICKY})
    assert result.text == TRICKY
    lines = record.read_bytes().split(b"\n")
    assert lines[-1] == b""
    return lines[:-1]


TRICKY = "two\nlines \u2013 \u00fcn\u00efcode"


@requirement("mcp-2025-11-25-§transports-stdio-one-message-per-line")
def test_stdio_messages_are_single_utf8_lines(raw_lines: list[bytes]) -> None:
    """Every line the client writes is one complete JSON-RPC message in UTF-8, with no
    raw newline inside, even when the content has newlines and non-ASCII text."""
    messages = [json.loads(line.decode("utf-8")) for line in raw_lines]
    calls = [m for m in messages if m.get("method") == "tools/call"]
    assert calls[0]["params"]["arguments"]["text"] == TRICKY


@requirement("mcp-2025-11-25-§transports-stdio-stderr-is-not-an-error")
def test_server_log_lines_on_stderr_do_not_break_the_session(raw_lines: list[bytes]) -> None:
    """The server logged to stderr at start; the session worked (checked by the fixture)."""
    assert raw_lines


@requirement("mcp-2025-11-25-§ping-answered-promptly")
@requirement("mcp-2025-11-25-§index-response-carries-request-id")
def test_server_requests_are_answered_with_their_ids(raw_lines: list[bytes]) -> None:
    """The server's ``ping`` gets an empty result and its unknown method a -32601 error,
    each with the id of the request it answers."""
    answers = {m["id"]: m for m in map(json.loads, raw_lines) if "method" not in m and "id" in m}
    assert answers["srv-ping"]["result"] == {}
    assert answers["srv-unknown"]["error"]["code"] == -32601


@requirement("mcp-2025-11-25-§lifecycle-disconnect-on-unsupported-version")
def test_an_unsupported_server_version_ends_the_connection(tmp_path: Path) -> None:
    """The server answers ``initialize`` with a version the client does not speak: the
    client reports it and sends nothing more (no ``initialized``)."""
    record = tmp_path / "raw.bin"
    argv = [sys.executable, RAW_SERVER, str(record), "1999-01-01"]
    with pytest.raises(A2ASyncError, match="1999-01-01"):
        MCPConnection.stdio(argv, era=ERA, timeout=10)
    methods = [json.loads(line)["method"] for line in record.read_bytes().splitlines()]
    assert methods == ["initialize"]


# -- Streamable HTTP (2025-11-25 shape) ------------------------------------------------------


class LegacyHTTPServer:
    """Plays a 2025-11-25 Streamable HTTP server: session ids, JSON or SSE answers, 202 for
    notifications; ``expire`` makes the next request of the current session a 404."""

    def __init__(self) -> None:
        self.sessions = 0
        self.expire = threading.Event()
        self.pending: dict[str, bytes] = {}  # event id -> the SSE event a resume gets
        self.server = ScriptedServer(self.handle)
        self.url = self.server.url + "/mcp"

    def handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        if request.method == "DELETE":
            respond(sock, 200)
            return
        if request.method == "GET":
            event = self.pending.pop(request.headers.get("Last-Event-ID", ""), None)
            if event is None:
                respond(sock, 405)
            else:
                respond(sock, 200, event, headers=[("Content-Type", "text/event-stream")])
            return
        message = request.json()
        session = request.headers.get("Mcp-Session-Id")
        if message.get("method") == "initialize":
            self.sessions += 1
            result: dict[str, Any] = {
                "protocolVersion": ERA,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-http", "version": "0"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            respond_json(sock, answer, headers=[("Mcp-Session-Id", f"s-{self.sessions}")])
            return
        if session is not None and self.expire.is_set():
            self.expire.clear()
            respond_json(
                sock,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                },
                status=404,
            )
            return
        if "id" not in message:
            respond(sock, 202)
            return
        if message["method"] == "tools/list":
            tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("say", "cut")]
            respond_json(sock, {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools}})
            return
        # tools/call: answered on an SSE stream (priming event, then the response); the
        # tool "cut" closes the stream after the priming event, and the answer waits for
        # the client to resume with GET + Last-Event-ID.
        result = {"content": [{"type": "text", "text": "streamed"}]}
        data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        final = f"id: e1\nevent: message\ndata: {data}\n\n".encode()
        sse = [("Content-Type", "text/event-stream")]
        if message["params"]["name"] == "cut":
            self.pending[f"cut-{message['id']}"] = final
            priming = f"id: cut-{message['id']}\nretry: 10\ndata: \n\n".encode()
            respond(sock, 200, priming, headers=sse, close=True)
            return
        respond(sock, 200, b"id: e0\ndata: \n\n" + final, headers=sse)


@pytest.fixture(scope="module")
def legacy_http() -> Iterator[LegacyHTTPServer]:
    server = LegacyHTTPServer()
    with server.server:
        yield server


@pytest.fixture(scope="module")
def http_session(legacy_http: LegacyHTTPServer) -> list[RecordedRequest]:
    """One session: handshake, a JSON answer, an SSE answer, close; the requests made."""
    before = len(legacy_http.server.requests)
    with MCPConnection.http(legacy_http.url, era=ERA, transport="streamable-http") as conn:
        client = conn.client()
        assert [tool.name for tool in client.list_tools()] == ["say", "cut"]
        assert client.call_tool("say", {}).text == "streamed"
    return legacy_http.server.requests[before:]


@requirement("mcp-2025-11-25-§transports-post-every-message")
@requirement("mcp-2025-11-25-§transports-accept-json-and-sse")
def test_every_message_is_a_post_accepting_json_and_sse(
    http_session: list[RecordedRequest],
) -> None:
    posts = [r for r in http_session if r.method == "POST"]
    assert [r.json().get("method") for r in posts][:2] == [
        "initialize",
        "notifications/initialized",
    ]
    assert all(r.path == "/mcp" for r in posts)
    for request in posts:
        accept = request.headers["Accept"]
        assert "application/json" in accept
        assert "text/event-stream" in accept


@requirement("mcp-2025-11-25-§transports-json-and-sse-answers")
def test_the_client_reads_json_and_sse_answers(http_session: list[RecordedRequest]) -> None:
    """Checked by the fixture: a JSON answer (tools/list) and an SSE answer with a priming
    event (tools/call) were both read."""
    methods = [r.json().get("method") for r in http_session if r.method == "POST"]
    assert {"tools/list", "tools/call"} <= set(methods)


@requirement("mcp-2025-11-25-§transports-session-id-on-every-request")
@requirement("mcp-2025-11-25-§transports-protocol-version-header")
def test_later_requests_carry_the_session_and_the_version(
    http_session: list[RecordedRequest],
) -> None:
    later = http_session[1:]
    assert later
    assert {r.headers.get("Mcp-Session-Id") for r in later} == {
        http_session[1].headers["Mcp-Session-Id"]
    }
    assert all(r.headers.get("MCP-Protocol-Version") == ERA for r in later)


@requirement("mcp-2025-11-25-§transports-delete-ends-session")
def test_closing_deletes_the_session(http_session: list[RecordedRequest]) -> None:
    last = http_session[-1]
    assert last.method == "DELETE"
    assert last.headers["Mcp-Session-Id"] == http_session[1].headers["Mcp-Session-Id"]


@requirement("mcp-2025-11-25-§transports-resume-with-last-event-id")
def test_a_cut_response_stream_is_resumed_with_last_event_id(
    legacy_http: LegacyHTTPServer,
) -> None:
    """The server ends the call's SSE stream after its priming event (with ``retry``);
    the client resumes with a GET carrying ``Last-Event-ID`` and the session, and gets
    the answer there."""
    before = len(legacy_http.server.requests)
    with MCPConnection.http(legacy_http.url, era=ERA, transport="streamable-http") as conn:
        assert conn.client().call_tool("cut", {}).text == "streamed"
    gets = [r for r in legacy_http.server.requests[before:] if r.method == "GET"]
    resumed = [r for r in gets if "Last-Event-ID" in r.headers]
    assert len(resumed) == 1
    assert resumed[0].headers["Last-Event-ID"].startswith("cut-")
    assert resumed[0].headers["Mcp-Session-Id"]


@requirement("mcp-2025-11-25-§transports-expired-session-reinitializes")
def test_an_expired_session_is_replaced_by_a_new_handshake(
    legacy_http: LegacyHTTPServer,
) -> None:
    """A 404 for a request carrying a session id: the client starts a new session with an
    ``initialize`` that carries no session id."""
    before = len(legacy_http.server.requests)
    with MCPConnection.http(legacy_http.url, era=ERA, transport="streamable-http") as conn:
        client = conn.client()
        legacy_http.expire.set()
        try:
            client.list_tools(refresh=True)
        except A2ASyncError:
            client.list_tools(refresh=True)  # reported once; the next call starts afresh
    made = legacy_http.server.requests[before:]
    inits = [r for r in made if r.method == "POST" and r.json().get("method") == "initialize"]
    assert len(inits) == 2
    assert "Mcp-Session-Id" not in inits[1].headers


def _answers(raw_lines: list[bytes]) -> dict[Any, dict[str, Any]]:
    return {m["id"]: m for m in map(json.loads, raw_lines) if "method" not in m and "id" in m}


def _initialize(raw_lines: list[bytes]) -> dict[str, Any]:
    return next(m for m in map(json.loads, raw_lines) if m.get("method") == "initialize")


@requirement("mcp-2025-11-25-§roots-capability-declared-and-file-uris")
def test_roots_are_declared_and_listed_as_file_uris(raw_lines: list[bytes]) -> None:
    """A client that offers roots declares the ``roots`` capability and answers
    ``roots/list`` with ``file://`` URIs."""
    assert "roots" in _initialize(raw_lines)["params"]["capabilities"]
    roots = _answers(raw_lines)["srv-roots"]["result"]["roots"]
    assert roots == [{"uri": "file:///srv/project", "name": "project"}]


@requirement("mcp-2025-11-25-§elicitation-capability-declared-and-action-answered")
def test_elicitation_is_declared_and_answered_with_an_action(raw_lines: list[bytes]) -> None:
    """A client that offers elicitation declares it and answers ``elicitation/create``
    with an action (``accept`` here, with the form content)."""
    assert "elicitation" in _initialize(raw_lines)["params"]["capabilities"]
    result = _answers(raw_lines)["srv-elicit"]["result"]
    assert (result["action"], result["content"]) == ("accept", {"name": "Ada"})
