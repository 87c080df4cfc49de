"""How tools and tool results show in Jupyter (``_repr_html_``): escaped, bounded, never raising."""

from __future__ import annotations

import html
import json
import re

import pytest

from a2a_sync.mcp import _codec, _html, types

SCRIPT = "<script>alert(1)</script>"


def _result(wire: dict[str, object]) -> types.CallToolResult:
    return _codec.structure(wire, types.CallToolResult)


def _tool(wire: dict[str, object]) -> types.Tool:
    return _codec.structure(wire, types.Tool)


def test_tool_result_escapes_text_and_structured_content_from_the_server() -> None:
    result = _result(
        {
            "content": [{"type": "text", "text": f"hi {SCRIPT}"}],
            "structuredContent": {"note": SCRIPT, SCRIPT: 1},
        }
    )
    rendered = result._repr_html_()
    assert "<script>" not in rendered
    assert html.escape(SCRIPT) in rendered
    assert "hi " in rendered


def test_tool_result_marks_a_tool_error_and_a_success_differently() -> None:
    failed = _result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    fine = _result({"content": [{"type": "text", "text": "boom"}]})
    assert "(error)" in failed._repr_html_()
    assert "(error)" not in fine._repr_html_()


def test_tool_result_describes_binary_blocks_without_embedding_or_linking_them() -> None:
    result = _result(
        {
            "content": [
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "https://example.com/x.png", "name": "x"},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "aGk="}},
            ]
        }
    )
    rendered = result._repr_html_()
    assert "<img" not in rendered
    assert "<a " not in rendered
    assert "<audio" not in rendered
    assert "aGVsbG8=" not in rendered  # the payload itself is never shown
    assert "image/png, 5 bytes" in rendered
    assert "audio/wav, 2 bytes" in rendered
    assert "https://example.com/x.png" in rendered
    assert "file:///b.bin</code> (2 bytes)" in rendered


def test_tool_result_shows_embedded_text_resources_and_names_unknown_block_kinds() -> None:
    result = _result(
        {
            "content": [
                {"type": "resource", "resource": {"uri": "note://1", "text": "<i>body</i>"}},
                {"type": "tool_use", "id": "t1", "name": "x", "input": {}},
            ]
        }
    )
    rendered = result._repr_html_()
    assert "note://1" in rendered
    assert html.escape("<i>body</i>") in rendered
    assert "<em>tool_use</em> block" in rendered


def test_tool_result_cuts_long_text_and_long_block_lists() -> None:
    long_text = "x" * (_html.TEXT_LIMIT + 500)
    many = [{"type": "text", "text": f"block {i}"} for i in range(_html.ITEM_LIMIT + 5)]
    rendered = _result({"content": [{"type": "text", "text": long_text}, *many]})._repr_html_()
    assert "x" * _html.TEXT_LIMIT in rendered
    assert "x" * (_html.TEXT_LIMIT + 1) not in rendered
    assert "(500 more characters)" in rendered
    assert f"block {_html.ITEM_LIMIT - 2}" in rendered  # the long text is the first block
    assert f"block {_html.ITEM_LIMIT - 1}" not in rendered
    assert "and 6 more blocks" in rendered


def test_tool_result_renders_values_json_cannot_encode_instead_of_raising() -> None:
    raw = types.CallToolResult(structured_content={"raw": b"\x00<"})
    assert html.escape(json.dumps(repr(b"\x00<"))) in raw._repr_html_()  # as a JSON string
    circular: list[object] = []
    circular.append(circular)
    assert "[[...]]" in types.CallToolResult(structured_content=circular)._repr_html_()


def test_empty_tool_result_says_so() -> None:
    assert "no content" in types.CallToolResult()._repr_html_()


def test_tool_lists_parameters_with_types_required_marks_and_descriptions() -> None:
    tool = _tool(
        {
            "name": "book",
            "title": "Book a table",
            "description": "Reserve a table",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "people": {"type": "integer", "description": "how many"},
                    "note": {"type": ["string", "null"]},
                    "when": {"enum": ["lunch", "dinner"]},
                    "free": {},
                },
                "required": ["people"],
            },
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": False, "destructiveHint": True},
        }
    )
    rendered = tool._repr_html_()
    items = re.findall(r"<li>(.*?)</li>", rendered)
    assert items == [
        "<code>people</code>: integer <em>(required)</em> — how many",
        "<code>note</code>: string | null",
        "<code>when</code>: enum",
        "<code>free</code>: any",
    ]
    assert "<strong>Book a table</strong>" in rendered
    assert "destructive" in rendered
    assert "read-only" not in rendered
    assert "returns structured content" in rendered


def test_tool_escapes_every_server_provided_string() -> None:
    tool = _tool(
        {
            "name": SCRIPT,
            "title": SCRIPT,
            "description": SCRIPT,
            "inputSchema": {
                "type": "object",
                "properties": {SCRIPT: {"type": SCRIPT, "description": SCRIPT}},
            },
        }
    )
    rendered = tool._repr_html_()
    assert "<script>" not in rendered
    # name, title, description, and the property's name, type and description
    assert rendered.count(html.escape(SCRIPT)) == 6


@pytest.mark.parametrize(
    "schema",
    [
        {},
        {"type": "object", "properties": ["a", "b"]},
        {"type": "object", "properties": {"a": "string", "b": None}, "required": "a"},
        {"type": "object", "properties": {"a": {"type": 7}}, "required": [{"x": 1}]},
    ],
)
def test_tool_with_an_odd_input_schema_still_renders(schema: dict[str, object]) -> None:
    rendered = types.Tool(name="odd", input_schema=schema)._repr_html_()
    assert "<code>odd</code>" in rendered


def test_tool_lists_at_most_the_item_limit_of_parameters() -> None:
    count = _html.ITEM_LIMIT + 3
    properties = {f"p{i}": {"type": "string"} for i in range(count)}
    tool = types.Tool(name="wide", input_schema={"type": "object", "properties": properties})
    rendered = tool._repr_html_()
    assert rendered.count("<li><code>p") == _html.ITEM_LIMIT
    assert "and 3 more" in rendered
