"""When a blocking SendMessage runs the agent on the request's own thread.

Running the agent inline saves handing the run to a worker thread and waking the request
thread again (two context switches: about a quarter of the server's own CPU per call, see
``docs/decisions.md`` §14.2). The price: a run on the request thread cannot be cut short
by the blocking timeout (Python cannot move a running call to another thread, and WSGI
answers from the request thread). So it is done only when the run is expected to be
short: **when the agent has shown it is quick.** Every run is timed; after
:data:`PROMOTE_AFTER` runs in a row that each returned within the quick limit
(:data:`QUICK_RUN`, at most a tenth of the blocking timeout), blocking sends run inline. A
run that takes longer (noticed when it ends, or by the next send while it is still
running) turns inline off at once, and the agent must then show twice as many quick runs
(up to :data:`MAX_PROMOTE_AFTER`) to get it back: an agent that is sometimes slow stays on
worker threads; each further streak of that many quick runs halves the proof asked again
(down to :data:`PROMOTE_AFTER`), so rare stalls of a loaded machine do not add up. An
executor with ``run_inline = False`` never runs inline (the opt-out).

In every case the pool must allow it (:meth:`~a2a_sync.server.pool.WorkerPool.run_here`):
a worker slot is free now, and fewer than half of the slots are held by inline runs, so
runs that are not inline (streams, ``returnImmediately`` sends, later messages of a busy
task) always find half the workers, even when quick agents turn slow all at once.
Cancellation, the stream cap and the durability rule do not depend on the thread: the run
is registered with the scheduler like any other, streams never run inline, and the answer
is built from the store after the run's events are in it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Final

from .context import RequestContext
from .executor import AgentExecutor
from .updater import TaskUpdater

__all__ = ["MAX_PROMOTE_AFTER", "PROMOTE_AFTER", "QUICK_RUN", "InlinePolicy"]

#: Longest run (seconds) that counts as quick. Far below any blocking timeout worth
#: having, far above what an agent that waits on nothing takes (well under a millisecond
#: to a few milliseconds), so a loaded machine does not flip the decision.
QUICK_RUN: Final = 0.1
#: Quick runs in a row before blocking sends of an agent run inline.
PROMOTE_AFTER: Final = 32
#: Most quick runs in a row asked of an agent that was slow after being promoted.
MAX_PROMOTE_AFTER: Final = 4096

#: The clock runs are timed with (tests replace it before building a handler).
now: Callable[[], float] = time.monotonic


class InlinePolicy:
    """Decides, per blocking send, whether the agent may run on the request's thread
    (the pool still has the last word). Thread-safe.

    Args:
        executor: The agent (``run_inline = False``: never inline).
        blocking_timeout: The handler's blocking timeout (the quick limit is at most a
            tenth of it).
        clock: Monotonic clock (default :data:`now`).
    """

    def __init__(
        self,
        executor: AgentExecutor,
        *,
        blocking_timeout: float,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._never = not executor.run_inline
        self._quick = min(QUICK_RUN, blocking_timeout / 10)
        self._clock = clock if clock is not None else now
        self._lock = threading.Lock()
        self._allowed = False
        self._streak = 0  # quick runs in a row
        self._needed = PROMOTE_AFTER
        self._started: dict[int, float] = {}  # runs executing now: token -> start
        self._tokens = itertools.count()
        #: What the scheduler runs: the agent, its runs timed (unless never inline).
        self.executor: AgentExecutor = _Timed(executor, None if self._never else self)

    def allows(self) -> bool:
        """Whether a blocking send may run the agent inline now."""
        if self._never or not self._allowed:
            return False
        with self._lock:
            if self._started and self._clock() - min(self._started.values()) > self._quick:
                self._demote()  # a run is taking long: do not start more like it inline
            return self._allowed

    def run_started(self) -> int:
        """Note a run starting (returns its token for :meth:`run_ended`)."""
        token = next(self._tokens)
        started = self._clock()
        with self._lock:
            self._started[token] = started
        return token

    def run_ended(self, token: int) -> None:
        """Note a run ending: a quick one counts toward inline, a slow one stops it."""
        ended = self._clock()
        with self._lock:
            started = self._started.pop(token)
            if ended - started > self._quick:
                self._demote()
                return
            self._streak += 1
            if self._streak < self._needed:
                return
            self._streak = 0
            if self._allowed:
                # As many quick runs again since promoted: earn back half the proof asked
                # (rare stalls of a loaded machine must not ratchet it up for good).
                self._needed = max(PROMOTE_AFTER, self._needed // 2)
            self._allowed = True

    def _demote(self) -> None:
        """Caller holds the lock."""
        if self._allowed:
            self._needed = min(self._needed * 2, MAX_PROMOTE_AFTER)
        self._allowed = False
        self._streak = 0


class _Timed(AgentExecutor):
    """The agent as the scheduler sees it: inline is permitted there (the handler asks
    :meth:`InlinePolicy.allows` before it asks for an inline run), and each run is timed
    for the policy (unless the agent never runs inline)."""

    run_inline = True

    def __init__(self, agent: AgentExecutor, policy: InlinePolicy | None) -> None:
        self._agent = agent
        self._policy = policy

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        policy = self._policy
        if policy is None:
            self._agent.execute(context, updater)
            return
        token = policy.run_started()
        try:
            self._agent.execute(context, updater)
        finally:
            policy.run_ended(token)

    def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        self._agent.cancel(context, updater)

    def __repr__(self) -> str:
        return repr(self._agent)
