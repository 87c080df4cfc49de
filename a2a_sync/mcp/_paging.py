"""Following a paged MCP listing (``tools/list``, ``prompts/list``...) to its end.

Every page honours the connection's ``ttlMs`` cache (modern era) unless the caller asks
for a refresh. A broken server cannot keep the client paging: a ``nextCursor`` that is not
a string, or any cursor handed out a second time (``a → b → a``), is a
:class:`~a2a_sync.errors.ProtocolError` naming the server, and so are more than
:data:`MAX_PAGES` pages.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final, TypeVar

from ..errors import DeadlineExceeded, ProtocolError
from . import _codec
from ._cache import ResponseCache
from .session import MCPSession

__all__ = ["MAX_PAGES", "json_type_name", "list_all", "server_name"]

T = TypeVar("T")

#: Pages a list operation follows at most: a server handing out cursors forever is broken.
MAX_PAGES: Final = 10_000


def json_type_name(value: Any) -> str:
    """The JSON type a Python value would have (``"array"`` for a list...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def server_name(session: MCPSession) -> str:
    """The server as error messages name it: its own name and where it runs."""
    info = session.server_info
    name = info.name if info is not None else None
    where = session.transport_name
    return f"server {name!r} ({where})" if name else where


def list_all(
    session: MCPSession,
    cache: ResponseCache | None,
    method: str,
    key: str,
    cls: type[T],
    *,
    timeout: float,
    operation: str,
    refresh: bool = False,
) -> list[T]:
    """Every item of the listing ``method`` (result list under ``key``), all pages,
    each page from ``cache`` while it is fresh (unless ``refresh``).

    Raises:
        DeadlineExceeded: The pages took longer than ``timeout`` together.
        ProtocolError: A page lacks its list, a cursor is not a string or repeats.
    """
    deadline = time.monotonic() + timeout
    items: list[T] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _page in range(MAX_PAGES):
        raw = cache.get(method, cursor or "") if cache is not None and not refresh else None
        if raw is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded(
                    f"{operation} timed out after {timeout:g} s", timeout=timeout
                )
            params = {"cursor": cursor} if cursor is not None else None
            pending = session.begin(method, params, inline=True)
            try:
                raw = pending.wait(remaining, operation=operation)
            except DeadlineExceeded as exc:
                raise DeadlineExceeded(
                    f"{operation} timed out after {timeout:g} s", timeout=timeout
                ) from exc
            if cache is not None:
                cache.put(method, cursor or "", raw)
        page = raw.get(key) if isinstance(raw, dict) else None
        if not isinstance(page, list):
            raise ProtocolError(f"{method} result of {server_name(session)} lacks a {key!r} list")
        items.extend(_codec.structure(page, list[cls], what=method))  # type: ignore[valid-type]
        next_cursor = raw.get("nextCursor")
        if next_cursor is None or next_cursor == "":
            return items
        if not isinstance(next_cursor, str):
            raise ProtocolError(
                f"{method} of {server_name(session)} returned a nextCursor that is a JSON "
                f"{json_type_name(next_cursor)}, not a string, after {len(items)} item(s); "
                "the listing cannot go on (a server bug: cursors are opaque strings)",
                excerpt=repr(next_cursor)[:80],
            )
        if next_cursor in seen:
            raise ProtocolError(
                f"{method} of {server_name(session)} handed out cursor {next_cursor[:80]!r} a "
                f"second time after {len(items)} item(s): its paging runs in a cycle "
                "(a server bug)"
            )
        seen.add(next_cursor)
        cursor = next_cursor
    raise ProtocolError(f"{method} of {server_name(session)} returned more than {MAX_PAGES} pages")
