"""The legacy-era server session of a Streamable HTTP transport, and its renewal.

A server may forget our ``Mcp-Session-Id`` (restart, idle expiry, a DELETE from
elsewhere): it then answers 404 (TypeScript servers: 400 naming the session). The
transport initializes a new session by replaying what established the old one: the
``initialize`` request, ``notifications/initialized``, and the state the client set up
since (the last ``logging/setLevel``, the resource subscriptions still in force). Each
renewal starts a new *generation*; exchanges remember the generation they were sent in,
so several of them refused at once renew only once.

The transport keeps MCP method names here, and nowhere else, because a session is an MCP
concept the HTTP layer has to carry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final

from ..._net import jsonrpc as _jsonrpc
from ..._net.http import HTTPTransport
from ...errors import A2ASyncError, excerpt
from ...policies import RetryPolicy, Timeout
from . import Outgoing
from ._httpbase import (
    ACCEPT_BOTH,
    DELETE_TIMEOUT,
    ERROR_BODY_LIMIT,
    EVENT_STREAM_TYPE,
    PROTOCOL_HEADER,
    SESSION_HEADER,
    Endpoint,
    check_session_id,
)

__all__ = ["LegacySession"]

logger = logging.getLogger(__name__)

#: Methods whose messages are kept for replaying on a new session.
_REMEMBERED: Final = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    }
)

Sent = tuple[dict[str, Any], Outgoing]


class LegacySession:
    """Session id, generation, negotiated version and replay memory of one transport.

    Thread-safe: :attr:`lock` serializes renewals, and a sender takes it briefly
    (:meth:`current`) so no request goes out with an id that is being replaced.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self.lock = threading.Lock()
        #: The server's session id (a credential: never logged).
        self.id: str | None = None
        self.generation = 0
        #: The negotiated revision, as the session stamps it on messages.
        self.protocol_version: str | None = None
        self._init: Sent | None = None
        self._initialized: Sent | None = None
        self._log_level: Sent | None = None
        self._subscriptions: dict[str, Sent] = {}

    def current(self) -> tuple[str | None, int]:
        """The id to send and the generation it belongs to (waits out a renewal)."""
        with self.lock:
            return self.id, self.generation

    def adopt(self, value: str | None) -> None:
        """Take the id from an ``initialize`` answer (``None``: a stateless server).

        Raises:
            ProtocolError: The id is not visible ASCII.
        """
        self.id = check_session_id(value) if value is not None else None

    def get_headers(self, endpoint: Endpoint, context: Outgoing | None = None) -> dict[str, str]:
        """Headers for a ``GET`` stream on this session (the GET stream, or resuming a
        request's response stream): the endpoint's, ``Cache-Control: no-store``, the
        protocol version (the request's own, else the negotiated one) and the session id."""
        headers = endpoint.headers(EVENT_STREAM_TYPE)
        headers["Cache-Control"] = "no-store"
        version = context.headers.get(PROTOCOL_HEADER) if context is not None else None
        version = version or self.protocol_version
        if version is not None:
            headers[PROTOCOL_HEADER] = version
        session = self.id
        if session is not None:
            headers[SESSION_HEADER] = session
        return headers

    def remember(self, message: dict[str, Any], context: Outgoing) -> None:
        """Note a message on its way out, if a new session would need it again."""
        version = context.headers.get(PROTOCOL_HEADER)
        if version is not None:
            self.protocol_version = version
        method = context.method
        if method not in _REMEMBERED or "Mcp-Method" in context.headers:
            return  # nothing a new session needs (modern era: there is no session)
        if method == "initialize":
            self._init = (message, context)
        elif method == "notifications/initialized":
            self._initialized = (message, context)
        elif method == "logging/setLevel":
            self._log_level = (message, context)
        else:
            params = message.get("params")
            uri = params.get("uri") if isinstance(params, dict) else None
            if isinstance(uri, str):
                if method == "resources/subscribe":
                    self._subscriptions[uri] = (message, context)
                else:
                    self._subscriptions.pop(uri, None)

    def renew(
        self,
        generation: int,
        request: Callable[[dict[str, Any], Outgoing], dict[str, Any]],
        notify: Callable[[dict[str, Any], Outgoing], None],
    ) -> bool:
        """Initialize a new session after the server forgot the one of ``generation``.

        Args:
            generation: The generation the refused exchange was sent in.
            request: Sends a replayed request on this thread (without the session id
                for ``initialize``) and returns its answer; the answer to
                ``initialize`` must have passed through :meth:`adopt`.
            notify: Sends a replayed notification.

        Returns:
            True when a session is ready (possibly renewed meanwhile by another
            exchange); False when none could be initialized.
        """
        with self.lock:
            if self.generation != generation:
                return True
            if self._init is None:
                return False
            logger.info("%s no longer knows the MCP session; initializing a new one", self._name)
            message, context = self._init
            try:
                answer = request(message, context)
            except A2ASyncError as exc:
                logger.warning("%s: could not initialize a new session: %s", self._name, exc)
                return False
            result = answer.get("result")
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            if version is None or version != (self.protocol_version or version):
                logger.warning(
                    "%s answered the new initialize with %s, not the negotiated revision",
                    self._name,
                    excerpt(_jsonrpc.encode(answer)),
                )
                return False
            self.generation += 1
            for item in (self._initialized, self._log_level, *self._subscriptions.values()):
                if item is None:
                    continue
                message, context = item
                try:
                    if context.kind == "request":
                        request(message, context)
                    else:
                        notify(message, context)
                except A2ASyncError as exc:
                    logger.warning(
                        "%s: could not restore %s on the new session: %s",
                        self._name,
                        context.method,
                        exc,
                    )
            return True

    def end(self, http: HTTPTransport, endpoint: Endpoint, name: str) -> None:
        """``DELETE`` the session on ``endpoint`` (close): bounded, best effort; a server
        that does not let clients end sessions (405) or is gone is only logged."""
        session = self.id
        if session is None:
            return
        headers = endpoint.headers(ACCEPT_BOTH)
        headers[SESSION_HEADER] = session
        if self.protocol_version is not None:
            headers[PROTOCOL_HEADER] = self.protocol_version
        try:
            result = http.request(
                "DELETE",
                endpoint.url,
                headers=headers,
                timeout=Timeout(connect=DELETE_TIMEOUT, read=DELETE_TIMEOUT, total=DELETE_TIMEOUT),
                retry=RetryPolicy.none(),
                max_response_bytes=ERROR_BODY_LIMIT,
            )
        except A2ASyncError as exc:
            logger.debug("%s: ending the session failed: %s", name, exc)
            return
        if result.status == 405:
            logger.debug("%s does not let clients end sessions (405)", name)
        elif not result.ok:
            logger.debug("%s answered the session DELETE with HTTP %s", name, result.status)
