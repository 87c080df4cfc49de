"""A streamed A2A task: iterate its events, get the final task, close from any thread."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .._net.jsonrpc import A2A_ERRORS, result_from_response
from .._net.sse import SSEStream
from ..a2a.accumulate import accumulate
from ..a2a.types import Message, StreamEvent, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from ..errors import A2ASyncError, ProtocolError, StreamInterrupted
from .chunks import progress, text_chunks

__all__ = ["TaskStream"]

logger = logging.getLogger(__name__)

#: Turns one JSON-RPC ``result`` of a stream into a model (the revision's codec).
EventLoader = Callable[[Any], StreamEvent]
#: One event's result from its decoded payload (the binding's ``unwrap_event``).
EventUnwrap = Callable[[Any, "set[int | str]"], Any]
#: Reads a task by id (the client's ``get_task``).
TaskFetcher = Callable[[str], Task]


class TaskStream:
    """The events of one streamed message or task subscription.

    Iterate it to receive :class:`~a2a_sync.types.Task`, :class:`~a2a_sync.types.Message`,
    :class:`~a2a_sync.types.TaskStatusUpdateEvent` and
    :class:`~a2a_sync.types.TaskArtifactUpdateEvent` objects as the agent produces
    them. Iteration ends when the task reaches a terminal or interrupted state (A2A 0.3
    ``final``, A2A 1.0 stream close), or after a single reply message.
    :meth:`get_final_task` folds every update into the same :class:`Task` that
    ``get_task`` returns. (A stream that continues an existing task may start with
    updates instead of the task, as a2a-sdk agents do; :attr:`task` then folds them onto
    a stub that knows only this stream's events, and :meth:`get_final_task` reads the
    stored task once the stream ended.)

    Iterate from one thread; :meth:`close` may be called from any thread and makes a
    blocked iteration stop promptly (with :class:`~a2a_sync.errors.Cancelled`). Use it
    as a context manager::

        with client.stream_message("Summarize this") as stream:
            for event in stream:
                print(event)
            task = stream.get_final_task()
    """

    def __init__(
        self,
        sse: SSEStream,
        *,
        request_id: int | str,
        load_event: EventLoader,
        revision: str,
        fetch_task: TaskFetcher | None = None,
        unwrap: EventUnwrap | None = None,
    ) -> None:
        self._sse = sse
        self._request_ids: set[int | str] = {request_id}
        self._load_event = load_event
        self._unwrap = unwrap
        self.revision = revision
        self._snapshot: Task | None = None
        self._unfolded: list[StreamEvent] = []
        self._message: Message | None = None
        self._task_id: str | None = None
        self._done = False
        self._fetch_task = fetch_task
        self._partial = False  # the stream began with an update, not with the task
        self._notes: list[str] = []  # deviations the fold tolerated (see _accumulate)
        self._conflicts: list[str] = []  # events that could not be folded
        self._lock = threading.Lock()  # guards folding (task property vs iteration)

    # -- what the stream knows so far ------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The task's id, once the first event named it."""
        return self._task_id

    @property
    def task(self) -> Task | None:
        """The task as known so far (``None`` before the first event or for a reply
        message). Folding is lazy: reading this applies the events received since."""
        with self._lock:
            if self._unfolded:
                snapshot = self._snapshot
                for event in self._unfolded:
                    try:
                        snapshot = accumulate(snapshot, event, notes=self._notes)
                    except ProtocolError as exc:
                        # The stream disagrees with itself (an update for another task):
                        # skipped here; the final task is read with GetTask instead.
                        logger.debug("task stream %s: event not folded: %s", self._task_id, exc)
                        self._conflicts.append(str(exc))
                self._snapshot = snapshot
                self._unfolded.clear()
            return self._snapshot

    @property
    def needs_confirmation(self) -> bool:
        """True when the fold is not to be trusted alone: the stream tolerated an
        ``append`` to an artifact it had not seen, or carried events that did not fold
        (:meth:`get_final_result` then reads the task with ``GetTask``)."""
        self.task  # noqa: B018 - fold what arrived
        return bool(self._notes or self._conflicts)

    @property
    def message(self) -> Message | None:
        """The agent's reply when it answered with a message instead of a task."""
        return self._message

    @property
    def done(self) -> bool:
        """True once the stream reached its end."""
        return self._done

    def add_request_id(self, request_id: int | str) -> None:
        """Accept events answering ``request_id`` too (after a resubscribe)."""
        self._request_ids.add(request_id)

    # -- iteration ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[StreamEvent]:
        return self

    def __next__(self) -> StreamEvent:
        if self._done:
            raise StopIteration
        while True:
            try:
                sse_event = self._sse.next_event()
            except StreamInterrupted as exc:
                self._finish()
                if exc.task_id is None:  # the SSE layer does not know the task
                    exc.task_id = self._task_id
                raise
            except BaseException:
                self._finish()
                raise
            if sse_event is None:
                self._finish()
                snapshot = self.task
                if self._message is None and (snapshot is None or not _settled(snapshot)):
                    raise StreamInterrupted(
                        "the agent closed the stream before the task settled",
                        task_id=self._task_id,
                    )
                raise StopIteration
            if not sse_event.data:
                continue  # an event without data carries nothing for A2A (e.g. a keep-alive)
            try:
                event = self._decode(sse_event.json())
            except BaseException:
                self._finish()
                raise
            self._record(event)
            return event

    def _decode(self, envelope: Any) -> StreamEvent:
        if self._unwrap is not None:  # the binding knows its event framing
            return self._load_event(self._unwrap(envelope, self._request_ids))
        request_id = envelope.get("id") if isinstance(envelope, dict) else None
        if request_id not in self._request_ids:
            request_id = next(iter(self._request_ids))
        result = result_from_response(envelope, expected_id=request_id, table=A2A_ERRORS)
        return self._load_event(result)

    def _record(self, event: StreamEvent) -> None:
        if isinstance(event, Message) and self._snapshot is None and not self._unfolded:
            # A stream is either one Message, or a Task followed by updates (A2A §3.1.2).
            self._message = event
            self._task_id = event.task_id
            self._finish()
            return
        if isinstance(event, Task):
            self._task_id = event.id
        elif self._task_id is None:
            self._task_id = getattr(event, "task_id", None)
        with self._lock:
            if self._snapshot is None and not self._unfolded and not isinstance(event, Task):
                # A continued task's stream may start with updates: fold onto a stub.
                self._partial = True
                self._unfolded.append(_stub_task(event))
            self._unfolded.append(event)
        if _ends_stream(event):
            self._finish()

    def _finish(self) -> None:
        self._done = True
        self._sse.close()

    # -- results -------------------------------------------------------------------------------

    def text_chunks(self) -> Iterator[str]:
        """The answer's text as it arrives (see :func:`a2a_sync.client.chunks.text_chunks`);
        the stream's outcome stays available from :meth:`get_final_result`."""
        return text_chunks(self)

    def progress(self, description: str = "streaming") -> Iterator[StreamEvent]:
        """The events, with a progress bar while they arrive (``tqdm.auto`` when
        installed; see :func:`a2a_sync.client.chunks.progress`)."""
        return progress(self, description)

    def get_final_task(self) -> Task:
        """Read the stream to its end and return the folded task.

        Raises:
            ProtocolError: The agent answered with a message, not a task (see
                :meth:`get_final_result`).
            StreamInterrupted: The stream ended before the task settled.
        """
        result = self.get_final_result()
        if isinstance(result, Message):
            raise ProtocolError("the agent replied with a message, not a task")
        return result

    def get_final_result(self) -> Task | Message:
        """Read the stream to its end; return the folded task or the reply message."""
        for _ in self:
            pass
        if self._message is not None:
            return self._message
        snapshot = self.task
        if snapshot is None:
            raise ProtocolError("the stream ended without a task or message")
        if self._conflicts and self._fetch_task is None:
            raise ProtocolError(
                f"the stream of task {snapshot.id} does not fold into one task",
                details=self._conflicts,
            )
        if self._fetch_task is None or not (self._partial or self._notes or self._conflicts):
            return snapshot
        if self._partial or self._conflicts:
            # The stream carried only this turn's updates, or contradicted itself: the
            # agent's stored task is the authority.
            snapshot = self._fetch_task(snapshot.id)
        else:
            snapshot = self._confirm(snapshot, self._fetch_task)
        with self._lock:
            self._snapshot, self._partial = snapshot, False
            self._notes.clear()
        return snapshot

    def _confirm(self, folded: Task, fetch: TaskFetcher) -> Task:
        """Read the task after a tolerated deviation (the fold may lack chunks sent before
        the stream began); keep the fold if the read fails."""
        try:
            task = fetch(folded.id)
        except A2ASyncError as exc:
            logger.debug("task %s: confirming the stream with GetTask failed: %s", folded.id, exc)
            return folded
        if task.artifacts != folded.artifacts:
            logger.debug("task %s: the stream's artifacts differ from GetTask's", folded.id)
        return task

    def close(self) -> None:
        """Stop the stream and release its connection (safe from any thread)."""
        self._done = True
        self._sse.close()

    def __enter__(self) -> TaskStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        return f"<TaskStream task_id={self._task_id!r} {state}>"


def _stub_task(event: StreamEvent) -> Task:
    """A task that knows only the ids of an update that arrived before any task."""
    assert not isinstance(event, (Task, Message))
    return Task(
        id=event.task_id,
        context_id=event.context_id,
        status=TaskStatus(state=TaskState.unknown),
    )


def _settled(task: Task) -> bool:
    return task.is_terminal or task.is_interrupted


def _ends_stream(event: StreamEvent) -> bool:
    if isinstance(event, TaskStatusUpdateEvent):
        return event.final or event.status.state.is_terminal or event.status.state.is_interrupted
    if isinstance(event, Task):
        return _settled(event)
    return False
