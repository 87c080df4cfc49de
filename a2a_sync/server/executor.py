"""The agent-author API: an executor, the context of one request, and the task updater.

An agent is an :class:`AgentExecutor` (or a plain function with the same signature as
:meth:`AgentExecutor.execute`). The server calls it on a worker thread for every message
it receives, with a :class:`RequestContext` (the message, the task, who is calling) and
a :class:`TaskUpdater` that publishes what the agent does::

    class Echo(AgentExecutor):
        def execute(self, context, updater):
            updater.start_work()
            updater.add_artifact(f"echo: {context.text}", name="echo")
            updater.complete()

Everything blocks; nothing is async. Publishing is synchronous: when a method of the
updater returns, the event is in the task store and on its way to every stream.

**The first-event rule** (A2A §3.1.2): a request is answered either by exactly one
direct :class:`~a2a_sync.types.Message` (:meth:`TaskUpdater.reply`) or by a task and its
updates. The updater creates the task (``submitted``, with the user's message in its
history) before the first update of a new task, so the helpers cannot break the rule;
events published raw (:meth:`TaskUpdater.publish`) are checked and a wrong one raises
:class:`~a2a_sync.errors.InvalidAgentResponse` naming the rule, as does an event after
the task finished or after a direct reply.

**Cancellation** is cooperative: CancelTask calls :meth:`AgentExecutor.cancel` (default:
mark the task canceled) and sets :attr:`RequestContext.is_cancelled`. A long-running
``execute`` should check it (or :meth:`RequestContext.wait_cancelled` instead of
sleeping); once the task is canceled every further update raises
:class:`~a2a_sync.errors.TaskCanceled`, which ends ``execute`` quietly.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import ClassVar

from .context import RequestContext
from .updater import TaskUpdater

__all__ = ["AgentExecutor", "ExecuteFunction", "FunctionExecutor", "RequestContext", "TaskUpdater"]


class AgentExecutor(abc.ABC):
    """Base class of agents. Subclass it and implement :meth:`execute`.

    One executor instance serves every request, from several threads at once: keep
    per-request state on the stack, and guard shared state yourself.

    Attributes:
        run_inline: Whether a blocking ``SendMessage`` may run ``execute`` on the
            request's own thread instead of handing it to a worker thread and waiting
            (two thread switches saved). True (default): once the agent has shown its
            runs are quick, and not after a slow one, when the pool has a slot for it
            (see :mod:`a2a_sync.server.inline`); it counts toward ``workers``. Set it to
            False (on the class) to always use worker threads. Cancellation, the stream
            cap and the blocking timeout of runs on worker threads are unchanged.
    """

    run_inline: ClassVar[bool] = True

    @abc.abstractmethod
    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Handle one message: publish the task's progress and outcome via ``updater``.

        Runs on a worker thread. Returning ends this request's stream (clients waiting
        on a blocking send get the task as it is then). Raising fails the task: an
        :class:`~a2a_sync.errors.RPCError` reaches the client with its code and
        message, anything else as "Internal error" without details (it is logged).
        """

    def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        """Stop the task. The default marks it canceled; ``execute`` notices through
        :attr:`RequestContext.is_cancelled`. Override to also stop outside work."""
        updater.cancel()


#: The function form of an executor: ``execute(context, updater)``.
ExecuteFunction = Callable[[RequestContext, "TaskUpdater"], None]


class FunctionExecutor(AgentExecutor):
    """An executor made from a plain function (what passing a function to the app does)."""

    def __init__(self, execute: ExecuteFunction) -> None:
        self._execute = execute

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        self._execute(context, updater)

    def __repr__(self) -> str:
        return f"FunctionExecutor({getattr(self._execute, '__qualname__', self._execute)!r})"
