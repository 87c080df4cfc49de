"""``MCPClient``: the cheap, thread-shareable handle users call MCP operations on.

Every method blocks until the server answers or the handle's timeout (or the call's own
``timeout=``) expires; a timeout raises :class:`~a2a_sync.errors.DeadlineExceeded` naming
the operation and the duration and tells the server ``notifications/cancelled``. Results
are :mod:`a2a_sync.mcp.types` models. Modern-era calls that need input
(``input_required``) are answered through the connection's callbacks transparently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

from ..errors import ConfigurationError
from . import _codec, eras
from . import types as t
from ._cache import Catalog, ResponseCache
from ._correlator import PendingRequest
from ._paging import json_type_name, list_all
from .callbacks import progress_for
from .options import MCPOptions
from .session import MCPSession
from .subscriptions import Subscription, SubscriptionEvent
from .tool_call import ToolCall, ToolContext, tool_data, typed_output

__all__ = ["Connected", "MCPClient", "Subscription", "SubscriptionEvent", "ToolCall"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Connected(Protocol):
    """What a client handle needs of its connection
    (:class:`~a2a_sync.mcp.connection.MCPConnection` is one). The connection module
    imports this one, never the other way round."""

    @property
    def session(self) -> MCPSession:
        """The protocol session."""
        ...

    @property
    def server_info(self) -> t.ServerInfo:
        """What negotiation learnt."""
        ...

    @property
    def catalog(self) -> Catalog:
        """What the connection remembers of the server (cache, tools)."""
        ...

    @property
    def options(self) -> MCPOptions:
        """The connection's options (output validation, ``input_required`` cap)."""
        ...

    @property
    def closed(self) -> bool:
        """True after ``close()``, or once the server has gone away."""
        ...

    def close(self) -> None:
        """Shut the connection down."""


