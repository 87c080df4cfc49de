"""Issue 18 (MCP session pass): the per-call short paths build exactly what the general
paths build.

- Tool results and text blocks are built by their slot setters in ``_codec`` (no attrs
  ``__init__``): same value, equality, hash, repr, frozenness as the class's constructor.
- A compiled schema node of one "type" with checks of that kind only is one frame: same
  answer as the interpreter, for exact types, subclasses and other types.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import attrs
import pytest

from a2a_sync.errors import ProtocolError
from a2a_sync.mcp import _codec, _schema, _schema_compiled
from a2a_sync.mcp import types as t


def _built(raw: dict[str, Any]) -> t.CallToolResult:
    return _codec.structure_tool_result(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"content": [{"type": "text", "text": "hi"}]},
            t.CallToolResult((t.TextContent("hi"),)),
        ),
        (
            {
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                "structuredContent": {"text": "a"},
                "isError": True,
                "_meta": {"k": 1},
            },
            t.CallToolResult(
                (t.TextContent("a"), t.TextContent("b")), {"text": "a"}, True, {"k": 1}
            ),
        ),
        ({}, t.CallToolResult()),
    ],
)
def test_short_path_result_is_the_constructed_one(raw: dict[str, Any], expected: Any) -> None:
    result = _built(raw)
    assert type(result) is t.CallToolResult
    assert result == expected
    assert repr(result) == repr(expected)
    assert hash(result) == hash(expected)
    assert attrs.asdict(result) == attrs.asdict(expected)
    for block, want in zip(result.content, expected.content, strict=True):
        assert type(block) is t.TextContent
        assert (block, hash(block), repr(block)) == (want, hash(want), repr(want))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.is_error = not result.is_error  # type: ignore[misc]
    for block in result.content:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            block.text = "x"  # type: ignore[misc,union-attr]


def test_setters_refuse_a_class_whose_init_does_more() -> None:
    @attrs.frozen
    class Checked:
        value: int = attrs.field(validator=attrs.validators.instance_of(int))

    with pytest.raises(TypeError, match="validates"):
        _codec._slot_setters(Checked)
    # The classes the short path builds are plain: their setters exist, one per field.
    assert len(_codec._slot_setters(t.TextContent)) == len(attrs.fields(t.TextContent))
    assert len(_codec._slot_setters(t.CallToolResult)) == len(attrs.fields(t.CallToolResult))


_SCHEMAS = [
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
    {"type": "string", "minLength": 2},
    {"type": "object", "additionalProperties": False},
]
_VALUES: list[Any] = [
    {"text": "a"},
    {"text": 1},
    {},
    OrderedDict(text=1),  # a dict subclass: isinstance passes, the exact-type checks skip
    [1, 2],
    [1, 2, 3],
    ["a"],
    "abc",
    "a",
    None,
    3,
    True,
]


@pytest.mark.parametrize("schema", _SCHEMAS)
def test_one_kind_node_answers_as_the_interpreter(schema: dict[str, Any]) -> None:
    for value in _VALUES:
        assert _schema_compiled.valid(value, schema) == (not _schema.validate(value, schema)), (
            schema,
            value,
        )


def test_text_blocks_then_others_take_the_block_path() -> None:
    raw = {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "weird", "v": 1},
            {"type": "text", "text": "b"},
        ]
    }
    assert _built(raw) == t.CallToolResult(
        (
            t.TextContent("a"),
            t.ImageContent(b"hi", "image/png"),
            t.UnknownContent(kind="weird", raw={"type": "weird", "v": 1}),
            t.TextContent("b"),
        )
    )


def test_a_malformed_block_after_text_is_explained() -> None:
    with pytest.raises(ProtocolError, match="malformed MCP tool result") as caught:
        _built({"content": [{"type": "text", "text": "a"}, {"type": "image"}]})
    assert "required field missing @ $.content[1].data" in caught.value.details
