"""``MCPConnection``: owns one transport, its session and their lifecycle.

A connection is created connected: the constructor (or :meth:`MCPConnection.stdio`) starts
the transport and negotiates the protocol era (:mod:`._negotiation`). It is used through cheap
:class:`~a2a_sync.mcp.client.MCPClient` handles (``connection.client()``), which any number
of threads may share. ``close()`` shuts down gracefully and reports a server failure;
``wait()`` blocks until the server ends on its own. A connection that is garbage-collected
or still open at interpreter exit is closed by a finalizer.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Final, Literal, NoReturn

from ..errors import (
    A2ASyncError,
    ConfigurationError,
    ConnectionClosed,
    DeadlineExceeded,
    ServerProcessError,
)
from . import eras
from . import types as t
from ._cache import Catalog
from ._negotiation import HANDSHAKE_TIMEOUT, Negotiator, finalize
from .client import MCPClient
from .options import MCPOptions, resolve
from .session import MCPSession
from .transports import Transport
from .transports._httpbase import Endpoint
from .transports.http import StreamableHTTPTransport
from .transports.legacy_sse import LegacySSETransport
from .transports.stdio import StdioTransport

__all__ = ["DEFAULT_TIMEOUT", "MCPConnection"]

logger = logging.getLogger(__name__)

#: Default per-operation timeout of client handles (the seed's 30 s).
DEFAULT_TIMEOUT: Final = 30.0

HTTPTransportKind = Literal["auto", "streamable-http", "sse"]


class MCPConnection:
    """A connected MCP client session over one transport.

    Thread-safe. Not copyable (it owns a server process or HTTP session): share
    :meth:`client` handles instead. Use it as a context manager or call :meth:`close`.

    Configuration is one frozen :class:`~a2a_sync.mcp.options.MCPOptions` value. The
    constructors take it as ``options=`` and also take its field names as keywords
    (``timeout=5``, ``era="legacy"``, ``elicitation_callback=...``, ``headers=...``,
    ``env=...``), applied on top with :meth:`MCPOptions.evolve`: the simple call stays
    one line, every keyword that worked before still works, and each option is
    declared and documented once (on ``MCPOptions``) instead of on three signatures.
    A misspelt keyword raises :class:`~a2a_sync.errors.ConfigurationError` naming it and
    the closest option (mypy cannot check ``**`` keywords; ``MCPOptions(...)`` is checked).

    Args:
        transport_factory: Creates a fresh, unstarted transport. Called once, or twice when
            ``era="auto"`` must restart a server that locked itself into the modern era.
        options: The connection's options (default: all defaults).
        **overrides: :class:`~a2a_sync.mcp.options.MCPOptions` fields to change.

    Attributes:
        options: The options in force (after the keywords were applied).
        timeout: The default per-operation timeout of :meth:`client` handles.

    Raises:
        ConfigurationError: An unknown option.
        ServerProcessError: A stdio server failed to start or died during negotiation.
        RPCError: The server refused negotiation.
        ProtocolError: The server speaks no revision this client knows.
        RequestTimeout: Negotiation timed out.
    """

    def __init__(
        self,
        transport_factory: Callable[[], Transport],
        *,
        options: MCPOptions | None = None,
        **overrides: Any,
    ) -> None:
        opts = resolve(options, overrides)
        mode, version = eras.parse_setting(opts.era)
        self.options = opts
        self.timeout = DEFAULT_TIMEOUT if opts.timeout is None else opts.timeout
        handshake_timeout = opts.handshake_timeout
        if handshake_timeout is None:
            handshake_timeout = HANDSHAKE_TIMEOUT if opts.timeout is None else opts.timeout
        self.catalog = Catalog(opts.cache)
        negotiator = Negotiator(
            factory=transport_factory,
            mode=mode,
            version=version,
            handlers=opts.handlers(),
            client_info=opts.client_info,
            log_level=opts.log_level,
            timeout=self.timeout,
            discover_timeout=opts.discover_timeout,
            handshake_timeout=handshake_timeout,
            on_notification=self.catalog.on_notification,
            sleep=opts.sleep,
            timeout_given=opts.handshake_timeout is not None or opts.timeout is not None,
        )
        self._close_lock = threading.Lock()
        self._closed = False
        self._live = negotiator.connect()
        self._finalizer = weakref.finalize(self, finalize, self._live)

    @classmethod
    def stdio(
        cls,
        argv: Sequence[str],
        *,
        options: MCPOptions | None = None,
        **overrides: Any,
    ) -> MCPConnection:
        """Start an MCP server subprocess and connect to it over stdio.

        ``argv`` is run directly (never through a shell), in its own process group, with
        only the allow-listed environment (``HOME, LOGNAME, PATH, SHELL, TERM, USER``)
        plus ``env``. The server's stderr goes to logging by default (``stderr=None``
        discards it, or pass any object with ``write``); it works in Jupyter.

        Example::

            with MCPConnection.stdio(["python", "server.py"], timeout=5) as conn:
                client = conn.client()
                print(client.call_tool("add", {"a": 1, "b": 2}).structured_content)

        Args:
            argv: Program and arguments.
            options: The connection's options (see :class:`MCPConnection`); the stdio
                ones are :class:`~a2a_sync.mcp.options.StdioOptions` (``env``, ``cwd``,
                ``stderr``, ``inherit_env``, ``max_line_bytes``).
            **overrides: Option fields to change (``timeout=5``, ``env={...}``...).

        Raises:
            ServerProcessError: The server could not be started or exited during start-up
                (with its exit status and the tail of its stderr).
            ConfigurationError: ``argv`` is a string or empty; an unknown option.
        """
        opts = resolve(options, overrides)
        stdio = opts.stdio

        def factory() -> Transport:
            return StdioTransport(
                argv,
                env=stdio.env,
                cwd=stdio.cwd,
                stderr=stdio.stderr,
                inherit_env=stdio.inherit_env,
                max_line_bytes=stdio.max_line_bytes,
            )

        return cls(factory, options=opts)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        transport: HTTPTransportKind = "auto",
        options: MCPOptions | None = None,
        **overrides: Any,
    ) -> MCPConnection:
        """Connect to an MCP server over HTTP.

        ``transport="auto"`` speaks Streamable HTTP (both eras: a modern ``server/discover``
        probe first, then ``initialize``) and falls back to the deprecated 2024-11-05
        HTTP+SSE transport when the server refuses ``initialize`` with 400/404/405; the
        verdicts are cached per endpoint for the life of the process
        (:data:`a2a_sync.mcp.eras.ERA_CACHE`). ``"sse"`` goes straight to HTTP+SSE (``url``
        is then the SSE endpoint, e.g. ``.../sse``).

        Credentials: ``auth`` (a bearer token, or a callable returning the current one,
        asked per request) and ``headers`` go on every request, only to ``url``'s origin:
        redirects are refused and an HTTP+SSE message endpoint on another origin is
        rejected. Neither they nor the server's session id are ever logged.

        Example::

            with MCPConnection.http("http://127.0.0.1:8000/mcp", auth=token) as conn:
                print(conn.client().call_tool("add", {"a": 1, "b": 2}).text)

        Args:
            url: The MCP endpoint (``http(s)://host:port/mcp``); no credentials in it.
            transport: ``"auto"``, ``"streamable-http"`` (no fallback) or ``"sse"``.
            options: The connection's options (see :class:`MCPConnection`); the HTTP
                ones are :class:`~a2a_sync.mcp.transports.options.HTTPOptions`
                (``headers``, ``auth``, ``connect_timeout``, ``read_timeout``, ``verify``,
                ``cert``, ``trust_env``...).
            **overrides: Option fields to change (``headers={...}``, ``auth=token``...).

        Raises:
            ConfigurationError: Bad URL, headers or ``transport``; an unknown option.
            TransportError: The server could not be reached.
            HTTPStatusError: The server refused the connection (401: see
                ``WWW-Authenticate`` in the message).
        """
        if transport not in ("auto", "streamable-http", "sse"):
            raise ConfigurationError(
                f"unknown MCP HTTP transport {transport!r}: use 'auto', 'streamable-http' or 'sse'"
            )
        opts = resolve(options, overrides)
        http = opts.http

        def factory() -> Transport:
            if transport == "sse":
                return LegacySSETransport(url, http)
            return StreamableHTTPTransport(url, http, fallback_to_sse=transport == "auto")

        Endpoint(
            url,
            headers=http.headers,
            auth=http.auth,
            insecure_credentials=http.allow_insecure_credentials,
        )  # bad arguments fail here
        if transport == "sse" and opts.era == "auto":
            opts = opts.evolve(era="legacy")  # HTTP+SSE has no modern shape: nothing to probe
        return cls(factory, options=opts)

    # --- public surface -----------------------------------------------------------------------

    def client(self, timeout: float | None = None) -> MCPClient:
        """A cheap handle for MCP operations; share it freely between threads.

        Args:
            timeout: The handle's default per-operation timeout (default: the
                connection's).

        Returns:
            An :class:`~a2a_sync.mcp.client.MCPClient` over this connection.
        """
        return MCPClient(self, self.timeout if timeout is None else timeout)

    @property
    def session(self) -> MCPSession:
        """The protocol session (escape hatch for raw requests)."""
        return self._live.session

    @property
    def server_info(self) -> t.ServerInfo:
        """What negotiation learnt: era, protocol version, capabilities, server name."""
        info = self._live.session.server_info
        assert info is not None
        return info

    @property
    def era(self) -> eras.Era:
        """``"legacy"`` or ``"modern"``."""
        return self.server_info.era

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision."""
        return self.server_info.protocol_version

    @property
    def closed(self) -> bool:
        """True after :meth:`close`, or once the server has gone away."""
        return self._closed or self._live.session.closed_error is not None

    @property
    def transport(self) -> Transport:
        """The transport in use (for ``pid``, ``stderr_tail`` on stdio)."""
        return self._live.transport

    def close(self) -> None:
        """Shut down gracefully: pending calls fail with ``ConnectionClosed``; stdio servers
        get stdin EOF, then SIGTERM, then SIGKILL (bounded). Idempotent.

        Raises:
            ServerProcessError: The server had failed (exited non-zero on its own).
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._finalizer.detach()
        live = self._live
        try:
            live.transport.close()
        finally:
            live.session.join_dispatcher()

    def wait(self, timeout: float | None = None) -> None:
        """Block until the server ends the connection (e.g. a stdio server exits).

        Args:
            timeout: Seconds to wait; ``None`` waits as long as the server runs.

        Raises:
            DeadlineExceeded: The server was still running after ``timeout``.
            ServerProcessError: The server exited with a failure status.
            A2ASyncError: The transport failed (e.g. ``ResponseTooLarge``).
        """
        session = self._live.session
        if not session.wait_closed(timeout):
            raise DeadlineExceeded(
                f"{self._live.transport.name} still running after {timeout:g} s",
                timeout=timeout,
            )
        error = session.closed_error
        if isinstance(error, ServerProcessError) and error.returncode in (0, None):
            return
        if error is None or type(error) is ConnectionClosed:
            return
        raise error

    def __enter__(self) -> MCPConnection:
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
        except A2ASyncError as close_error:  # do not mask the exception in flight
            logger.warning("closing %s: %s", self._live.transport.name, close_error)

    def __copy__(self) -> NoReturn:
        raise TypeError("MCPConnection is not copyable; share conn.client() handles instead")

    def __deepcopy__(self, memo: Any) -> NoReturn:
        raise TypeError("MCPConnection is not copyable; share conn.client() handles instead")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("MCPConnection cannot be pickled")

    def __repr__(self) -> str:
        info = self._live.session.server_info
        state = "closed" if self.closed else "open"
        era = f"{info.era} {info.protocol_version}" if info else "negotiating"
        return f"<MCPConnection {self._live.transport.name} ({era}) {state}>"
