"""The common ``mcpServers`` JSON configuration (Claude Desktop, Cursor, fastmcp...).

::

    {"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                  "env": {"DEBUG": "1"}, "cwd": "/srv"},
        "search": {"url": "https://example.com/mcp", "headers": {"X-Team": "a"},
                   "transport": "http"}
    }}

A server with ``command`` runs over stdio; one with ``url`` over HTTP: ``"transport"`` (or
``"type"``) ``"http"``/``"streamable-http"`` is Streamable HTTP only, ``"sse"`` the
2024-11-05 HTTP+SSE transport, absent means Streamable HTTP with the HTTP+SSE fallback.
Unknown keys are refused so a typo fails at once, naming the server and the key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from ..errors import ConfigurationError

__all__ = ["HTTPServerConfig", "ServerConfig", "StdioServerConfig", "load_servers"]

_STDIO_KEYS: Final = frozenset({"command", "args", "env", "cwd", "type", "transport"})
_HTTP_KEYS: Final = frozenset({"url", "headers", "type", "transport"})
_HTTP_TRANSPORTS: Final[Mapping[str, Literal["auto", "streamable-http", "sse"]]] = {
    "http": "streamable-http",
    "streamable-http": "streamable-http",
    "streamable_http": "streamable-http",
    "streamableHttp": "streamable-http",
    "sse": "sse",
}


@attrs.frozen
class StdioServerConfig:
    """A server run as a subprocess: ``command`` plus ``args``, extra ``env``, ``cwd``."""

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None

    @property
    def argv(self) -> list[str]:
        """The program and its arguments."""
        return [self.command, *self.args]


@attrs.frozen
class HTTPServerConfig:
    """A server reached over HTTP at ``url`` (headers go only to its origin)."""

    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)
    transport: Literal["auto", "streamable-http", "sse"] = "auto"

    def __repr__(self) -> str:  # header values may be credentials
        return f"HTTPServerConfig(url={self.url!r}, headers=<{len(self.headers)}>, " + (
            f"transport={self.transport!r})"
        )


ServerConfig = StdioServerConfig | HTTPServerConfig


def load_servers(
    config: Mapping[str, Any] | str | os.PathLike[str],
) -> dict[str, ServerConfig]:
    """The servers of an ``mcpServers`` configuration, by name, in file order.

    Args:
        config: A dict (``{"mcpServers": {...}}``, or the inner ``{name: server}`` map) or
            the path of a JSON file holding one.

    Raises:
        ConfigurationError: Unreadable file, or a server entry that is not valid (names
            the server and what is wrong).
    """
    if not isinstance(config, Mapping):
        path = Path(config)
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read MCP server config {path}: {exc}") from exc
        if not isinstance(config, Mapping):
            raise ConfigurationError(f"MCP server config {path} is not a JSON object")
    servers = config.get("mcpServers", config)
    if not isinstance(servers, Mapping):
        raise ConfigurationError("'mcpServers' must be an object keyed by server name")
    return {str(name): _server(str(name), entry) for name, entry in servers.items()}


def _server(name: str, entry: Any) -> ServerConfig:
    if not isinstance(entry, Mapping):
        raise ConfigurationError(f"MCP server {name!r}: the entry must be an object")
    kind = entry.get("transport", entry.get("type"))
    if "command" in entry:
        _check_keys(name, entry, _STDIO_KEYS)
        if kind not in (None, "stdio"):
            raise ConfigurationError(f"MCP server {name!r}: a 'command' server runs over stdio")
        command, args = entry["command"], entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise ConfigurationError(f"MCP server {name!r}: 'command' must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigurationError(f"MCP server {name!r}: 'args' must be a list of strings")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigurationError(f"MCP server {name!r}: 'cwd' must be a string")
        return StdioServerConfig(command, tuple(args), _strings(name, entry, "env"), cwd)
    if "url" in entry:
        _check_keys(name, entry, _HTTP_KEYS)
        url = entry["url"]
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigurationError(f"MCP server {name!r}: 'url' must be an http(s) URL")
        transport = "auto" if kind is None else _HTTP_TRANSPORTS.get(str(kind))
        if transport is None:
            raise ConfigurationError(
                f"MCP server {name!r}: unknown transport {kind!r}; use 'http' or 'sse'"
            )
        return HTTPServerConfig(url, _strings(name, entry, "headers"), transport)
    raise ConfigurationError(f"MCP server {name!r}: needs 'command' (stdio) or 'url' (HTTP)")


def _check_keys(name: str, entry: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = set(entry) - allowed
    if unknown:
        raise ConfigurationError(
            f"MCP server {name!r}: unknown keys {sorted(unknown)}; known: {sorted(allowed)}"
        )


def _strings(name: str, entry: Mapping[str, Any], key: str) -> dict[str, str]:
    value = entry.get(key) or {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigurationError(f"MCP server {name!r}: {key!r} must map strings to strings")
    return dict(value)
