"""Issue 18 item 7: the server's per-request work cut, with the same behaviour.

Lazy request headers, direct copies instead of ``attrs.evolve``, the unary JSON parser and
encoder built once, the proto-name pass skipped only when no member name holds ``_``, and
admission on a plain lock. Each test pins what the faster code must still do.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import attrs
import pytest

from a2a_sync._net.jsonrpc import encode
from a2a_sync.a2a.accumulate import _task_with, accumulate
from a2a_sync.a2a.codec import V0_3, V1_0, codec_for
from a2a_sync.errors import ConfigurationError, ParseError
from a2a_sync.server import A2AApplication, RequestContext, TaskUpdater
from a2a_sync.server._admission import Admission
from a2a_sync.server._json import encode_json, loads_strict, loads_strict_noting_names
from a2a_sync.server.context import RequestHeaders, message_with_ids
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.server.wsgi import rpc

WAIT = 10.0


def _card() -> AgentCard:
    return AgentCard(
        name="Hot",
        description="hot path",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )


# -- request headers ---------------------------------------------------------------------------


def test_request_headers_are_the_environs_http_headers_lower_case() -> None:
    environ = {
        "HTTP_A2A_VERSION": "1.0",
        "HTTP_X_TRACE_ID": "t-1",
        "CONTENT_TYPE": "application/json",
        "REQUEST_METHOD": "POST",
        "wsgi.input": object(),
    }
    headers = RequestHeaders(environ)
    environ["HTTP_LATE"] = "added after the call was read"  # not seen: a copy was taken
    expected = {"a2a-version": "1.0", "x-trace-id": "t-1", "content-type": "application/json"}
    assert dict(headers) == expected
    assert headers == expected
    assert headers["x-trace-id"] == "t-1"
    assert headers.get("late") is None
    assert "content-type" in headers
    assert len(headers) == 3
    assert "t-1" in repr(headers)


def test_an_agent_sees_the_calls_headers() -> None:
    seen: list[dict[str, str]] = []

    def agent(context: RequestContext, updater: TaskUpdater) -> None:
        seen.append(dict(context.call.headers))
        updater.reply("ok")

    app = A2AApplication(_card(), agent)
    try:
        params = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "x"}]}}
        reply = rpc(app, "SendMessage", params, headers={"X-Trace-Id": "t-9"}).json()
    finally:
        app.close()
    assert reply["result"]["message"]["parts"] == [{"text": "ok"}]
    assert seen[0]["x-trace-id"] == "t-9"
    assert seen[0]["a2a-version"] == "1.0"
    assert seen[0]["content-type"] == "application/json"


# -- copies instead of attrs.evolve ------------------------------------------------------------


def test_message_with_ids_copies_every_field_like_evolve() -> None:
    # Every field set to a value other than its default: a field the copy forgot (say
    # one added to Message later) shows up as a difference.
    message = Message(
        role=Role.user,
        parts=[Part(text="a"), Part(data={"k": 1})],
        message_id="m",
        context_id="c-old",
        task_id="t-old",
        reference_task_ids=["r"],
        extensions=["urn:x"],
        metadata={"m": True},
    )
    assert {f.name for f in attrs.fields(Message)} == {
        "role",
        "parts",
        "message_id",
        "context_id",
        "task_id",
        "reference_task_ids",
        "extensions",
        "metadata",
    }
    assert message_with_ids(message, "t", "c") == attrs.evolve(message, task_id="t", context_id="c")
    assert message_with_ids(message, None, "c") == attrs.evolve(
        message, task_id=None, context_id="c"
    )


def test_folded_task_snapshots_copy_every_field_like_evolve() -> None:
    task = Task(
        id="t",
        status=TaskStatus(state=TaskState.working),
        context_id="c",
        artifacts=[Artifact(artifact_id="a", parts=[Part(text="x")])],
        history=[Message.user("q", message_id="m")],
        metadata={"k": "v"},
    )
    assert {f.name for f in attrs.fields(Task)} == {
        "id",
        "status",
        "context_id",
        "artifacts",
        "history",
        "metadata",
    }
    status = TaskStatus(state=TaskState.completed)
    copied = _task_with(task, [], status, [], {"n": 1})
    assert copied == attrs.evolve(task, artifacts=[], status=status, history=[], metadata={"n": 1})
    event = TaskStatusUpdateEvent(task_id="t", context_id="c", status=status, metadata={"x": 2})
    assert accumulate(task, event) == attrs.evolve(task, status=status, metadata={"k": "v", "x": 2})


# -- JSON in and out -----------------------------------------------------------------------------


BODIES = [
    b"",
    b" ",
    b"{}",
    b' {"a": [1, 2.5, true, null]} ',
    b"{}x",
    b'{"a":1,"a":2}',
    b'{"a":NaN}',
    b'{"a":-Infinity}',
    b"[1]",
    '{"a":"é"}'.encode("utf-16"),
    b'\xef\xbb\xbf{"a":1}',
    b"[" * 100_000,
    b'\xff{"a":1}',
    b'{"a":"\xff"}',
    b'{"a":"\\ud800"}',
]


def _reference(body: bytes) -> Any:
    def no_constant(name: str) -> Any:
        raise ValueError(name)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len(dict(pairs)) != len(pairs):
            raise ValueError("duplicate")
        return dict(pairs)

    return json.loads(body, parse_constant=no_constant, object_pairs_hook=unique)


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_the_strict_parser_agrees_with_json_loads_and_its_rules(body: bytes) -> None:
    try:
        expected = _reference(body)
    except (ValueError, RecursionError):
        with pytest.raises(ParseError):
            loads_strict(body)
        return
    assert loads_strict(body) == expected


@pytest.mark.parametrize(
    ("body", "snake"),
    [
        (b'{"params":{"message":{"role":"ROLE_USER","messageId":"m"}}}', False),
        (b'{"x": "a_b", "y": ":_", "z": "_\\":"}', True),  # any backslash: assume it may
        (b'{"x":"a_b", "y":":_"}', False),  # underscores in values only
        (b'{"params":{"history_length":1}}', True),
        (b'{"params":{"historyLength":1, "metadata":{"user_id" :1}}}', True),
        (b'{"params":{"history\\u005flength":1}}', True),  # an escaped underscore
        ('{"a_b":1}'.encode("utf-16"), True),  # not UTF-8: not scanned, assumed
    ],
)
def test_the_parser_tells_whether_a_member_name_may_hold_an_underscore(
    body: bytes, snake: bool
) -> None:
    assert loads_strict_noting_names(body)[1] is snake


def test_snake_case_params_are_still_read_when_the_body_names_them_so() -> None:
    def agent(context: RequestContext, updater: TaskUpdater) -> None:
        updater.reply(f"{context.message.message_id}|{context.text}")

    app = A2AApplication(_card(), agent)
    try:
        snake = {
            "message": {"role": "ROLE_USER", "message_id": "m-snake", "parts": [{"text": "q_"}]}
        }
        camel = {
            "message": {"role": "ROLE_USER", "messageId": "m-camel", "parts": [{"text": "q_"}]}
        }
        answers = [rpc(app, "SendMessage", p).json() for p in (snake, camel)]
    finally:
        app.close()
    texts = [a["result"]["message"]["parts"][0]["text"] for a in answers]
    assert texts == ["m-snake|q_", "m-camel|q_"]


@pytest.mark.parametrize(
    "value",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {"a": [1, 2.5, True, None, 'é\u2028\n"\\']}},
        {"id": "x", "nested": {"deep": [[{}], []]}, "n": -0.0, "big": 10**30},
    ],
)
def test_the_encoder_writes_the_bytes_of_the_jsonrpc_encoder(value: Any) -> None:
    assert encode_json(value) == encode(value)


def test_the_encoder_refuses_what_the_jsonrpc_encoder_refuses() -> None:
    for bad in ({"x": float("nan")}, {"x": object()}, {"x": "\ud800"}):
        with pytest.raises((ValueError, TypeError)) as ours:
            encode_json(bad)
        with pytest.raises((ValueError, TypeError)) as theirs:
            encode(bad)
        assert type(ours.value) is type(theirs.value)


def test_codec_for_takes_every_spelling_it_took() -> None:
    assert codec_for("1.0") is V1_0
    assert codec_for("1.0.2") is V1_0
    assert codec_for(" 1.0 ") is V1_0
    assert codec_for("0.3") is V0_3
    assert codec_for("0.3.0") is V0_3
    with pytest.raises(ConfigurationError):
        codec_for("2.0")


# -- admission -----------------------------------------------------------------------------------


def test_close_waits_for_a_unary_call_and_wakes_when_it_ends() -> None:
    admission = Admission(max_streams=1)
    assert admission.admit()
    closing = threading.Event()
    result: list[bool] = []

    def close() -> None:
        closing.set()
        result.append(admission.close(time.monotonic() + 60))

    thread = threading.Thread(target=close, name="a2a-sync-test-close")
    thread.start()
    assert closing.wait(WAIT)
    deadline = time.monotonic() + WAIT
    while not admission.closing and time.monotonic() < deadline:
        time.sleep(0.001)
    assert not admission.admit()  # closing: new calls are refused
    admission.release()  # wakes close() long before its 60 s
    thread.join(WAIT)
    assert not thread.is_alive()
    assert result == [True]
