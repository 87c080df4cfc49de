"""ProtoJSON for the ``lf.a2a.v1`` messages, faster than ``json_format`` for what they use.

``google.protobuf.json_format`` is pure Python and general; for the A2A messages it is
most of the binding's own CPU (a completed task: ~135 µs to parse). These two functions
walk the descriptors directly, with the same results for the field kinds the A2A proto
has (strings, bools, 32/64-bit integers, enums by name, bytes in base64, nested and
repeated messages, string-keyed maps, oneofs); the well-known types (Struct, Value,
Timestamp ...) are handed to ``json_format``. ``tests/a2a/test_grpc_proto.py`` checks
both directions against ``json_format``.

Errors: :func:`parse` raises :class:`ProtoJSONError` (a ValueError) naming the field.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable
from functools import cache
from typing import Any, Final

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

__all__ = ["ProtoJSONError", "parse", "to_dict"]

_WKT: Final = frozenset(
    {
        "google.protobuf.Struct",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.Any",
        "google.protobuf.FieldMask",
        "google.protobuf.Empty",
    }
)
_INT64: Final = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED64,
        FieldDescriptor.TYPE_SFIXED64,
    }
)
_INT32: Final = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_SFIXED32,
    }
)


#: Scalar kinds whose ProtoJSON form differs from the Python value.
_CONVERTED: Final = frozenset({FieldDescriptor.TYPE_ENUM, FieldDescriptor.TYPE_BYTES} | _INT64)


class ProtoJSONError(ValueError):
    """A value does not fit its field."""


@cache
def _fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    """A message's fields by JSON name and by proto name."""
    out = {field.name: field for field in descriptor.fields}
    out.update({field.json_name: field for field in descriptor.fields})
    return out


@cache
def _is_map(field: FieldDescriptor) -> bool:
    message = field.message_type
    return message is not None and bool(message.GetOptions().map_entry)


