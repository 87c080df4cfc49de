"""What the consumer of a resilient stream has seen, and how a resubscription folds onto it.

A :class:`Delivery` keeps the task as delivered so far (``delivered``). Whatever the agent
sends after a reconnect — a subscription's snapshot and the updates after it, a polled
``GetTask`` — is turned into the events that move ``delivered`` forward
(:func:`~a2a_sync.client.resilient._progress.diff_events`), so no event is seen twice and
chunked artifacts reassemble to what ``GetTask`` returns.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from ...a2a.accumulate import accumulate
from ...a2a.types import StreamEvent, Task, TaskArtifactUpdateEvent
from ...errors import ProtocolError
from ._progress import ReplayFilter, diff_events, lagging_append, same_progress, settled

__all__ = ["Delivery", "Unfoldable"]

logger = logging.getLogger(__name__)


class Unfoldable(Exception):
    """A resubscribed stream's event does not fold into the task (recovery then polls)."""


class Delivery:
    """The task as a stream's consumer has seen it, and the view of the current subscription.

    Not thread-safe: owned by the thread iterating the stream.
    """

    def __init__(self) -> None:
        self.delivered: Task | None = None  # the task as the consumer has seen it
        self._replay: ReplayFilter | None = None  # of the current resubscription
        self._view: Task | None = None  # the task as the current resubscription has it
        self._notes: list[str] = []  # deviations tolerated while folding resubscriptions

    def subscribed(self, snapshot: Task) -> None:
        """A resubscription started with ``snapshot`` (its first event): fold what follows
        onto it (after :meth:`advance` delivered what the snapshot adds)."""
        self._replay = ReplayFilter(snapshot)
        self._view = snapshot

    def fold(self, event: StreamEvent) -> Iterator[StreamEvent]:
        """The events that ``event`` of the current resubscription delivers.

        Its updates (minus repeats of the subscription's snapshot) are folded into the
        agent's view; what moves the delivered task forward is delivered.

        Raises:
            Unfoldable: The update cannot be folded (the snapshot lags its stream, or the
                update contradicts the task); the caller polls instead.
        """
        replay, view = self._replay, self._view
        assert replay is not None
        for update in replay.feed(event):
            lagging = lagging_append(view, self.delivered, update)
            if lagging is not None:
                raise Unfoldable(
                    "the subscription's snapshot lags its stream (an append to "
                    f"artifact {lagging!r}, which the snapshot lacks)"
                )
            try:
                previous, view = view, accumulate(view, update, notes=self._notes)
            except ProtocolError as exc:
                raise Unfoldable(f"the resubscribed stream does not fold: {exc}") from exc
            if previous is self.delivered and not isinstance(update, Task):
                self.delivered = view  # in step with the agent: the update is new
                yield update
            else:
                yield from self.advance(view)
        self._view = view

    def advance(self, view: Task, *, authoritative: bool = False) -> list[StreamEvent]:
        """Deliver what ``view`` (the agent's task) adds to what the consumer has seen.

        ``authoritative``: ``view`` is the settled task as stored, so where the delivered
        task is ahead of it (a repeat slipped through), the agent's artifacts replace it.
        """
        events = diff_events(self.delivered, view)
        if events:
            delivered = self.delivered
            for event in events:
                delivered = accumulate(delivered, event)
            self.delivered = delivered
        delivered = self.delivered
        if delivered is not None and authoritative and not same_progress(delivered, view):
            events.extend(
                TaskArtifactUpdateEvent(
                    task_id=view.id,
                    context_id=view.context_id or "",
                    artifact=artifact,
                    last_chunk=settled(view),
                )
                for artifact in view.artifacts
                if artifact not in delivered.artifacts
            )
            logger.info("task %s: the stream's artifacts were corrected from GetTask", view.id)
            delivered = view
        if delivered is None or same_progress(delivered, view):
            delivered = view  # in step: adopt the agent's task (history included)
        self.delivered = delivered
        return events
