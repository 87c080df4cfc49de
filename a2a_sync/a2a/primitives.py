"""Wire primitives shared by the A2A converters and card hooks: the wire-error type,
strict scalar loaders, enum tables, RFC 3339 timestamps and standard base64.

Nothing here knows a model class: it is the first link of the codec chain
(primitives -> part, card and 0.3 hooks -> converters -> codec -> card codec).
"""

from __future__ import annotations

import base64
import binascii
import re
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "WireError",
    "b64decode",
    "b64encode",
    "enum_loader",
    "format_timestamp",
    "identity",
    "load_bool",
    "load_int",
    "load_optional_object",
    "load_optional_str",
    "load_object",
    "load_str",
    "parse_timestamp",
]


class WireError(ValueError):
    """A precise complaint about one wire value; its text becomes the path detail."""


def enum_loader(table: Mapping[Any, Any], what: str) -> Callable[[Any, Any], Any]:
    def load(value: Any, _: Any) -> Any:
        try:
            return table[value]
        except (KeyError, TypeError):
            raise WireError(f"unknown {what} {str(value)[:40]!r}") from None

    return load


# --- primitives ----------------------------------------------------------------------------------


def load_str(value: Any, _: Any) -> str:
    if value.__class__ is str:
        return value
    raise TypeError("expected a string")


def load_bool(value: Any, _: Any) -> bool:
    if value is True or value is False:
        return value
    raise TypeError("expected a boolean")


def load_int(value: Any, _: Any) -> int:
    # ProtoJSON writes 64-bit integers as strings and accepts either form for any integer.
    if value.__class__ is int:
        return value
    if value.__class__ is str and value.lstrip("-").isdigit():
        return int(value)
    if value.__class__ is float and value.is_integer():
        return int(value)
    raise TypeError("expected an integer")


def load_object(value: Any, _: Any) -> dict[str, Any]:
    if value.__class__ is dict:
        return value
    raise TypeError("expected a JSON object")


def load_optional_str(value: Any, _: Any) -> str | None:
    # ``str | None`` without cattrs' generic Optional dispatch (a lookup per field per load).
    if value is None or value.__class__ is str:
        return value
    raise TypeError("expected a string")


def load_optional_object(value: Any, _: Any) -> dict[str, Any] | None:
    if value is None or value.__class__ is dict:
        return value
    raise TypeError("expected a JSON object")


def identity(value: Any) -> Any:
    return value


_FRACTION = re.compile(r"\.(\d+)")


def _parse_iso(value: str) -> datetime:
    if sys.version_info >= (3, 11):
        return datetime.fromisoformat(value)
    # 3.10's fromisoformat takes neither "Z" nor fractions other than 3 or 6 digits.
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    text = _FRACTION.sub(lambda m: "." + m.group(1)[:6].ljust(6, "0"), text, count=1)
    return datetime.fromisoformat(text)


def parse_timestamp(value: str) -> datetime:
    """Parse an ISO 8601 / RFC 3339 timestamp; a naive one is taken as UTC.

    Raises:
        ValueError: ``value`` is not such a timestamp.
    """
    if value.__class__ is not str:
        raise TypeError("expected an ISO 8601 timestamp string")
    try:
        parsed = _parse_iso(value)
    except ValueError:
        raise WireError("invalid ISO 8601 timestamp") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def format_timestamp(value: datetime) -> str:
    """Format as ProtoJSON does: UTC, ``Z``, 0, 3 or 6 fractional digits (naive = UTC)."""
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    us = value.microsecond
    fraction = "" if us == 0 else f".{us // 1000:03d}" if us % 1000 == 0 else f".{us:06d}"
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}T"
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}{fraction}Z"
    )


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(value: Any) -> bytes:
    if value.__class__ is not str:
        raise WireError("file bytes must be a base64 string")
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise WireError("file bytes are not valid base64") from None
