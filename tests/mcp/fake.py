"""An in-memory transport for session tests: the test plays the server."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from a2a_sync.errors import A2ASyncError, ConnectionClosed
from a2a_sync.mcp.transports import MessageSink, Outgoing, RequestId


class FakeTransport:
    """Records what the session sends; ``reply`` (if given) answers inline."""

    name = "fake"
    kind = "fake"
    era_key = "fake"

    def __init__(
        self,
        reply: Callable[[FakeTransport, dict[str, Any]], None] | None = None,
        *,
        wants_context: bool = False,
        cancels_itself: bool = False,
    ) -> None:
        self.wants_context = wants_context
        self.cancels_itself = cancels_itself
        self.reply = reply
        self.sent: queue.Queue[dict[str, Any]] = queue.Queue()
        self.contexts: list[Outgoing | None] = []
        self.abandoned: list[RequestId] = []
        self.sink: MessageSink | None = None
        self.closed = threading.Event()

    def start(self, sink: MessageSink) -> None:
        self.sink = sink

    def send(self, message: dict[str, Any], context: Outgoing | None = None) -> None:
        if self.closed.is_set():
            raise ConnectionClosed("fake closed")
        self.contexts.append(context)
        self.sent.put(message)
        if self.reply is not None:
            self.reply(self, message)

    def abandon(self, request_id: RequestId) -> bool:
        self.abandoned.append(request_id)
        return self.cancels_itself

    def close(self) -> None:
        self.closed.set()
        assert self.sink is not None
        self.sink.transport_closed(None)

    # test helpers -------------------------------------------------------------------------

    def deliver(self, message: dict[str, Any]) -> None:
        assert self.sink is not None
        self.sink.deliver(message)

    def fail(self, error: A2ASyncError) -> None:
        assert self.sink is not None
        self.sink.transport_closed(error)

    def next_sent(self, timeout: float = 5) -> dict[str, Any]:
        return self.sent.get(timeout=timeout)

    def next_sent_with(self, key: str, value: Any, timeout: float = 5) -> dict[str, Any]:
        while True:
            message = self.sent.get(timeout=timeout)
            if message.get(key) == value:
                return message


def result(message: dict[str, Any], value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": message["id"], "result": value}