@cache
def _repeated(field: FieldDescriptor) -> bool:
    # protobuf >= 5.28 has ``is_repeated``; 7 dropped ``label``.
    flag = getattr(field, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    return bool(getattr(field, "label", 0) == 3)  # LABEL_REPEATED


# -- dict -> message -----------------------------------------------------------------------------


def parse(data: Any, message: Message) -> Message:
    """Fill ``message`` from its ProtoJSON ``data`` (a dict) and return it.

    Raises:
        ProtoJSONError: An unknown member, or a value of the wrong kind.
    """
    full = message.DESCRIPTOR.full_name
    if full in _WKT:
        try:
            json_format.ParseDict(data, message)
        except json_format.ParseError as exc:
            raise ProtoJSONError(f"{full}: {exc}") from exc
        return message
    if not isinstance(data, dict):
        raise ProtoJSONError(f"{full} must be a JSON object, not {type(data).__name__}")
    fields = _fields(message.DESCRIPTOR)
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            raise ProtoJSONError(f"{full} has no field {key!r}")
        if value is None and (
            field.message_type is None or field.message_type.full_name != "google.protobuf.Value"
        ):
            continue  # ProtoJSON: null is the field's default
        try:
            _set(message, field, value)
        except (TypeError, ValueError, KeyError) as exc:
            if isinstance(exc, ProtoJSONError):
                raise
            raise ProtoJSONError(f"{full}.{field.json_name}: {exc}") from exc
    return message


def _set(message: Message, field: FieldDescriptor, value: Any) -> None:
    name = field.name
    if field.message_type is not None:
        if _is_map(field):
            if not isinstance(value, dict):
                raise ProtoJSONError(f"{field.json_name} must be an object")
            container = getattr(message, name)
            entry = field.message_type.fields_by_name["value"]
            for key, item in value.items():
                if entry.message_type is not None:
                    parse(item, container[key])
                else:
                    container[key] = _scalar(entry, item)
            return
        if _repeated(field):
            if not isinstance(value, list):
                raise ProtoJSONError(f"{field.json_name} must be a list")
            container = getattr(message, name)
            for item in value:
                parse(item, container.add())
            return
        child = getattr(message, name)
        child.SetInParent()
        parse(value, child)
        return
    if _repeated(field):
        if not isinstance(value, list):
            raise ProtoJSONError(f"{field.json_name} must be a list")
        getattr(message, name).extend(_scalar(field, item) for item in value)
        return
    setattr(message, name, _scalar(field, value))


def _scalar(field: FieldDescriptor, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise ProtoJSONError(f"{field.json_name} must be a string")
        return value
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise ProtoJSONError(f"{field.json_name} must be true or false")
        return value
    if kind == FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        if isinstance(value, str):
            found = enum.values_by_name.get(value)
            if found is None:
                raise ProtoJSONError(f"{field.json_name}: unknown {enum.name} {value[:40]!r}")
            return found.number
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ProtoJSONError(f"{field.json_name} must be an enum name")
    if kind in _INT32 or kind in _INT64:
        if isinstance(value, bool) or not isinstance(value, (int, str, float)):
            raise ProtoJSONError(f"{field.json_name} must be an integer")
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
        if number is None:
            raise ProtoJSONError(f"{field.json_name} must be an integer")
        return number
    if kind == FieldDescriptor.TYPE_BYTES:
        if not isinstance(value, str):
            raise ProtoJSONError(f"{field.json_name} must be base64 text")
        text = value.replace("-", "+").replace("_", "/")
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ProtoJSONError(f"{field.json_name} must be a number")
    return float(value)


# -- message -> dict -----------------------------------------------------------------------------


def to_dict(message: Message) -> Any:
    """The ProtoJSON form of ``message`` (lowerCamelCase names, enums by name, 64-bit
    integers as strings, unset fields left out), as ``json_format.MessageToDict``."""
    plan = _plan(message.DESCRIPTOR)
    if plan is None:
        return json_format.MessageToDict(message)
    out = {}
    for field, value in message.ListFields():
        name, convert = plan[field.number]
        out[name] = value if convert is None else convert(value)
    return out


_Convert = Callable[[Any], Any] | None


@cache
def _plan(descriptor: Descriptor) -> dict[int, tuple[str, _Convert]] | None:
    """How each field of a message type is written (``None`` for a well-known type,
    which ``json_format`` writes): its JSON name and converter (``None``: as is).
    Built once per type, so a message costs one dict lookup per set field."""
    if descriptor.full_name in _WKT:
        return None
    return {field.number: (field.json_name, _converter(field)) for field in descriptor.fields}


def _converter(field: FieldDescriptor) -> _Convert:
    if field.message_type is not None:
        if _is_map(field):
            entry = field.message_type.fields_by_name["value"]
            if entry.message_type is not None:
                item = _message_writer(entry.message_type)
                return lambda value: {key: item(v) for key, v in value.items()}
            return lambda value: {key: _scalar_out(entry, v) for key, v in value.items()}
        item = _message_writer(field.message_type)
        if _repeated(field):
            return lambda value: [item(v) for v in value]
        return item
    if field.type not in _CONVERTED:
        return None  # strings, bools, 32-bit integers, floats: as they are
    if _repeated(field):
        return lambda value: [_scalar_out(field, v) for v in value]
    return lambda value: _scalar_out(field, value)


def _message_writer(descriptor: Descriptor) -> Callable[[Message], Any]:
    if descriptor.full_name == "google.protobuf.Timestamp":
        return _timestamp
    return to_dict


_EPOCH: Final = datetime.datetime(1970, 1, 1)
_DAY: Final = 86_400
_MIN_SECONDS: Final = -62_135_596_800  # 0001-01-01T00:00:00Z
_MAX_SECONDS: Final = 253_402_300_799  # 9999-12-31T23:59:59Z


def _timestamp(message: Any) -> str:
    """RFC 3339 text of a Timestamp, as ``Timestamp.ToJsonString`` writes it (0, 3, 6
    or 9 fractional digits)."""
    nanos, seconds = message.nanos, message.seconds
    if not (_MIN_SECONDS <= seconds <= _MAX_SECONDS and 0 <= nanos < 1_000_000_000):
        return str(message.ToJsonString())  # raises its ValueError for the invalid value
    in_day = seconds % _DAY
    text = (_EPOCH + datetime.timedelta((seconds - in_day) // _DAY, in_day)).isoformat()
    if nanos == 0:
        return text + "Z"
    if nanos % 1_000_000 == 0:
        return f"{text}.{nanos // 1_000_000:03d}Z"
    if nanos % 1_000 == 0:
        return f"{text}.{nanos // 1_000:06d}Z"
    return f"{text}.{nanos:09d}Z"


def _scalar_out(field: FieldDescriptor, value: Any) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_ENUM:
        enum = field.enum_type
        assert enum is not None
        found = enum.values_by_number.get(value)
        return found.name if found is not None else value
    if kind in _INT64:
        return str(value)
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    return value
