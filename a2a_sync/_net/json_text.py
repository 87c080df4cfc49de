"""Compact JSON text from json's C encoder, built once.

``json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode``
builds a new C encoder (and a table of the containers seen) on every call, through two
Python frames: half the cost of encoding a small message. These functions give the same
text (compact, non-ASCII kept, NaN refused, ``TypeError`` for what JSON cannot hold)
without that. Where the interpreter has no C accelerator they are ``JSONEncoder.encode``.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any, Final

__all__ = ["compact", "compact_tree"]

_OPTIONS: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_MAKE: Final[Any] = getattr(json.encoder, "c_make_encoder", None)


def _build(markers: dict[int, Any] | None) -> Callable[[Any, int], list[str]]:
    # (markers, default, encoder, indent, key/item separators, sort_keys, skipkeys, allow_nan)
    encoder: Callable[[Any, int], list[str]] = _MAKE(
        markers,
        _OPTIONS.default,
        json.encoder.encode_basestring,
        None,
        ":",
        ",",
        False,
        False,
        False,
    )
    return encoder


_TREE: Final = _build(None) if _MAKE is not None else None


def compact(value: Any) -> str:
    """``value`` as compact JSON text; a circular value raises ``ValueError`` as
    ``json.dumps`` does."""
    if _MAKE is None:
        return _OPTIONS.encode(value)
    return "".join(_build({})(value, 0))


def compact_tree(value: Any) -> str:
    """:func:`compact` for a value that is a tree (what a codec dumps: never circular),
    without the circular-reference check: a cycle recurses until ``RecursionError``."""
    if _TREE is None:
        return _OPTIONS.encode(value)
    return "".join(_TREE(value, 0))
