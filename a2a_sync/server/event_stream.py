"""The events of one streaming call, read by the server's SSE body (or iterated): a
subscription to a task's log, cut where the call ends.

:class:`EventStream` ends at a direct reply or when the task settles (terminal or
interrupted); :class:`SnapshotStream` and :class:`TaskSubscriptionStream` open with the
task as it is (SubscribeToTask). The stream of a running send, which also ends with its
run, is :class:`~a2a_sync.server.runs.RunStream`.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from typing import Final

from ..a2a.types import Message, StreamEvent, Task, TaskStatusUpdateEvent
from .events import Subscription
from .stores.base import is_final

__all__ = ["EventStream", "SnapshotStream", "TaskSubscriptionStream"]

#: How long a stream waits for the next event in one step when iterated plainly (the app
#: uses :meth:`EventStream.poll` with its heartbeat interval instead).
_ITER_STEP: Final = 1.0


class EventStream(Iterator[StreamEvent]):
    """The events of one streaming call, read with :meth:`poll` (heartbeats) or ``next``.

    Not thread-safe for reading (one reader); :meth:`close` may come from any thread.
    """

    def __init__(self, sub: Subscription, snapshot: Task | None = None) -> None:
        self._sub = sub
        self._buffer: deque[StreamEvent] = deque()
        self._ended = False
        # The opening snapshot of a continued task is not an end, whatever its state.
        self._opening = snapshot
        if snapshot is not None:
            self._buffer.append(snapshot)

    def poll(self, timeout: float | None) -> StreamEvent | None:
        """The next event, or ``None`` if none came within ``timeout`` seconds.

        Raises:
            StopIteration: The stream ended.
            RPCError: The run failed before creating a task.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._buffer:
                event = self._buffer.popleft()
                if self._ends_with(event):
                    self._ended = True
                    self._buffer.clear()
                return event
            if self._ended:
                self.close()
                raise StopIteration
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            batch = self._sub.poll(remaining)
            if batch:
                self._buffer.extend(event for _, event in batch)
                continue
            if self._sub.interrupted or self._sub.closed:
                tail = self._on_interrupt()
                if tail is not None:
                    self._buffer.append(tail)
                self._ended = True
                continue
            return None

    def __next__(self) -> StreamEvent:
        while True:
            event = self.poll(_ITER_STEP)
            if event is not None:
                return event

    def _ends_with(self, event: StreamEvent) -> bool:
        if event is self._opening:
            self._opening = None
            return False
        return isinstance(event, Message) or is_final(event)

    def _on_interrupt(self) -> StreamEvent | None:
        """The subscription was interrupted: the last event to deliver, if any."""
        return None

    def close(self) -> None:
        """Stop following the task. Idempotent."""
        self._ended = True
        self._sub.close()


class SnapshotStream(EventStream):
    """SubscribeToTask: the task as it is now, then every later event until it settles."""

    def __init__(self, snapshot: Task, sub: Subscription) -> None:
        super().__init__(sub)
        self._buffer.append(snapshot)  # ends the stream if the task waits already


class TaskSubscriptionStream(EventStream):
    """SubscribeToTask: the task as it is now, then its status and artifact updates until
    it reaches a **terminal** state (A2A 1.0 §3.1.6). An interrupted task (input or auth
    required) keeps the stream open: the answer that resumes it is seen here too. The
    user messages in the task's log are not update events and are left out."""

    def __init__(self, snapshot: Task, sub: Subscription) -> None:
        super().__init__(sub, snapshot)

    def poll(self, timeout: float | None) -> StreamEvent | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            event = super().poll(remaining)
            if not isinstance(event, Message):
                return event
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def _ends_with(self, event: StreamEvent) -> bool:
        if event is self._opening:
            self._opening = None
            return False
        if isinstance(event, (Task, TaskStatusUpdateEvent)):
            return event.status.state.is_terminal
        return False
