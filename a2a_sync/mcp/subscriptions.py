"""``subscriptions/listen`` (MCP 2026-07-28): change events for tools, prompts, resources."""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs

from ..errors import DeadlineExceeded, ProtocolError
from ._correlator import PendingRequest
from .session import MCPSession

__all__ = ["Subscription", "SubscriptionEvent"]


@attrs.frozen
class SubscriptionEvent:
    """One change reported on a ``subscriptions/listen`` stream.

    Attributes:
        kind: ``"tools"``, ``"prompts"``, ``"resources"`` (list changed) or
            ``"resource_updated"``.
        uri: The resource, for ``"resource_updated"``.
    """

    kind: Literal["tools", "prompts", "resources", "resource_updated"]
    uri: str | None = None


_EVENT_KINDS: Final[Mapping[str, Any]] = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
    "notifications/resources/updated": "resource_updated",
}


class Subscription:
    """An open ``subscriptions/listen`` stream (modern era). Close it when done.

    Thread-safe. Events are also delivered to the connection's callbacks.

    Attributes:
        granted: The notification filter the server acknowledged (a subset of the ask).
    """

    def __init__(self, session: MCPSession) -> None:
        self._session = session
        self._pending: PendingRequest | None = None
        self._acked = threading.Event()
        #: Set by the acknowledgement and by the listen request ending (``done=`` of
        #: ``MCPSession.begin``): what :meth:`_await_ack` waits for.
        self._settled = threading.Event()
        self._events: queue.SimpleQueue[SubscriptionEvent] = queue.SimpleQueue()
        self.granted: dict[str, Any] = {}

    @classmethod
    def open(cls, session: MCPSession, wanted: dict[str, Any], timeout: float) -> Subscription:
        """Send ``subscriptions/listen`` for the ``wanted`` notifications and return once
        the server acknowledged.

        Raises:
            DeadlineExceeded: No acknowledgement within ``timeout``.
            ProtocolError: The stream ended before it was acknowledged.
        """
        subscription = cls(session)
        subscription._pending = session.begin(
            "subscriptions/listen",
            {"notifications": wanted},
            route=subscription._route,
            done=subscription._settled,
        )
        subscription._await_ack(timeout)
        return subscription

    def get_event(self, timeout: float) -> SubscriptionEvent | None:
        """The next event, or None if none arrived within ``timeout`` seconds."""
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return None

    @property
    def closed(self) -> bool:
        """True once the server ended the stream or :meth:`close` was called."""
        return self._pending is None or self._pending.done()

    def close(self) -> None:
        """Stop listening (``notifications/cancelled`` on stdio). Idempotent."""
        pending = self._pending
        if pending is not None:
            pending.cancel("subscription closed")
            self._session.remove_route(pending.request_id)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _route(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/subscriptions/acknowledged":
            granted = params.get("notifications")
            self.granted = granted if isinstance(granted, dict) else {}
            self._acked.set()
            self._settled.set()
            return
        kind = _EVENT_KINDS.get(method)
        if kind is not None:
            uri = params.get("uri")
            self._events.put(SubscriptionEvent(kind, uri if isinstance(uri, str) else None))

    def _await_ack(self, timeout: float) -> None:
        pending = self._pending
        assert pending is not None
        if not self._settled.wait(timeout):
            self.close()
            raise DeadlineExceeded(
                f"subscriptions/listen not acknowledged after {timeout:g} s", timeout=timeout
            )
        if self._acked.is_set():
            return
        pending.wait(0)  # raises the server's error; a result means it ended
        raise ProtocolError("subscriptions/listen ended before it was acknowledged")
