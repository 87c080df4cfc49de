"""Issue 18 item 7: the runs' cheap one-shot flag keeps threading.Event's contract."""

from __future__ import annotations

import threading
import uuid

from a2a_sync.server._flag import Flag
from a2a_sync.server._ids import new_uuid4


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


def test_new_uuid4_is_a_random_version_4_uuid_in_canonical_text() -> None:

    ids = {new_uuid4() for _ in range(1000)}
    assert len(ids) == 1000
    for text in ids:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
