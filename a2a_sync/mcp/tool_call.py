"""A ``tools/call`` in flight, output validation, and typed structuring of tool output."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs

from ..errors import (
    ConfigurationError,
    EmptyToolContent,
    HeaderMismatch,
    NoTextContent,
    ProtocolError,
    RequestTimeout,
    RPCError,
    ToolOutputError,
    ToolOutputParseError,
    excerpt,
)
from . import _codec, _schema, _schema_compiled
from . import types as t
from ._cache import Catalog
from ._correlator import PendingRequest
from ._paging import json_type_name
from .session import MCPSession

__all__ = [
    "ToolCall",
    "ToolContext",
    "structure_typed",
    "tool_data",
    "tool_params",
    "tool_result",
    "typed_output",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Converter for ``call_tool_typed``: user types, field names as the tool writes them.
_typed_converter = cattrs.Converter()


@attrs.frozen
class ToolContext:
    """What a tool call needs of the client that started it (and nothing more).

    Attributes:
        session: The connection's session.
        catalog: The connection's remembered tools (for output validation).
        validate_output: Check structured content against the tool's ``outputSchema``.
        max_rounds: Cap on ``input_required`` rounds.
        list_tools: Re-lists the server's tools within a timeout (refreshing ``catalog``).
    """

    session: MCPSession
    catalog: Catalog
    validate_output: bool
    max_rounds: int
    list_tools: Callable[[float | None], object]


class ToolCall:
    """A tool call in flight (from :meth:`MCPClient.start_tool_call
    <a2a_sync.mcp.client.MCPClient.start_tool_call>`).

    Thread-safe: one thread may block in :meth:`result` while another calls :meth:`cancel`.
    """

    def __init__(
        self,
        context: ToolContext,
        *,
        name: str,
        params: dict[str, Any],
        pending: PendingRequest,
        progress: Callable[[t.Progress], None] | None,
        timeout: float,
    ) -> None:
        self.name = name
        self.timeout = timeout
        self._context = context
        self._params = params
        self._progress = progress
        self._current = pending
        self._first: PendingRequest | None = pending
        self._cancelled = False

    def result(
        self,
        timeout: float | None = None,
        *,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
    ) -> t.CallToolResult:
        """Wait for the result (see :meth:`MCPClient.call_tool` for errors).

        Raises:
            Cancelled: :meth:`cancel` was called.
        """
        context = self._context
        session = context.session
        limit = self.timeout if timeout is None else timeout
        first: PendingRequest | None = self._take_first()
        for attempt in (1, 2):
            try:
                raw = session.request_with_input(
                    "tools/call",
                    self._params,
                    timeout=limit,
                    operation=f"tool {self.name!r}",
                    progress=self._progress,
                    reset_on_progress=reset_timeout_on_progress,
                    max_timeout=max_timeout,
                    max_rounds=context.max_rounds,
                    on_pending=self._on_pending,
                    first=first,
                )
                break
            except HeaderMismatch:
                # 2026-07-28 over HTTP: our Mcp-Param-* headers disagree with the tool's
                # current x-mcp-header annotations. The spec: re-list tools, retry once.
                if attempt == 2 or not session.transport.wants_context or self._cancelled:
                    raise
                logger.info("tool %r: header mismatch; re-listing tools and retrying", self.name)
                context.list_tools(limit)
                first = None
        return tool_result(
            raw,
            self.name,
            context.catalog if context.validate_output else None,
            context.list_tools,
            self.timeout,
        )

    def cancel(self, reason: str | None = None) -> bool:
        """Stop the call and tell the server; False if it had already finished."""
        self._cancelled = True
        return self._current.cancel(reason)

    def done(self) -> bool:
        """True once the current round has an outcome."""
        return self._current.done()

    def _take_first(self) -> PendingRequest | None:
        first, self._first = self._first, None
        if first is None:
            raise ConfigurationError("ToolCall.result() can be called once")
        return first

    def _on_pending(self, pending: PendingRequest) -> None:
        self._current = pending
        if self._cancelled:
            pending.cancel("cancelled by the client")


def tool_params(name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``params`` of a ``tools/call`` (``arguments`` copied into a dict unless it is one).

    Raises:
        ConfigurationError: ``arguments`` is not a mapping or None (names its JSON type).
    """
    if arguments is None:
        return {"name": name}
    if type(arguments) is dict:
        return {"name": name, "arguments": arguments}
    if not isinstance(arguments, Mapping):
        raise ConfigurationError(
            f"tool arguments must be a JSON object (dict) or None, got {json_type_name(arguments)}"
        )
    return {"name": name, "arguments": dict(arguments)}


def tool_result(
    raw: Any,
    name: str,
    catalog: Catalog | None,
    list_tools: Callable[[float | None], object],
    timeout: float,
) -> t.CallToolResult:
    """A ``tools/call`` answer as a :class:`~a2a_sync.mcp.types.CallToolResult`, its
    structured content checked against the tool's ``outputSchema`` when ``catalog`` is
    given (output validation on; ``list_tools(timeout)`` fills it if never listed).

    Raises:
        ProtocolError: The answer is not a ``CallToolResult``.
        ToolOutputError: The structured content breaks the tool's ``outputSchema``.
    """
    result = _codec.structure_tool_result(raw)
    if catalog is not None and not result.is_error:
        tool = catalog.tools.get(name)
        if tool is not None:
            schema = tool.output_schema
            data = result.structured_content
            if schema is None or (data is not None and _schema_compiled.valid(data, schema)):
                return result
        _validate(result, name, tool, catalog, list_tools, timeout)  # lists, or explains
    return result


