from __future__ import annotations

import pytest

from a2a_sync.errors import ProtocolError
from a2a_sync.mcp import _codec, types


def test_call_tool_result_structures_every_content_kind_and_ignores_unknown_members() -> None:
    wire = {
        "content": [
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}},
            {"type": "image", "data": "aGk=", "mimeType": "image/png"},
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "a://b", "name": "b", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "a://c", "text": "body"}},
            {"type": "resource", "resource": {"uri": "a://d", "blob": "aGk="}},
        ],
        "structuredContent": {"a": 1},
        "isError": True,
        "futureField": 42,
    }
    result = _codec.structure(wire, types.CallToolResult)
    kinds = [type(block) for block in result.content]
    assert kinds == [
        types.TextContent,
        types.ImageContent,
        types.AudioContent,
        types.ResourceLink,
        types.EmbeddedResource,
        types.EmbeddedResource,
    ]
    assert result.content[1].data == b"hi"  # type: ignore[union-attr]
    assert isinstance(result.content[4].resource, types.TextResourceContents)  # type: ignore[union-attr]
    assert isinstance(result.content[5].resource, types.BlobResourceContents)  # type: ignore[union-attr]
    assert result.structured_content == {"a": 1}
    assert result.is_error is True
    assert result.text == "hi"


def test_unknown_content_kind_is_kept_verbatim_and_sent_back_unchanged() -> None:
    block = {"type": "tool_use", "id": "x", "name": "n", "input": {}}
    result = _codec.structure({"content": [block]}, types.CallToolResult)
    assert result.content[0] == types.UnknownContent(kind="tool_use", raw=block)
    assert _codec.unstructure(result)["content"] == [block]


def test_absent_optional_members_take_defaults() -> None:
    tool = _codec.structure({"name": "t"}, types.Tool)
    assert tool == types.Tool(name="t")
    assert _codec.structure({}, types.CallToolResult).is_error is False


def test_unstructure_uses_camel_case_and_omits_none_but_keeps_required_defaults() -> None:
    wire = _codec.unstructure(types.CreateMessageResult.from_text("hi", model="m"))
    assert wire == {
        "content": {"type": "text", "text": "hi"},
        "model": "m",
        "role": "assistant",
        "stopReason": "endTurn",
    }
    assert _codec.unstructure(types.ElicitResult.decline()) == {"action": "decline"}


def test_meta_maps_to_underscore_meta() -> None:
    result = _codec.structure({"content": [], "_meta": {"k": 1}}, types.CallToolResult)
    assert result.meta == {"k": 1}


def test_malformed_payload_raises_protocol_error_naming_the_path() -> None:
    with pytest.raises(ProtocolError) as info:
        _codec.structure({"content": [{"type": "text"}]}, types.CallToolResult)
    assert any("$.content[0].text" in d for d in info.value.details)


def test_invalid_base64_raises_protocol_error() -> None:
    with pytest.raises(ProtocolError):
        _codec.structure({"type": "image", "data": "***", "mimeType": "x"}, types.ImageContent)


def test_bytes_round_trip_as_base64() -> None:
    blob = types.BlobResourceContents(uri="a://x", blob=b"\x00\xff")
    assert _codec.unstructure(blob) == {"uri": "a://x", "blob": "AP8="}
