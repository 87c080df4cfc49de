"""What an MCP client handle is made of: the :class:`Connected` interface it needs of its
connection, and :class:`Handle`, the two-attribute base of every handle class.

The connection module imports the client modules, never the other way round: a handle
sees its connection only through :class:`Connected`.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import ConfigurationError
from . import types as t
from ._cache import Catalog, ResponseCache
from .options import MCPOptions
from .session import MCPSession

__all__ = ["Connected", "Handle"]


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


class Handle:
    """A timeout over a connection; the operations live in the subclasses."""

    __slots__ = ("_conn", "timeout")

    def __init__(self, connection: Connected, timeout: float) -> None:
        self._conn = connection
        self.timeout = timeout

    def _t(self, timeout: float | None) -> float:
        return self.timeout if timeout is None else timeout

    def _cache(self) -> ResponseCache | None:
        """The ``ttlMs`` cache (modern era only; legacy servers send no hints)."""
        conn = self._conn
        return conn.catalog.cache if conn.session.era == "modern" else None

    def _require(self, capability: str, method: str, *, feature: str | None = None) -> None:
        """Refuse ``method`` before sending it when the server did not declare
        ``capability`` (``feature``: a flag inside it that must be ``true``, e.g.
        ``resources.subscribe``): both parties use only negotiated capabilities."""
        declared: Any = getattr(self._conn.server_info.capabilities, capability)
        needed = capability
        if declared is not None and feature is not None:
            needed = f"{capability}.{feature}"
            declared = declared.get(feature) is True or None
        if declared is None:
            name = self._conn.server_info.name
            server = self._conn.session.transport.name + (f" ({name!r})" if name else "")
            raise ConfigurationError(
                f"{method} not sent: the {server} did not declare the {needed!r} "
                f"capability, and a client uses only negotiated capabilities; "
                f"check client.server_info.capabilities.{capability} first (or enable "
                f"{needed} on the server)"
            )

    def _legacy_only(self, method: str, instead: str) -> None:
        if self._conn.session.era == "modern":
            raise ConfigurationError(f"{method} does not exist in MCP 2026-07-28; use {instead}")
