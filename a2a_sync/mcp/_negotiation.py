"""Starting an MCP session over a fresh transport, and negotiating its protocol era.

``era="auto"`` probes with ``server/discover`` (2026-07-28) and falls back to the
``initialize`` handshake (2024-11-05 .. 2025-11-25) when the answer is not a usable
modern one; the verdict is cached per server (:data:`~.eras.ERA_CACHE`), so the next
connection to a legacy server skips the probe. A server that locks the connection into
the modern era at the probe, yet sent a discover answer that is no use, refuses the
handshake on that connection: it is restarted (a second transport from the factory) and
handshaken first. A pinned era or revision is negotiated directly.

The wire shapes (params, results, what an answer says about the era) live in
:mod:`.eras`; this module drives the sequence and disposes of what it started when it
fails.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from ..errors import A2ASyncError, DeadlineExceeded, HTTPStatusError, ProtocolError, RPCError
from . import eras
from . import types as t
from .callbacks import Handlers
from .session import MCPSession
from .transports import Transport

__all__ = ["HANDSHAKE_TIMEOUT", "Live", "Negotiator", "finalize"]

logger = logging.getLogger(__name__)

#: Timeout of the ``initialize`` handshake: servers started through npx/uvx may first
#: install packages, so be generous (the call still fails at once if the server dies).
HANDSHAKE_TIMEOUT: Final = 60.0


class Live:
    """What the finalizer needs: the current transport and session (never the connection)."""

    __slots__ = ("session", "transport")

    def __init__(self, transport: Transport, session: MCPSession) -> None:
        self.transport = transport
        self.session = session


def finalize(live: Live) -> None:
    """Close ``live``'s transport (an unclosed or failed connection); failures are logged."""
    logger.debug("closing unclosed MCP connection to %s", live.transport.name)
    try:
        live.transport.close()
    except A2ASyncError as exc:
        logger.debug("closing %s: %s", live.transport.name, exc)


@attrs.frozen
class Negotiator:
    """How a connection starts its session and negotiates the era: the connection's
    options, checked once.

    Immutable; safe to share between threads. It never references the connection (its
    finalizer must be able to collect it).

    Attributes:
        factory: Creates a fresh, unstarted transport.
        mode: ``"auto"``, ``"legacy"`` or ``"modern"`` (from :func:`.eras.parse_setting`).
        version: The revision to offer (``auto``) or pin.
        handlers: The user callbacks; they also declare the client capabilities.
        client_info: How the client introduces itself (``None``: the session's default).
        log_level: Log level to ask a legacy server for after the handshake.
        timeout: Timeout of that ``logging/setLevel`` request.
        discover_timeout: How long ``auto`` waits for the ``server/discover`` probe.
        handshake_timeout: How long to wait for ``initialize`` / ``server/discover``.
        on_notification: Connection bookkeeping, registered on every session started.
    """

    factory: Callable[[], Transport]
    mode: Literal["auto", "legacy", "modern"]
    version: str
    handlers: Handlers
    client_info: t.Implementation | None
    log_level: t.LoggingLevel | None
    timeout: float
    discover_timeout: float
    handshake_timeout: float
    on_notification: Callable[[str, dict[str, Any]], None]

    def connect(self) -> Live:
        """Start a transport and its session, and negotiate the era.

        Returns:
            The negotiated transport and session (a second pair when ``auto`` had to
            restart the server). Whatever failed to negotiate is closed.

        Raises:
            ServerProcessError: A stdio server failed to start or died during negotiation.
            RPCError: The server refused negotiation.
            ProtocolError: The server speaks no revision this client knows.
            RequestTimeout: Negotiation timed out.
        """
        mode, version = self.mode, self.version
        probe = mode == "auto"
        live = self._start()
        try:
            if probe and eras.ERA_CACHE.get(live.transport.era_key) == "legacy":
                mode, version, probe = "legacy", eras.LATEST_HANDSHAKE_VERSION, False
            if mode == "legacy":
                info = self._initialize(live.session, version)
            elif mode == "modern":
                info = self._discover(live.session, version, self.handshake_timeout)
            else:
                info, live = self._auto(live)
        except BaseException:
            finalize(live)
            raise
        if probe:
            eras.ERA_CACHE.put(live.transport.era_key, info.era)
        live.session.adopt(info)
        if (
            info.era == "legacy"
            and self.log_level is not None
            and info.capabilities.logging is not None
        ):
            live.session.request(
                "logging/setLevel", {"level": self.log_level}, timeout=self.timeout
            )
        return live

    def _start(self) -> Live:
        transport = self.factory()
        session = MCPSession(transport, self.handlers)
        if self.client_info is not None:
            session.client_info = self.client_info
        session.log_level = self.log_level
        transport.start(session)
        session.add_listener(self.on_notification)
        return Live(transport, session)

    def _auto(self, live: Live) -> tuple[t.ServerInfo, Live]:
        version = eras.LATEST_MODERN_VERSION
        for _attempt in range(2):
            try:
                return self._discover(live.session, version, self.discover_timeout), live
            except RPCError as exc:
                retry_at = eras.probe_says_modern(exc)
                if retry_at is not None and retry_at != version:
                    version = retry_at
                    continue
                logger.debug(
                    "%s answered server/discover with %s: legacy", live.transport.name, exc
                )
            except DeadlineExceeded:
                logger.debug("%s did not answer server/discover: legacy", live.transport.name)
            except ProtocolError as exc:
                logger.debug(
                    "%s sent an unusable discover result (%s): legacy", live.transport.name, exc
                )
            except HTTPStatusError as exc:
                if not eras.http_status_says_legacy(exc):
                    raise
                logger.debug(
                    "%s answered server/discover with HTTP %s: legacy",
                    live.transport.name,
                    exc.status_code,
                )
            break
        try:
            return self._initialize(live.session, eras.LATEST_HANDSHAKE_VERSION), live
        except RPCError as exc:
            if not eras.handshake_refused_as_modern(exc):
                raise
        # The server locked this connection into the modern era at the probe but its
        # discover answer was no use: a fresh server process and the handshake first.
        logger.info(
            "%s refused initialize after the discover probe; restarting it", live.transport.name
        )
        finalize(live)
        fresh = self._start()
        try:
            return self._initialize(fresh.session, eras.LATEST_HANDSHAKE_VERSION), fresh
        except BaseException:
            finalize(fresh)
            raise

    def _initialize(self, session: MCPSession, version: str) -> t.ServerInfo:
        result = session.request(
            "initialize",
            eras.initialize_params(version, session.client_info, session.client_capabilities),
            timeout=self.handshake_timeout,
            operation="initialize",
        )
        info = eras.server_info_from_initialize(result)
        # Adopt now so notifications/initialized already carries MCP-Protocol-Version (HTTP).
        session.adopt(info)
        session.notify("notifications/initialized")
        return info

    def _discover(self, session: MCPSession, version: str, timeout: float) -> t.ServerInfo:
        meta = eras.modern_meta(version, session.client_info, session.client_capabilities)
        pending = session.begin("server/discover", {"_meta": meta}, envelope=False)
        return eras.server_info_from_discover(pending.wait(timeout, operation="server/discover"))
