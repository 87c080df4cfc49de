"""Message parts on the wire, both revisions: 1.0 parts are a oneof by member (``text`` |
``raw`` (base64) | ``url`` | ``data``) with ``mediaType``/``filename``/``metadata``; 0.3 parts
are tagged with ``kind`` (``text`` / ``file{bytes|uri,name,mimeType}`` / ``data``).

A link of the codec chain (primitives -> part, card and 0.3 hooks -> converters -> codec ->
card codec): :func:`a2a_sync.a2a.converters.build_converter` registers these functions as
the :class:`~a2a_sync.a2a.types.Part` hooks of each revision's converter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .primitives import WireError, b64decode, b64encode
from .types import Part

__all__ = ["dump_part_v03", "dump_part_v1", "load_part_v03", "load_part_v1"]


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or value.__class__ is str:
        return value
    raise WireError(f"part {key} must be a string")


def _opt_metadata(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    value = obj.get("metadata")
    if value is None or value.__class__ is dict:
        return value
    raise WireError("part metadata must be an object")


_PART_MEMBERS_V1: Final = ("text", "raw", "url", "data")


def load_part_v1(obj: Any, _: Any) -> Part:
    if obj.__class__ is not dict:
        raise WireError("a part must be a JSON object")
    text = obj.get("text")
    if text.__class__ is str and len(obj) == 1:  # the common case, kept cheap
        return Part(text=text)
    present = [key for key in _PART_MEMBERS_V1 if obj.get(key) is not None]
    if len(present) != 1:
        raise WireError("a part needs exactly one of text, raw, url or data")
    member = present[0]
    value = obj[member]
    if member == "raw":
        value = b64decode(value)
    elif member != "data" and value.__class__ is not str:
        raise WireError(f"part {member} must be a string")
    return Part(
        **{member: value},
        media_type=_opt_str(obj, "mediaType"),
        filename=_opt_str(obj, "filename"),
        metadata=_opt_metadata(obj),
    )


def dump_part_v1(part: Part) -> dict[str, Any]:
    if part.text is not None:
        out: dict[str, Any] = {"text": part.text}
    elif part.raw is not None:
        out = {"raw": b64encode(part.raw)}
    elif part.url is not None:
        out = {"url": part.url}
    else:
        out = {"data": part.data}
    if part.media_type is not None:
        out["mediaType"] = part.media_type
    if part.filename is not None:
        out["filename"] = part.filename
    if part.metadata is not None:
        out["metadata"] = part.metadata
    return out


# a2a-sdk's 0.3 adapter wraps a non-object data value as {"value": v} and flags it here.
_DATA_PART_COMPAT: Final = "data_part_compat"


def load_part_v03(obj: Any, _: Any) -> Part:
    if obj.__class__ is not dict:
        raise WireError("a part must be a JSON object")
    kind = obj.get("kind")
    if kind is None:  # tolerate untagged parts: infer the kind from the members
        kind = next((k for k in ("text", "file", "data") if k in obj), None)
    metadata = _opt_metadata(obj)
    if kind == "text":
        text = obj.get("text")
        if text.__class__ is not str:
            raise WireError("text part needs a string text")
        return Part(text=text, metadata=metadata)
    if kind == "file":
        file = obj.get("file")
        if file.__class__ is not dict:
            raise WireError("file part needs a file object")
        media_type, filename = _opt_str(file, "mimeType"), _opt_str(file, "name")
        if file.get("bytes") is not None:
            raw = b64decode(file["bytes"])
            return Part(raw=raw, media_type=media_type, filename=filename, metadata=metadata)
        uri = file.get("uri")
        if uri.__class__ is not str:
            raise WireError("file part needs bytes or a uri")
        return Part(url=uri, media_type=media_type, filename=filename, metadata=metadata)
    if kind == "data":
        data = obj.get("data")
        if data is None:
            raise WireError("data part needs data")
        if metadata is not None and metadata.get(_DATA_PART_COMPAT) and data.__class__ is dict:
            metadata = {k: v for k, v in metadata.items() if k != _DATA_PART_COMPAT} or None
            data = data.get("value")
        return Part(data=data, metadata=metadata)
    raise WireError(f"unknown part kind {str(kind)[:40]!r}")


def dump_part_v03(part: Part) -> dict[str, Any]:
    metadata = part.metadata
    if part.text is not None:
        out: dict[str, Any] = {"kind": "text", "text": part.text}
    elif part.data is not None:
        data = part.data
        if data.__class__ is not dict:
            data = {"value": data}
            metadata = {**(metadata or {}), _DATA_PART_COMPAT: True}
        out = {"kind": "data", "data": data}
    else:
        file: dict[str, Any] = (
            {"bytes": b64encode(part.raw)} if part.raw is not None else {"uri": part.url}
        )
        if part.media_type is not None:
            file["mimeType"] = part.media_type
        if part.filename is not None:
            file["name"] = part.filename
        out = {"kind": "file", "file": file}
    if metadata is not None:
        out["metadata"] = metadata
    return out