def _validate(
    result: t.CallToolResult,
    name: str,
    tool: t.Tool | None,
    catalog: Catalog,
    list_tools: Callable[[float | None], object],
    timeout: float,
) -> None:
    if tool is None and not catalog.tools_listed:
        try:
            list_tools(timeout)
        except (RPCError, ProtocolError, RequestTimeout) as exc:
            # Validation is best effort: a failed listing must not fail a good call.
            logger.warning("cannot list tools to validate %r: %s", name, exc)
            catalog.tools_listed = True
        tool = catalog.tools.get(name)
    if tool is None or tool.output_schema is None:
        return
    if result.structured_content is None:
        raise ToolOutputError(
            f"tool {name!r} declares an outputSchema but returned no structured content",
            tool=name,
        )
    findings = _schema_compiled.findings(result.structured_content, tool.output_schema)
    if findings:
        raise ToolOutputError(
            f"structured content of tool {name!r} does not match its outputSchema: "
            + "; ".join(findings),
            tool=name,
        )


def tool_data(context: ToolContext, result: t.CallToolResult, name: str, into: Any = None) -> Any:
    """The structured output of tool ``name`` as Python values derived from its
    ``outputSchema`` (see :meth:`MCPClient.call_tool_data
    <a2a_sync.mcp.client.MCPClient.call_tool_data>`); ``None`` without structured content.

    Raises:
        ToolOutputError: The tool reported an error (``is_error``).
        ToolOutputParseError: The value does not fit ``into``.
    """
    if result.is_error:
        raise ToolOutputError(f"tool {name!r} reported an error: {excerpt(result.text)}", tool=name)
    data = result.structured_content
    if data is None:
        return None
    catalog = context.catalog
    if name not in catalog.tools and not catalog.tools_listed:
        context.list_tools(None)
    tool = catalog.tools.get(name)
    schema = tool.output_schema if tool is not None else None
    value = _schema.decode(data, schema) if schema is not None else data
    if into is None:
        return value
    return structure_typed(value, into, name, repr(data))


def typed_output(result: t.CallToolResult, into: type[T], name: str) -> T:
    """The output of tool ``name`` structured into ``into``, for
    :meth:`MCPClient.call_tool_typed <a2a_sync.mcp.client.MCPClient.call_tool_typed>`: the
    structured content when present (a ``{"result": x}`` wrapper is unwrapped if ``into``
    does not fit the wrapper), else the JSON in the first text block.

    Raises:
        ToolOutputError: The tool reported an error (``is_error``).
        EmptyToolContent: No structured content and an empty content list.
        NoTextContent: Content, but no text block (``.kinds`` lists what came).
        ToolOutputParseError: The text is not JSON, or the JSON does not fit ``into``.
    """
    if result.is_error:
        raise ToolOutputError(f"tool {name!r} reported an error: {excerpt(result.text)}", tool=name)
    if result.structured_content is not None:
        data = result.structured_content
        try:
            return structure_typed(data, into, name, repr(data))
        except ToolOutputParseError:
            if isinstance(data, dict) and len(data) == 1 and "result" in data:
                return structure_typed(data["result"], into, name, repr(data))
            raise
    if not result.content:
        raise EmptyToolContent(f"tool {name!r} returned empty content", tool=name)
    text = next((b.text for b in result.content if isinstance(b, t.TextContent)), None)
    if text is None:
        kinds = [b.type for b in result.content]
        raise NoTextContent(
            f"tool {name!r} returned {len(kinds)} content item(s) but none were text: "
            f"[{', '.join(kinds)}]",
            tool=name,
            kinds=kinds,
        )
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ToolOutputParseError(
            f"tool {name!r} returned text that is not JSON", tool=name, excerpt=excerpt(text)
        ) from exc
    return structure_typed(data, into, name, text)


def structure_typed(data: Any, into: type[T], name: str, raw: str) -> T:
    """Structure tool output ``data`` into ``into``.

    Raises:
        ToolOutputParseError: It does not fit (names the tool and the type).
    """
    try:
        return _typed_converter.structure(data, into)
    except (cattrs.BaseValidationError, ValueError, TypeError, KeyError) as exc:
        raise _parse_error(name, into, raw, exc) from exc


def _parse_error(name: str, into: type[Any], raw: str, exc: Exception) -> ToolOutputParseError:
    details = (
        "; ".join(cattrs.transform_error(exc))
        if isinstance(exc, cattrs.BaseValidationError)
        else str(exc)
    )
    return ToolOutputParseError(
        f"output of tool {name!r} does not fit {getattr(into, '__name__', into)}: {details}",
        tool=name,
        excerpt=excerpt(raw),
    )
