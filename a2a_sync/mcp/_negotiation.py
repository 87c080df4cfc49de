"""Starting an MCP session over a fresh transport, and negotiating its protocol era.

``era="auto"`` probes with ``server/discover`` (2026-07-28) and falls back to the
``initialize`` handshake (2024-11-05 .. 2025-11-25) when the answer is not a usable
modern one; the verdict is cached per server (:data:`~.eras.ERA_CACHE`), so the next
connection to a legacy server skips the probe. A server that locks the connection into
the modern era at the probe, yet sent a discover answer that is no use, refuses the
handshake on that connection: it is restarted (a second transport from the factory) and
handshaken first. A pinned era or revision is negotiated directly.

A ``-32022`` answer naming a modern revision we speak is re-sent at that revision (both
``auto`` and pinned); one naming only modern revisions we do not speak is an
:class:`~a2a_sync.errors.UnsupportedProtocolVersion`, never an ``initialize`` fallback.
With ``sampling``/``elicitation``/``roots`` callbacks declared, ``auto`` takes the
handshake era of a server whose discover result lists it too (docs/decisions.md §11).
Everything, the shutdown of a server that failed to connect included, happens within one
budget (``handshake_timeout``); an OAuth login a protected HTTP server asks for runs first,
outside the probe's wait (and outside the budget unless the user gave a timeout); an
error after a failed probe names the probe, and a
handshake timeout from a stdio server that wrote non-JSON to stdout quotes the line.

The wire shapes (params, results, what an answer says about the era) live in
:mod:`.eras`; this module drives the sequence and disposes of what it started when it
fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs

from ..errors import (
    A2ASyncError,
    DeadlineExceeded,
    HTTPStatusError,
    ProtocolError,
    RequestTimeout,
    RPCError,
    UnsupportedProtocolVersion,
)
from . import _callbacks_era as _callbacks
from . import eras
from . import types as t
from .callbacks import Handlers
from .session import MCPSession
from .transports import ProcessTransport, Transport

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
        discover_timeout: Longest wait of ``auto`` for the ``server/discover`` probe (it
            also gets at most half of what is left of the budget).
        handshake_timeout: The budget of the whole connect (probe, handshake, cleanup).
        on_notification: Connection bookkeeping, registered on every session started.
        sleep: The MRTR back-off wait of every session started (tests inject a recorder).
        timeout_given: The user gave the connect a timeout: an OAuth login before the
            negotiation counts against :attr:`handshake_timeout`. Otherwise the login
            (bounded by its own handler and network timeouts) runs before the budget
            starts, so a person approving in a browser is not raced by the handshake.
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
    sleep: Callable[[float], None] = time.sleep
    timeout_given: bool = False

    def connect(self) -> Live:
        """Start a transport and its session, and negotiate the era, all within
        :attr:`handshake_timeout` (the shutdown of a server that failed included).

        Returns:
            The negotiated transport and session (a second pair when ``auto`` had to
            restart the server). Whatever failed to negotiate is closed.

        Raises:
            ServerProcessError: A stdio server failed to start or died during negotiation.
            RPCError: The server refused negotiation.
            UnsupportedProtocolVersion: A modern server speaks no revision we know.
            ProtocolError: The server speaks no revision this client knows, or a stdio
                server wrote non-JSON to stdout and never answered.
            RequestTimeout: Negotiation timed out.
        """
        clock = _Clock(self.handshake_timeout)
        mode, version = self.mode, self.version
        probe = mode == "auto"
        live = self._start()
        try:
            clock = self._log_in(live, clock)
            cached = eras.ERA_CACHE.get(live.transport.era_key) if probe else None
            if cached == "legacy":
                mode, version, probe = "legacy", eras.LATEST_HANDSHAKE_VERSION, False
            if mode == "legacy":
                info = self._initialize(live.session, version, clock)
            elif mode == "modern":
                info = self._modern(live, version, clock)
            else:
                info, live = self._auto(live, clock)
        except A2ASyncError as exc:
            self._abort(live, clock)
            explained = _explained(exc, live.transport, clock)
            if explained is exc:
                raise
            raise explained from exc
        except BaseException:
            self._abort(live, clock)
            raise
        if probe:
            eras.ERA_CACHE.put(live.transport.era_key, info.era)
        live.session.adopt(info)
        _callbacks.warn_unavailable(self.handlers, info, live.transport.name)
        if (
            info.era == "legacy"
            and self.log_level is not None
            and info.capabilities.logging is not None
        ):
            live.session.request(
                "logging/setLevel", {"level": self.log_level}, timeout=clock.left(self.timeout)
            )
        return live

    def _start(self) -> Live:
        transport = self.factory()
        session = MCPSession(transport, self.handlers, sleep=self.sleep)
        if self.client_info is not None:
            session.client_info = self.client_info
        session.log_level = self.log_level
        transport.start(session)
        session.add_listener(self.on_notification)
        return Live(transport, session)

    def _log_in(self, live: Live, clock: _Clock) -> _Clock:
        """An OAuth login before the probe and the handshake (HTTP transports with an
        ``auth`` that answers challenges and holds no token yet): the probe's short wait
        never races a person approving in a browser, and ``auto`` keeps the modern era.
        Returns the clock the negotiation runs on (a fresh one when no timeout was given:
        the login did not count)."""
        log_in = getattr(live.transport, "log_in", None)
        if log_in is None:
            return clock
        if not log_in(clock.left()):
            return clock
        if not self.timeout_given:
            return _Clock(self.handshake_timeout)
        if clock.deadline <= time.monotonic():
            raise DeadlineExceeded(
                f"the OAuth login for {live.transport.name} took longer than the connect "
                f"timeout ({self.handshake_timeout:g} s); log in first (oauth.login(url) or "
                "`a2a-sync login URL`) or give a longer handshake_timeout",
                timeout=self.handshake_timeout,
            )
        return clock

    def _abort(self, live: Live, clock: _Clock) -> None:
        """Close what failed to negotiate, within what is left of the budget."""
        if isinstance(live.transport, ProcessTransport):
            live.transport.release_stderr(None)
            live.transport.limit_shutdown(clock.left())
        finalize(live)

    def _modern(self, live: Live, version: str, clock: _Clock) -> t.ServerInfo:
        """Pinned modern era: ``server/discover``, re-sent at another revision when the
        server answers ``-32022`` naming one we speak."""
        tried: list[str] = []
        while True:
            tried.append(version)
            try:
                return self._discover(live.session, version, clock.left())
            except RPCError as exc:
                verdict, retry_at = eras.judge_unsupported_version(exc, tried)
                if verdict == "retry" and retry_at is not None:
                    version = retry_at
                    continue
                refused = _no_common_version(exc, live.transport.name, tried)
                if refused is exc:
                    raise
                raise refused from exc

    def _auto(self, live: Live, clock: _Clock) -> tuple[t.ServerInfo, Live]:
        transport = live.transport
        process = transport if isinstance(transport, ProcessTransport) else None
        if process is not None:
            process.hold_stderr()  # older servers answer the probe with a long error report
        try:
            info, cause = self._probe(live, clock)
            if info is not None:
                if process is not None:
                    process.release_stderr(None)
                if not self._prefers_handshake(info):
                    return info, live
                logger.info(
                    "%s speaks %s too: using the handshake era, where it can also push "
                    "sampling/elicitation/roots requests (pin era='modern' to avoid this)",
                    transport.name,
                    eras.LATEST_HANDSHAKE_VERSION,
                )
            result = self._fall_back(live, clock, cause)
            if process is not None:
                process.release_stderr("server/discover")
            return result
        except BaseException:
            if process is not None:
                process.release_stderr(None)
            raise

    def _probe(self, live: Live, clock: _Clock) -> tuple[t.ServerInfo | None, str | None]:
        """Send ``server/discover`` (re-sent at another revision on ``-32022``). Returns
        the discover result, or None and why the server is taken for legacy."""
        name = live.transport.name
        version = eras.LATEST_MODERN_VERSION
        tried: list[str] = []
        while True:
            tried.append(version)
            try:
                wait = clock.probe(self.discover_timeout)
                return self._discover(live.session, version, wait), None
            except RPCError as exc:
                verdict, retry_at = eras.judge_unsupported_version(exc, tried)
                if verdict == "retry" and retry_at is not None:
                    version = retry_at
                    continue
                if verdict == "refused":
                    raise _no_common_version(exc, name, tried) from exc  # always a new one
                cause = f"answered server/discover with {exc}"
            except DeadlineExceeded:
                cause = f"did not answer server/discover within {wait:g} s"
            except ProtocolError as exc:
                cause = f"sent an unusable server/discover result ({exc})"
            except HTTPStatusError as exc:
                if not eras.http_status_says_legacy(exc):
                    raise
                cause = f"answered server/discover with HTTP {exc.status_code}"
            logger.debug("%s %s: legacy", name, cause)
            return None, cause

    def _prefers_handshake(self, info: t.ServerInfo) -> bool:
        """A dual-era server and callbacks that servers may push requests to: the
        handshake era reaches them both ways (pushed and ``input_required``)."""
        pushed = (self.handlers.sampling, self.handlers.elicitation, self.handlers.roots)
        return any(pushed) and eras.LATEST_HANDSHAKE_VERSION in info.supported_versions

    def _fall_back(self, live: Live, clock: _Clock, cause: str | None) -> tuple[t.ServerInfo, Live]:
        try:
            return self._initialize(live.session, eras.LATEST_HANDSHAKE_VERSION, clock), live
        except A2ASyncError as exc:
            if isinstance(exc, RPCError) and eras.handshake_refused_as_modern(exc):
                pass  # restart below
            elif cause is None:
                raise
            else:
                note = f" (the server {cause}; the client fell back to initialize)"
                raise _amended(exc, note) from exc
        # The server locked this connection into the modern era at the probe but its
        # discover answer was no use (or we want the handshake era): a fresh server
        # process and the handshake first.
        logger.info(
            "%s refused initialize after the discover probe; restarting it", live.transport.name
        )
        self._abort(live, clock)
        fresh = self._start()
        try:
            return self._initialize(fresh.session, eras.LATEST_HANDSHAKE_VERSION, clock), fresh
        except BaseException:
            self._abort(fresh, clock)
            raise

    def _initialize(self, session: MCPSession, version: str, clock: _Clock) -> t.ServerInfo:
        result = session.request(
            "initialize",
            eras.initialize_params(version, session.client_info, session.client_capabilities),
            timeout=clock.left(),
            operation="initialize",
        )
        info = eras.server_info_from_initialize(result)
        # Adopt now so notifications/initialized already carries MCP-Protocol-Version (HTTP).
        session.adopt(info)
        session.notify("notifications/initialized")
        return info

    def _discover(self, session: MCPSession, version: str, timeout: float) -> t.ServerInfo:
        meta = eras.modern_meta(version, session.client_info, session.client_capabilities)
        pending = session.begin("server/discover", {"_meta": meta}, envelope=False, inline=True)
        return eras.server_info_from_discover(pending.wait(timeout, operation="server/discover"))


class _Clock:
    """The connect budget: one deadline for the probe, the handshake and cleanup."""

    __slots__ = ("budget", "deadline")

    def __init__(self, budget: float) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget

    def left(self, cap: float | None = None) -> float:
        """Seconds left (at least a sliver, so a spent budget still times out cleanly)."""
        left = max(self.deadline - time.monotonic(), _MIN_WAIT)
        return left if cap is None else min(left, cap)

    def probe(self, cap: float) -> float:
        """The probe's share: at most ``cap`` and half of what is left (the handshake
        that may follow needs time too)."""
        return min(cap, max((self.deadline - time.monotonic()) / 2, _MIN_WAIT))


#: The shortest wait handed to a request when the budget is (nearly) spent.
_MIN_WAIT: Final = 0.001


def _no_common_version(error: RPCError, name: str, tried: list[str]) -> A2ASyncError:
    supported = eras.unsupported_version_list(error)
    if supported is None:
        return error
    return UnsupportedProtocolVersion(
        f"{name} refused server/discover at {', '.join(tried)} and supports only "
        f"{', '.join(supported) or 'nothing'}; this client speaks "
        f"{', '.join(eras.HANDSHAKE_VERSIONS + eras.MODERN_VERSIONS)}: upgrade one side",
        data=error.data,
    )


def _explained(error: A2ASyncError, transport: Transport, clock: _Clock) -> A2ASyncError:
    """A handshake timeout from a stdio server that wrote non-JSON to stdout quotes it."""
    if not isinstance(error, RequestTimeout) or not isinstance(transport, ProcessTransport):
        return error
    noise = transport.stdout_noise
    if noise is None:
        return error
    return _amended(
        error,
        f"; within the {clock.budget:g} s connect budget it wrote to stdout what is not "
        f'JSON-RPC: "{noise}". MCP stdio servers must write only JSON-RPC messages to '
        "stdout and log to stderr",
    )


def _amended(error: A2ASyncError, suffix: str) -> A2ASyncError:
    """A copy of ``error`` whose message ends with ``suffix`` (same type and attributes)."""
    amended = type(error).__new__(type(error))  # no __init__: its arguments vary by type
    amended.__dict__.update(error.__dict__)
    amended.args = (f"{error.args[0] if error.args else error}{suffix}", *error.args[1:])
    if isinstance(amended, RPCError):
        amended.message += suffix
    return amended
