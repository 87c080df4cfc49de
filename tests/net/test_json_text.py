"""The one compact JSON encoder (a2a_sync._net.json_text) writes what
``JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode``
writes, refuses what it refuses, and works without json's C accelerator."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_sync._net import json_text

REFERENCE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(VALUES)
def test_the_text_is_the_json_modules(value: Any) -> None:
    assert json_text.compact(value) == REFERENCE(value)
    assert json_text.compact_tree(value) == REFERENCE(value)


@pytest.mark.parametrize("encode", [json_text.compact, json_text.compact_tree])
@pytest.mark.parametrize("bad", [math.nan, math.inf, object(), {1j: 1}])
def test_what_json_refuses_is_refused_the_same_way(encode: Any, bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)) as ours:
        encode({"a": [bad]})
    with pytest.raises((ValueError, TypeError)) as theirs:
        REFERENCE({"a": [bad]})
    assert type(ours.value) is type(theirs.value)
    assert str(ours.value) == str(theirs.value)


def test_a_cycle_is_a_value_error_and_compact_tree_does_not_loop_forever() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="Circular"):
        json_text.compact(cycle)
    with pytest.raises(RecursionError):
        json_text.compact_tree(cycle)


def test_without_the_c_accelerator_it_is_the_json_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_text, "_MAKE", None)
    monkeypatch.setattr(json_text, "_TREE", None)
    value = {"é": [1, 2.5, None, "x\u2028"]}
    assert json_text.compact(value) == json_text.compact_tree(value) == REFERENCE(value)
