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
import threading
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
#
# Each message type gets a reader, built once: one entry per member name (JSON and proto
# name) with the field's setter, chosen from the field's kind when the reader is built,
# so a value costs one dict lookup and one call.

_Reader = Callable[[Any, Message], None]
_Setter = Callable[[Message, Any], None]
#: Readers by message type; a reader is registered before its fields' readers are built
#: (so a type that contains itself reads too).
_READERS: dict[Descriptor, _Reader] = {}
#: Readers and writers are built under one lock and published when complete; a type
#: being built is found here meanwhile (by the thread building it).
_BUILD: Final = threading.RLock()
_BUILDING: dict[Descriptor, Any] = {}


def parse(data: Any, message: Message) -> Message:
    """Fill ``message`` from its ProtoJSON ``data`` (a dict) and return it.

    Raises:
        ProtoJSONError: An unknown member, or a value of the wrong kind.
    """
    descriptor: Any = message.DESCRIPTOR  # upb's or the pure-Python Descriptor
    read = _READERS.get(descriptor) or _reader(descriptor)
    read(data, message)
    return message


def _reader(descriptor: Descriptor) -> _Reader:
    with _BUILD:
        found: _Reader | None = _READERS.get(descriptor) or _BUILDING.get(descriptor)
        if found is not None:
            return found
        full = descriptor.full_name
        if full in _WKT:
            read = _wkt_reader(full)
        else:
            # member name -> (JSON name, setter, whether null is a value, not "unset")
            plan: dict[str, tuple[str, _Setter, bool]] = {}
            _BUILDING[descriptor] = read = _plan_reader(full, plan)
            for field in descriptor.fields:
                entry = (field.json_name, _setter(field), _nullable(field))
                plan[field.name] = plan[field.json_name] = entry
            del _BUILDING[descriptor]
        _READERS[descriptor] = read
        return read


def _nullable(field: FieldDescriptor) -> bool:
    message = field.message_type
    return message is not None and message.full_name == "google.protobuf.Value"


def _wkt_reader(full: str) -> _Reader:
    def read(data: Any, message: Message) -> None:
        try:
            json_format.ParseDict(data, message)
        except json_format.ParseError as exc:
            raise ProtoJSONError(f"{full}: {exc}") from exc

    return read


def _plan_reader(full: str, plan: dict[str, tuple[str, _Setter, bool]]) -> _Reader:
    def read(data: Any, message: Message) -> None:
        if not isinstance(data, dict):
            raise ProtoJSONError(f"{full} must be a JSON object, not {type(data).__name__}")
        for key, value in data.items():
            entry = plan.get(key)
            if entry is None:
                raise ProtoJSONError(f"{full} has no field {key!r}")
            json_name, setter, nullable = entry
            if value is None and not nullable:
                continue  # ProtoJSON: null is the field's default
            try:
                setter(message, value)
            except ProtoJSONError:
                raise
            except (TypeError, ValueError, KeyError) as exc:
                raise ProtoJSONError(f"{full}.{json_name}: {exc}") from exc

    return read


def _setter(field: FieldDescriptor) -> _Setter:
    name, json_name = field.name, field.json_name
    if field.message_type is not None:
        if _is_map(field):
            entry = field.message_type.fields_by_name["value"]
            item_type = entry.message_type

            def set_map(message: Message, value: Any) -> None:
                if not isinstance(value, dict):
                    raise ProtoJSONError(f"{json_name} must be an object")
                container = getattr(message, name)
                for key, item in value.items():
                    if item_type is not None:
                        parse(item, container[key])
                    else:
                        container[key] = _scalar(entry, item)

            return set_map
        child = field.message_type
        read = _READERS.get(child) or _reader(child)
        if _repeated(field):

            def set_messages(message: Message, value: Any) -> None:
                if not isinstance(value, list):
                    raise ProtoJSONError(f"{json_name} must be a list")
                add = getattr(message, name).add
                for item in value:
                    read(item, add())

            return set_messages

        def set_message(message: Message, value: Any) -> None:
            sub = getattr(message, name)
            sub.SetInParent()
            read(value, sub)

        return set_message
    if _repeated(field):

        def set_scalars(message: Message, value: Any) -> None:
            if not isinstance(value, list):
                raise ProtoJSONError(f"{json_name} must be a list")
            getattr(message, name).extend(_scalar(field, item) for item in value)

        return set_scalars
    if field.type == FieldDescriptor.TYPE_STRING:

        def set_string(message: Message, value: Any) -> None:
            if not isinstance(value, str):
                raise ProtoJSONError(f"{json_name} must be a string")
            setattr(message, name, value)

        return set_string
    return lambda message, value: setattr(message, name, _scalar(field, value))


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
    descriptor: Any = message.DESCRIPTOR  # upb's or the pure-Python Descriptor
    return (_WRITERS.get(descriptor) or _writer(descriptor))(message)


_Writer = Callable[[Any], Any]
_Convert = _Writer | None
#: Writers by message type (see :data:`_READERS`).
_WRITERS: dict[Descriptor, _Writer] = {}


def _writer(descriptor: Descriptor) -> _Writer:
    """How a message type is written, built once: for each field its JSON name and
    converter (``None``: as is), so a set field costs one dict lookup."""
    with _BUILD:
        found = _WRITERS.get(descriptor) or _BUILDING.get(descriptor)
        if found is not None:
            return found
        full = descriptor.full_name
        if full == "google.protobuf.Timestamp":
            write: _Writer = _timestamp
        elif full in _WKT:
            write = json_format.MessageToDict
        else:
            plan: dict[FieldDescriptor, tuple[str, _Convert]] = {}

            def write(message: Any) -> Any:
                out = {}
                for field, value in message.ListFields():
                    name, convert = plan[field]
                    out[name] = value if convert is None else convert(value)
                return out

            _BUILDING[descriptor] = write
            plan.update(
                {field: (field.json_name, _converter(field)) for field in descriptor.fields}
            )
            del _BUILDING[descriptor]
        _WRITERS[descriptor] = write
        return write


def _converter(field: FieldDescriptor) -> _Convert:
    if field.message_type is not None:
        if _is_map(field):
            entry = field.message_type.fields_by_name["value"]
            if entry.message_type is not None:
                item = _writer(entry.message_type)
                return lambda value: {key: item(v) for key, v in value.items()}
            return lambda value: {key: _scalar_out(entry, v) for key, v in value.items()}
        item = _writer(field.message_type)
        if _repeated(field):
            return lambda value: [item(v) for v in value]
        return item
    if field.type == FieldDescriptor.TYPE_ENUM and not _repeated(field):
        assert field.enum_type is not None
        names = {value.number: value.name for value in field.enum_type.values}
        return lambda value: names.get(value, value)
    if field.type not in _CONVERTED:
        return None  # strings, bools, 32-bit integers, floats: as they are
    if _repeated(field):
        return lambda value: [_scalar_out(field, v) for v in value]
    return lambda value: _scalar_out(field, value)


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
