"""Issue 18 item 6: the compiled outputSchema check answers exactly as the interpreter.

``_schema_compiled.findings`` walks a schema once per tool and falls back to
``_schema.validate`` for the findings; these tests hold the two to the same answers,
on the catalogue of ``tests/mcp/test_schema.py`` and on generated schemas and values.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from a2a_sync.mcp import _schema_compiled
from a2a_sync.mcp._schema import validate
from tests.mcp.test_schema import CASES

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.sampled_from("abxy"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abxy"), inner),
    max_leaves=8,
)
TYPES = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null"])


def _node(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.fixed_dictionaries(
        {},
        optional={
            "type": TYPES | st.lists(TYPES, max_size=2),
            "properties": st.dictionaries(st.sampled_from("abxy"), children, max_size=3),
            "required": st.lists(st.sampled_from("abxy"), max_size=2),
            "additionalProperties": st.booleans() | children,
            "items": children,
            "prefixItems": st.lists(children, max_size=2),
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 3),
            "minLength": st.integers(0, 2),
            "maxLength": st.integers(0, 2),
            "minimum": st.integers(-2, 2),
            "exclusiveMaximum": st.floats(-2, 2),
            "enum": st.lists(JSON, max_size=3),
            "const": JSON,
            "anyOf": st.lists(children, min_size=1, max_size=2),
            "not": children,
        },
    )
    return st.booleans() | keys


SCHEMAS: st.SearchStrategy[Any] = st.recursive(st.just({}) | st.booleans(), _node, max_leaves=6)


def test_the_catalogue_gets_the_interpreters_findings() -> None:
    for schema, instance, _ok in CASES:
        assert _schema_compiled.findings(instance, schema) == validate(instance, schema)


def test_a_cached_schema_answers_every_later_value() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert _schema_compiled.findings({"n": 1}, schema) == []
    assert _schema_compiled.findings({"n": "1"}, schema) == ["expected integer @ $.n"]
    assert _schema_compiled.findings({}, schema) == ["required property missing @ $.n"]


@settings(max_examples=400, deadline=None)
@given(SCHEMAS, JSON)
def test_generated_schemas_and_values_agree(schema: Any, instance: Any) -> None:
    assert _schema_compiled.findings(instance, schema) == validate(instance, schema)
