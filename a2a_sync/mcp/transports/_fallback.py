"""Falling back from Streamable HTTP to the 2024-11-05 HTTP+SSE transport.

A server that refuses ``initialize`` with 400, 404 or 405 may speak the older transport
instead: :class:`SSEFallback` opens :class:`~.legacy_sse.LegacySSETransport` on the same
endpoint, with the same credentials and HTTP pool. The per-process era cache remembers
such an endpoint (under its own key, cleared with the endpoint's verdict), so the next
connection to it opens HTTP+SSE at once.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable

from ..._net.http import HTTPTransport
from ...errors import A2ASyncError, HTTPStatusError, ProtocolError, TransportError
from . import MessageSink
from ._httpbase import Endpoint
from ._streams import Exchange
from .era_cache import ERA_CACHE
from .legacy_sse import LegacySSETransport

__all__ = ["SSEFallback", "sse_marker"]

logger = logging.getLogger(__name__)


def sse_marker(era_key: Hashable) -> Hashable:
    """The era-cache key remembering that an endpoint speaks HTTP+SSE (cleared with it)."""
    return ("http+sse", era_key)


class SSEFallback:
    """Opens the HTTP+SSE transport in place of a Streamable HTTP transport.

    Immutable after construction; safe to share between threads. The transport that owns
    it decides when the opened transport takes over (it may be closing meanwhile).

    Args:
        endpoint: The Streamable HTTP transport's endpoint (URL, headers, credential).
        http: Its HTTP pool, which the HTTP+SSE transport borrows.
        name: The transport's name, for log lines.
        connect_timeout: Seconds to connect.
        max_event_bytes: Cap on one event of the SSE stream.
    """

    __slots__ = ("_connect_timeout", "_endpoint", "_http", "_max_event_bytes", "_name")

    def __init__(
        self,
        endpoint: Endpoint,
        http: HTTPTransport,
        *,
        name: str,
        connect_timeout: float,
        max_event_bytes: int,
    ) -> None:
        self._endpoint = endpoint
        self._http = http
        self._name = name
        self._connect_timeout = connect_timeout
        self._max_event_bytes = max_event_bytes

    def reopen(self, sink: MessageSink) -> LegacySSETransport | None:
        """Start the HTTP+SSE transport at once if the era cache remembers the endpoint
        as speaking it.

        Returns:
            The started transport; ``None`` when the endpoint is not remembered that way,
            or no longer serves HTTP+SSE (then Streamable HTTP is used).
        """
        if ERA_CACHE.get(sse_marker(self._endpoint.era_key)) != "legacy":
            return None
        legacy = self._legacy()
        try:
            legacy.start(sink)
        except (TransportError, HTTPStatusError, ProtocolError) as exc:
            logger.info("%s no longer serves HTTP+SSE (%s); using Streamable HTTP", self._name, exc)
            return None
        return legacy

    def open(self, exchange: Exchange) -> LegacySSETransport | None:
        """``initialize`` was refused with 400/404/405: start the 2024-11-05 transport; if
        the server has none either, the refusal is the answer.

        Returns:
            The started transport, which has not sent ``initialize`` yet; ``None`` when
            the refusal (a JSON-RPC error) was handed to the session as the answer.

        Raises:
            A2ASyncError: The refusal, when it was not a JSON-RPC error.
        """
        refusal = exchange.refusal
        legacy = self._legacy()
        try:
            legacy.start(exchange.sink)
        except (TransportError, HTTPStatusError) as exc:
            logger.debug("%s offers no HTTP+SSE endpoint either: %s", self._name, exc)
            if isinstance(refusal, dict):
                exchange.take({"jsonrpc": "2.0", "id": exchange.wire_id, "error": refusal})
                return None
            assert isinstance(refusal, A2ASyncError)
            raise refusal from None
        return legacy

    def remember(self) -> None:
        """Note in the era cache that the endpoint speaks HTTP+SSE."""
        ERA_CACHE.put(sse_marker(self._endpoint.era_key), "legacy")

    def _legacy(self) -> LegacySSETransport:
        return LegacySSETransport.borrowing(
            self._endpoint,
            self._http,
            connect_timeout=self._connect_timeout,
            max_event_bytes=self._max_event_bytes,
        )
