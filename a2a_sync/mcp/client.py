"""``MCPClient``: the cheap, thread-shareable handle users call MCP operations on.

Every method blocks until the server answers or the handle's timeout (or the call's own
``timeout=``) expires; a timeout raises :class:`~a2a_sync.errors.DeadlineExceeded` naming
the operation and the duration and tells the server ``notifications/cancelled``. Results
are :mod:`a2a_sync.mcp.types` models. Modern-era calls that need input
(``input_required``) are answered through the connection's callbacks transparently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError
from . import _codec
from . import types as t
from ._correlator import PendingRequest
from ._features import LOGGING_LEVELS
from ._handle import Connected
from ._paging import list_all
from ._tool_ops import ToolOperations
from .subscriptions import Subscription, SubscriptionEvent
from .tool_call import ToolCall

__all__ = ["Connected", "MCPClient", "Subscription", "SubscriptionEvent", "ToolCall"]


class MCPClient(ToolOperations):
    """A handle for MCP operations over an :class:`~a2a_sync.mcp.connection.MCPConnection`.

    Cheap to create (two attributes) and safe to share between any number of threads;
    all handles of a connection share its server. Get one with ``connection.client()``
    (it needs only the :class:`Connected` interface of the connection).

    Attributes:
        timeout: This handle's default per-operation timeout in seconds.
    """

    __slots__ = ()

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

        Raises:
            ConfigurationError: Unknown level, or the server did not declare ``logging``
                (nothing is sent).
        """
        if level not in LOGGING_LEVELS:
            raise ConfigurationError(f"unknown log level {level!r}")
        self._require("logging", "set_logging_level")
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
            ConfigurationError: The server did not declare ``resources`` (nothing is sent).
        """
        self._require("resources", f"read_resource {uri!r}")
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
            ConfigurationError: The connection is in the modern era, or the server did not
                declare ``resources.subscribe`` (nothing is sent).
        """
        self._legacy_only("resources/subscribe", "listen(resource_uris=[...])")
        self._require("resources", "subscribe_resource", feature="subscribe")
        self._conn.session.request(
            "resources/subscribe",
            {"uri": uri},
            timeout=self._t(timeout),
            operation="subscribe_resource",
        )

    def unsubscribe_resource(self, uri: str, *, timeout: float | None = None) -> None:
        """Undo :meth:`subscribe_resource` (legacy era; refused like it)."""
        self._legacy_only("resources/unsubscribe", "closing the listen() subscription")
        self._require("resources", "unsubscribe_resource", feature="subscribe")
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
        """Render a prompt with string ``arguments``.

        Raises:
            ConfigurationError: The server did not declare ``prompts`` (nothing is sent).
        """
        self._require("prompts", f"get_prompt {name!r}")
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
        partial ``value`` and already-chosen ``context`` arguments.

        Raises:
            ConfigurationError: The server did not declare ``completions`` (nothing is
                sent; a 2025-11-25 client only uses negotiated capabilities).
        """
        self._require("completions", "complete")
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
                callbacks and :meth:`subscribe_resource`), or a kind is asked for whose
                capability the server did not declare (nothing is sent).
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
        for kind, asked in (
            ("tools", tools),
            ("prompts", prompts),
            ("resources", resources or bool(resource_uris)),
        ):
            if asked:
                self._require(kind, f"listen({kind}...)")
        return Subscription.open(session, wanted, self._t(timeout))

    def clear_cache(self) -> None:
        """Forget every cached list and read result of this connection (``ttlMs`` hints)
        and the remembered tool list; the next calls ask the server."""
        catalog = self._conn.catalog
        catalog.tools_listed = False
        if catalog.cache is not None:
            catalog.cache.clear()
