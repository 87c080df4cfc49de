from __future__ import annotations

import threading
from typing import Any

import pytest

from a2a_sync.errors import (
    Cancelled,
    ConnectionClosed,
    DeadlineExceeded,
    InternalError,
    MethodNotFound,
    ProtocolError,
    RequestTimeout,
    ResourceNotFound,
    ServerProcessError,
)
from a2a_sync.mcp import types
from a2a_sync.mcp.session import Handlers, MCPSession

from .fake import FakeTransport, result

MODERN = types.ServerInfo(protocol_version="2026-07-28", era="modern")
LEGACY = types.ServerInfo(protocol_version="2025-11-25", era="legacy")


_OPEN: list[tuple[FakeTransport, MCPSession]] = []


@pytest.fixture(autouse=True)
def _close_sessions() -> Any:
    """Every session made here is closed and its dispatcher thread joined, as
    ``MCPConnection.close`` does."""
    yield
    while _OPEN:
        transport, session = _OPEN.pop()
        if not transport.closed.is_set():
            transport.close()
        session.join_dispatcher()


def make(
    transport: FakeTransport, handlers: Handlers | None = None, info: types.ServerInfo = LEGACY
) -> MCPSession:
    session = MCPSession(transport, handlers)
    transport.start(session)
    session.adopt(info)
    _OPEN.append((transport, session))
    return session


def test_responses_are_routed_by_id_even_out_of_order_with_notifications_between() -> None:
    transport = FakeTransport()
    session = make(transport)
    first = session.begin("tools/list")
    second = session.begin("prompts/list")
    a, b = transport.next_sent(), transport.next_sent()
    transport.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    transport.deliver(result(b, {"prompts": []}))
    transport.deliver(result(a, {"tools": []}))
    assert first.wait(5) == {"tools": []}
    assert second.wait(5) == {"prompts": []}


def test_error_response_raises_the_typed_mcp_error() -> None:
    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        tr.deliver({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32002, "message": "nope"}})

    session = make(FakeTransport(reply))
    with pytest.raises(ResourceNotFound) as info:
        session.request("resources/read", {"uri": "x://y"}, timeout=5)
    assert info.value.code == -32002


def test_timeout_names_operation_and_duration_sends_cancelled_and_ignores_late_answer() -> None:
    transport = FakeTransport()
    session = make(transport)
    with pytest.raises(DeadlineExceeded) as info:
        session.request("tools/call", {"name": "slow"}, timeout=0.05, operation="tool 'slow'")
    assert isinstance(info.value, RequestTimeout)
    assert isinstance(info.value, TimeoutError)
    assert "tool 'slow'" in str(info.value)
    assert "0.05 s" in str(info.value)
    call = transport.next_sent()
    cancel = transport.next_sent()
    assert cancel["method"] == "notifications/cancelled"
    assert cancel["params"]["requestId"] == call["id"]
    transport.deliver(result(call, {"late": True}))  # ignored, no exception
    assert transport.abandoned == [call["id"]]


def test_transport_level_cancel_replaces_the_cancelled_notification() -> None:
    transport = FakeTransport(cancels_itself=True)
    session = make(transport)
    with pytest.raises(DeadlineExceeded):
        session.request("tools/call", {"name": "slow"}, timeout=0.01)
    transport.next_sent()
    assert transport.sent.empty()


def test_initialize_and_discover_are_never_cancelled() -> None:
    transport = FakeTransport()
    session = make(transport)
    for method in ("initialize", "server/discover"):
        with pytest.raises(DeadlineExceeded):
            session.request(method, {}, timeout=0.01)
        assert transport.next_sent()["method"] == method
    assert transport.sent.empty()


def test_closed_transport_fails_every_pending_call_at_once_with_its_error() -> None:
    transport = FakeTransport()
    session = make(transport)
    pending = [session.begin("tools/call", {"name": str(i)}) for i in range(5)]
    error = ServerProcessError("server exited", returncode=3, stderr_tail="boom")
    transport.fail(error)
    for call in pending:
        with pytest.raises(ServerProcessError) as info:
            call.wait(5)
        assert info.value.returncode == 3
    with pytest.raises(ServerProcessError):
        session.begin("ping")


def test_cancel_from_another_thread_unblocks_the_waiter_and_notifies_the_server() -> None:
    transport = FakeTransport()
    session = make(transport)
    call = session.begin("tools/call", {"name": "slow"})
    sent = transport.next_sent()
    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            call.wait(30)
        except Cancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    assert call.cancel("user pressed stop")
    thread.join(5)
    assert len(outcome) == 1
    cancel = transport.next_sent()
    assert cancel["params"] == {"requestId": sent["id"], "reason": "user pressed stop"}
    assert not call.cancel()


