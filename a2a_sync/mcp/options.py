"""``MCPOptions``: everything an MCP connection can be told, as one frozen value.

:class:`~a2a_sync.mcp.connection.MCPConnection`, its :meth:`stdio` and :meth:`http`
constructors and the legacy HTTP+SSE path all read the same value, so each setting is
written (and documented) once. Keywords given to those constructors are applied with
:meth:`MCPOptions.evolve`, which routes ``headers``/``auth``/... to :attr:`MCPOptions.http`
and ``env``/``stderr``/... to :attr:`MCPOptions.stdio`, and refuses an unknown name with
a :class:`~a2a_sync.errors.ConfigurationError` naming it.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from ..errors import ConfigurationError
from . import eras
from . import types as t
from ._mrtr import DEFAULT_INPUT_REQUIRED_MAX_ROUNDS
from .callbacks import Handlers
from .transports.options import HTTP_OPTION_NAMES, HTTPOptions
from .transports.stdio import DEFAULT_INHERITED_ENV_VARS, DEFAULT_MAX_LINE_BYTES

__all__ = ["SESSION_OPTION_NAMES", "HTTPOptions", "MCPOptions", "StdioOptions", "resolve"]


@attrs.frozen(kw_only=True)
class StdioOptions:
    """How a stdio server process is started. Immutable.

    Attributes:
        env: Extra environment variables for the server (API keys go here).
        cwd: Working directory of the server.
        stderr: ``"log"`` (the server's stderr lines go to logging), a file-like
            object, or ``None`` (discarded).
        inherit_env: Variables copied from this process's environment.
        max_line_bytes: Longest JSON line accepted from the server.
    """

    env: Mapping[str, str] | None = None
    cwd: str | os.PathLike[str] | None = None
    stderr: Any = "log"
    inherit_env: Iterable[str] = DEFAULT_INHERITED_ENV_VARS
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES


@attrs.frozen(kw_only=True)
class MCPOptions:
    """The options of an MCP connection. Immutable; derive variants with :meth:`evolve`.

    Example::

        base = MCPOptions(timeout=10, elicitation_callback=ask_user)
        conn = MCPConnection.stdio(["python", "server.py"], options=base, era="legacy")

    Attributes:
        era: ``"auto"`` (probe ``server/discover``, fall back to ``initialize``; the verdict
            is cached per server), ``"legacy"``, ``"modern"``, or an exact revision to pin
            (``"2025-06-18"``, ``"2026-07-28"``).
        timeout: Default per-operation timeout (seconds) of client handles (``None``:
            30 s). Given explicitly, it also bounds the whole connect (probe, handshake,
            and stopping a server that failed to connect) unless ``handshake_timeout`` is
            given.
        sampling_callback: ``(CreateMessageRequest) -> CreateMessageResult``; declares
            the ``sampling`` capability.
        elicitation_callback: ``(ElicitRequest) -> ElicitResult``; declares
            ``elicitation`` (form and url modes).
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
            60 s, for servers started through npx/uvx that install packages first). An
            OAuth first login runs before the probe and counts against this only when
            ``timeout`` or ``handshake_timeout`` is given (docs/auth.md).
        input_required_max_rounds: Cap on ``input_required`` rounds per call (modern era).
        sleep: Waits between ``input_required`` rounds that carry only ``requestState``
            (a short back-off); tests inject a recorder.
        http: How HTTP transports reach the server (:class:`HTTPOptions`).
        stdio: How a stdio server is started (:class:`StdioOptions`).
    """

    era: eras.EraSetting = "auto"
    timeout: float | None = None
    sampling_callback: Callable[[t.CreateMessageRequest], t.CreateMessageResult] | None = None
    elicitation_callback: Callable[[t.ElicitRequest], t.ElicitResult] | None = None
    roots_callback: Callable[[], Sequence[t.Root]] | None = None
    logging_callback: Callable[[t.LoggingMessage], None] | None = None
    list_changed_callback: Callable[[str], None] | None = None
    resource_updated_callback: Callable[[str], None] | None = None
    notification_callback: Callable[[str, dict[str, Any]], None] | None = None
    log_level: t.LoggingLevel | None = None
    client_info: t.Implementation | None = None
    validate_output: bool = True
    cache: bool = True
    discover_timeout: float = eras.DISCOVER_TIMEOUT
    handshake_timeout: float | None = None
    input_required_max_rounds: int = DEFAULT_INPUT_REQUIRED_MAX_ROUNDS
    sleep: Callable[[float], None] = time.sleep
    http: HTTPOptions = attrs.field(factory=HTTPOptions)
    stdio: StdioOptions = attrs.field(factory=StdioOptions)

    def evolve(self, **changes: Any) -> MCPOptions:
        """A copy with ``changes``: field names of this class, of :class:`HTTPOptions`
        (``headers``, ``auth``, ``connect_timeout``...) or of :class:`StdioOptions`
        (``env``, ``cwd``, ``stderr``...), each routed to where it lives.

        Raises:
            ConfigurationError: A name is no option (the message names it and the
                closest option).
        """
        own: dict[str, Any] = {}
        http: dict[str, Any] = {}
        stdio: dict[str, Any] = {}
        for name, value in changes.items():
            if name in _OWN_NAMES:
                own[name] = value
            elif name in HTTP_OPTION_NAMES:
                http[name] = value
            elif name in _STDIO_NAMES:
                stdio[name] = value
            else:
                raise ConfigurationError(_unknown(name))
        if http:
            own["http"] = attrs.evolve(own.get("http", self.http), **http)
        if stdio:
            own["stdio"] = attrs.evolve(own.get("stdio", self.stdio), **stdio)
        return attrs.evolve(self, **own) if own else self

    def handlers(self) -> Handlers:
        """The callbacks as the session takes them."""
        return Handlers(
            sampling=self.sampling_callback,
            elicitation=self.elicitation_callback,
            roots=self.roots_callback,
            logging=self.logging_callback,
            list_changed=self.list_changed_callback,
            resource_updated=self.resource_updated_callback,
            notification=self.notification_callback,
        )


_OWN_NAMES: Final = frozenset(a.name for a in attrs.fields(MCPOptions))
_STDIO_NAMES: Final = frozenset(a.name for a in attrs.fields(StdioOptions))
#: Options about the MCP session itself, whatever carries it.
SESSION_OPTION_NAMES: Final = _OWN_NAMES - {"http", "stdio"}


def _unknown(name: str) -> str:
    known = sorted(_OWN_NAMES | HTTP_OPTION_NAMES | _STDIO_NAMES)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown MCP connection option {name!r}{hint}; the options are: {', '.join(known)}"


def resolve(options: MCPOptions | None, overrides: Mapping[str, Any]) -> MCPOptions:
    """``options`` (default: all defaults) with the keyword ``overrides`` applied."""
    return (options or MCPOptions()).evolve(**overrides)
