"""Issue 18 item 7: the runs' cheap one-shot flag keeps threading.Event's contract."""

from __future__ import annotations

import threading

from a2a_sync.server._flag import Flag


def test_wait_wakes_every_waiter_on_set() -> None:
    flag = Flag()
    waiting = threading.Barrier(4)
    results: list[bool] = []

    def waiter() -> None:
        waiting.wait(timeout=10)
        results.append(flag.wait(timeout=30))

    threads = [threading.Thread(target=waiter) for _ in range(3)]
    for thread in threads:
        thread.start()
    waiting.wait(timeout=10)
    flag.set()
    for thread in threads:
        thread.join(timeout=30)
    assert results == [True, True, True]
    assert flag.is_set()


def test_wait_times_out_unset_and_set_is_idempotent() -> None:
    flag = Flag()
    assert not flag.is_set()
    assert flag.wait(timeout=0.01) is False
    flag.set()
    flag.set()
    assert flag.wait(timeout=0) is True
    assert flag.wait() is True
