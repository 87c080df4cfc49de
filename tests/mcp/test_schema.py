from __future__ import annotations

from typing import Any

import pytest

from a2a_sync.mcp._schema import validate

POINT = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
    "additionalProperties": False,
}
PYDANTIC_STYLE = {
    "$defs": {
        "Item": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    },
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        "kind": {"enum": ["a", "b"]},
        "score": {"anyOf": [{"type": "number", "minimum": 0}, {"type": "null"}]},
    },
    "required": ["items"],
}

CASES: list[tuple[Any, Any, bool]] = [
    (POINT, {"x": 1, "y": 2}, True),
    (POINT, {"x": 1}, False),
    (POINT, {"x": 1, "y": "2"}, False),
    (POINT, {"x": 1, "y": 2, "z": 3}, False),
    (POINT, {"x": 1.0, "y": 2}, True),
    (POINT, {"x": True, "y": 2}, False),
    (POINT, [1, 2], False),
    (PYDANTIC_STYLE, {"items": [{"name": "a"}], "kind": "a", "score": 1.5}, True),
    (PYDANTIC_STYLE, {"items": [{"name": 3}]}, False),
    (PYDANTIC_STYLE, {"items": [], "kind": "c"}, False),
    (PYDANTIC_STYLE, {"items": [], "score": None}, True),
    (PYDANTIC_STYLE, {"items": [], "score": -1}, False),
    ({"type": ["string", "null"]}, None, True),
    ({"type": ["string", "null"]}, 1, False),
    ({"const": True}, 1, False),
    ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1, False),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, 1, True),
    ({"not": {"type": "string"}}, "x", False),
    ({"type": "string", "minLength": 2}, "x", False),
    ({"type": "array", "maxItems": 1}, [1, 2], False),
    ({"type": "object", "additionalProperties": {"type": "integer"}}, {"a": "b"}, False),
    ({"type": "string", "format": "email", "pattern": "^x"}, "anything", True),  # ignored
    (True, {"anything": 1}, True),
    ({}, 42, True),
]


@pytest.mark.parametrize(("schema", "instance", "valid"), CASES)
def test_validator_verdicts(schema: Any, instance: Any, valid: bool) -> None:
    assert (validate(instance, schema) == []) is valid


@pytest.mark.parametrize(("schema", "instance", "valid"), CASES)
def test_verdicts_agree_with_jsonschema_except_on_ignored_keywords(
    schema: Any, instance: Any, valid: bool
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    if isinstance(schema, dict) and ("format" in schema or "pattern" in schema):
        return
    assert jsonschema.Draft202012Validator(schema).is_valid(instance) is valid


def test_findings_name_the_json_path() -> None:
    assert validate({"x": 1, "y": "2"}, POINT) == ["expected integer @ $.y"]
    assert validate({"items": [{"name": 3}]}, PYDANTIC_STYLE) == [
        "expected string @ $.items[0].name"
    ]


def test_self_referencing_schema_terminates() -> None:
    schema = {"$ref": "#"}
    assert validate({"a": 1}, schema) == []
