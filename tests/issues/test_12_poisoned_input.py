"""Issue 12 §1: one bad request must never undo other callers' committed work.

A request holding text that is not Unicode (a lone surrogate, ``"\\ud800"`` in the JSON)
is refused where it is decoded, -32602 naming the field, on the unary and the streaming
path alike, before any agent or store sees it; the client refuses to send one. Under a
mix of such requests and ordinary concurrent sends, every task a caller was told about is
durable with the state it was told, on every store.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_sync._net.unicode import find_surrogate, may_hold_surrogate
from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.errors import ConfigurationError
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.types import ListTasksParams, Part, Task, TaskState
from tests.server.agents import WAIT, EchoAgent, card
from tests.server.stores.test_durability import Medium, _open
from tests.server.wsgi import call, rpc

SURROGATE = "\ud800"


def _send(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    base = {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "hello"}]}
    return {"message": {**base, **message}, **extra}


#: (params, the field the error must name)
POISONED = [
    pytest.param(_send({"parts": [{"text": SURROGATE}]}), "message.parts[0].text", id="text"),
    pytest.param(_send({"messageId": "m\udfff"}), "message.messageId", id="message-id"),
    pytest.param(
        _send({"metadata": {"k\udc00": 1}}), 'message.metadata["k\\udc00"]', id="metadata-key"
    ),
    pytest.param(
        _send({"metadata": {"a": ["x", {"b": "\udbff!"}]}}),
        "message.metadata.a[1].b",
        id="nested-metadata-value",
    ),
    pytest.param(
        _send({"parts": [{"text": "ok"}, {"data": {"k": SURROGATE}}]}),
        "message.parts[1].data.k",
        id="data-part",
    ),
    pytest.param(_send({}, metadata={"trace": SURROGATE}), "metadata.trace", id="request-metadata"),
]


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture
def app(agent: EchoAgent) -> Iterator[A2AApplication]:
    application = A2AApplication(card(), agent, heartbeat_interval=0.05)
    yield application
    assert application.close(WAIT)


def _no_task_stored(app: A2AApplication) -> bool:
    listed = app.handler.store.list_tasks(ListTasksParams(), principal="")
    return not listed.tasks


def _field_violations(error: dict[str, Any]) -> list[str]:
    return [
        violation["field"]
        for detail in error["data"]
        for violation in detail.get("fieldViolations", ())
    ]


# -- the wire edge ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["SendMessage", "SendStreamingMessage"])
@pytest.mark.parametrize(("params", "field"), POISONED)
def test_a_lone_surrogate_anywhere_in_params_is_invalid_params_naming_the_field(
    app: A2AApplication, agent: EchoAgent, method: str, params: dict[str, Any], field: str
) -> None:
    response = rpc(app, method, params, request_id=7)
    assert response.code == 200
    assert response.headers["content-type"] == "application/json"  # not an event stream
    answer = response.json()
    assert answer["id"] == 7
    assert answer["error"]["code"] == -32602
    assert field in answer["error"]["message"]
    assert _field_violations(answer["error"]) == [field]
    assert agent.calls == 0
    assert _no_task_stored(app)


@pytest.mark.parametrize("method", ["message/send", "message/stream"])
def test_a2a_0_3_calls_get_the_same_refusal(
    app: A2AApplication, agent: EchoAgent, method: str
) -> None:
    message = {
        "kind": "message",
        "role": "user",
        "messageId": "m1",
        "parts": [{"kind": "text", "text": SURROGATE}],
    }
    response = rpc(app, method, {"message": message}, version=None)
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == -32602
    assert "$.message.parts[0].text" in error["message"]
    assert agent.calls == 0


def test_utf8_encoded_surrogate_bytes_are_refused_too(
    app: A2AApplication, agent: EchoAgent
) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": _send({})})
    raw = body.replace('"hello"', '"he\\u0000llo"').encode().replace(b"\\u0000", b"\xed\xa0\x80")
    answer = call(
        app, body=raw, headers={"Content-Type": "application/json", "A2A-Version": "1.0"}
    ).json()
    assert answer["error"]["code"] == -32602
    assert _field_violations(answer["error"]) == ["message.parts[0].text"]
    assert agent.calls == 0


def test_other_operations_are_checked_too(app: A2AApplication) -> None:
    answer = rpc(app, "GetTask", {"id": f"t{SURROGATE}"}).json()
    assert answer["error"]["code"] == -32602
    assert _field_violations(answer["error"]) == ["id"]


def test_a_lone_surrogate_in_the_envelope_is_an_invalid_request(app: A2AApplication) -> None:
    answer = rpc(app, "SendMessage", _send({}), request_id=f"r{SURROGATE}").json()
    assert answer == {
        "jsonrpc": "2.0",
        "id": None,  # the id cannot be echoed
        "error": {
            "code": -32600,
            "message": "Request id is not valid Unicode text (lone surrogate)",
            "data": answer["error"]["data"],
        },
    }
    other = rpc(app, f"SendMessage{SURROGATE}", _send({}), request_id=3).json()
    assert (other["id"], other["error"]["code"]) == (3, -32600)


def test_surrogate_pairs_are_ordinary_text(app: A2AApplication) -> None:
    """``json.dumps`` writes non-BMP characters as escaped pairs: they are valid text."""
    answer = rpc(app, "SendMessage", _send({"parts": [{"text": "hi \U0001f600"}]})).json()
    task = answer["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["text"] == "echo: hi \U0001f600"


# -- the client edge ----------------------------------------------------------------------------


@attrs.define
class _CountingApp:
    app: A2AApplication
    posts: int = 0

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] == "POST":
            self.posts += 1
        return self.app(environ, start_response)


@pytest.mark.parametrize(
    "send",
    [
        pytest.param(lambda c: c.send_message(SURROGATE), id="text"),
        pytest.param(lambda c: c.send_message([Part(text="ok"), f"x{SURROGATE}"]), id="part"),
        pytest.param(lambda c: c.send_message("ok", metadata={SURROGATE: 1}), id="metadata"),
        pytest.param(lambda c: c.stream_message(SURROGATE), id="stream"),
        pytest.param(lambda c: c.get_task(SURROGATE), id="get-task"),
    ],
)
def test_the_client_refuses_to_send_text_that_is_not_unicode(
    agent: EchoAgent, send: Callable[[A2AClient], object]
) -> None:
    counting = _CountingApp(A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent))
    with serve_in_thread(counting) as url, A2AClient.from_url(url) as client:
        with pytest.raises(ConfigurationError, match="not valid Unicode text") as caught:
            send(client)
        assert isinstance(caught.value.__cause__, UnicodeEncodeError)
        assert "Nothing was sent" in str(caught.value)
        assert counting.posts == 0
        assert client.send_message("still fine").status.state is TaskState.completed  # type: ignore[union-attr]
    assert counting.app.close(WAIT)


def test_the_resilient_client_neither_retries_nor_falls_back_on_it(agent: EchoAgent) -> None:
    """An argument error is not an agent failure: the next agent is not tried."""
    primary = _CountingApp(A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent))
    backup = _CountingApp(A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent))
    with (
        serve_in_thread(primary) as first,
        serve_in_thread(backup) as second,
        ResilientA2AClient(
            A2AClient.from_url(first), fallbacks=[A2AClient.from_url(second)]
        ) as client,
    ):
        with pytest.raises(ConfigurationError, match="not valid Unicode text"):
            client.send_message(f"hi {SURROGATE}")
        assert (primary.posts, backup.posts) == (0, 0)
    assert primary.app.close(WAIT)
    assert backup.app.close(WAIT)


# -- acknowledged work stays durable under poisoned input, on every store -----------------------

SENDERS = 8
SENDS = 25
POISON_CALLS = 80


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def medium(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Medium]:
    opened = _open(request.param, request, tmp_path)
    with opened.store:
        yield opened


def _post(url: str, body: bytes) -> tuple[int, str, bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
    try:
        conn.request(
            "POST",
            "/",
            body=body,
            headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
        )
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()


def test_acknowledged_tasks_are_durable_while_poisoned_requests_arrive(medium: Medium) -> None:
    """The issue's repro: 8 threads send ordinary messages while another sends messages
    with a lone surrogate (unary and streaming). Every poisoned call is -32602; after a
    clean shutdown the store's medium holds every acknowledged task in the acknowledged
    state."""
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]), EchoAgent(), task_store=medium.store
    )
    told: dict[str, str] = {}
    lock = threading.Lock()
    refusals: list[tuple[int, str, Any]] = []
    start = threading.Barrier(SENDERS + 1)
    with serve_in_thread(app) as url:

        def sender(n: int) -> None:
            with A2AClient.from_url(url) as client:
                start.wait(30)
                for i in range(SENDS):
                    task = client.send_message(f"hello {n}-{i}")
                    assert isinstance(task, Task)
                    with lock:
                        told[task.id] = task.status.state.value

        def poisoner() -> None:
            start.wait(30)
            for i in range(POISON_CALLS):
                method = "SendStreamingMessage" if i % 2 else "SendMessage"
                envelope = {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": method,
                    "params": _send({"messageId": f"p{i}", "parts": [{"text": f"x{SURROGATE}"}]}),
                }
                status, content_type, body = _post(url, json.dumps(envelope).encode())
                answer = json.loads(body) if content_type == "application/json" else body
                refusals.append((status, content_type, answer))

        with ThreadPoolExecutor(SENDERS + 1) as pool:
            futures = [pool.submit(sender, n) for n in range(SENDERS)] + [pool.submit(poisoner)]
            for future in futures:
                future.result(timeout=300)
        assert app.close(WAIT)

    medium.store.close()
    durable = medium.durable_states(list(told))
    assert {t: s for t, s in told.items() if durable.get(t) != s} == {}
    assert len(told) == SENDERS * SENDS
    assert set(told.values()) == {TaskState.completed.value}  # nobody's work was failed
    codes = [(s, t, a["error"]["code"] if isinstance(a, dict) else a) for s, t, a in refusals]
    assert codes == [(200, "application/json", -32602)] * POISON_CALLS


# -- the fast path never skips a poisoned body ---------------------------------------------------

# Any character, surrogates (which st.characters() leaves out) included often.
_JSON_TEXT = st.text(alphabet=st.characters() | st.integers(0xD800, 0xDFFF).map(chr))
_JSON_VALUES = st.recursive(
    st.none() | st.integers() | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4),
    max_leaves=12,
)


@given(value=_JSON_VALUES, ascii_only=st.booleans())
def test_the_byte_scan_flags_every_body_that_decodes_to_a_lone_surrogate(
    value: Any, ascii_only: bool
) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    decoded = json.loads(body)
    if find_surrogate(decoded) is not None:
        assert may_hold_surrogate(body)
