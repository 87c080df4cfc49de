"""The requests in flight on one Streamable HTTP transport: their exchanges by id, the
transport's own (replayed) requests, and running one exchange to its end.

Split from :mod:`.http` (which decides *where* an exchange runs) so the bookkeeping of
what is open — what ``abandon`` finds and ``close`` aborts — is one small concept.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ...errors import A2ASyncError, ConnectionClosed, TransportError
from . import MessageSink, Outgoing, RequestId
from ._httpbase import Endpoint
from ._request import RequestPoster, new_id
from ._streams import Exchange

__all__ = ["InFlight"]

logger = logging.getLogger("a2a_sync.mcp.transports.http")  # where it always logged


class InFlight:
    """The open exchanges of one transport. Thread-safe (one lock).

    Args:
        poster: Runs one exchange (POST, then the JSON or SSE answer, resumptions).
        endpoint: Redacts transport errors before a caller sees them.
        name: The peer as messages name it.
    """

    def __init__(self, poster: RequestPoster, endpoint: Endpoint, name: str) -> None:
        self._poster = poster
        self._endpoint = endpoint
        self._name = name
        self._lock = threading.Lock()  # guards _exchanges, _internal, _closed
        self._exchanges: dict[RequestId, Exchange] = {}
        self._internal: set[Exchange] = set()
        #: Sent ``inline``: registered, not yet POSTed; the waiting caller claims it.
        self._deferred: dict[RequestId, Exchange] = {}
        #: Run inline and aborted at its deadline: ``abandon`` comes next for it.
        self._expired: dict[RequestId, Exchange] = {}
        self._closed = False

    def add(self, exchange: Exchange, *, deferred: bool = False) -> None:
        """Register a request's exchange under its id (``deferred``: its sender will
        :meth:`claim` it and run it on its own thread).

        Raises:
            ConnectionClosed: The transport is closed.
        """
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._exchanges[exchange.request_id] = exchange
            if deferred:
                self._deferred[exchange.request_id] = exchange

    def claim(self, request_id: RequestId) -> Exchange | None:
        """The deferred exchange of ``request_id`` (once), or None."""
        with self._lock:
            return self._deferred.pop(request_id, None)

    def expired(self, exchange: Exchange) -> None:
        """An inline exchange was aborted at its deadline: keep it for ``abandon``."""
        with self._lock:
            if not self._closed:
                self._expired[exchange.request_id] = exchange

    def take_expired(self, request_id: RequestId) -> Exchange | None:
        """The exchange :meth:`expired` kept for ``request_id`` (once), or None."""
        with self._lock:
            return self._expired.pop(request_id, None)

    def get(self, request_id: RequestId) -> Exchange | None:
        """The open exchange of ``request_id``, or None."""
        with self._lock:
            return self._exchanges.get(request_id)

    def remove(self, exchange: Exchange) -> None:
        """Forget ``exchange`` (if it is still the one registered under its id)."""
        with self._lock:
            if self._exchanges.get(exchange.request_id) is exchange:
                del self._exchanges[exchange.request_id]

    def remove_id(self, request_id: RequestId) -> None:
        """Forget the exchange registered under ``request_id``."""
        with self._lock:
            self._exchanges.pop(request_id, None)

    def close(self) -> list[Exchange]:
        """Refuse new exchanges; return every open one (to abort)."""
        with self._lock:
            self._closed = True
            self._deferred.clear()
            self._expired.clear()
            return [*self._exchanges.values(), *self._internal]

    def run(self, exchange: Exchange) -> None:
        """Run a registered exchange to its end; a failure fails that request at the
        sink (unless it was abandoned or the transport is closing: nobody waits)."""
        try:
            self._poster.run(exchange)
        except A2ASyncError as exc:
            if not exchange.stop.is_set():
                if isinstance(exc, TransportError):
                    exc = self._endpoint.redact(exc)
                exchange.sink.fail(exchange.request_id, exc)
        except Exception:  # top of a worker: the waiting caller must hear of it
            logger.exception("MCP HTTP exchange with %s failed", self._name)
            error = ConnectionClosed(f"the exchange with {self._name} failed")
            exchange.sink.fail(exchange.request_id, error)
        finally:
            self.remove(exchange)

    def run_internal(
        self,
        message: dict[str, Any],
        context: Outgoing,
        sink: MessageSink,
        max_event_bytes: int,
    ) -> dict[str, Any]:
        """Send a request of the transport's own (a replayed one) on this thread and
        return its answer.

        Raises:
            ConnectionClosed: The transport closed first.
            A2ASyncError: The exchange failed.
        """
        exchange = Exchange(
            {**message, "id": new_id()}, context, sink, max_event_bytes, internal=True
        )
        with self._lock:
            if self._closed:
                raise self._closed_error()
            self._internal.add(exchange)
        try:
            self._poster.run(exchange)
        finally:
            with self._lock:
                self._internal.discard(exchange)
        if exchange.result is None:
            raise self._closed_error()
        return exchange.result

    def _closed_error(self) -> ConnectionClosed:
        return ConnectionClosed(f"MCP connection to {self._name} is closed")