def test_server_request_is_answered_by_the_callback_on_the_dispatcher_thread() -> None:
    threads: list[str] = []

    def sampling(request: types.CreateMessageRequest) -> types.CreateMessageResult:
        threads.append(threading.current_thread().name)
        assert request.max_tokens == 10
        return types.CreateMessageResult.from_text("hello", model="test-model")

    transport = FakeTransport()
    make(transport, Handlers(sampling=sampling))
    transport.deliver(
        {
            "jsonrpc": "2.0",
            "id": "s1",
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10,
            },
        }
    )
    answer = transport.next_sent()
    assert answer["id"] == "s1"
    assert answer["result"]["content"] == {"type": "text", "text": "hello"}
    assert answer["result"]["role"] == "assistant"
    assert threads == ["a2a-sync-mcp-dispatch"]


def test_failing_callback_is_answered_with_internal_error_and_the_dispatcher_survives() -> None:
    calls = 0

    def roots() -> list[types.Root]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("bug in user code")
        return [types.Root(uri="file:///tmp", name="tmp")]

    transport = FakeTransport()
    make(transport, Handlers(roots=roots))
    transport.deliver({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
    transport.deliver({"jsonrpc": "2.0", "id": 2, "method": "roots/list"})
    first, second = transport.next_sent(), transport.next_sent()
    assert first["error"]["code"] == InternalError.code_value
    assert second["result"] == {"roots": [{"uri": "file:///tmp", "name": "tmp"}]}


def test_server_request_without_a_callback_gets_method_not_found() -> None:
    transport = FakeTransport()
    make(transport)
    transport.deliver({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": {}})
    assert transport.next_sent()["error"]["code"] == MethodNotFound.code_value


def test_ping_from_the_server_is_answered() -> None:
    transport = FakeTransport()
    make(transport)
    transport.deliver({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert transport.next_sent() == {"jsonrpc": "2.0", "id": 9, "result": {}}


def test_a_blocked_callback_does_not_delay_responses() -> None:
    release = threading.Event()
    entered = threading.Event()

    def logging_cb(message: types.LoggingMessage) -> None:
        entered.set()
        release.wait(5)

    transport = FakeTransport()
    session = make(transport, Handlers(logging=logging_cb))
    transport.deliver(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    )
    assert entered.wait(5)
    call = session.begin("tools/list")
    transport.deliver(result(transport.next_sent(), {"tools": []}))
    assert call.wait(5) == {"tools": []}
    release.set()


def test_progress_callback_gets_updates_and_the_token_is_sent() -> None:
    seen: list[types.Progress] = []
    got = threading.Event()

    def on_progress(p: types.Progress) -> None:
        seen.append(p)
        if len(seen) == 2:
            got.set()

    transport = FakeTransport()
    session = make(transport)
    call = session.begin("tools/call", {"name": "long"}, progress=on_progress)
    sent = transport.next_sent()
    token = sent["params"]["_meta"]["progressToken"]
    for n in (1, 2):
        transport.deliver(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": n, "total": 2, "message": "step"},
            }
        )
    assert got.wait(5)
    assert [p.progress for p in seen] == [1, 2]
    transport.deliver(result(sent, {"content": []}))
    assert call.wait(5) == {"content": []}


def test_progress_resets_the_timeout_but_the_hard_maximum_still_applies() -> None:
    transport = FakeTransport()
    session = make(transport)
    stop = threading.Event()
    call = session.begin("tools/call", {"name": "long"}, progress=lambda p: None)
    sent = transport.next_sent()

    def ticker() -> None:
        n = 0
        while not stop.wait(0.02):
            n += 1
            transport.deliver(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {
                        "progressToken": sent["params"]["_meta"]["progressToken"],
                        "progress": n,
                    },
                }
            )

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        # Progress every 20 ms keeps a 100 ms timeout alive until the 0.4 s hard limit.
        with pytest.raises(DeadlineExceeded):
            call.wait(0.1, reset_on_progress=True, max_timeout=0.4)
        assert transport.next_sent()["method"] == "notifications/cancelled"
    finally:
        stop.set()
        thread.join(5)


def test_progress_reset_lets_a_slow_call_with_progress_outlive_its_timeout() -> None:
    transport = FakeTransport()
    session = make(transport)
    call = session.begin("tools/call", {"name": "long"}, progress=lambda p: None)
    sent = transport.next_sent()
    token = sent["params"]["_meta"]["progressToken"]
    done = threading.Event()

    # Four progress updates 0.4 s apart outlast the 1 s timeout (1.6 s in all) only if each
    # one restarts it; 0.6 s of slack per step keeps a loaded machine from failing it.
    def server() -> None:
        for n in range(4):
            if done.wait(0.4):
                return
            transport.deliver(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": n},
                }
            )
        transport.deliver(result(sent, {"content": [], "ok": True}))

    thread = threading.Thread(target=server)
    thread.start()
    try:
        assert call.wait(1.0, reset_on_progress=True, max_timeout=30)["ok"] is True
    finally:
        done.set()
        thread.join(5)


def test_modern_requests_carry_the_meta_envelope() -> None:
    transport = FakeTransport()
    session = make(
        transport,
        Handlers(sampling=lambda r: types.CreateMessageResult.from_text("x", model="m")),
        info=MODERN,
    )
    session.begin("tools/list", {"cursor": "c"})
    params = transport.next_sent()["params"]
    meta = params["_meta"]
    assert params["cursor"] == "c"
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {"sampling": {}}
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "a2a-sync"
    session.set_log_level("debug")
    session.begin("tools/list")
    assert transport.next_sent()["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == "debug"


def test_legacy_requests_have_no_meta_envelope() -> None:
    transport = FakeTransport()
    session = make(transport)
    session.begin("tools/list")
    assert "params" not in transport.next_sent()


def test_http_style_transport_gets_mirrored_headers() -> None:
    transport = FakeTransport(wants_context=True)
    session = make(transport, info=MODERN)
    session.begin("tools/call", {"name": "echo", "arguments": {}})
    transport.next_sent()
    context = transport.contexts[-1]
    assert context is not None
    assert context.headers["Mcp-Method"] == "tools/call"
    assert context.headers["Mcp-Name"] == "echo"
    assert context.headers["MCP-Protocol-Version"] == "2026-07-28"


def test_input_required_is_answered_through_the_callbacks_and_retried_with_a_new_id() -> None:
    def elicitation(request: types.ElicitRequest) -> types.ElicitResult:
        return types.ElicitResult.accept({"name": "Ada"})

    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        if m.get("method") != "tools/call":
            return
        params = m["params"]
        if "inputResponses" not in params:
            tr.deliver(
                result(
                    m,
                    {
                        "resultType": "input_required",
                        "inputRequests": {
                            "who": {
                                "method": "elicitation/create",
                                "params": {"message": "Name?", "requestedSchema": {}},
                            },
                            "where": {"method": "roots/list"},
                        },
                        "requestState": "opaque-1",
                    },
                )
            )
        else:
            tr.deliver(
                result(
                    m,
                    {
                        "resultType": "complete",
                        "content": [],
                        "echo": [params["inputResponses"], params["requestState"]],
                    },
                )
            )

    transport = FakeTransport(reply)
    session = make(
        transport,
        Handlers(elicitation=elicitation, roots=lambda: [types.Root(uri="file:///w")]),
        info=MODERN,
    )
    out = session.request_with_input("tools/call", {"name": "greet"}, timeout=5)
    responses, state = out["echo"]
    assert responses == {
        "who": {"action": "accept", "content": {"name": "Ada"}},
        "where": {"roots": [{"uri": "file:///w"}]},
    }
    assert state == "opaque-1"
    first, second = transport.next_sent(), transport.next_sent()
    assert first["id"] != second["id"]


def test_input_required_loop_gives_up_after_the_round_cap() -> None:
    def reply(tr: FakeTransport, m: dict[str, Any]) -> None:
        tr.deliver(
            result(
                m,
                {"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}},
            )
        )

    transport = FakeTransport(reply)
    session = make(transport, Handlers(roots=lambda: []), info=MODERN)
    with pytest.raises(ProtocolError):
        session.request_with_input("tools/call", {"name": "x"}, timeout=5, max_rounds=3)
    assert transport.sent.qsize() == 4


def test_unknown_result_type_is_a_protocol_error() -> None:
    transport = FakeTransport(lambda tr, m: tr.deliver(result(m, {"resultType": "mystery"})))
    session = make(transport, info=MODERN)
    with pytest.raises(ProtocolError):
        session.request_with_input("tools/call", {"name": "x"}, timeout=5)


def test_notifications_reach_their_callbacks_in_order() -> None:
    events: list[Any] = []
    done = threading.Event()
    handlers = Handlers(
        logging=lambda m: events.append(("log", m.level, m.data)),
        list_changed=lambda kind: events.append(("changed", kind)),
        resource_updated=lambda uri: events.append(("updated", uri)),
        notification=lambda method, params: (
            done.set() if method == "notifications/resources/updated" else None
        ),
    )
    transport = FakeTransport()
    make(transport, handlers)
    transport.deliver(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "data": "disk"},
        }
    )
    transport.deliver({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"})
    transport.deliver(
        {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": "file:///a"},
        }
    )
    assert done.wait(5)
    assert events == [("log", "warning", "disk"), ("changed", "prompts"), ("updated", "file:///a")]


def test_closing_fails_calls_with_connection_closed() -> None:
    transport = FakeTransport()
    session = make(transport)
    call = session.begin("tools/list")
    transport.close()
    with pytest.raises(ConnectionClosed):
        call.wait(5)
