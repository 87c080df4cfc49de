"""One request's run of the agent: its event sink, its completion, and the streams over it.

A :class:`Run` is created for every message the server accepts. Its executor runs on a
pool thread and publishes through :meth:`Run.publish`, which writes to the task store
(the store fans the event out to subscribers) and tracks when the run has **settled**:
the task reached a terminal or interrupted state, the agent replied with one direct
message, or ``execute`` returned. Blocking sends wait for that; streams follow the
task's event log through a store subscription and end at the same moments (the streams
are in :mod:`~a2a_sync.server.event_stream`, re-exported here; :class:`RunStream` is the
one that also ends with its run).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from ..a2a.types import Message, StreamEvent, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from ..errors import (
    InternalError,
    InvalidAgentResponse,
    RPCError,
    TaskCanceled,
    TaskNotFound,
    UnsupportedOperation,
)
from ._flag import Flag
from .context import message_with_ids
from .event_stream import EventStream, SnapshotStream, TaskSubscriptionStream
from .events import Subscription
from .executor import AgentExecutor, RequestContext, TaskUpdater
from .pool import WorkerPool
from .stores.base import StoredTask, TaskStore, is_final

__all__ = [
    "EventStream",
    "Run",
    "RunScheduler",
    "RunStream",
    "SnapshotStream",
    "TaskSubscriptionStream",
    "follow_until",
]

logger = logging.getLogger(__name__)

PushHook = Callable[[StoredTask, StreamEvent], None]


class Run:
    """One execution of the agent for one message. Thread-safe.

    Args:
        context: The request.
        store: The task store.
        principal: Owner of the task (the store's principal string).
        on_event: Called after each stored event (push notifications).
        holds_claim: The message's idempotency claim is this run's (released when the
            run ends without a task).
    """

    def __init__(
        self,
        context: RequestContext,
        store: TaskStore,
        principal: str,
        on_event: PushHook | None = None,
        *,
        holds_claim: bool = True,
    ) -> None:
        self.context = context
        self._holds_claim = holds_claim
        self.task_id = context.task_id
        self._store = store
        self._principal = principal
        self._on_event = on_event
        self.updater = TaskUpdater(context, self.publish)
        #: Set once the task exists in the store (or the run ended without one). An
        #: unreported creation (see _unreported) may not be durable yet: whoever answers
        #: from it reads the task (outcome), which commits it first.
        self.created = Flag()
        #: Set once a blocking send may answer: final state, direct reply, or run end.
        self.settled = Flag()
        #: Set once ``execute`` returned or raised.
        self.done = Flag()
        self.reply: Message | None = None
        self.error: RPCError | None = None
        self._listeners: list[Subscription] = []
        # This run created its task (or continues one): its message claim stays bound.
        self._has_task = context.current_task is not None
        # Its creation went to the store unreported and no durable event followed yet.
        self._unconfirmed = False
        self._lock = threading.Lock()

    # -- the sink ------------------------------------------------------------------------------

    def publish(self, event: StreamEvent) -> None:
        """Store one event checked by the updater, and wake whoever waits on the run."""
        if isinstance(event, Message):
            # A direct reply: answered to the caller, not stored. Without a task it must
            # not name one (GetTask on that id would be TaskNotFound: A2A 1.0 §3.1.1).
            if event.task_id is not None and not self._has_task:
                event = message_with_ids(event, None, event.context_id)
            self.reply = event
            self._wake(created=True, settled=True)
            return
        try:
            if isinstance(event, Task):
                if self._unreported():
                    stored = self._store.create_unreported_task(event, principal=self._principal)
                    self._unconfirmed = True
                else:
                    stored = self._store.create_task(event, principal=self._principal)
                self._has_task = True
                self.created.set()
            else:
                stored = self._store.append_event(self.task_id, event)
        except UnsupportedOperation as exc:  # the task ended meanwhile (canceled, say)
            if self.context.is_cancelled:
                raise TaskCanceled("the task was canceled", task_id=self.task_id) from exc
            raise InvalidAgentResponse(f"{exc.message}; no event may follow") from exc
        if self._on_event is not None:
            self._on_event(stored, event)
        if is_final(event):
            self._unconfirmed = False  # (committed with the creation before it)
            self._wake(settled=True)

    def _unreported(self) -> bool:
        """True when nobody learns of the task before the run's final state but through a
        store read: a blocking send (not ``returnImmediately``, not streamed) without a
        webhook. Its creation may then be committed with the final state; whoever reads
        the task first (the caller after its timeout, a resend) commits it."""
        config = self.context.configuration
        if config is not None and (
            config.return_immediately or config.push_notification_config is not None
        ):
            return False
        with self._lock:
            return not self._listeners

    def _wake(self, *, created: bool = False, settled: bool = False) -> None:
        if created:
            self.created.set()
        if settled:
            self.settled.set()
        with self._lock:
            listeners = list(self._listeners)
        for sub in listeners:
            sub.interrupt()

    def listen(self, sub: Subscription) -> None:
        """Interrupt ``sub`` when the run replies or ends (streams then look at the run)."""
        with self._lock:
            self._listeners.append(sub)
        if self.done.is_set() or self.reply is not None:
            sub.interrupt()

    # -- running ---------------------------------------------------------------------------------

    def execute(self, executor: AgentExecutor) -> None:
        """Run ``executor.execute`` (on a pool thread); never raises."""
        try:
            executor.execute(self.context, self.updater)
        except TaskCanceled:
            logger.debug("task %s: execute stopped after cancellation", self.task_id)
        except RPCError as exc:
            logger.warning("task %s: agent raised %s", self.task_id, type(exc).__name__)
            self._fail(exc)
        except Exception:  # top of the agent's thread: log, fail the task, tell the caller
            logger.exception("task %s: agent raised", self.task_id)
            self._fail(InternalError())
        finally:
            self.finish()

    def _fail(self, error: RPCError) -> None:
        """Record a failure: the task (if any) becomes ``failed``; else callers get ``error``."""
        stored = self._store.get_task(self.task_id, principal=None)
        if stored is None or self.reply is not None:
            self.error = error
            return
        if stored.task.status.state.is_terminal:
            return
        note = None
        if not isinstance(error, InternalError):
            note = Message.agent(
                error.message, task_id=self.task_id, context_id=self.context.context_id
            )
        event = TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context.context_id,
            status=TaskStatus.now(TaskState.failed, note),
        )
        try:
            self.publish(event)
        except RPCError:  # ended meanwhile: nothing to fail
            logger.debug("task %s ended before it could be failed", self.task_id)

    def finish(self) -> None:
        """Mark the run ended (also when it never started: shutdown, refused)."""
        if self._unconfirmed:
            self._confirm()
        if (
            not self.created.is_set()
            and self.reply is None
            and self.error is None
            and self._store.get_task(self.task_id, principal=None) is None
        ):
            self.error = InvalidAgentResponse(
                "the agent returned without publishing a task or a message"
            )
        if not self._has_task and self._holds_claim:
            # No task answers a resend of this message: let it run again (shared stores).
            try:
                self._store.release_claim(self._principal, self.context.message.message_id)
            except RPCError:
                logger.warning("task %s: could not release its message claim", self.task_id)
        self.done.set()
        self._wake(created=True, settled=True)

    def _confirm(self) -> None:
        """The run ends with its unreported creation maybe not committed: read the task,
        which commits it (so streams following the run get its events before they end)."""
        self._unconfirmed = False
        try:
            if self._store.get_task(self.task_id, principal=None) is not None:
                return
            self._has_task = False  # its creation failed: the task never existed
        except RPCError:  # (the write may still land: the claim stays)
            logger.warning("task %s: its creation was not committed in time", self.task_id)
        self.error = self.error or InternalError("task store: the task could not be stored")

    def outcome(self) -> Task | Message:
        """What a blocking send answers now: the reply, the task, or the run's error.

        Raises:
            RPCError: The run failed before creating a task.
        """
        if self.reply is not None:
            return self.reply
        stored = self._store.get_task(self.task_id, principal=None)
        if stored is not None:
            return stored.task
        if self.error is not None:
            raise self.error
        raise TaskNotFound()  # pragma: no cover - created is set only with a task


def follow_until(
    store: TaskStore, stored: StoredTask, deadline: float, done: Callable[[Task], bool]
) -> StoredTask:
    """Follow a task (run by another worker process) until ``done(task)`` or the monotonic
    ``deadline``; returns the task as it is then."""
    latest = stored
    with store.subscribe(stored.task.id, after_seq=stored.seq) as sub:
        while not done(latest.task):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            if not sub.poll(remaining) and (sub.interrupted or sub.closed):
                break
            latest = store.get_task(stored.task.id, principal=None) or latest
    return latest


class RunScheduler:
    """Starts runs on the worker pool, one run per task at a time (later messages for a
    busy task wait their turn, in order). Thread-safe.

    Args:
        executor: The agent.
        pool: The worker threads.
    """

    def __init__(self, executor: AgentExecutor, pool: WorkerPool) -> None:
        self._executor = executor
        self._pool = pool
        self._lock = threading.Lock()
        self._running: dict[str, Run] = {}  # the run executing per task
        self._waiting: dict[str, deque[Run]] = {}  # runs waiting for their task's turn

    def active(self, task_id: str) -> Run | None:
        """The run executing for ``task_id`` now, if any."""
        with self._lock:
            return self._running.get(task_id)

    def start(self, run: Run, *, inline: bool = False) -> None:
        """Run ``run`` now, or after the task's current run.

        ``inline`` (a blocking send of an executor with ``run_inline``): when the task
        has no run going and a worker slot is free, run it on the calling thread, which
        returns once ``execute`` did; otherwise on a worker thread as usual.

        Raises:
            InternalError: The pool is shut down (the run is finished, failed).
        """
        with self._lock:
            if run.task_id in self._running:
                self._waiting.setdefault(run.task_id, deque()).append(run)
                return
            self._running[run.task_id] = run
        self._submit(run, inline=inline and self._executor.run_inline)

    def _submit(self, run: Run, *, inline: bool = False) -> None:
        def work() -> None:
            try:
                run.execute(self._executor)
            finally:
                self._next(run)

        try:
            if not (inline and self._pool.run_here(work)):
                self._pool.submit(work)
        except InternalError:  # shutting down
            run.finish()
            self._next(run)
            raise

    def _next(self, run: Run) -> None:
        with self._lock:
            if self._running.get(run.task_id) is run:
                del self._running[run.task_id]
            waiting = self._waiting.get(run.task_id)
            if not waiting:
                return
            following = waiting.popleft()
            if not waiting:
                del self._waiting[run.task_id]
            self._running[run.task_id] = following
        self._submit(following)

    def close(self, timeout: float) -> bool:
        """Stop the pool (running agents get ``timeout``); waiting runs are finished.

        Returns:
            True when every agent thread ended in time.
        """
        finished = self._pool.shutdown(timeout)
        with self._lock:
            waiting = [run for runs in self._waiting.values() for run in runs]
            self._waiting.clear()
        for run in waiting:
            run.finish()
        return finished


class RunStream(EventStream):
    """SendStreamingMessage: the run's events (after an optional snapshot) until it settles."""

    def __init__(self, run: Run, sub: Subscription, snapshot: Task | None = None) -> None:
        super().__init__(sub, snapshot)
        self._run = run
        run.listen(sub)

    def _on_interrupt(self) -> StreamEvent | None:
        # Everything the run stored was pushed to the subscription before it was
        # interrupted, so the buffer holds it all: what is left is the run's own outcome.
        run = self._run
        if run.reply is not None:
            return run.reply
        if run.done.is_set() and run.error is not None:
            raise run.error
        return None
