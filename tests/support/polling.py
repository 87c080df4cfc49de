"""Waiting for an effect that has no event to wait on (a file another process writes, a
row another worker commits, a thread reaching a blocking call): poll it, bounded.

Prefer an Event, a queue or a server's own report wherever the code offers one; this is
the one polling loop of the suite for the rest.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Final

__all__ = ["POLL_INTERVAL", "WAIT", "blocked_in", "poll_until", "wait_until"]

#: Default bound: the effects polled for take milliseconds on loopback.
WAIT: Final = 5.0
#: Pause between two checks.
POLL_INTERVAL: Final = 0.01


def wait_until(
    condition: Callable[[], object],
    what: str,
    timeout: float = WAIT,
    *,
    interval: float = POLL_INTERVAL,
) -> None:
    """Poll ``condition()`` until it is true, ``interval`` seconds apart (0: as often as
    possible, yielding to other threads in between; for a reader racing writers).

    Raises:
        AssertionError: Still false after ``timeout`` seconds (the message names ``what``).
    """
    if not poll_until(condition, timeout, interval=interval):
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def poll_until(
    condition: Callable[[], object], timeout: float, *, interval: float = POLL_INTERVAL
) -> bool:
    """Poll ``condition()`` until it is true (True) or ``timeout`` seconds passed (False),
    for a wait whose expiry is no failure by itself (a grace period) or that the caller
    reports in its own terms."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def blocked_in(thread: threading.Thread, function: str, module_file: str) -> bool:
    """Whether ``thread`` is inside ``function`` of the module whose file name ends with
    ``module_file`` now (say ``blocked_in(consumer, "get", "queue.py")``)."""
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == function and code.co_filename.endswith(module_file):
            return True
        frame = frame.f_back
    return False
