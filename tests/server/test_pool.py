"""WorkerPool: bounded threads, named daemons, bounded shutdown."""

from __future__ import annotations

import threading

import pytest

from a2a_sync.errors import InternalError
from a2a_sync.server.pool import WorkerPool


def test_work_runs_on_named_daemon_threads_never_more_than_the_bound() -> None:
    pool = WorkerPool(2, name="a2a-sync-test")
    release = threading.Event()
    seen: list[threading.Thread] = []
    started = threading.Semaphore(0)
    lock = threading.Lock()

    def work() -> None:
        with lock:
            seen.append(threading.current_thread())
        started.release()
        assert release.wait(5)

    for _ in range(5):
        pool.submit(work)
    assert started.acquire(timeout=5)
    assert started.acquire(timeout=5)
    assert not started.acquire(timeout=0.05)  # the third waits for a free thread
    release.set()
    for _ in range(3):
        assert started.acquire(timeout=5)
    assert pool.shutdown(5)
    assert len({t.name for t in seen}) <= 2
    assert all(t.daemon and t.name.startswith("a2a-sync-test-") for t in seen)


def test_a_failing_job_is_logged_and_the_thread_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pool = WorkerPool(1)
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    pool.submit(boom)
    pool.submit(done.set)
    assert done.wait(5)
    assert pool.shutdown(5)
    assert "agent work failed" in caplog.text


def test_shutdown_refuses_new_work_and_reports_stuck_threads() -> None:
    pool = WorkerPool(1)
    release = threading.Event()
    running = threading.Event()

    def stuck() -> None:
        running.set()
        release.wait(5)

    pool.submit(stuck)
    assert running.wait(5)
    assert pool.shutdown(0.05) is False
    with pytest.raises(InternalError):
        pool.submit(lambda: None)
    release.set()
    assert pool.shutdown(5)
