"""The tool operations of :class:`~a2a_sync.mcp.client.MCPClient` (list, call, start,
typed and data results), as a base class so each module stays one topic."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..errors import HeaderMismatch
from . import eras
from . import types as t
from ._handle import Handle
from ._paging import list_all
from .session import MCPSession
from .tool_call import ToolCall, ToolContext, tool_data, tool_params, tool_result, typed_output

__all__ = ["ToolOperations"]

logger = logging.getLogger("a2a_sync.mcp.client")  # where these messages always logged

T = TypeVar("T")


class ToolOperations(Handle):
    """Tools: :meth:`list_tools`, :meth:`call_tool`, :meth:`start_tool_call`,
    :meth:`call_tool_typed`, :meth:`call_tool_data`."""

    __slots__ = ()

    def list_tools(self, *, timeout: float | None = None, refresh: bool = False) -> list[t.Tool]:
        """Every tool the server offers (all pages).

        Args:
            timeout: Seconds for the whole listing (every page).
            refresh: Ask the server even if a ``ttlMs`` hint keeps a cached listing fresh
                (the answer replaces the cached one). Cached listings are also dropped by
                every ``list_changed`` notification and by :meth:`clear_cache`.

        Raises:
            DeadlineExceeded: The listing took longer than the timeout (all pages).
            ProtocolError: The server's paging is broken (a cursor that is not a string,
                or one handed out twice: a cycle); the message names the server.

        Returns ``[]`` without asking when the server does not declare the ``tools``
        capability (like :meth:`list_resources`).
        """
        if self._conn.server_info.capabilities.tools is None:
            return []
        tools = list_all(
            self._conn.session,
            self._cache(),
            "tools/list",
            "tools",
            t.Tool,
            timeout=self._t(timeout),
            operation="list_tools",
            refresh=refresh,
        )
        conn = self._conn
        session = conn.session
        if session.transport.wants_context and session.era == "modern":
            tools = [tool for tool in tools if self._mirrorable(tool, session)]
        conn.catalog.tools = {tool.name: tool for tool in tools}
        conn.catalog.tools_listed = True
        return tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[t.Progress], None] | None = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
    ) -> t.CallToolResult:
        """Call a tool.

        A tool that fails reports ``is_error=True`` in the result (no exception); an
        unknown tool or bad arguments may be either, depending on the server.

        Args:
            name: The tool's name.
            arguments: A JSON object (``dict``) or ``None``.
            timeout: Seconds to wait (default: the handle's).
            progress: Called with each :class:`~a2a_sync.mcp.types.Progress` update (on
                the dispatcher thread).
            reset_timeout_on_progress: Restart the timeout whenever progress arrives...
            max_timeout: ...but never wait longer than this in total (default 10 x timeout).

        Raises:
            ConfigurationError: ``arguments`` is not a dict or None (names its JSON type),
                or the server did not declare ``tools`` (nothing is sent).
            DeadlineExceeded: No answer in time (the server is told to cancel).
            ToolOutputError: The structured content breaks the tool's ``outputSchema``.
            RPCError: The server answered with a JSON-RPC error.
            ConnectionClosed: The connection closed (``ServerProcessError`` if the
                server died: exit status and stderr tail).
        """
        # What start_tool_call(...).result() does, without the handle nobody can reach.
        conn = self._conn
        session = conn.session
        info = session.server_info
        if info is None or info.capabilities.tools is None:
            self._require("tools", f"call_tool {name!r}")
        params = (
            {"name": name, "arguments": arguments}
            if type(arguments) is dict  # tool_params' usual case, without its frame
            else tool_params(name, arguments)
        )
        limit = self.timeout if timeout is None else timeout
        options = conn.options
        for attempt in (1, 2):
            try:
                raw = session.request_with_input(
                    "tools/call",
                    params,
                    timeout=limit,
                    operation=f"tool {name!r}",
                    progress=progress,
                    reset_on_progress=reset_timeout_on_progress,
                    max_timeout=max_timeout,
                    max_rounds=options.input_required_max_rounds,
                )
                break
            except HeaderMismatch:
                # 2026-07-28 over HTTP: our Mcp-Param-* headers disagree with the tool's
                # current x-mcp-header annotations. The spec: re-list tools, retry once.
                if attempt == 2 or not session.transport.wants_context:
                    raise
                logger.info("tool %r: header mismatch; re-listing tools and retrying", name)
                self.list_tools(timeout=limit)
        return tool_result(
            raw,
            name,
            conn.catalog if options.validate_output else None,
            self._list_within,
            limit,
        )

    def start_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[t.Progress], None] | None = None,
    ) -> ToolCall:
        """Send a ``tools/call`` and return at once; ``result()`` waits, ``cancel()``
        (from any thread) stops it and tells the server.

        Raises:
            ConfigurationError: ``arguments`` is not a dict or None.
        """
        return self._start(name, arguments, timeout, progress, inline=False)

    def _start(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        timeout: float | None,
        progress: Callable[[t.Progress], None] | None,
        *,
        inline: bool,
    ) -> ToolCall:
        """``start_tool_call``; ``inline``: the result is waited for next, on this thread."""
        self._require("tools", f"call_tool {name!r}")
        params = tool_params(name, arguments)
        session = self._conn.session
        pending = session.begin("tools/call", params, progress=progress, inline=inline)
        return ToolCall(
            self._tool_context(),
            name=name,
            params=params,
            pending=pending,
            progress=progress,
            timeout=self._t(timeout),
        )

    def call_tool_typed(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        into: type[T],
        timeout: float | None = None,
        progress: Callable[[t.Progress], None] | None = None,
    ) -> T:
        """Call a tool and structure its output into ``into`` (an attrs class, dataclass,
        or anything cattrs can build).

        The output is the structured content when present (a ``{"result": x}`` wrapper,
        which python-sdk servers put around non-object values, is unwrapped if ``into``
        does not fit the wrapper), else the JSON in the first text block.

        Raises:
            EmptyToolContent: No structured content and an empty content list.
            NoTextContent: Content, but no text block (``.kinds`` lists what came).
            ToolOutputParseError: The text is not JSON, or the JSON does not fit ``into``.
            ToolOutputError: The tool reported an error (``is_error``).
            (and everything :meth:`call_tool` raises)
        """
        result = self.call_tool(name, arguments, timeout=timeout, progress=progress)
        return typed_output(result, into, name)

    def call_tool_data(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        into: type[T] | None = None,
        timeout: float | None = None,
        progress: Callable[[t.Progress], None] | None = None,
    ) -> Any:
        """Call a tool and return its structured output as Python values derived from the
        tool's ``outputSchema`` (like fastmcp's ``result.data``), no type needed.

        The ``{"result": x}`` wrapper SDKs put around non-object output is removed
        (``add`` returning ``int`` gives ``3``); strings of ``format`` ``date-time``,
        ``date``, ``time`` and ``uuid`` become ``datetime``/``date``/``time``/``UUID``;
        ``prefixItems`` arrays become tuples; objects stay dicts. With ``into`` (an attrs
        class, dataclass...) the values are structured into it. Returns ``None`` when the
        tool sent no structured content (read ``call_tool(...).text`` then).

        Raises:
            ToolOutputError: The tool reported an error (``is_error``).
            ToolOutputParseError: The output does not fit ``into``.
            (and everything :meth:`call_tool` raises)
        """
        result = self.call_tool(name, arguments, timeout=timeout, progress=progress)
        return tool_data(self._tool_context(), result, name, into)

    def _tool_context(self) -> ToolContext:
        conn = self._conn
        return ToolContext(
            session=conn.session,
            catalog=conn.catalog,
            validate_output=conn.options.validate_output,
            max_rounds=conn.options.input_required_max_rounds,
            list_tools=self._list_within,
        )

    def _list_within(self, timeout: float | None) -> object:
        return self.list_tools(timeout=timeout)

    @staticmethod
    def _mirrorable(tool: t.Tool, session: MCPSession) -> bool:
        mapping = eras.param_header_map(tool)
        if mapping is None:
            logger.warning("dropping tool %r: invalid x-mcp-header annotations", tool.name)
            return False
        if mapping:
            session.param_headers[tool.name] = mapping
        else:
            session.param_headers.pop(tool.name, None)  # annotations may have been removed
        return True
