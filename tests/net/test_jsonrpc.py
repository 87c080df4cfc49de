"""JSON-RPC 2.0 envelopes and the error-code table, in both directions."""

from __future__ import annotations

import json

import pytest

from a2a_sync import errors
from a2a_sync._net import jsonrpc as rpc


def test_requests_are_compact_utf8_with_params_omitted_when_none() -> None:
    assert rpc.encode_request("GetTask", {"id": "é"}, 7) == (
        '{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"é"}}'.encode()
    )
    assert b"params" not in rpc.encode_request("ping", None, 1)
    assert b'"id"' not in rpc.encode_notification("notifications/initialized")


def test_nan_is_never_encoded() -> None:
    with pytest.raises(ValueError):
        rpc.encode({"x": float("nan")})


def test_result_is_returned_when_the_envelope_is_valid() -> None:
    response = {"jsonrpc": "2.0", "id": 3, "result": {"ok": True}}
    assert rpc.result_from_response(response, expected_id=3) == {"ok": True}


@pytest.mark.parametrize(
    "response",
    [
        [],
        "text",
        {"id": 1, "result": 1},
        {"jsonrpc": "1.0", "id": 1, "result": 1},
        {"jsonrpc": "2.0", "id": 2, "result": 1},
        {"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "x"}},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": 1, "error": "bad"},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -32600, "message": "m"}},
    ],
)
def test_malformed_envelopes_are_protocol_errors(response: object) -> None:
    with pytest.raises(errors.ProtocolError):
        rpc.result_from_response(response, expected_id=1)


def test_a_missing_result_is_tolerated_only_when_asked() -> None:
    response = {"jsonrpc": "2.0", "id": 1}
    assert rpc.result_from_response(response, expected_id=1, allow_missing_result=True) is None


@pytest.mark.parametrize(
    ("code", "table", "expected"),
    [
        (-32700, rpc.A2A_ERRORS, errors.ParseError),
        (-32601, rpc.MCP_ERRORS, errors.MethodNotFound),
        (-32001, rpc.A2A_ERRORS, errors.TaskNotFound),
        (-32002, rpc.A2A_ERRORS, errors.TaskNotCancelable),
        (-32002, rpc.MCP_ERRORS, errors.ResourceNotFound),
        (-32009, rpc.A2A_ERRORS, errors.VersionNotSupported),
        (-32022, rpc.MCP_ERRORS, errors.UnsupportedProtocolVersion),
        (-32099, rpc.A2A_ERRORS, errors.A2AError),
        (-32099, rpc.MCP_ERRORS, errors.MCPError),
        (-1, rpc.STANDARD_ERRORS, errors.RPCError),
    ],
)
def test_error_codes_map_to_typed_exceptions_per_protocol(
    code: int, table: rpc.ErrorTable, expected: type[errors.RPCError]
) -> None:
    response = {"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m", "data": [1]}}
    with pytest.raises(errors.RPCError) as info:
        rpc.result_from_response(response, expected_id=1, table=table)
    assert type(info.value) is expected
    assert info.value.code == code
    assert info.value.data == [1]


def test_an_error_with_a_null_id_answers_any_request() -> None:
    response = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}}
    with pytest.raises(errors.ParseError):
        rpc.result_from_response(response, expected_id=5)


def test_every_table_entry_round_trips_through_the_server_direction() -> None:
    for table in (rpc.A2A_ERRORS, rpc.MCP_ERRORS):
        for code, cls in table.items():
            wire = json.loads(rpc.encode_error(4, cls()))
            assert wire["error"]["code"] == code
            rebuilt = rpc.error_from_object(wire["error"], table)
            assert type(rebuilt) is cls
            assert rebuilt.message == cls.default_message


@pytest.mark.parametrize(
    ("body", "content_type", "expected"),
    [
        (b"<html><body>502 Bad Gateway</body></html>", "text/html", "HTML"),
        (b"", None, "empty"),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"a"', "application/json", "truncated"),
        (b"not json", "text/plain", "invalid"),
    ],
)
def test_bodies_that_are_not_json_say_what_they_are(
    body: bytes, content_type: str | None, expected: str
) -> None:
    with pytest.raises(errors.ProtocolError) as info:
        rpc.decode_json(body, content_type=content_type)
    assert expected in str(info.value)
    assert isinstance(info.value.__cause__, (ValueError, RecursionError))


def test_error_excerpts_are_truncated() -> None:
    with pytest.raises(errors.ProtocolError) as info:
        rpc.decode_json(b"x" * 10_000)
    assert len(str(info.value)) < 400


def test_deeply_nested_json_is_a_protocol_error_not_a_crash() -> None:
    with pytest.raises(errors.ProtocolError):
        rpc.decode_json(b"[" * 200_000)


def test_decode_request_accepts_a_valid_call_and_a_notification() -> None:
    call = rpc.decode_request(b'{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"t"}}')
    assert (call.method, call.params, call.id, call.is_notification) == (
        "GetTask",
        {"id": "t"},
        "a",
        False,
    )
    note = rpc.decode_request(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert note.is_notification


@pytest.mark.parametrize(
    ("body", "expected", "request_id"),
    [
        (b"{not json", errors.ParseError, None),
        (b"[" * 100_000, errors.ParseError, None),
        (b"[]", errors.InvalidRequest, None),
        (b'[{"jsonrpc":"2.0","id":1,"method":"x"}]', errors.InvalidRequest, None),
        (b'"string"', errors.InvalidRequest, None),
        (b'{"jsonrpc":"2.0","id":1}', errors.InvalidRequest, 1),
        (b'{"jsonrpc":"2.0","id":1,"method":5}', errors.InvalidRequest, 1),
        (b'{"jsonrpc":"1.0","id":2,"method":"x"}', errors.InvalidRequest, 2),
        (b'{"jsonrpc":"2.0","id":3,"method":"x","params":"s"}', errors.InvalidRequest, 3),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"x"}', errors.InvalidRequest, None),
    ],
)
def test_decode_request_rejects_bad_envelopes_with_the_right_code(
    body: bytes, expected: type[errors.RPCError], request_id: object
) -> None:
    with pytest.raises(expected) as info:
        rpc.decode_request(body)
    assert info.value.request_id == request_id


def test_id_counter_is_unique_across_threads() -> None:
    import threading

    counter = rpc.IdCounter()
    seen: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        values = [counter() for _ in range(500)]
        with lock:
            seen.extend(values)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(set(seen)) == 4000
