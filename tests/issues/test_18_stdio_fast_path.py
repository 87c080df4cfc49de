"""Issue 18 item 6: the MCP stdio call's short paths give what the general paths give.

``call_tool`` waits for one round on the caller's thread without a ``ToolCall`` (only an
``input_required`` answer goes on to the rounds loop), the stdio transport writes a
request's envelope around one serialization of ``params``, text blocks of the plain shape
are built directly and valid structured output is checked by the compiled schema alone.
Each short path is held to the general one here: same bytes, same values, same errors.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_sync._net import jsonrpc as _jsonrpc
from a2a_sync.errors import ProtocolError, ToolOutputError
from a2a_sync.mcp import MCPConnection, _codec
from a2a_sync.mcp import types as t
from a2a_sync.mcp.tool_call import tool_result
from a2a_sync.mcp.transports._stdio_text import encode_line

from ..mcp.peers import echo_argv

_scalars = st.none() | st.booleans() | st.integers() | st.text()
_json = st.recursive(
    _scalars | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    request_id=st.integers() | st.text(),
    method=st.text(),
    params=st.dictionaries(st.text(), _json, max_size=4),
)
def test_a_request_line_is_the_generic_encoding(
    request_id: int | str, method: str, params: dict[str, Any]
) -> None:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    line = encode_line(message)
    assert line == _jsonrpc.encode(message) + b"\n"
    assert json.loads(line) == message


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "result": {"x": "é"}},
        {"jsonrpc": "2.0", "id": True, "method": "m", "params": {}},  # bool is not an int id
        {"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1]},
        {"jsonrpc": "1.0", "id": 1, "method": "m", "params": {}},
        {"other": "2.0", "id": 1, "method": "m", "params": {}},
    ],
)
def test_other_messages_take_the_generic_encoding(message: dict[str, Any]) -> None:
    assert encode_line(message) == _jsonrpc.encode(message) + b"\n"


@pytest.mark.parametrize(
    "params",
    [{"a": float("nan")}, {"a": object()}, {"a": {1j: 1}}],
    ids=["nan", "object", "complex-key"],
)
def test_a_request_json_cannot_hold_fails_as_before(params: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}
    with pytest.raises(Exception) as generic:
        _jsonrpc.encode(message)
    with pytest.raises(type(generic.value), match=str(generic.value)[:20]):
        encode_line(message)


def test_a_circular_request_fails_as_before() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    message = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": loop}
    with pytest.raises(ValueError, match="Circular reference"):
        encode_line(message)


@pytest.mark.parametrize(
    "raw",
    [
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"content": [{"type": "text", "text": "a", "_meta": {"k": 1}}]},
        {"content": [{"type": "text", "text": "a", "annotations": {"priority": 0.5}}]},
        {"content": [{"type": "text", "text": 7}]},  # cattrs' rule for str decides
        {"content": [{"type": "text"}]},
        {"content": [{"type": "text", "txt": "a"}]},
        {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]},
        {"content": [{"type": "future", "x": 1}], "isError": True},
        {"content": "text"},
        {"content": [], "structuredContent": {"a": 1}, "_meta": {"m": 2}},
        ["not", "an", "object"],
    ],
)
def test_tool_results_are_structured_as_by_the_converter(raw: Any) -> None:
    expected: Any
    try:
        expected = _codec.structure(raw, t.CallToolResult, what="tool result")
    except ProtocolError as exc:
        expected = exc
    if not isinstance(expected, ProtocolError):
        assert _codec.structure_tool_result(raw) == expected
        return
    with pytest.raises(ProtocolError) as got:
        _codec.structure_tool_result(raw)
    assert (str(got.value), got.value.details) == (str(expected), expected.details)


@pytest.fixture(scope="module")
def echo() -> Any:
    with MCPConnection.stdio(echo_argv(), era="legacy", stderr=None) as conn:
        yield conn


def test_call_tool_answers_and_checks_output(echo: MCPConnection) -> None:
    client = echo.client()
    for text in ("one", "zwei", "trois"):
        assert client.call_tool("echo", {"text": text}).text == text
    # The catalog now knows the tool's outputSchema; a structured answer breaking it is
    # still refused with the findings (the compiled check only short-cuts valid output).
    tool = echo.catalog.tools["echo"]
    assert tool.output_schema is not None
    bad = {"content": [], "structuredContent": {"text": 5}}
    with pytest.raises(ToolOutputError, match="does not match its outputSchema"):
        tool_result(bad, "echo", echo.catalog, lambda _t: None, 5.0)
    missing = {"content": []}
    with pytest.raises(ToolOutputError, match="returned no structured content"):
        tool_result(missing, "echo", echo.catalog, lambda _t: None, 5.0)
