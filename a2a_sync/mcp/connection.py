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
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn

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
from .session import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS, Handlers, MCPSession
from .transports import Transport
from .transports._httpbase import CONNECT_TIMEOUT, DEFAULT_READ_TIMEOUT, AuthSource, Endpoint
from .transports.http import StreamableHTTPTransport
from .transports.legacy_sse import LegacySSETransport
from .transports.stdio import (
    DEFAULT_INHERITED_ENV_VARS,
    DEFAULT_MAX_LINE_BYTES,
    StdioTransport,
)

if TYPE_CHECKING:
    from .client import MCPClient

__all__ = ["DEFAULT_TIMEOUT", "MCPConnection"]

logger = logging.getLogger(__name__)

#: Default per-operation timeout of client handles (the seed's 30 s).
DEFAULT_TIMEOUT: Final = 30.0


class MCPConnection:
    """A connected MCP client session over one transport.

    Thread-safe. Not copyable (it owns a server process or HTTP session): share
    :meth:`client` handles instead. Use it as a context manager or call :meth:`close`.

    Args:
        transport_factory: Creates a fresh, unstarted transport. Called once, or twice when
            ``era="auto"`` must restart a server that locked itself into the modern era.
        era: ``"auto"`` (probe ``server/discover``, fall back to ``initialize``; the verdict
            is cached per server), ``"legacy"``, ``"modern"``, or an exact revision to pin
            (``"2025-06-18"``, ``"2026-07-28"``).
        timeout: Default per-operation timeout (seconds) of :meth:`client` handles
            (default 30 s). Given explicitly, it also bounds the whole connect (probe,
            handshake, and stopping a server that failed to connect) unless
            ``handshake_timeout`` is given.
        sampling_callback: ``(CreateMessageRequest) -> CreateMessageResult``; declares
            the ``sampling`` capability.
        elicitation_callback: ``(ElicitRequest) -> ElicitResult``; declares ``elicitation``
            (form and url modes).
        roots_callback: ``() -> list[Root]``; declares ``roots``.
        logging_callback: ``(LoggingMessage) -> None`` for server log messages.
        list_changed_callback: ``(kind) -> None``, kind ``"tools"|"prompts"|"resources"``.
        resource_updated_callback: ``(uri) -> None``.
        notification_callback: ``(method, params) -> None`` for every notification.
        log_level: Ask the server for log messages at this level and above (legacy:
            ``logging/setLevel`` if the server declares ``logging``; modern: per request).
        client_info: How the client introduces itself (default ``a2a-sync``).
        validate_output: Check tool results against the tool's ``outputSchema``.
        cache: Honour ``ttlMs``/``cacheScope`` on list and read results (modern era).
        discover_timeout: How long ``era="auto"`` waits for the ``server/discover`` probe.
        handshake_timeout: Bound on the whole connect: the era probe, the handshake and
            stopping a server that failed to connect (default: ``timeout`` if given, else
            60 s, for servers started through npx/uvx that install packages first).
        input_required_max_rounds: Cap on ``input_required`` rounds per call (modern era).

    Raises:
        ServerProcessError: A stdio server failed to start or died during negotiation.
        RPCError: The server refused negotiation.
        ProtocolError: The server speaks no revision this client knows.
        RequestTimeout: Negotiation timed out.
    """

    def __init__(
        self,
        transport_factory: Callable[[], Transport],
        *,
        era: eras.EraSetting = "auto",
        timeout: float | None = None,
        sampling_callback: Callable[[t.CreateMessageRequest], t.CreateMessageResult] | None = None,
        elicitation_callback: Callable[[t.ElicitRequest], t.ElicitResult] | None = None,
        roots_callback: Callable[[], Sequence[t.Root]] | None = None,
        logging_callback: Callable[[t.LoggingMessage], None] | None = None,
        list_changed_callback: Callable[[str], None] | None = None,
        resource_updated_callback: Callable[[str], None] | None = None,
        notification_callback: Callable[[str, dict[str, Any]], None] | None = None,
        log_level: t.LoggingLevel | None = None,
        client_info: t.Implementation | None = None,
        validate_output: bool = True,
        cache: bool = True,
        discover_timeout: float = eras.DISCOVER_TIMEOUT,
        handshake_timeout: float | None = None,
        input_required_max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    ) -> None:
        mode, version = eras.parse_setting(era)
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        if handshake_timeout is None:
            handshake_timeout = HANDSHAKE_TIMEOUT if timeout is None else timeout
        self.validate_output = validate_output
        self.input_required_max_rounds = input_required_max_rounds
        self.catalog = Catalog(cache)
        negotiator = Negotiator(
            factory=transport_factory,
            mode=mode,
            version=version,
            handlers=Handlers(
                sampling=sampling_callback,
                elicitation=elicitation_callback,
                roots=roots_callback,
                logging=logging_callback,
                list_changed=list_changed_callback,
                resource_updated=resource_updated_callback,
                notification=notification_callback,
            ),
            client_info=client_info,
            log_level=log_level,
            timeout=self.timeout,
            discover_timeout=discover_timeout,
            handshake_timeout=handshake_timeout,
            on_notification=self.catalog.on_notification,
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
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: Any = "log",
        inherit_env: Iterable[str] = DEFAULT_INHERITED_ENV_VARS,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        era: eras.EraSetting = "auto",
        timeout: float | None = None,
        sampling_callback: Callable[[t.CreateMessageRequest], t.CreateMessageResult] | None = None,
        elicitation_callback: Callable[[t.ElicitRequest], t.ElicitResult] | None = None,
        roots_callback: Callable[[], Sequence[t.Root]] | None = None,
        logging_callback: Callable[[t.LoggingMessage], None] | None = None,
        list_changed_callback: Callable[[str], None] | None = None,
        resource_updated_callback: Callable[[str], None] | None = None,
        notification_callback: Callable[[str, dict[str, Any]], None] | None = None,
        log_level: t.LoggingLevel | None = None,
        client_info: t.Implementation | None = None,
        validate_output: bool = True,
        cache: bool = True,
        discover_timeout: float = eras.DISCOVER_TIMEOUT,
        handshake_timeout: float | None = None,
        input_required_max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    ) -> MCPConnection:
        """Start an MCP server subprocess and connect to it over stdio.

        ``argv`` is run directly (never through a shell), in its own process group, with
        only the allow-listed environment (``HOME, LOGNAME, PATH, SHELL, TERM, USER``)
        plus ``env``. The server's stderr goes to logging by default (``stderr=None``
        discards it, or pass any object with ``write``); it works in Jupyter.

        Example::

            with MCPConnection.stdio(["python", "server.py"]) as conn:
                client = conn.client()
                print(client.call_tool("add", {"a": 1, "b": 2}).structured_content)

        Args:
            argv: Program and arguments.
            env: Extra environment variables for the server (API keys go here).
            cwd: Working directory of the server.
            stderr: ``"log"``, a file-like object, or ``None``.
            inherit_env: Variables copied from this process's environment.
            max_line_bytes: Longest JSON line accepted from the server.
            era: See :class:`MCPConnection` (as are the remaining arguments).
            timeout: Default per-operation timeout of client handles.
            sampling_callback: See :class:`MCPConnection`.
            elicitation_callback: See :class:`MCPConnection`.
            roots_callback: See :class:`MCPConnection`.
            logging_callback: See :class:`MCPConnection`.
            list_changed_callback: See :class:`MCPConnection`.
            resource_updated_callback: See :class:`MCPConnection`.
            notification_callback: See :class:`MCPConnection`.
            log_level: See :class:`MCPConnection`.
            client_info: See :class:`MCPConnection`.
            validate_output: See :class:`MCPConnection`.
            cache: See :class:`MCPConnection`.
            discover_timeout: See :class:`MCPConnection`.
            handshake_timeout: See :class:`MCPConnection`.
            input_required_max_rounds: See :class:`MCPConnection`.

        Raises:
            ServerProcessError: The server could not be started or exited during start-up
                (with its exit status and the tail of its stderr).
            ConfigurationError: ``argv`` is a string or empty.
        """

        def factory() -> Transport:
            return StdioTransport(
                argv,
                env=env,
                cwd=cwd,
                stderr=stderr,
                inherit_env=inherit_env,
                max_line_bytes=max_line_bytes,
            )

        return cls(
            factory,
            era=era,
            timeout=timeout,
            sampling_callback=sampling_callback,
            elicitation_callback=elicitation_callback,
            roots_callback=roots_callback,
            logging_callback=logging_callback,
            list_changed_callback=list_changed_callback,
            resource_updated_callback=resource_updated_callback,
            notification_callback=notification_callback,
            log_level=log_level,
            client_info=client_info,
            validate_output=validate_output,
            cache=cache,
            discover_timeout=discover_timeout,
            handshake_timeout=handshake_timeout,
            input_required_max_rounds=input_required_max_rounds,
        )

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: AuthSource | None = None,
        transport: Literal["auto", "streamable-http", "sse"] = "auto",
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = DEFAULT_READ_TIMEOUT,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        trust_env: bool = True,
        era: eras.EraSetting = "auto",
        timeout: float | None = None,
        sampling_callback: Callable[[t.CreateMessageRequest], t.CreateMessageResult] | None = None,
        elicitation_callback: Callable[[t.ElicitRequest], t.ElicitResult] | None = None,
        roots_callback: Callable[[], Sequence[t.Root]] | None = None,
        logging_callback: Callable[[t.LoggingMessage], None] | None = None,
        list_changed_callback: Callable[[str], None] | None = None,
        resource_updated_callback: Callable[[str], None] | None = None,
        notification_callback: Callable[[str, dict[str, Any]], None] | None = None,
        log_level: t.LoggingLevel | None = None,
        client_info: t.Implementation | None = None,
        validate_output: bool = True,
        cache: bool = True,
        discover_timeout: float = eras.DISCOVER_TIMEOUT,
        handshake_timeout: float | None = None,
        input_required_max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS,
    ) -> MCPConnection:
        """Connect to an MCP server over HTTP.

        ``transport="auto"`` speaks Streamable HTTP (both eras: a modern ``server/discover``
        probe first, then ``initialize``) and falls back to the deprecated 2024-11-05
        HTTP+SSE transport when the server refuses ``initialize`` with 400/404/405; the
        verdicts are cached per endpoint for the life of the process (``ERA_CACHE``).
        ``"sse"`` goes straight to HTTP+SSE (``url`` is then the SSE endpoint, e.g.
        ``.../sse``).

        Credentials: ``auth`` (a bearer token, or a callable returning the current one,
        asked per request) and ``headers`` go on every request, only to ``url``'s origin:
        redirects are refused and an HTTP+SSE message endpoint on another origin is
        rejected. Neither they nor the server's session id are ever logged.

        Example::

            with MCPConnection.http("http://127.0.0.1:8000/mcp", auth=token) as conn:
                print(conn.client().call_tool("add", {"a": 1, "b": 2}).text)

        Args:
            url: The MCP endpoint (``http(s)://host:port/mcp``); no credentials in it.
            headers: Extra headers for every request (not the ones MCP itself uses).
            auth: Bearer token, or a callable returning it.
            transport: ``"auto"``, ``"streamable-http"`` (no fallback) or ``"sse"``.
            connect_timeout: Seconds to connect.
            read_timeout: Longest silence on a response before it counts as dead (the
                per-call ``timeout`` usually ends a call first).
            verify: TLS verification, as in requests (``False``, or a CA bundle path).
            cert: Client certificate, as in requests.
            trust_env: Take proxies and a CA bundle from the environment.
            era: See :class:`MCPConnection` (as are the remaining arguments).
            timeout: Default per-operation timeout of client handles.
            sampling_callback: See :class:`MCPConnection`.
            elicitation_callback: See :class:`MCPConnection`.
            roots_callback: See :class:`MCPConnection`.
            logging_callback: See :class:`MCPConnection`.
            list_changed_callback: See :class:`MCPConnection`.
            resource_updated_callback: See :class:`MCPConnection`.
            notification_callback: See :class:`MCPConnection`.
            log_level: See :class:`MCPConnection`.
            client_info: See :class:`MCPConnection`.
            validate_output: See :class:`MCPConnection`.
            cache: See :class:`MCPConnection`.
            discover_timeout: See :class:`MCPConnection`.
            handshake_timeout: See :class:`MCPConnection`.
            input_required_max_rounds: See :class:`MCPConnection`.

        Raises:
            ConfigurationError: Bad URL, headers or ``transport``.
            TransportError: The server could not be reached.
            HTTPStatusError: The server refused the connection (401: see
                ``WWW-Authenticate`` in the message).
        """
        if transport not in ("auto", "streamable-http", "sse"):
            raise ConfigurationError(
                f"unknown MCP HTTP transport {transport!r}: use 'auto', 'streamable-http' or 'sse'"
            )

        def factory() -> Transport:
            if transport == "sse":
                return LegacySSETransport(
                    url,
                    headers=headers,
                    auth=auth,
                    connect_timeout=connect_timeout,
                    verify=verify,
                    cert=cert,
                    trust_env=trust_env,
                )
            return StreamableHTTPTransport(
                url,
                headers=headers,
                auth=auth,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                verify=verify,
                cert=cert,
                trust_env=trust_env,
                fallback_to_sse=transport == "auto",
            )

        Endpoint(url, headers=headers, auth=auth)  # bad arguments fail here, not mid-connect
        if transport == "sse" and era == "auto":
            era = "legacy"  # HTTP+SSE has no modern shape: nothing to probe
        return cls(
            factory,
            era=era,
            timeout=timeout,
            sampling_callback=sampling_callback,
            elicitation_callback=elicitation_callback,
            roots_callback=roots_callback,
            logging_callback=logging_callback,
            list_changed_callback=list_changed_callback,
            resource_updated_callback=resource_updated_callback,
            notification_callback=notification_callback,
            log_level=log_level,
            client_info=client_info,
            validate_output=validate_output,
            cache=cache,
            discover_timeout=discover_timeout,
            handshake_timeout=handshake_timeout,
            input_required_max_rounds=input_required_max_rounds,
        )

    # --- public surface -----------------------------------------------------------------------

    def client(self, timeout: float | None = None) -> MCPClient:
        """A cheap handle for MCP operations; share it freely between threads.

        Args:
            timeout: The handle's default per-operation timeout (default: the
                connection's).

        Returns:
            An :class:`~a2a_sync.mcp.client.MCPClient` over this connection.
        """
        from .client import MCPClient  # noqa: PLC0415 - client imports this module

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
