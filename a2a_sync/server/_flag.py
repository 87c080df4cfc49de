"""A one-shot flag with :class:`threading.Event`'s ``is_set``/``set``/``wait``, cheaper.

Every request creates a few of these (a run's ``created``/``settled``/``done``, the
context's cancellation), and most are set without anyone waiting on them (a blocking send
run on the request's thread finds its run settled already). ``threading.Event`` builds a
``Condition`` (Python code, a waiter deque) up front and notifies it on every ``set``;
this flag holds one C lock and builds the condition, over that same lock, only when a
caller has to wait.
"""

from __future__ import annotations

import threading

__all__ = ["Flag"]


class Flag:
    """Set once, never cleared; ``wait`` wakes on ``set``. Thread-safe."""

    __slots__ = ("_cond", "_lock", "_set")

    def __init__(self) -> None:
        self._set = False
        self._lock = threading.Lock()
        self._cond: threading.Condition | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:  # (set once, never cleared: waiters were woken then)
            return
        with self._lock:
            self._set = True
            if self._cond is not None:
                self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the flag is set or ``timeout`` seconds passed.

        Returns:
            Whether the flag is set.
        """
        if self._set:
            return True
        with self._lock:
            if self.is_set():  # (set meanwhile)
                return True
            if self._cond is None:
                self._cond = threading.Condition(self._lock)
            return self._cond.wait_for(self.is_set, timeout)
