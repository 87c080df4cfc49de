"""Issue 18 item 7: a blocking SendMessage to an agent marked ``run_inline`` runs it on
the request's own thread (no hand-off to a worker thread), within the worker bound, with
cancellation unchanged; everything else still runs on worker threads."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from a2a_sync.a2a.methods import Operation
from a2a_sync.server.auth import Principal
from a2a_sync.server.context import CallContext
from a2a_sync.server.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.pool import WorkerPool
from a2a_sync.types import (
    Message,
    SendMessageConfiguration,
    SendMessageParams,
    Task,
    TaskIdParams,
    TaskState,
)
from tests.server.agents import WAIT, card

CALL = CallContext(principal=Principal("alice"))


class Recorder(AgentExecutor):
    """Completes at once, or (text "wait") works until cancelled; notes its thread."""

    run_inline = True

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.task_ids: list[str] = []
        self.working = threading.Event()

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        self.threads.append(threading.current_thread())
        self.task_ids.append(context.task_id)
        if context.text == "reply":
            updater.reply("pong")
            return
        updater.start_work()
        if context.text == "wait":
            self.working.set()
            context.wait_cancelled(WAIT)
            return
        updater.complete()


class HandsOff(Recorder):
    run_inline = False


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def handler(recorder: Recorder) -> Iterator[DefaultRequestHandler]:
    made = DefaultRequestHandler(card(), recorder, blocking_timeout=WAIT)
    yield made
    assert made.close(WAIT)


def send(handler: DefaultRequestHandler, text: str, **config: object) -> Task | Message:
    configuration = SendMessageConfiguration(**config) if config else None  # type: ignore[arg-type]
    params = SendMessageParams(message=Message.user(text), configuration=configuration)
    result: Task | Message = handler.dispatch(Operation.SEND_MESSAGE, params, CALL)
    return result


def test_a_blocking_send_runs_an_inline_agent_on_the_request_thread(
    handler: DefaultRequestHandler, recorder: Recorder
) -> None:
    reply = send(handler, "reply")
    task = send(handler, "work")
    assert isinstance(reply, Message)
    assert isinstance(task, Task)
    assert task.status.state is TaskState.completed
    assert recorder.threads == [threading.current_thread()] * 2


def test_agents_not_marked_inline_and_non_blocking_sends_run_on_worker_threads() -> None:
    agent = HandsOff()
    handler = DefaultRequestHandler(card(), agent, blocking_timeout=WAIT)
    try:
        send(handler, "work")
    finally:
        assert handler.close(WAIT)
    inline_agent = Recorder()
    handler = DefaultRequestHandler(card(), inline_agent, blocking_timeout=WAIT)
    try:
        send(handler, "work", return_immediately=True)
        stream = handler.dispatch_stream(
            Operation.SEND_STREAMING_MESSAGE, SendMessageParams(message=Message.user("work")), CALL
        )
        assert list(stream)[-1].status.state is TaskState.completed  # type: ignore[union-attr]
    finally:
        assert handler.close(WAIT)
    for thread in [*agent.threads, *inline_agent.threads]:
        assert thread.name.startswith("a2a-sync-agent")
    assert len(agent.threads) == 1
    assert len(inline_agent.threads) == 2


def test_an_inline_run_is_cancelled_from_another_request(
    handler: DefaultRequestHandler, recorder: Recorder
) -> None:
    answers: list[Task | Message] = []
    sender = threading.Thread(
        target=lambda: answers.append(send(handler, "wait")), name="test-sender", daemon=True
    )
    sender.start()
    assert recorder.working.wait(WAIT)
    (task_id,) = recorder.task_ids
    canceled = handler.dispatch(Operation.CANCEL_TASK, TaskIdParams(id=task_id), CALL)
    assert canceled.status.state is TaskState.canceled
    sender.join(WAIT)
    assert not sender.is_alive()
    assert recorder.threads == [sender]
    (answer,) = answers
    assert isinstance(answer, Task)
    assert answer.status.state is TaskState.canceled


# -- the worker bound ----------------------------------------------------------------------------


def test_run_here_takes_a_worker_slot_and_pool_threads_wait_for_it() -> None:
    pool = WorkerPool(1, name="a2a-sync-test")
    entered, release, ran = threading.Event(), threading.Event(), threading.Event()
    released_before: list[bool] = []

    def hold() -> None:
        entered.set()
        release.wait(WAIT)

    def queued() -> None:
        released_before.append(release.is_set())
        ran.set()

    holder = threading.Thread(target=pool.run_here, args=(hold,), name="test-holder")
    holder.start()
    try:
        assert entered.wait(WAIT)
        assert pool.run_here(queued) is False  # no free slot: the caller must submit
        pool.submit(queued)  # a pool thread starts, but waits for the slot
        assert pool.active == 2
        release.set()
        assert ran.wait(WAIT)
        assert released_before == [True]
    finally:
        release.set()
        holder.join(WAIT)
        assert pool.shutdown(WAIT)


def test_shutdown_waits_for_runs_on_request_threads() -> None:
    pool = WorkerPool(2, name="a2a-sync-test")
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        entered.set()
        release.wait(WAIT)

    holder = threading.Thread(target=pool.run_here, args=(hold,), name="test-holder")
    holder.start()
    try:
        assert entered.wait(WAIT)
        assert pool.shutdown(0.01) is False  # the inline run is still going
        release.set()
        assert pool.shutdown(WAIT) is True
    finally:
        release.set()
        holder.join(WAIT)
