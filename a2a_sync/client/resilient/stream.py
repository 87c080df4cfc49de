"""The stream of :class:`~a2a_sync.client.ResilientA2AClient`: L2 (resubscribe) and L3 (poll).

A dropped stream is resumed by resubscribing to its task (``SubscribeToTask`` /
``tasks/resubscribe``), never by posting the message again. What the consumer has seen is
kept as a task snapshot (``delivered``); whatever the agent sends after a reconnect — the
subscription's first event, a backfill of its event log, a polled ``GetTask`` — is turned
into the events that move ``delivered`` forward (:mod:`a2a_sync.client.resilient._progress`), so no
event is seen twice and chunked artifacts reassemble to what ``GetTask`` returns; a
resubscribed stream's result is confirmed with one ``GetTask`` when it ends.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..._redact import redact_url
from ...a2a.accumulate import accumulate
from ...a2a.types import (
    Message,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
)
from ...errors import (
    A2ASyncError,
    AllAgentsFailed,
    Cancelled,
    HTTPStatusError,
    MethodNotFound,
    OutcomeUnknown,
    ProtocolError,
    RPCError,
    TaskWaitTimeout,
    TransportError,
    UnsupportedOperation,
)
from ..chunks import progress, text_chunks
from ..client import A2AClient
from ..stream import TaskStream
from ._outcomes import Recovery, explain_rpc_error
from ._progress import ReplayFilter, diff_events, lagging_append, resumable, same_progress, settled

if TYPE_CHECKING:
    from .client import ResilientA2AClient

__all__ = ["ResilientTaskStream", "diff_events"]

logger = logging.getLogger(__name__)


class _Unfoldable(Exception):
    """A resubscribed stream's event does not fold into the task (recovery then polls)."""


class _Reply(Exception):
    """Carries a reply message out of an agent attempt (the agent answered without a task)."""

    def __init__(self, message: Message) -> None:
        super().__init__("reply")
        self.message = message


