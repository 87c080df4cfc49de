"""JSON in and out of the server's unary calls: the strict request parser and the
response encoder, each built once and called without the ``json`` module's per-call
Python layers (same rules, same bytes).

Internal to :mod:`a2a_sync.server`.
"""

from __future__ import annotations

import json
import re
from json.decoder import WHITESPACE
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, Final

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
_scan: Final = _STRICT.scan_once
_skip_space: Final = WHITESPACE.match


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


def _default(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


# json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode builds
# this C encoder on every call; built once here with the same settings (without its
# circular-reference marker dict, which cannot be shared between threads: a cyclic value
# raises RecursionError instead of ValueError, an internal error either way).
_encode: Final = c_make_encoder(
    None, _default, encode_basestring, None, ":", ",", False, False, False
)


def encode_json(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (the bytes of ``_net.jsonrpc.encode``)."""
    return "".join(_encode(value, 0)).encode("utf-8")


def encode_result(request_id: Any, result: Any) -> bytes:
    """A JSON-RPC success response."""
    return encode_json({"jsonrpc": "2.0", "id": request_id, "result": result})
