"""RFC 8785 JSON Canonicalization Scheme (JCS) and the strict JSON reader used for cards.

:func:`canonicalize` writes the one byte form a signature covers: sorted keys (by UTF-16
code units), no whitespace, ECMAScript number formatting, integers within 2**53.
:func:`parse_json` reads JSON refusing duplicate keys and the non-standard constants
(``NaN``, ``Infinity``), which would let two readers see two different documents.

All functions are pure and thread-safe.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from json.encoder import encode_basestring
from typing import Any, Final

from ..errors import ConfigurationError, ProtocolError

__all__ = ["MAX_DEPTH", "canonicalize", "format_number", "parse_json"]

#: Deepest object/array nesting canonicalized: far beyond any real card, far below the stack.
MAX_DEPTH: Final = 128
_MAX_SAFE_INTEGER: Final = 2**53


# --- RFC 8785 ----------------------------------------------------------------------------------


def canonicalize(value: Any) -> bytes:
    """Serialize a JSON value per RFC 8785 (JCS), as UTF-8 bytes.

    Keys are sorted by UTF-16 code units, strings keep non-ASCII text literal (only ``"``,
    ``\\`` and control characters are escaped), numbers use ECMAScript formatting (``1.0``
    -> ``1``, ``1e21`` -> ``1e+21``, ``1e-7`` -> ``1e-7``).

    Raises:
        ConfigurationError: The value has no canonical form: NaN/Infinity, an integer
            beyond IEEE 754 double precision, a non-string key, a lone surrogate, or
            nesting deeper than :data:`MAX_DEPTH`.
    """
    out: list[str] = []
    _write(value, out, 0)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError("JSON text contains a lone surrogate") from None


def _write(value: Any, out: list[str], depth: int) -> None:
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(_format_int(value))
    elif isinstance(value, float):
        out.append(format_number(value))
    elif isinstance(value, (list, tuple)):
        _check_depth(depth)
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, depth + 1)
        out.append("]")
    elif isinstance(value, Mapping):
        _check_depth(depth)
        out.append("{")
        for index, key in enumerate(_sorted_keys(value)):
            if index:
                out.append(",")
            out.append(encode_basestring(key))
            out.append(":")
            _write(value[key], out, depth + 1)
        out.append("}")
    else:
        raise ConfigurationError(f"{type(value).__name__} is not a JSON value")


def _check_depth(depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise ConfigurationError(f"JSON nested deeper than {MAX_DEPTH} levels")


def _sorted_keys(obj: Mapping[Any, Any]) -> list[str]:
    if any(key.__class__ is not str for key in obj):
        raise ConfigurationError("JSON object keys must be strings")
    try:
        return sorted(obj, key=lambda key: key.encode("utf-16-be"))
    except UnicodeEncodeError:
        raise ConfigurationError("JSON object key contains a lone surrogate") from None


def _format_int(value: int) -> str:
    if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        return str(value)
    as_float = float(value)
    if as_float != value:
        raise ConfigurationError("integer is not exactly representable as a JSON number")
    return format_number(as_float)


def format_number(value: float) -> str:
    """Format a float like ECMAScript's ``Number.prototype.toString`` (RFC 8785 §3.2.2.3).

    Raises:
        ConfigurationError: ``value`` is NaN or infinite.
    """
    if not math.isfinite(value):
        raise ConfigurationError("NaN and Infinity are not JSON numbers")
    if value == 0:
        return "0"  # also -0
    if value < 0:
        return "-" + format_number(-value)
    # repr() gives the shortest round-tripping digits; re-layout them per ECMA-262.
    mantissa, _, exponent = repr(value).partition("e")
    integral, _, fraction = mantissa.partition(".")
    digits = integral + fraction
    point = len(integral) + int(exponent or 0)  # value = 0.DIGITS x 10^point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    exp = n - 1
    sign = "+" if exp >= 0 else "-"
    head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{sign}{abs(exp)}"


def parse_json(text: str | bytes) -> Any:
    """Parse JSON strictly: duplicate object keys and NaN/Infinity are errors.

    Raises:
        ProtocolError: The text is not strict JSON.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"invalid JSON: {exc}") from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate object key")
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")