class ResilientTaskStream:
    """A task stream that survives dropped connections (see :class:`ResilientA2AClient`).

    The message is sent (or the subscription opened) when the stream is created, so
    failures to reach any agent raise there. Iterate it like a
    :class:`~a2a_sync.client.TaskStream`; events are never delivered twice, also across
    resubscribes and polls. Iterate from one thread; :meth:`close` may be called from any
    thread and ends a wait for a reconnect at once.

    Attributes:
        reconnects: Resubscribes attempted after the stream dropped.
        polled: True if the stream fell through to polling ``GetTask`` (L3), or the agent
            cannot stream at all.
    """

    def __init__(
        self,
        client: ResilientA2AClient,
        agents: Sequence[A2AClient],
        *,
        message: Message | None,
        resend: bool,
        send_kwargs: dict[str, Any],
        task_id: str | None,
    ) -> None:
        self._client = client
        self._config = client.config
        self._agents = agents
        self._message = message
        self._resend = resend
        self._send_kwargs = send_kwargs
        self._task_id = task_id
        self._agent: A2AClient | None = None
        #: The stream being read; ``_raw`` while it is the first one (events pass as sent).
        self._stream: TaskStream | None = None
        self._raw = False
        self._delivered: Task | None = None  # the task as the consumer has seen it
        self._replay: ReplayFilter | None = None  # of the current resubscription
        self._view: Task | None = None  # the task as the current resubscription has it
        self._pending: collections.deque[StreamEvent] = collections.deque()
        self._reply: Message | None = None
        self._finished = False
        self._closed = threading.Event()
        self._sends = 1  # attempts at sending the message
        self._failures = 0  # consecutive resubscribes without progress
        self._recovery = Recovery()  # what recovery tried, for the final error
        self._notes: list[str] = []  # deviations tolerated while folding resubscriptions
        self.reconnects = 0
        self.polled = False
        if message is not None:
            self._open_send(message)
        else:
            self._open_subscription()
        self._events = self._generate()

    # -- public ---------------------------------------------------------------------------

    @property
    def task_id(self) -> str | None:
        """The task's id, once known."""
        return self._task_id

    @property
    def task(self) -> Task | None:
        """The task as delivered so far (``None`` before the first event)."""
        if self._raw and self._stream is not None:
            return self._stream.task
        return self._delivered

    @property
    def message(self) -> Message | None:
        """The agent's reply when it answered with a message instead of a task."""
        return self._reply

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed.is_set()

    def __iter__(self) -> Iterator[StreamEvent]:
        return self._events  # a for loop steps the generator directly

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def text_chunks(self) -> Iterator[str]:
        """The answer's text as it arrives (see :func:`a2a_sync.client.chunks.text_chunks`);
        the stream's outcome stays available from :meth:`get_final_result`."""
        return text_chunks(self)

    def progress(self, description: str = "streaming") -> Iterator[StreamEvent]:
        """The events, with a progress bar while they arrive (``tqdm.auto`` when
        installed; see :func:`a2a_sync.client.chunks.progress`)."""
        return progress(self, description)

    def get_final_task(self) -> Task:
        """Read to the end; return the task (raises like :meth:`TaskStream.get_final_task`)."""
        result = self.get_final_result()
        if isinstance(result, Message):
            raise ProtocolError("the agent replied with a message, not a task")
        return result

    def get_final_result(self) -> Task | Message:
        """Read to the end; return the task or the agent's reply message."""
        for _ in self:
            pass
        if self._reply is not None:
            return self._reply
        task = self.task
        if task is None:
            raise ProtocolError("the stream ended without a task or message")
        return task

    def close(self) -> None:
        """Stop streaming (from any thread); no reconnect follows. Idempotent."""
        self._closed.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def __enter__(self) -> ResilientTaskStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ResilientTaskStream task_id={self._task_id!r} reconnects={self.reconnects}>"

    # -- opening ----------------------------------------------------------------------------

    def _open_send(self, message: Message) -> None:
        """Send the message on the first agent that can take it (L1 + L4)."""

        def open_on(agent: A2AClient) -> TaskStream | Task:
            card = agent.card
            if card is not None and not card.capabilities.streaming:
                # CR-07: the agent cannot stream; send and poll instead.
                result = self._client._send_on(
                    agent,
                    message,
                    resend=self._resend,
                    return_immediately=True,
                    **self._send_kwargs,
                )
                if isinstance(result, Message):
                    raise _Reply(result)
                return result
            return self._stream_on(agent, message)

        try:
            opened, self._agent = self._client._run(
                open_on, self._agents, send=True, message=message, resend=self._resend
            )
        except _Reply as reply:
            self._reply = reply.message
            self._pending.append(reply.message)
            self._finished = True
            return
        if isinstance(opened, Task):
            self._task_id = opened.id
            self.polled = True
            self._pending.extend(self._advance(opened))
            self._finished = settled(opened)
            return
        self._stream, self._raw = opened, True

    def _stream_on(self, agent: A2AClient, message: Message) -> TaskStream:
        """Open the message stream on ``agent``; an opted-in send is retried there (L1)."""
        while True:
            try:
                return agent.stream_message(message, **self._send_kwargs)
            except (TransportError, HTTPStatusError) as exc:
                delay = self._resend_delay(exc)
                if delay is None:
                    raise
            logger.debug("resending message %s to %s", message.message_id, redact_url(agent.url))
            self._wait(delay)

    def _resend_delay(self, exc: A2ASyncError) -> float | None:
        """The wait before sending the message again, or ``None`` if it must not be."""
        delay = self._client._resend_delay(exc, resend=self._resend, sends=self._sends)
        if delay is not None:
            self._sends += 1
        return delay

    def _open_subscription(self) -> None:
        """Attach to a task (L4 finds its agent); transient failures retry, then poll."""
        assert self._task_id is not None
        task_id = self._task_id
        try:
            stream, self._agent = self._client._on_task_with_agent(
                task_id, lambda agent: agent.subscribe(task_id)
            )
            self._pending.extend(self._first_event(stream))
        except (UnsupportedOperation, MethodNotFound, ProtocolError) as exc:
            if isinstance(exc, ProtocolError):
                logger.info("subscription to %s unusable (%s); polling", task_id, exc)
                self._recovery.last_error = exc
            self._agent = self._agent or self._client._owner_of(task_id)
            self._finish_or_poll()
        except A2ASyncError as exc:
            if not resumable(exc):
                raise
            self._agent = self._agent or self._client._owner_of(task_id)
            self._reestablish(exc)

    # -- iteration ------------------------------------------------------------------------

    def _generate(self) -> Iterator[StreamEvent]:
        while True:
            while self._pending:
                yield self._pending.popleft()
            if self._finished or self._closed.is_set():
                return
            stream = self._stream
            if stream is None:
                with self._explained():
                    yield from self._poll()
                return
            try:
                yield from self._read(stream)
            except _Unfoldable as exc:
                # A local assembly problem never ends recovery: the agent's task is polled.
                stream.close()
                self._stream = None
                self._recovery.last_error = exc
                logger.info("task %s: %s; polling instead", self._task_id, exc)
            except A2ASyncError as exc:
                if self._closed.is_set() or not resumable(exc):
                    raise
                self._recovery.dropped(exc)
                with self._explained():
                    self._after_drop(stream, exc)
            else:
                if stream.message is not None:
                    self._reply = stream.message
                if self._raw and stream.needs_confirmation:
                    # The stream's fold tolerated a deviation: confirm it with GetTask.
                    self._raw, self._delivered = False, stream.task
                if not self._raw:
                    with self._explained():
                        self._reconcile()
                self._finished = True

    @contextlib.contextmanager
    def _explained(self) -> Iterator[None]:
        """Recovery's refusals (e.g. TaskNotFound after a restart) name the task, what
        was tried and why the stream had dropped."""
        try:
            yield
        except RPCError as exc:
            agents = [redact_url(self._agent.url)] if self._agent is not None else []
            self._recovery.resubscribes = self.reconnects
            raise explain_rpc_error(exc, self._recovery.summary(self._task_id, agents)) from exc

    def _read(self, stream: TaskStream) -> Iterator[StreamEvent]:
        if self._raw:
            for event in stream:
                if self._task_id is None and stream.task_id is not None:
                    self._task_id = stream.task_id
                    self._client._remember_owner(stream.task_id, self._agent)
                yield event
            return
        # A resubscription: its updates (minus repeats of its snapshot) are folded into
        # the agent's view; the consumer gets what moves the delivered task forward.
        replay, view = self._replay, self._view
        assert replay is not None
        for event in stream:
            for update in replay.feed(event):
                lagging = lagging_append(view, self._delivered, update)
                if lagging is not None:
                    raise _Unfoldable(
                        "the subscription's snapshot lags its stream (an append to "
                        f"artifact {lagging!r}, which the snapshot lacks)"
                    )
                try:
                    previous, view = view, accumulate(view, update, notes=self._notes)
                except ProtocolError as exc:
                    raise _Unfoldable(f"the resubscribed stream does not fold: {exc}") from exc
                if previous is self._delivered and not isinstance(update, Task):
                    self._delivered = view  # in step with the agent: the update is new
                    self._failures = 0
                    yield update
                else:
                    yield from self._advance(view)
            self._view = view

    def _reconcile(self) -> None:
        """After a resubscribed stream ended: one GetTask, so the final task is the agent's.

        The stream may have repeated an update its snapshot already held in a way no
        client can tell from a new one (content equal to the snapshot's latest parts
        that did not end where the snapshot ends); the stored task is the authority.
        """
        agent, task_id = self._agent, self._task_id
        if agent is None or task_id is None or self._reply is not None:
            return
        try:
            task = agent.get_task(task_id)
        except A2ASyncError as exc:
            if not resumable(exc):
                raise
            logger.debug("reading task %s after its stream ended failed: %s", task_id, exc)
            return
        self._pending.extend(self._advance(task, authoritative=settled(task)))

    def _after_drop(self, stream: TaskStream, exc: A2ASyncError) -> None:
        if self._raw:
            self._raw = False
            self._delivered = stream.task
            if self._task_id is None:
                self._task_id = stream.task_id
        self._stream = None
        if self._task_id is None:
            # Cut before the agent named the task: only an opted-in resend of the identical
            # message may follow (the agent deduplicates by its id).
            self._resend_after_early_cut(exc)
            return
        logger.info("stream of task %s dropped (%s); resubscribing", self._task_id, exc)
        self._reestablish(exc)

    def _resend_after_early_cut(self, exc: A2ASyncError) -> None:
        message, agent = self._message, self._agent
        if message is None or agent is None:
            raise exc
        delay = self._resend_delay(exc)
        if delay is None:
            raise OutcomeUnknown(
                f"the stream for message {message.message_id} dropped before the agent named "
                f"the task ({exc}); the message was not resent",
                message_id=message.message_id,
            ) from exc
        self._wait(delay)
        if not self._closed.is_set():
            self._stream, self._raw = self._stream_on(agent, message), True

    # -- L2: resubscribe ------------------------------------------------------------------

    def _reestablish(self, failure: A2ASyncError) -> None:
        """Resubscribe within the reconnect budget; then poll (``_stream`` stays None)."""
        while self._failures < self._config.max_reconnect_attempts:
            self._failures += 1
            self.reconnects += 1
            self._wait(self._config.reconnect_delay(self._failures))
            if self._closed.is_set():
                return
            if self._resubscribe():
                return
        logger.info(
            "stream of task %s could not be re-established (%s); polling", self._task_id, failure
        )

    def _resubscribe(self) -> bool:
        """One attempt; True when done (a live stream, or the task's end was delivered)."""
        agent, task_id = self._agent, self._task_id
        assert agent is not None
        assert task_id is not None
        stream: TaskStream | None = None
        try:
            stream = agent.subscribe(task_id)
            # The agent's refusal may come as the stream's first (and only) event.
            self._pending.extend(self._first_event(stream))
        except (UnsupportedOperation, MethodNotFound):
            # CR-05: the task settled meanwhile (or the agent cannot re-attach to it; an
            # agent without tasks/resubscribe, like VoltAgent, says MethodNotFound).
            return self._finish_or_poll()
        except ProtocolError as exc:
            # A subscription that does not start with the task: polling still can.
            if stream is not None:
                stream.close()
            self._recovery.last_error = exc
            logger.info("resubscribe to %s unusable (%s); polling", task_id, exc)
            return self._finish_or_poll()
        except A2ASyncError as exc:
            if stream is not None:
                stream.close()
            if not resumable(exc):
                raise
            self._recovery.last_error = exc
            logger.debug("resubscribe to %s failed: %s", task_id, exc)
            return False
        return True

    def _first_event(self, stream: TaskStream) -> list[StreamEvent]:
        """Read a subscription's first event (the task) and return what is new in it."""
        try:
            first = next(stream)
        except StopIteration:
            raise ProtocolError("a subscription ended without sending the task") from None
        except ProtocolError:
            stream.close()
            raise
        if not isinstance(first, Task):
            stream.close()
            raise ProtocolError(
                f"a subscription's first event must be the task, got {type(first).__name__}"
            )
        events = self._advance(first)
        if settled(first):
            stream.close()
            self._finished = True
        else:
            self._stream = stream
            self._replay = ReplayFilter(first)
            self._view = first
            if self._closed.is_set():  # closed while this stream was opening
                stream.close()
        return events

    def _finish_or_poll(self) -> bool:
        """After UnsupportedOperation: one GetTask; settled → delivered and done, else poll."""
        assert self._agent is not None
        assert self._task_id is not None
        try:
            task = self._agent.get_task(self._task_id)
        except A2ASyncError as exc:
            if not resumable(exc):
                raise
            self._recovery.last_error = exc
            return True  # polling follows and retries the read
        self._pending.extend(self._advance(task))
        if settled(task):
            self._finished = True
        return True  # either way no resubscribe helps; polling follows if not finished

    def _advance(self, view: Task, *, authoritative: bool = False) -> list[StreamEvent]:
        """Deliver what ``view`` (the agent's task) adds to what the consumer has seen.

        ``authoritative``: ``view`` is the settled task as stored, so where the delivered
        task is ahead of it (a repeat slipped through), the agent's artifacts replace it.
        """
        events = diff_events(self._delivered, view)
        if events:
            self._failures = 0  # progress: the reconnect budget starts again
            delivered = self._delivered
            for event in events:
                delivered = accumulate(delivered, event)
            self._delivered = delivered
        delivered = self._delivered
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
        self._delivered = delivered
        return events

    # -- L3: poll ------------------------------------------------------------------------------

    def _poll(self) -> Iterator[StreamEvent]:
        """Poll ``GetTask`` until the task settles, delivering each change."""
        assert self._task_id is not None
        self.polled = True
        config = self._config
        clock = self._client._clock
        deadline = clock() + config.task_timeout
        polls = 0
        recovery = self._recovery
        recovery.resubscribes = self.reconnects
        while not self._closed.is_set():
            recovery.polls += 1
            try:
                task = self._client.get_task(self._task_id)
            except (TransportError, HTTPStatusError, AllAgentsFailed) as exc:
                if isinstance(exc, Cancelled):
                    raise
                recovery.last_error = exc
                logger.debug("poll of %s failed: %s", self._task_id, exc)
            else:
                recovery.answered += 1
                yield from self._advance(task)
                if settled(task):
                    return
            polls += 1
            remaining = deadline - clock()
            if remaining <= 0:
                agents = [redact_url(agent.url) for agent in self._agents]
                raise TaskWaitTimeout(
                    f"{recovery.timeout_headline(self._task_id, config.task_timeout)}; "
                    f"{recovery.summary(self._task_id, agents)}. "
                    f"wait_for_task({self._task_id!r}) can resume the wait",
                    task_id=self._task_id,
                    timeout=config.task_timeout,
                    task=self._delivered,
                ) from recovery.last_error
            self._wait(min(config.poll.interval(polls), remaining))

    def _wait(self, delay: float) -> None:
        self._client._wait(delay, self._closed)
