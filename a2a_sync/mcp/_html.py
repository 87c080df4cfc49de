"""HTML for Jupyter: how tools and tool results show in a notebook (``_repr_html_``).

Everything a server sent is untrusted: every string is HTML-escaped, long texts and
long lists are cut, nothing is fetched (images and links are described, never embedded
or made clickable), and rendering never raises on odd shapes (a schema whose
``properties`` is not an object, structured content that is not JSON-serialisable).

The functions read the models through the two narrow views below (by attribute and by
their wire ``type`` tag), so this module does not import :mod:`a2a_sync.mcp.types`
(which imports it): the chain runs one way.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, Protocol

__all__ = [
    "ITEM_LIMIT",
    "TEXT_LIMIT",
    "ToolResultView",
    "ToolView",
    "tool_html",
    "tool_result_html",
]


class ToolView(Protocol):
    """What :func:`tool_html` reads of a tool (``types.Tool`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def title(self) -> str | None: ...
    @property
    def description(self) -> str | None: ...
    @property
    def input_schema(self) -> Any: ...
    @property
    def output_schema(self) -> Any: ...
    @property
    def annotations(self) -> Any: ...


class ToolResultView(Protocol):
    """What :func:`tool_result_html` reads of a tool result (``types.CallToolResult``)."""

    @property
    def content(self) -> Sequence[Any]: ...
    @property
    def structured_content(self) -> Any: ...
    @property
    def is_error(self) -> bool: ...


#: Longest server-provided text shown per block before it is cut (a notebook is not a pager).
TEXT_LIMIT: Final = 2000
#: Most content blocks or schema properties listed before "… and N more".
ITEM_LIMIT: Final = 20
#: Readable wrapping for text that may hold long lines.
_PRE: Final = '<pre style="white-space: pre-wrap; margin: 0.25em 0">'

_HINTS: Final = (
    ("read_only_hint", "read-only"),
    ("destructive_hint", "destructive"),
    ("idempotent_hint", "idempotent"),
    ("open_world_hint", "open world"),
)


def _text(value: object, limit: int = TEXT_LIMIT) -> str:
    """``value`` as escaped text, cut at ``limit`` characters."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > limit:
        text = f"{text[:limit]} … ({len(text) - limit} more characters)"
    return html.escape(text)


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=repr)
    except ValueError:  # a circular structure built by hand
        text = repr(value)
    return text


def _capped(items: Iterable[str], count: int) -> list[str]:
    rows = list(items)
    if count > ITEM_LIMIT:
        rows.append(f"<li>… and {count - ITEM_LIMIT} more</li>")
    return rows


def _block_html(block: Any) -> str:
    kind = getattr(block, "type", "?")
    if kind == "text":
        return f"{_PRE}{_text(block.text)}</pre>"
    if kind in ("image", "audio"):
        return (
            f"<div><em>{html.escape(kind)}</em> {_text(block.mime_type, 100)}, "
            f"{len(block.data)} bytes</div>"
        )
    if kind == "resource_link":
        described = f" — {_text(block.description, 200)}" if block.description else ""
        return (
            f"<div><em>resource link</em> <code>{_text(block.uri, 500)}</code> "
            f"{_text(block.name, 200)}{described}</div>"
        )
    if kind == "resource":
        resource = block.resource
        body = (
            f"{_PRE}{_text(resource.text)}</pre>"
            if hasattr(resource, "text")
            else f" ({len(resource.blob)} bytes)"
        )
        return f"<div><em>resource</em> <code>{_text(resource.uri, 500)}</code>{body}</div>"
    return f"<div><em>{_text(kind, 100)}</em> block</div>"


def tool_result_html(result: ToolResultView) -> str:
    """A tool result: its content blocks, then its structured content as JSON."""
    head = "<strong>Tool result</strong>"
    if result.is_error:
        head += ' <strong style="color: #b00020">(error)</strong>'
    parts = [f'<div class="a2a-sync-tool-result">{head}']
    blocks = result.content
    parts += [_block_html(block) for block in blocks[:ITEM_LIMIT]]
    if len(blocks) > ITEM_LIMIT:
        parts.append(f"<div>… and {len(blocks) - ITEM_LIMIT} more blocks</div>")
    if result.structured_content is not None:
        parts.append(
            f"<div><em>structured content</em></div>{_PRE}"
            f"{_text(_json(result.structured_content))}</pre>"
        )
    if not blocks and result.structured_content is None:
        parts.append("<div><em>no content</em></div>")
    parts.append("</div>")
    return "\n".join(parts)


def _schema_type(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if isinstance(kind, list) and all(isinstance(k, str) for k in kind):
        return " | ".join(kind)
    if "enum" in schema:
        return "enum"
    return "any"


def _parameters_html(schema: Any) -> str:
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return ""
    required = schema.get("required")
    needed = {r for r in required if isinstance(r, str)} if isinstance(required, list) else set()
    rows = []
    for name, spec in list(properties.items())[:ITEM_LIMIT]:
        label = f"<code>{_text(name, 100)}</code>: {_text(_schema_type(spec), 100)}"
        if name in needed:
            label += " <em>(required)</em>"
        about = spec.get("description") if isinstance(spec, dict) else None
        if isinstance(about, str) and about:
            label += f" — {_text(about, 200)}"
        rows.append(f"<li>{label}</li>")
    return "<ul>" + "".join(_capped(rows, len(properties))) + "</ul>"


def tool_html(tool: ToolView) -> str:
    """A tool: name, title, description, parameters (from the input schema) and hints."""
    line = f"<code>{_text(tool.name, 200)}</code>"
    title = tool.title or (tool.annotations.title if tool.annotations else None)
    if title:
        line += f" <strong>{_text(title, 200)}</strong>"
    if tool.description:
        line += f" — {_text(tool.description, 500)}"
    parts = [f'<div class="a2a-sync-tool">{line}', _parameters_html(tool.input_schema)]
    if tool.annotations is not None:
        hints = [label for attr, label in _HINTS if getattr(tool.annotations, attr) is True]
        if hints:
            parts.append(f"<div><em>hints (untrusted):</em> {', '.join(hints)}</div>")
    if tool.output_schema is not None:
        parts.append("<div><em>returns structured content</em></div>")
    parts.append("</div>")
    return "\n".join(p for p in parts if p)
