"""Canceling tasks: runs on this worker, runs on other worker processes, their requests.

:class:`TaskCanceller` carries out CancelTask for
:class:`~a2a_sync.server.handler.DefaultRequestHandler`. A task running here is flagged
canceled and the agent's cancel hook is called. A task running in another worker process
that shares the store (PostgreSQL) is asked, through the store, to cancel there; that
worker's canceller receives the request (:meth:`TaskCanceller.on_remote_cancel`) and
cancels its run. When the other worker does not cancel in time, the task is canceled
here. Either way the task ends with a ``canceled`` status event.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Final

from ..a2a.types import Message, Part, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from ..errors import InvalidAgentResponse, TaskCanceled, TaskNotCancelable, UnsupportedOperation
from .context import CallContext
from .executor import AgentExecutor, RequestContext
from .runs import PushHook, Run, RunScheduler, follow_until
from .stores.base import StoredTask, TaskStore

__all__ = ["REMOTE_CANCEL_TIMEOUT", "TaskCanceller"]

logger = logging.getLogger(__name__)

#: How long CancelTask waits for the worker process running the agent (a shared store) to
#: cancel the task before marking it canceled itself: that worker needs milliseconds.
REMOTE_CANCEL_TIMEOUT: Final = 5.0


class TaskCanceller:
    """Cancels tasks of one handler (see the module docstring).

    Thread-safe: one instance serves all request threads and the store's listener
    thread. Cancel requests from other workers run the agent's cancel hook on a named
    daemon thread each (the hook may block); :meth:`join` waits for them.

    Args:
        store: The task store.
        runs: The runs executing on this worker.
        executor: The agent (its ``cancel`` hook is called).
        on_event: Called after the ``canceled`` event is stored (push notifications).
    """

    def __init__(
        self, store: TaskStore, runs: RunScheduler, executor: AgentExecutor, on_event: PushHook
    ) -> None:
        self._store = store
        self._runs = runs
        self._executor = executor
        self._on_event = on_event
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def cancel(self, stored: StoredTask, call: CallContext) -> Task:
        """Cancel ``stored`` (owned by the caller). On A2A 1.0 a canceled task is answered
        again (cancel is idempotent, §3.3.1); A2A 0.3 refuses every terminal task.

        Raises:
            TaskNotCancelable: The task settled in another state (0.3: in any terminal
                state, canceled included).
        """
        state = stored.task.status.state
        if state is TaskState.canceled and call.revision != "0.3":
            return stored.task
        if state.is_terminal:
            raise TaskNotCancelable(f"task is {state.value}")
        task_id = stored.task.id
        run = self._runs.active(task_id)
        after = None
        if run is None and self._store.request_cancel(task_id):
            # The agent runs in another worker process, which calls its cancel hook.
            deadline = time.monotonic() + REMOTE_CANCEL_TIMEOUT
            after = follow_until(self._store, stored, deadline, _terminal)
            if not after.task.status.state.is_terminal:
                logger.warning("task %s: its worker did not cancel it; canceling here", task_id)
                after = None
        if after is None:
            if run is None:
                run = Run(_context_for(stored.task, call), self._store, stored.principal)
            self.cancel_run(run)
            after = self._store.get_task(task_id, principal=None)
            assert after is not None
        if not after.task.status.state.is_terminal:
            event = TaskStatusUpdateEvent(
                task_id=after.task.id,
                context_id=after.task.context_id or "",
                status=TaskStatus.now(TaskState.canceled),
            )
            try:
                after = self._store.append_event(task_id, event)
                self._on_event(after, event)
            except UnsupportedOperation:
                after = self._store.get_task(task_id, principal=None) or after
        final = after.task.status.state
        if final is not TaskState.canceled:
            raise TaskNotCancelable(f"task is {final.value}")
        return after.task

    def cancel_run(self, run: Run) -> None:
        """Flag the run canceled and call the agent's cancel hook (never raises)."""
        run.context._cancel()
        try:
            self._executor.cancel(run.context, run.updater)
        except (TaskCanceled, InvalidAgentResponse):
            logger.debug("task %s ended while it was being canceled", run.task_id)
        except Exception:  # the agent's cancel hook failed: log it, cancel the task anyway
            logger.exception("task %s: agent cancel raised", run.task_id)

    def on_remote_cancel(self, task_id: str) -> None:
        """Another worker process asks to cancel ``task_id`` (called on a store thread)."""
        run = self._runs.active(task_id)
        if run is None:
            return
        run.context._cancel()  # at once: wakes an agent in wait_cancelled()
        # The hook may block (stopping outside work): not on the store's thread.
        thread = threading.Thread(
            target=self._remote_cancel, args=(run,), name="a2a-sync-remote-cancel", daemon=True
        )
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` for each cancel request from other workers in progress."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)

    def _remote_cancel(self, run: Run) -> None:
        try:
            self.cancel_run(run)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())


def _terminal(task: Task) -> bool:
    return task.status.state.is_terminal


def _context_for(task: Task, call: CallContext) -> RequestContext:
    users = [m for m in task.history if m.role is Role.user]
    message = users[-1] if users else Message(role=Role.user, parts=[Part(text="")], message_id="")
    return RequestContext(
        message=message,
        task_id=task.id,
        context_id=task.context_id or "",
        current_task=task,
        principal=call.principal,
        requested_extensions=call.extensions,
        call=call,
    )
