"""The MCP wire format: one cattrs converter between JSON values and :mod:`.types`.

Rules: attribute ``snake_case`` ↔ wire ``camelCase`` (``meta`` ↔ ``_meta``); an absent
member takes the attribute's default and an unknown member is ignored (servers add
fields with every revision); ``None`` values are omitted on the way out; ``bytes`` are
base64 text on the wire. Content blocks are tagged by ``type``; a block with an unknown
tag becomes :class:`~.types.UnknownContent` and is sent back verbatim. Resource contents
are told apart by ``text`` vs ``blob``.

Structuring failures become :class:`~a2a_sync.errors.ProtocolError` naming the JSON path.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..errors import ProtocolError, excerpt
from . import types as t

__all__ = ["converter", "structure", "structure_tool_result", "to_camel", "unstructure"]

T = TypeVar("T")

_CONTENT_CLASSES: dict[str, type[Any]] = {
    cls.type: cls
    for cls in (t.TextContent, t.ImageContent, t.AudioContent, t.ResourceLink, t.EmbeddedResource)
}


def to_camel(name: str) -> str:
    """``input_schema`` -> ``inputSchema``; ``meta`` -> ``_meta``."""
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _renames(cls: type[Any], *, outbound: bool = False) -> dict[str, Any]:
    """Per-field overrides: the wire name, and (outbound) omit a member only when it is
    ``None`` by default, so a required member with a default (``role``) is always sent."""
    overrides: dict[str, Any] = {}
    for field in attrs.fields(cls):
        wire = to_camel(field.name)
        omit = outbound and field.default is None
        if wire != field.name or omit:
            overrides[field.name] = override(
                rename=wire if wire != field.name else None, omit_if_default=omit or None
            )
    return overrides


def _make_converter() -> cattrs.Converter:
    conv = cattrs.Converter()

    def structure_attrs(cls: type[Any]) -> Callable[[Any, Any], Any]:
        return make_dict_structure_fn(cls, conv, **_renames(cls))

    def unstructure_attrs(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
        inner = make_dict_unstructure_fn(cls, conv, **_renames(cls, outbound=True))
        tag = getattr(cls, "type", None)
        if isinstance(tag, str):

            def tagged(obj: Any) -> dict[str, Any]:
                return {"type": tag, **inner(obj)}

            return tagged
        return inner

    conv.register_structure_hook_factory(attrs.has, structure_attrs)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_attrs)

    def structure_bytes(value: Any, _: Any) -> bytes:
        if not isinstance(value, str):
            raise TypeError(f"expected base64 string, got {type(value).__name__}")
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"invalid base64: {exc}") from exc

    conv.register_structure_hook(bytes, structure_bytes)
    conv.register_unstructure_hook(bytes, lambda b: base64.b64encode(b).decode("ascii"))

    # JSON objects kept as-is (schemas, _meta, capability objects): no per-key copying.
    def structure_json_object(value: Any, _: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise TypeError(f"expected object, got {type(value).__name__}")
        return value

    json_object = dict[str, Any]
    conv.register_structure_hook_func(lambda tp: tp == json_object, structure_json_object)

    def structure_content(value: Any, _: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"content block must be an object, got {type(value).__name__}")
        kind = value.get("type")
        cls = _CONTENT_CLASSES.get(kind) if isinstance(kind, str) else None
        if cls is None:
            return t.UnknownContent(kind=str(kind), raw=value)
        return conv.structure(value, cls)

    def unstructure_content(value: Any) -> Any:
        if isinstance(value, t.UnknownContent):
            return value.raw
        return conv.unstructure(value, type(value))

    conv.register_structure_hook_func(lambda tp: tp == t.ContentBlock, structure_content)
    conv.register_unstructure_hook_func(lambda tp: tp == t.ContentBlock, unstructure_content)
    _register_blocks(conv)

    def structure_resource_contents(value: Any, _: Any) -> Any:
        if isinstance(value, dict) and "blob" in value:
            return conv.structure(value, t.BlobResourceContents)
        return conv.structure(value, t.TextResourceContents)

    conv.register_structure_hook_func(
        lambda tp: tp == t.ResourceContents, structure_resource_contents
    )
    conv.register_unstructure_hook_func(
        lambda tp: tp == t.ResourceContents, lambda v: conv.unstructure(v, type(v))
    )
    return conv


_Blocks = tuple[t.ContentBlock, ...]


def _slot_setters(cls: type[Any]) -> tuple[Callable[[Any, Any], None], ...]:
    """The slot setters of a slotted attrs class, in field order (its ``__init__`` sets
    exactly these fields, with no converters, validators or post-init hook)."""
    if not hasattr(cls, "__slots__") or hasattr(cls, "__attrs_post_init__"):
        raise TypeError(f"{cls.__name__} is not a plain slotted attrs class")
    fields = attrs.fields(cls)
    if any(f.converter is not None or f.validator is not None for f in fields):
        raise TypeError(f"{cls.__name__} converts or validates a field")
    return tuple(cls.__dict__[f.name].__set__ for f in fields)


def _register_blocks(conv: cattrs.Converter) -> None:
    """A content list (every tool result) structured by each block's own hook, without
    cattrs' generic tuple and union dispatch per block. Anything unusual (an unknown or
    malformed block, not a list) goes to the generic hook, which builds the same value
    or raises the same detailed error."""
    generic = conv.get_structure_hook(_Blocks)
    by_tag = {tag: (cls, conv.get_structure_hook(cls)) for tag, cls in _CONTENT_CLASSES.items()}

    new = object.__new__
    text_block = t.TextContent
    # The frozen classes' slots set directly (what their attrs __init__ does, without its
    # frame and its per-field object.__setattr__ lookups): the same instance, field by field.
    set_text, set_annotations, set_text_meta = _slot_setters(text_block)

    def structure_blocks(value: Any, tp: Any) -> tuple[Any, ...]:
        if type(value) is list:
            blocks = []
            try:
                for block in value:
                    kind = block.get("type") if type(block) is dict else None
                    if kind == "text" and len(block) == 2:  # nothing but "type" and "text"
                        text = block.get("text")
                        if type(text) is str:
                            made = new(text_block)
                            set_text(made, text)
                            set_annotations(made, None)
                            set_text_meta(made, None)
                            blocks.append(made)
                            continue
                    known = by_tag.get(kind) if type(kind) is str else None
                    if known is None:
                        break
                    blocks.append(known[1](block, known[0]))
                else:
                    return tuple(blocks)
            except (cattrs.BaseValidationError, ValueError, TypeError, KeyError):
                pass  # the generic hook raises it again, with the JSON path
        return generic(value, tp)  # type: ignore[no-any-return]

    conv.register_structure_hook_func(lambda tp: tp == _Blocks, structure_blocks)

    result_class = t.CallToolResult
    set_content, set_structured, set_is_error, set_meta = _slot_setters(result_class)
    generic_result = make_dict_structure_fn(t.CallToolResult, conv, **_renames(t.CallToolResult))

    def structure_result(value: Any, tp: Any) -> t.CallToolResult:
        # The usual shape built directly; every other one by the generated function.
        if type(value) is dict:
            content = value.get("content", [])
            is_error = value.get("isError", False)
            meta = value.get("_meta")
            if (
                type(content) is list
                and type(is_error) is bool
                and (meta is None or type(meta) is dict)
            ):
                made: list[Any] = []
                for block in content:
                    # Text-only blocks (the usual answer) made here, as structure_blocks
                    # does; any other list goes to it whole.
                    if type(block) is dict and len(block) == 2 and block.get("type") == "text":
                        text = block.get("text")
                        if type(text) is str:
                            one = new(text_block)
                            set_text(one, text)
                            set_annotations(one, None)
                            set_text_meta(one, None)
                            made.append(one)
                            continue
                    try:
                        blocks = structure_blocks(content, _Blocks)
                    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError):
                        return generic_result(value, tp)  # raises it again, with the JSON path
                    break
                else:
                    blocks = tuple(made)
                result = new(result_class)
                set_content(result, blocks)
                set_structured(result, value.get("structuredContent"))
                set_is_error(result, is_error)
                set_meta(result, meta)
                return result
        return generic_result(value, tp)

    conv.register_structure_hook(t.CallToolResult, structure_result)


#: The converter; use :func:`structure` / :func:`unstructure` rather than calling it.
converter = _make_converter()
_structure_result = converter.get_structure_hook(t.CallToolResult)


def structure(data: Any, cls: type[T], *, what: str | None = None) -> T:
    """Build ``cls`` from a decoded JSON value.

    Raises:
        ProtocolError: The value does not fit the model; ``details`` name JSON paths.
    """
    try:
        return converter.structure(data, cls)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        details = (
            cattrs.transform_error(exc, path="$")
            if isinstance(exc, cattrs.BaseValidationError)
            else [str(exc)]
        )
        name = what or getattr(cls, "__name__", str(cls))
        raise ProtocolError(
            f"malformed MCP {name}", details=details, excerpt=excerpt(repr(data))
        ) from exc


def structure_tool_result(data: Any) -> t.CallToolResult:
    """``structure(data, CallToolResult, what="tool result")`` without the converter's
    dispatch (the hook registered for it, called directly).

    Raises:
        ProtocolError: The value does not fit; ``details`` name JSON paths.
    """
    try:
        result: t.CallToolResult = _structure_result(data, t.CallToolResult)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError):
        return structure(data, t.CallToolResult, what="tool result")  # raises it, explained
    return result


def unstructure(obj: Any, cls: Any = None) -> Any:
    """Turn a model (or a list/union of models, given ``cls``) into a JSON value."""
    return converter.unstructure(obj, cls if cls is not None else type(obj))
