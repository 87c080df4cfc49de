"""The state machine of a resilient stream: opening, reading, L2 (resubscribe), L3 (poll).

A :class:`StreamSession` holds one :class:`~a2a_sync.client.ResilientTaskStream`'s state:
the stream being read (the first one, whose events pass as sent, or a resubscription,
folded by :class:`~a2a_sync.client.resilient._delivery.Delivery`), the task as delivered,
the reconnect budget and what recovery tried. A dropped stream is resumed by
resubscribing to its task (``SubscribeToTask`` / ``tasks/resubscribe``), never by posting
the message again; after the reconnect budget, the task is polled (L3). A resubscribed
stream's result is confirmed with one ``GetTask`` when it ends.

It works on the client's :class:`~a2a_sync.client.resilient.agents.AgentSet` (the agents,
who owns which task, the attempts and waits), never on the client itself.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from ..._redact import redact_url
from ...a2a.types import Message, StreamEvent, Task
from ...errors import (
    A2ASyncError,
    MethodNotFound,
    OutcomeUnknown,
    ProtocolError,
    RPCError,
    TaskWaitTimeout,
    UnsupportedOperation,
)
from ...policies import ResilienceConfig
from ..client import A2AClient
from ..stream import TaskStream
from ._delivery import Delivery, Unfoldable
from ._progress import resumable, settled
from ._recovery import Recovery, TaskPoll, explain_rpc_error
from ._sending import MessageSend
from .agents import AgentSet

__all__ = ["StreamSession"]

logger = logging.getLogger(__name__)


class StreamSession:
    """One resilient stream's state and its recovery (see :mod:`.stream` for the contract).

    The message is sent (or the subscription opened) on creation. :meth:`events` is
    iterated from one thread; :meth:`close` may be called from any thread and ends a wait
    for a reconnect at once.
    """

    def __init__(
        self,
        agent_set: AgentSet,
        config: ResilienceConfig,
        agents: Sequence[A2AClient],
        *,
        message: Message | None,
        resend: bool,
        send_kwargs: dict[str, Any],
        task_id: str | None,
    ) -> None:
        self._agent_set = agent_set
        self._config = config
        self._agents = agents
        self.task_id = task_id  # once known
        self._agent: A2AClient | None = None
        #: The stream being read; ``_raw`` while it is the first one (events pass as sent).
        self._stream: TaskStream | None = None
        self._raw = False
        self._delivery = Delivery()  # the task as the consumer has seen it
        self._pending: collections.deque[StreamEvent] = collections.deque()
        self.reply: Message | None = None  # the agent's reply instead of a task
        self._finished = False
        self.closed = threading.Event()
        self._failures = 0  # consecutive resubscribes without progress
        self._recovery = Recovery()  # what recovery tried, for the final error
        self.reconnects = 0  # resubscribes attempted after the stream dropped
        self.polled = False  # fell through to polling (or the agent cannot stream)
        #: The message's sends (``None`` for a subscription to an existing task).
        self._sending: MessageSend | None = None
        if message is not None:
            self._sending = MessageSend(
                agent_set,
                config,
                message,
                resend=resend,
                send_kwargs=send_kwargs,
                cancelled=self.closed,
            )
            self._open_send(self._sending)
        else:
            self._open_subscription()

    @property
    def task(self) -> Task | None:
        """The task as delivered so far (``None`` before the first event)."""
        if self._raw and self._stream is not None:
            return self._stream.task
        return self._delivery.delivered

    def close(self) -> None:
        """Stop streaming (from any thread); no reconnect follows. Idempotent."""
        self.closed.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    # -- opening ----------------------------------------------------------------------------

    def _open_send(self, sending: MessageSend) -> None:
        """Send the message on the first agent that can take it (L1 + L4)."""
        opened, self._agent = sending.open(self._agents)
        if isinstance(opened, Message):
            self.reply = opened
            self._pending.append(opened)
            self._finished = True
            return
        if isinstance(opened, Task):
            self.task_id = opened.id
            self.polled = True
            self._pending.extend(self._advance(opened))
            self._finished = settled(opened)
            return
        self._stream, self._raw = opened, True

    def _open_subscription(self) -> None:
        """Attach to a task (L4 finds its agent); transient failures retry, then poll."""
        assert self.task_id is not None
        task_id = self.task_id
        try:
            stream, self._agent = self._agent_set.on_task(
                task_id, lambda agent: agent.subscribe(task_id)
            )
            self._pending.extend(self._first_event(stream))
        except (UnsupportedOperation, MethodNotFound, ProtocolError) as exc:
            if isinstance(exc, ProtocolError):
                logger.info("subscription to %s unusable (%s); polling", task_id, exc)
                self._recovery.last_error = exc
            self._agent = self._agent or self._agent_set.owner_of(task_id)
            self._finish_or_poll()
        except A2ASyncError as exc:
            if not resumable(exc):
                raise
            self._agent = self._agent or self._agent_set.owner_of(task_id)
            self._reestablish(exc)

    # -- iteration ------------------------------------------------------------------------

    def events(self) -> Iterator[StreamEvent]:
        """The stream's events: the first stream's as sent, then what recovery delivers."""
        while True:
            while self._pending:
                yield self._pending.popleft()
            if self._finished or self.closed.is_set():
                return
            stream = self._stream
            if stream is None:
                with self._explained():
                    yield from self._poll()
                return
            try:
                yield from self._read(stream)
            except Unfoldable as exc:
                # A local assembly problem never ends recovery: the agent's task is polled.
                stream.close()
                self._stream = None
                self._recovery.last_error = exc
                logger.info("task %s: %s; polling instead", self.task_id, exc)
            except A2ASyncError as exc:
                if self.closed.is_set() or not resumable(exc):
                    raise
                self._recovery.dropped(exc)
                with self._explained():
                    self._after_drop(stream, exc)
            else:
                if stream.message is not None:
                    self.reply = stream.message
                if self._raw and stream.needs_confirmation:
                    # The stream's fold tolerated a deviation: confirm it with GetTask.
                    self._raw, self._delivery.delivered = False, stream.task
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
            raise explain_rpc_error(exc, self._recovery.summary(self.task_id, agents)) from exc

    def _read(self, stream: TaskStream) -> Iterator[StreamEvent]:
        if self._raw:
            for event in stream:
                if self.task_id is None and stream.task_id is not None:
                    self.task_id = stream.task_id
                    self._agent_set.remember(stream.task_id, self._agent)
                yield event
            return
        # A resubscription: the consumer gets what moves the delivered task forward.
        for event in stream:
            for update in self._delivery.fold(event):
                self._failures = 0  # progress: the reconnect budget starts again
                yield update

    def _reconcile(self) -> None:
        """After a resubscribed stream ended: one GetTask, so the final task is the agent's.

        The stream may have repeated an update its snapshot already held in a way no
        client can tell from a new one (content equal to the snapshot's latest parts
        that did not end where the snapshot ends); the stored task is the authority.
        """
        agent, task_id = self._agent, self.task_id
        if agent is None or task_id is None or self.reply is not None:
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
            self._delivery.delivered = stream.task
            if self.task_id is None:
                self.task_id = stream.task_id
        self._stream = None
        if self.task_id is None:
            # Cut before the agent named the task: only an opted-in resend of the identical
            # message may follow (the agent deduplicates by its id).
            self._resend_after_early_cut(exc)
            return
        logger.info("stream of task %s dropped (%s); resubscribing", self.task_id, exc)
        self._reestablish(exc)

    def _resend_after_early_cut(self, exc: A2ASyncError) -> None:
        sending, agent = self._sending, self._agent
        if sending is None or agent is None:
            raise exc
        message = sending.message
        delay = sending.resend_delay(exc)
        if delay is None:
            raise OutcomeUnknown(
                f"the stream for message {message.message_id} dropped before the agent named "
                f"the task ({exc}); the message was not resent",
                message_id=message.message_id,
            ) from exc
        self._wait(delay)
        if not self.closed.is_set():
            self._stream, self._raw = sending.stream_on(agent), True

    # -- L2: resubscribe ------------------------------------------------------------------

    def _reestablish(self, failure: A2ASyncError) -> None:
        """Resubscribe within the reconnect budget; then poll (``_stream`` stays None)."""
        while self._failures < self._config.max_reconnect_attempts:
            self._failures += 1
            self.reconnects += 1
            self._wait(self._config.reconnect_delay(self._failures))
            if self.closed.is_set():
                return
            if self._resubscribe():
                return
        logger.info(
            "stream of task %s could not be re-established (%s); polling", self.task_id, failure
        )

    def _resubscribe(self) -> bool:
        """One attempt; True when done (a live stream, or the task's end was delivered)."""
        agent, task_id = self._agent, self.task_id
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
            self._delivery.subscribed(first)
            if self.closed.is_set():  # closed while this stream was opening
                stream.close()
        return events

    def _finish_or_poll(self) -> bool:
        """After UnsupportedOperation: one GetTask; settled → delivered and done, else poll."""
        assert self._agent is not None
        assert self.task_id is not None
        try:
            task = self._agent.get_task(self.task_id)
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
        """Deliver what ``view`` (the agent's task) adds (see :meth:`Delivery.advance`)."""
        events = self._delivery.advance(view, authoritative=authoritative)
        if events:
            self._failures = 0  # progress: the reconnect budget starts again
        return events

    # -- L3: poll ------------------------------------------------------------------------------

    def _poll(self) -> Iterator[StreamEvent]:
        """Poll ``GetTask`` until the task settles, delivering each change."""
        task_id, timeout = self.task_id, self._config.task_timeout
        assert task_id is not None
        self.polled = True
        recovery = self._recovery
        recovery.resubscribes = self.reconnects
        poll = TaskPoll(
            self._agent_set, task_id, timeout=timeout, recovery=recovery, stop=self.closed
        )
        for task in poll:
            yield from self._advance(task)
        if poll.timed_out:
            agents = [redact_url(agent.url) for agent in self._agents]
            raise TaskWaitTimeout(
                f"{recovery.timeout_headline(task_id, timeout)}; "
                f"{recovery.summary(task_id, agents)}. "
                f"wait_for_task({task_id!r}) can resume the wait",
                task_id=task_id,
                timeout=timeout,
                task=self._delivery.delivered,
            ) from recovery.last_error

    def _wait(self, delay: float) -> None:
        self._agent_set.wait(delay, self.closed)
