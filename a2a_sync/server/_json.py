"""JSON in and out of the server's unary calls: the strict request parser and the
response encoder, each built once and called without the ``json`` module's per-call
Python layers (same rules, same bytes).

Internal to :mod:`a2a_sync.server`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final, cast

from .._net.json_text import compact_tree
from ..errors import ParseError

__all__ = ["encode_json", "encode_result", "loads_strict", "loads_strict_noting_names"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("duplicate member name")
    return out


# In UTF-8 JSON without any backslash every '"' delimits a string, and a string followed by
# ':' is a member name; underscores occur only inside strings. So this finds a member name
# holding "_" (a ProtoJSON field name such as history_length) in such a body.
_SNAKE_NAME: Final = re.compile(rb'_[^"]*"\s*:')


_STRICT: Final = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_unique_members)
_scan: Final[Callable[[str, int], tuple[Any, int]]] = _STRICT.scan_once  # type: ignore[attr-defined]
# json.decoder.WHITESPACE: matches at any position (possibly empty), never None.
_skip_space: Final = cast("Callable[[str, int], re.Match[str]]", re.compile(r"[ \t\n\r]*").match)


def loads_strict(body: bytes) -> Any:
    """Parse a request body as strict JSON: ``NaN``/``Infinity`` and duplicate member
    names are errors (RFC 8259 interoperability), as are invalid UTF-8 and nesting deep
    enough to exhaust the parser.

    Raises:
        ParseError: Not JSON, invalid UTF-8, ``NaN``, duplicate members, too deep.
    """
    return _parse(body)[0]


def loads_strict_noting_names(body: bytes) -> tuple[Any, bool]:
    """:func:`loads_strict`, and whether a member name may hold an underscore (``False``
    only when none does)."""
    obj, plain = _parse(body)
    return obj, not plain or b"\\" in body or _SNAKE_NAME.search(body) is not None


def _parse(body: bytes) -> tuple[Any, bool]:
    """The value, and whether the body is UTF-8 opening with "{"."""
    # What json.loads(body) does (detect the encoding, decode, skip white space, scan one
    # value, refuse extra data), without its Python layers on every call. (A body opening
    # with "{" and no NUL next: json.detect_encoding answers utf-8.)
    plain = body[:1] == b"{" and body[1:2] != b"\x00"
    encoding = "utf-8" if plain else json.detect_encoding(body)
    try:
        text = body.decode(encoding, "surrogatepass")
        obj, end = _scan(text, _skip_space(text, 0).end())
        if _skip_space(text, end).end() != len(text):
            raise ValueError("extra data after the JSON value")
    except StopIteration as exc:  # the scanner's "expecting value"
        raise ParseError() from exc
    except (ValueError, RecursionError) as exc:
        raise ParseError() from exc
    return obj, plain


def encode_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (the bytes of ``_net.jsonrpc.encode``)."""
    return compact_tree(value).encode("utf-8")


def encode_result(request_id: Any, result: Any) -> bytes:
    """A JSON-RPC success response."""
    return encode_json({"jsonrpc": "2.0", "id": request_id, "result": result})