class MCPClient:
    """A handle for MCP operations over an :class:`~a2a_sync.mcp.connection.MCPConnection`.

    Cheap to create (two attributes) and safe to share between any number of threads;
    all handles of a connection share its server. Get one with ``connection.client()``
    (it needs only the :class:`Connected` interface of the connection).

    Attributes:
        timeout: This handle's default per-operation timeout in seconds.
    """

    __slots__ = ("_conn", "timeout")

    def __init__(self, connection: Connected, timeout: float) -> None:
        self._conn = connection
        self.timeout = timeout

    def with_timeout(self, timeout: float) -> MCPClient:
        """A handle with its own default timeout over the same connection.

        Example::

            quick = conn.client().with_timeout(10)
            slow = conn.client().with_timeout(300)
        """
        return MCPClient(self._conn, timeout)

    @property
    def connection(self) -> Connected:
        """The connection this handle uses."""
        return self._conn

    @property
    def server_info(self) -> t.ServerInfo:
        """The negotiated era, protocol version, capabilities and server name."""
        return self._conn.server_info

    def __repr__(self) -> str:
        return f"<MCPClient timeout={self.timeout:g} s over {self._conn!r}>"

    # --- basics ---------------------------------------------------------------------------------

    def ping(self, *, timeout: float | None = None) -> None:
        """Check that the server answers (modern era: a ``server/discover`` round trip,
        as 2026-07-28 has no ``ping``).

        Raises:
            DeadlineExceeded: No answer in time.
            ConnectionClosed: The connection is closed.
        """
        session = self._conn.session
        if session.era == "modern":
            session.request("server/discover", None, timeout=self._t(timeout), operation="ping")
        else:
            session.request("ping", None, timeout=self._t(timeout), operation="ping")

    def set_logging_level(self, level: t.LoggingLevel, *, timeout: float | None = None) -> None:
        """Ask the server for log messages at ``level`` and above (delivered to the
        connection's ``logging_callback``). Legacy: ``logging/setLevel``; modern: the
        level rides every later request's ``_meta``.
        """
        if level not in t.LOGGING_LEVELS:
            raise ConfigurationError(f"unknown log level {level!r}")
        session = self._conn.session
        if session.era == "modern":
            session.set_log_level(level)
        else:
            session.request(
                "logging/setLevel",
                {"level": level},
                timeout=self._t(timeout),
                operation="set_logging_level",
            )

    # --- tools ------------------------------------------------------------------------------------

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
        """
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
            ConfigurationError: ``arguments`` is not a dict or None (names its JSON type).
            DeadlineExceeded: No answer in time (the server is told to cancel).
            ToolOutputError: The structured content breaks the tool's ``outputSchema``.
            RPCError: The server answered with a JSON-RPC error.
            ConnectionClosed: The connection closed (``ServerProcessError`` if the
                server died: exit status and stderr tail).
        """
        wanted = progress_for(progress, reset_timeout_on_progress)  # a token even with no callback
        call = self.start_tool_call(name, arguments, progress=wanted, timeout=timeout)
        return call.result(
            reset_timeout_on_progress=reset_timeout_on_progress, max_timeout=max_timeout
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
        if arguments is not None and not isinstance(arguments, Mapping):
            raise ConfigurationError(
                f"tool arguments must be a JSON object (dict) or None, got "
                f"{json_type_name(arguments)}"
            )
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments if type(arguments) is dict else dict(arguments)
        session = self._conn.session
        pending = session.begin("tools/call", params, progress=progress)
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

    # --- resources --------------------------------------------------------------------------------

    def list_resources(
        self, *, timeout: float | None = None, refresh: bool = False
    ) -> list[t.Resource]:
        """Every concrete resource (all pages); ``[]`` without asking when the server does
        not declare the ``resources`` capability (so a loop over servers needs no special
        case). ``refresh`` as in :meth:`list_tools`."""
        if self.server_info.capabilities.resources is None:
            return []
        return list_all(
            self._conn.session,
            self._cache(),
            "resources/list",
            "resources",
            t.Resource,
            timeout=self._t(timeout),
            operation="list_resources",
            refresh=refresh,
        )

    def list_resource_templates(
        self, *, timeout: float | None = None, refresh: bool = False
    ) -> list[t.ResourceTemplate]:
        """Every resource template (all pages); ``[]`` without asking when the server does
        not declare the ``resources`` capability. ``refresh`` as in :meth:`list_tools`."""
        if self.server_info.capabilities.resources is None:
            return []
        return list_all(
            self._conn.session,
            self._cache(),
            "resources/templates/list",
            "resourceTemplates",
            t.ResourceTemplate,
            timeout=self._t(timeout),
            operation="list_resource_templates",
            refresh=refresh,
        )

    def read_resource(
        self, uri: str, *, timeout: float | None = None, refresh: bool = False
    ) -> list[t.TextResourceContents | t.BlobResourceContents]:
        """Read a resource; returns its contents (text or decoded blob parts).

        ``refresh=True`` reads from the server even if a ``ttlMs`` hint keeps a cached
        read fresh.

        Raises:
            ResourceNotFound: (legacy servers) or InvalidParams (modern) for unknown URIs.
        """
        conn = self._conn
        cache = self._cache()
        raw = cache.get("resources/read", uri) if cache is not None and not refresh else None
        if raw is None:
            rounds: list[PendingRequest] = []
            raw = conn.session.request_with_input(
                "resources/read",
                {"uri": uri},
                timeout=self._t(timeout),
                operation=f"read_resource {uri!r}",
                max_rounds=conn.options.input_required_max_rounds,
                on_pending=rounds.append,
            )
            if cache is not None and len(rounds) == 1:
                cache.put("resources/read", uri, raw)
        contents = raw.get("contents") if isinstance(raw, dict) else None
        return _codec.structure(
            contents if contents is not None else [],
            list[t.ResourceContents],
            what="resource contents",
        )

    def subscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Ask for ``resource_updated_callback(uri)`` when the resource changes (legacy era;
        in 2026-07-28 use :meth:`listen`).

        Raises:
            ConfigurationError: The connection is in the modern era.
        """
        self._legacy_only("resources/subscribe", "listen(resource_uris=[...])")
        self._conn.session.request(
            "resources/subscribe",
            {"uri": uri},
            timeout=self._t(timeout),
            operation="subscribe_resource",
        )

    def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Undo :meth:`subscribe_resource` (legacy era)."""
        self._legacy_only("resources/unsubscribe", "closing the listen() subscription")
        self._conn.session.request(
            "resources/unsubscribe",
            {"uri": uri},
            timeout=self._t(timeout),
            operation="unsubscribe_resource",
        )

    # --- prompts and completion ------------------------------------------------------------------

    def list_prompts(
        self, *, timeout: float | None = None, refresh: bool = False
    ) -> list[t.Prompt]:
        """Every prompt (all pages); ``[]`` without asking when the server does not declare
        the ``prompts`` capability. ``refresh`` as in :meth:`list_tools`."""
        if self.server_info.capabilities.prompts is None:
            return []
        return list_all(
            self._conn.session,
            self._cache(),
            "prompts/list",
            "prompts",
            t.Prompt,
            timeout=self._t(timeout),
            operation="list_prompts",
            refresh=refresh,
        )

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> t.GetPromptResult:
        """Render a prompt with string ``arguments``."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        raw = self._conn.session.request_with_input(
            "prompts/get",
            params,
            timeout=self._t(timeout),
            operation=f"prompt {name!r}",
            max_rounds=self._conn.options.input_required_max_rounds,
        )
        return _codec.structure(raw, t.GetPromptResult, what="prompt")

    def complete(
        self,
        ref: t.PromptReference | t.ResourceTemplateReference,
        argument: str,
        value: str,
        *,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> t.Completion:
        """Suggestions for ``argument`` of a prompt or resource template, given the
        partial ``value`` and already-chosen ``context`` arguments."""
        params: dict[str, Any] = {
            "ref": _codec.unstructure(ref),
            "argument": {"name": argument, "value": value},
        }
        if context:
            params["context"] = {"arguments": dict(context)}
        raw = self._conn.session.request(
            "completion/complete", params, timeout=self._t(timeout), operation="complete"
        )
        completion = raw.get("completion") if isinstance(raw, dict) else None
        return _codec.structure(completion or {}, t.Completion, what="completion")

    # --- roots and subscriptions -----------------------------------------------------------------

    def notify_roots_changed(self) -> None:
        """Tell the server the roots changed (legacy; modern servers ask per request)."""
        session = self._conn.session
        if session.era != "modern":
            session.notify("notifications/roots/list_changed")

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: tuple[str, ...] | list[str] = (),
        timeout: float | None = None,
    ) -> Subscription:
        """Open a 2026-07-28 ``subscriptions/listen`` stream.

        Events also reach the connection's ``list_changed_callback`` and
        ``resource_updated_callback``. Returns once the server acknowledged.

        Raises:
            ConfigurationError: The connection is in the legacy era (use the list-changed
                callbacks and :meth:`subscribe_resource`).
            DeadlineExceeded: No acknowledgement in time.
        """
        session = self._conn.session
        if session.era != "modern":
            raise ConfigurationError(
                "subscriptions/listen needs the 2026-07-28 era; legacy servers push "
                "list_changed notifications on their own and use subscribe_resource()"
            )
        wanted: dict[str, Any] = {}
        if tools:
            wanted["toolsListChanged"] = True
        if prompts:
            wanted["promptsListChanged"] = True
        if resources:
            wanted["resourcesListChanged"] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        return Subscription.open(session, wanted, self._t(timeout))

    def clear_cache(self) -> None:
        """Forget every cached list and read result of this connection (``ttlMs`` hints)
        and the remembered tool list; the next calls ask the server."""
        catalog = self._conn.catalog
        catalog.tools_listed = False
        if catalog.cache is not None:
            catalog.cache.clear()

    # --- helpers ----------------------------------------------------------------------------------

    def _t(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def _cache(self) -> ResponseCache | None:
        """The ``ttlMs`` cache (modern era only; legacy servers send no hints)."""
        conn = self._conn
        return conn.catalog.cache if conn.session.era == "modern" else None

    def _tool_context(self) -> ToolContext:
        conn = self._conn
        return ToolContext(
            session=conn.session,
            catalog=conn.catalog,
            validate_output=conn.options.validate_output,
            max_rounds=conn.options.input_required_max_rounds,
            list_tools=lambda timeout: self.list_tools(timeout=timeout),
        )

    def _legacy_only(self, method: str, instead: str) -> None:
        if self._conn.session.era == "modern":
            raise ConfigurationError(f"{method} does not exist in MCP 2026-07-28; use {instead}")

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
