"""Issue 18 item 6: tool results are built by a direct hook; anything unusual still goes
through cattrs' generated functions, with the same values and the same error paths as
before (the expected details below are what the generic path produced)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from a2a_sync.errors import ProtocolError
from a2a_sync.mcp import _codec
from a2a_sync.mcp import types as t
from a2a_sync.mcp.transports._stdio_text import loads_line

BAD: list[tuple[Any, str]] = [
    ({"content": [{"type": "text"}]}, "required field missing @ $.content[0].text"),
    ({"content": None}, "invalid value for type, expected tuple @ $.content"),
    (
        {"content": [{"type": "image", "data": "!!", "mimeType": "x"}]},
        "invalid value for type, expected bytes @ $.content[0].data",
    ),
    ({"_meta": [1]}, "invalid value for type, expected dict[str, typing.Any] | None @ $.meta"),
    (
        {"content": [{"type": "text", "text": "a", "annotations": {"priority": "x"}}]},
        "invalid value for type, expected float | None @ $.content[0].annotations.priority",
    ),
]


@pytest.mark.parametrize(("raw", "detail"), BAD)
def test_malformed_results_name_the_json_path(raw: Any, detail: str) -> None:
    with pytest.raises(ProtocolError) as info:
        _codec.structure(raw, t.CallToolResult, what="tool result")
    assert info.value.details == [detail]


def test_a_non_object_block_names_its_index() -> None:
    with pytest.raises(ProtocolError) as info:
        _codec.structure({"content": [{"type": "text", "text": "a"}, 3]}, t.CallToolResult)
    assert info.value.details[0].endswith("@ $.content[1]")


def test_usual_and_unusual_results_build_the_same_models() -> None:
    text = t.TextContent(text="b")
    assert _codec.structure(
        {"content": [{"type": "text", "text": "b"}], "structuredContent": {"n": 1}, "_meta": {}},
        t.CallToolResult,
    ) == t.CallToolResult(content=(text,), structured_content={"n": 1}, meta={})
    unknown = _codec.structure(
        {"content": [{"type": "zzz", "a": 1}, {"type": "text", "text": "b"}]}, t.CallToolResult
    )
    assert unknown.content == (t.UnknownContent(kind="zzz", raw={"type": "zzz", "a": 1}), text)
    assert _codec.structure({"isError": "yes"}, t.CallToolResult).is_error is True
    assert _codec.structure({}, t.CallToolResult) == t.CallToolResult()


@pytest.mark.parametrize(
    "line",
    [
        '{"a":1}',
        ' {"a":1}',
        '{"a":1} ',
        '{"a":1}\r',
        "\ufeff{}",
        "[1]",
        "NaN",
        '{"a":',
        "x",
        "",
        "{} {}",
    ],
)
def test_stdio_lines_decode_as_json_loads_decodes_them(line: str) -> None:
    try:
        expected: Any = ("ok", json.loads(line))
    except ValueError as exc:
        expected = ("error", type(exc))
    try:
        got: Any = ("ok", loads_line(line))
    except ValueError as exc:
        got = ("error", type(exc))
    assert repr(got) == repr(expected)  # repr: NaN != NaN
