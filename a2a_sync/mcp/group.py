"""``MCPGroup``: several MCP servers behind one object.

::

    from a2a_sync.mcp import MCPGroup

    with MCPGroup.connect("mcp.json") as group:      # {"mcpServers": {...}} or a dict
        print(group.failures)                       # {name: error} of servers that did not start
        for tool in group.list_tools():
            print(tool.name, tool.server, tool.tool.description)   # "files.read_file" ...
        result = group.call_tool("files.read_file", {"path": "README.md"})

Servers start concurrently, one named daemon thread each, and ``timeout`` bounds the whole
start. A server that fails to start is left out and reported in :attr:`MCPGroup.failures`
with its own typed error (``ServerProcessError``, ``ConnectError``, ``DeadlineExceeded``...);
the others work. ``strict=True`` turns any failure into :class:`MCPGroupError` instead.
Tool names are qualified as ``server`` + ``separator`` + ``tool`` (``"files.read_file"``);
:attr:`GroupTool.tool` keeps the server's own :class:`~a2a_sync.mcp.types.Tool`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Final

import attrs

from ..errors import A2ASyncError, ConfigurationError, DeadlineExceeded
from . import types as t
from ._negotiation import HANDSHAKE_TIMEOUT
from .client import MCPClient
from .config import HTTPServerConfig, ServerConfig, StdioServerConfig, load_servers
from .connection import MCPConnection
from .eras import DISCOVER_TIMEOUT
from .options import SESSION_OPTION_NAMES
from .transports._httpbase import CONNECT_TIMEOUT

__all__ = ["GroupTool", "MCPGroup", "MCPGroupError"]

logger = logging.getLogger(__name__)

#: How long :meth:`MCPGroup.close` waits for a start that outlived the connect timeout.
_LATE_START_JOIN: Final = 10.0


class MCPGroupError(A2ASyncError):
    """Servers of a group failed to start (``strict=True``) or to close.

    Attributes:
        errors: The error of each failed server, by name (the a2a_sync error of a
            configured server; whatever a connection factory raised, for those).
    """

    def __init__(self, message: str, errors: Mapping[str, Exception]) -> None:
        self.errors = dict(errors)
        lines = [f"  {name}: {type(e).__name__}: {e}" for name, e in self.errors.items()]
        super().__init__(message + ":\n" + "\n".join(lines))


@attrs.frozen
class GroupTool:
    """A tool of one server of a group.

    Attributes:
        name: The qualified name to call it by (``"files.read_file"``).
        server: The server's name in the group.
        tool: The tool as its server describes it (its own ``name``).
    """

    name: str
    server: str
    tool: t.Tool


ServerSpec = ServerConfig | Callable[[], MCPConnection]


class MCPGroup:
    """Connected MCP servers by name; calls are routed by qualified tool name.

    Thread-safe (each server's :class:`~a2a_sync.mcp.MCPClient` is). Close it (or use it
    as a context manager) to close every server.

    Args:
        connections: Connected servers by name (adopted: the group closes them).
        failures: Servers that did not start, by name (see :attr:`failures`).
        separator: Between the server name and the tool name in qualified names.

    Attributes:
        failures: The typed error of each server that did not start.
        separator: See above.
    """

    def __init__(
        self,
        connections: Mapping[str, MCPConnection],
        *,
        failures: Mapping[str, Exception] | None = None,
        separator: str = ".",
    ) -> None:
        if not separator:
            raise ConfigurationError("the tool name separator must not be empty")
        self._connections = dict(connections)
        self._clients = {name: conn.client() for name, conn in self._connections.items()}
        self.failures: dict[str, Exception] = dict(failures or {})
        self.separator = separator
        self._late: list[threading.Thread] = []
        self._closed = False

    @classmethod
    def connect(
        cls,
        servers: Mapping[str, Any] | str | os.PathLike[str],
        *,
        timeout: float = HANDSHAKE_TIMEOUT,
        separator: str = ".",
        strict: bool = False,
        **options: Any,
    ) -> MCPGroup:
        """Start every server of ``servers`` concurrently and return the group.

        Args:
            servers: An ``mcpServers`` configuration (a dict or a JSON file path, see
                :mod:`a2a_sync.mcp.config`), or a dict of name to a config object or to a
                callable returning a connected :class:`~a2a_sync.mcp.MCPConnection`
                (e.g. ``lambda: connect_in_memory(server)``).
            timeout: Seconds for the whole start (spawn, connect, negotiation).
            separator: Between server and tool names (``"files.read_file"``).
            strict: Raise :class:`MCPGroupError` if any server fails (closing the rest).
            options: For every server's :class:`~a2a_sync.mcp.MCPConnection` (``era``,
                callbacks, ``stderr``...); ``call_timeout`` is the default per-call timeout
                of the clients (``timeout`` here bounds the start).

        Raises:
            ConfigurationError: The configuration or an option is invalid (nothing was
                started).
            MCPGroupError: ``strict`` and a server failed.
        """
        _check_options(options)
        specs = _specs(servers)
        results: dict[str, MCPConnection] = {}
        failures: dict[str, Exception] = {}
        lock = threading.Lock()
        abandoned = threading.Event()
        deadline = time.monotonic() + timeout

        def start(name: str, spec: ServerSpec) -> None:
            try:
                conn = _open(spec, timeout, options)
            except A2ASyncError as exc:
                with lock:
                    failures.setdefault(name, exc)
                logger.warning("MCP server %r did not start: %s", name, exc)
                return
            except Exception as exc:  # the thread's top level: a factory's own failure
                with lock:
                    failures.setdefault(name, exc)
                logger.exception("MCP server %r: its connection factory raised", name)
                return
            with lock:
                if not abandoned.is_set():
                    results[name] = conn
                    return
            logger.info("MCP server %r started after the group's timeout; closing it", name)
            _close_quietly(name, conn)

        threads = {
            name: threading.Thread(
                target=start, args=(name, spec), name=f"a2a-sync-mcp-group-{name}", daemon=True
            )
            for name, spec in specs.items()
        }
        for thread in threads.values():
            thread.start()
        for thread in threads.values():
            thread.join(max(0.0, deadline - time.monotonic()))
        with lock:
            abandoned.set()
            late = [th for th in threads.values() if th.is_alive()]
            for name, thread in threads.items():
                if thread.is_alive() and name not in failures:
                    failures[name] = DeadlineExceeded(
                        f"MCP server {name!r} did not start within the group's {timeout:g} s; "
                        "give MCPGroup.connect a longer timeout= or check the server",
                        timeout=timeout,
                    )
            connected = {name: results[name] for name in specs if name in results}
            failures = {name: failures[name] for name in specs if name in failures}
        group = cls(connected, failures=failures, separator=separator)
        group._late = late
        if strict and failures:
            group.close()
            raise MCPGroupError(f"{len(failures)} of {len(specs)} MCP server(s) failed", failures)
        return group

    # --- servers ----------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """The servers that started, in configuration order."""
        return list(self._connections)

    def client(self, server: str) -> MCPClient:
        """The client handle of one server.

        Raises:
            ConfigurationError: No such server started (names the known ones).
        """
        client = self._clients.get(server)
        if client is None:
            why = f" (it failed: {self.failures[server]})" if server in self.failures else ""
            raise ConfigurationError(
                f"no MCP server {server!r} in this group{why}; servers: {self.names}"
            )
        return client

    def connection(self, server: str) -> MCPConnection:
        """The connection of one server (see :meth:`client`)."""
        self.client(server)  # the same error for an unknown or failed server
        return self._connections[server]

    # --- tools ------------------------------------------------------------------------------

    def list_tools(self, *, timeout: float | None = None, refresh: bool = False) -> list[GroupTool]:
        """Every tool of every started server, with qualified names, in server order."""
        return [
            GroupTool(self.qualify(server, tool.name), server, tool)
            for server, client in self._clients.items()
            for tool in client.list_tools(timeout=timeout, refresh=refresh)
        ]

    def qualify(self, server: str, tool: str) -> str:
        """The qualified name of ``tool`` of ``server``."""
        return f"{server}{self.separator}{tool}"

    def resolve(self, name: str) -> tuple[str, str]:
        """``(server, tool)`` for a qualified name (the longest matching server name).

        Raises:
            ConfigurationError: No started server's name prefixes ``name``.
        """
        matches = [s for s in self._clients if name.startswith(s + self.separator)]
        if not matches:
            raise ConfigurationError(
                f"tool {name!r} names no server of this group; qualified names are "
                f"'server{self.separator}tool' with server one of {self.names}"
            )
        server = max(matches, key=len)
        return server, name[len(server) + len(self.separator) :]

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, **kwargs: Any
    ) -> t.CallToolResult:
        """Call a tool by qualified name; ``kwargs`` as in
        :meth:`~a2a_sync.mcp.MCPClient.call_tool`.

        Raises:
            ConfigurationError: The name names no server (and what ``call_tool`` raises).
        """
        server, tool = self.resolve(name)
        return self._clients[server].call_tool(tool, arguments, **kwargs)

    # --- other listings ---------------------------------------------------------------------

    def list_resources(self, *, timeout: float | None = None) -> dict[str, list[t.Resource]]:
        """Resources by server (``[]`` for servers without the capability)."""
        return {s: c.list_resources(timeout=timeout) for s, c in self._clients.items()}

    def list_prompts(self, *, timeout: float | None = None) -> dict[str, list[t.Prompt]]:
        """Prompts by server (``[]`` for servers without the capability)."""
        return {s: c.list_prompts(timeout=timeout) for s, c in self._clients.items()}

    # --- lifecycle --------------------------------------------------------------------------

    def close(self) -> None:
        """Close every server (each bounded), then wait for starts that outlived the
        connect timeout. Idempotent.

        Raises:
            MCPGroupError: Servers reported failures on close (all were closed anyway).
        """
        if self._closed:
            return
        self._closed = True
        errors: dict[str, Exception] = {}
        for name, conn in self._connections.items():
            try:
                conn.close()
            except A2ASyncError as exc:
                errors[name] = exc
        for thread in self._late:
            thread.join(_LATE_START_JOIN)
        if errors:
            raise MCPGroupError(f"{len(errors)} MCP server(s) failed on close", errors)

    def __enter__(self) -> MCPGroup:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except MCPGroupError as close_error:  # do not mask the exception in flight
            logger.warning("closing MCP group: %s", close_error)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<MCPGroup {self.names} failed={sorted(self.failures)} {state}>"


def _specs(servers: Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, ServerSpec]:
    if isinstance(servers, Mapping) and "mcpServers" not in servers:
        made = {str(n): s for n, s in servers.items() if callable(s) or _is_config(s)}
        rest = {n: s for n, s in servers.items() if str(n) not in made}
        return {**made, **load_servers(rest)} if rest else made
    return dict(load_servers(servers))


#: Options every server takes (the session options ``MCPConnection.stdio`` and ``.http``
#: share; ``timeout`` here bounds the start, ``call_timeout`` is the clients' timeout).
_COMMON: Final = (SESSION_OPTION_NAMES - {"timeout"}) | {"call_timeout"}
#: Options only stdio servers take, and only HTTP servers take. No ``auth``: one token
#: for every server would reach every origin; per-server credentials go in the config's
#: ``headers``.
_STDIO_ONLY: Final = frozenset({"stderr", "inherit_env", "max_line_bytes"})
_HTTP_ONLY: Final = frozenset({"connect_timeout", "read_timeout", "verify", "cert", "trust_env"})


def _check_options(options: Mapping[str, Any]) -> None:
    known = _COMMON | _STDIO_ONLY | _HTTP_ONLY
    unknown = set(options) - known
    if unknown:
        why = " (put credentials in each server's 'headers')" if "auth" in unknown else ""
        raise ConfigurationError(
            f"unknown MCPGroup.connect options {sorted(unknown)}{why}; known: {sorted(known)}"
        )


def _is_config(value: Any) -> bool:
    return isinstance(value, (StdioServerConfig, HTTPServerConfig))


def _open(spec: ServerSpec, timeout: float, options: Mapping[str, Any]) -> MCPConnection:
    if not _is_config(spec):
        assert callable(spec)
        return spec()
    kind_only = _HTTP_ONLY if isinstance(spec, StdioServerConfig) else _STDIO_ONLY
    given = {key: value for key, value in options.items() if key not in kind_only}
    if "call_timeout" in given:
        given["timeout"] = given.pop("call_timeout")
    for key, default in (("handshake_timeout", timeout), ("discover_timeout", DISCOVER_TIMEOUT)):
        given[key] = min(given.get(key, default), timeout)
    if isinstance(spec, StdioServerConfig):
        return MCPConnection.stdio(spec.argv, env=spec.env, cwd=spec.cwd, **given)
    assert isinstance(spec, HTTPServerConfig)
    given.setdefault("connect_timeout", min(CONNECT_TIMEOUT, timeout))
    return MCPConnection.http(
        spec.url, headers=spec.headers or None, transport=spec.transport, **given
    )


def _close_quietly(name: str, conn: MCPConnection) -> None:
    try:
        conn.close()
    except A2ASyncError as exc:
        logger.warning("closing MCP server %r: %s", name, exc)
