"""Text that is not Unicode: lone surrogates (U+D800..U+DFFF) in decoded JSON.

``json.loads`` accepts ``"\\ud800"`` (and UTF-8-encoded surrogates) and returns a
``str`` that no UTF-8 encoder, database or peer accepts. Both edges refuse such strings
before they travel further: the server where a request is decoded
(:func:`a2a_sync.server._wire.decode`), the client where a request body is encoded.

Checking is cheap on the hot path: a body can only produce a surrogate through a
``\\uD8xx``..``\\uDFxx`` escape or the UTF-8 bytes ``ED A0``..``ED BF``, so
:func:`may_hold_surrogate` scans the bytes once and the decoded value is walked only
when one of those appears (or, on the client, only after strict encoding failed).
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["describe_surrogate", "find_surrogate", "may_hold_surrogate"]

_ESCAPED: Final = re.compile(rb"\\u[dD][89a-fA-F]")  # \uD800 .. \uDFFF
_ENCODED: Final = re.compile(rb"\xed[\xa0-\xbf]")  # UTF-8 of U+D800 .. U+DFFF
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def may_hold_surrogate(body: bytes) -> bool:
    """False when decoding ``body`` as JSON cannot yield a lone surrogate."""
    # Substring tests first (fast scans): most bodies hold neither prefix.
    return (b"\\u" in body and _ESCAPED.search(body) is not None) or (
        b"\xed" in body and _ENCODED.search(body) is not None
    )


def find_surrogate(value: Any, path: str = "$") -> str | None:
    """The JSON path of the first string (member name or value) in ``value`` holding a
    lone surrogate, or ``None``. A bad member name is reported as ``<path>.<name>`` with
    the name escaped (``\\ud800``)."""
    if isinstance(value, str):
        return path if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            inner = _member(path, key)
            if isinstance(key, str) and _SURROGATE.search(key):
                return inner
            found = find_surrogate(item, inner)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = find_surrogate(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def describe_surrogate(path: str) -> str:
    """The problem text for a path found by :func:`find_surrogate` (``text @ path``, the
    codec's shape of a violation)."""
    return f"not valid Unicode text (lone surrogate; send UTF-8 text) @ {path}"


def _member(path: str, key: Any) -> str:
    name = str(key)
    if _NAME.match(name):
        return f"{path}.{name}"
    shown = name.encode("utf-8", "backslashreplace").decode("utf-8").replace('"', '\\"')
    return f'{path}["{shown}"]'
