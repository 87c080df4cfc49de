"""Issue 18 item 7: a blocking SendMessage runs a quick agent on the request's own thread
(no hand-off to a worker thread), within the worker bound, with cancellation unchanged;
everything else (and agents with ``run_inline = False``) still runs on worker threads.

Whether an agent is quick is learned from its run times (``a2a_sync.server.inline``): the
tests replace that clock, so "quick" and "slow" are decided by the test, not the machine.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator

import pytest

from a2a_sync.a2a.methods import Operation
from a2a_sync.server import inline
from a2a_sync.server.app import A2AApplication
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
from tests.server.wsgi import rpc

CALL = CallContext(principal=Principal("alice"))


class Clock:
    """The runs' clock: stands still unless a test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(inline, "now", fake)
    return fake


class Recorder(AgentExecutor):
    """Completes at once, or (text "wait") works until cancelled, or (text "slow") takes
    longer than a quick run on the test's clock; notes its thread."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
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
        if context.text == "slow" and self.clock is not None:
            self.clock.now += inline.QUICK_RUN * 2
        updater.complete()

    def forget(self) -> None:
        self.threads.clear()
        self.task_ids.clear()


class HandsOff(Recorder):
    run_inline = False


@pytest.fixture
def recorder(clock: Clock) -> Recorder:
    return Recorder(clock)


@pytest.fixture
def handler(recorder: Recorder) -> Iterator[DefaultRequestHandler]:
    made = DefaultRequestHandler(card(), recorder, blocking_timeout=WAIT)
    yield made
    assert made.close(WAIT)


def promote(handler: DefaultRequestHandler, recorder: Recorder) -> None:
    """Send quick messages until the agent has shown it is quick (they run on workers)."""
    for _ in range(inline.PROMOTE_AFTER):
        send(handler, "reply")
    assert all(t.name.startswith("a2a-sync-agent") for t in recorder.threads)
    recorder.forget()


def send(handler: DefaultRequestHandler, text: str, **config: object) -> Task | Message:
    configuration = SendMessageConfiguration(**config) if config else None  # type: ignore[arg-type]
    params = SendMessageParams(message=Message.user(text), configuration=configuration)
    result: Task | Message = handler.dispatch(Operation.SEND_MESSAGE, params, CALL)
    return result


def test_a_blocking_send_runs_an_inline_agent_on_the_request_thread(
    handler: DefaultRequestHandler, recorder: Recorder
) -> None:
    promote(handler, recorder)
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
        for _ in range(inline.PROMOTE_AFTER + 1):  # quick runs do not change the opt-out
            send(handler, "work")
    finally:
        assert handler.close(WAIT)
    inline_agent = Recorder()
    handler = DefaultRequestHandler(card(), inline_agent, blocking_timeout=WAIT)
    try:
        promote(handler, inline_agent)
        send(handler, "work", return_immediately=True)
        stream = handler.dispatch_stream(
            Operation.SEND_STREAMING_MESSAGE, SendMessageParams(message=Message.user("work")), CALL
        )
        assert list(stream)[-1].status.state is TaskState.completed  # type: ignore[union-attr]
    finally:
        assert handler.close(WAIT)
    for thread in [*agent.threads, *inline_agent.threads]:
        assert thread.name.startswith("a2a-sync-agent")
    assert len(agent.threads) == inline.PROMOTE_AFTER + 1
    assert len(inline_agent.threads) == 2


def test_an_inline_run_is_cancelled_from_another_request(
    handler: DefaultRequestHandler, recorder: Recorder
) -> None:
    promote(handler, recorder)
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


def test_a_slow_run_turns_inline_off_until_twice_as_many_quick_runs(
    handler: DefaultRequestHandler, recorder: Recorder
) -> None:
    promote(handler, recorder)
    send(handler, "slow")  # inline (it was promoted), but slower than a quick run
    send(handler, "work")
    assert recorder.threads[0] is threading.current_thread()
    assert recorder.threads[1].name.startswith("a2a-sync-agent")
    recorder.forget()
    for _ in range(2 * inline.PROMOTE_AFTER - 1):  # the one above counts
        send(handler, "reply")
    assert all(t.name.startswith("a2a-sync-agent") for t in recorder.threads)
    send(handler, "reply")
    assert recorder.threads[-1] is threading.current_thread()


def test_a_blocking_agent_does_not_take_the_next_sends_inline(
    handler: DefaultRequestHandler, recorder: Recorder, clock: Clock
) -> None:
    """A promoted agent that blocks: its run holds the sender's thread, but once it has
    run longer than a quick run, the next blocking sends go to worker threads (and are
    answered while it still blocks) instead of blocking their request threads too."""
    promote(handler, recorder)
    sender = threading.Thread(target=send, args=(handler, "wait"), name="test-sender")
    sender.start()
    try:
        assert recorder.working.wait(WAIT)
        assert recorder.threads == [sender]
        clock.now += inline.QUICK_RUN * 2
        task = send(handler, "work")
        assert isinstance(task, Task)
        assert task.status.state is TaskState.completed
        assert recorder.threads[1].name.startswith("a2a-sync-agent")
    finally:
        for task_id in recorder.task_ids[:1]:
            handler.dispatch(Operation.CANCEL_TASK, TaskIdParams(id=task_id), CALL)
        sender.join(WAIT)
    assert not sender.is_alive()


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


def test_inline_runs_take_at_most_half_the_workers() -> None:
    """Work submitted to the pool always finds half the slots, even when every inline
    run blocks."""
    pool = WorkerPool(4, name="a2a-sync-test")
    assert pool.max_inline == 2
    entered = threading.Semaphore(0)
    release, ran = threading.Event(), threading.Event()

    def hold() -> None:
        entered.release()
        release.wait(WAIT)

    holders = [
        threading.Thread(target=pool.run_here, args=(hold,), name=f"test-holder-{i}")
        for i in range(2)
    ]
    for holder in holders:
        holder.start()
    try:
        for _ in holders:
            assert entered.acquire(timeout=WAIT)
        assert pool.run_here(ran.set) is False  # slots are free, but half run inline
        pool.submit(ran.set)
        assert ran.wait(WAIT)  # a pool thread got a slot while both holders block
    finally:
        release.set()
        for holder in holders:
            holder.join(WAIT)
        assert pool.shutdown(WAIT)


def _message(text: str) -> dict[str, object]:
    return {
        "message": {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": text}]}
    }


def test_the_stream_cap_holds_while_blocking_sends_run_inline(recorder: Recorder) -> None:
    app = A2AApplication(card(), recorder, max_streams=1, heartbeat_interval=0.05)
    try:
        for _ in range(inline.PROMOTE_AFTER):
            assert rpc(app, "SendMessage", _message("reply")).finish() == 200
        recorder.forget()
        stream = rpc(app, "SendStreamingMessage", _message("wait"))
        stream.next_chunk()
        assert recorder.working.wait(WAIT)
        assert recorder.threads[0].name.startswith("a2a-sync-agent")  # streams: never inline
        assert rpc(app, "SendStreamingMessage", _message("work")).finish() == 503
        answer = rpc(app, "SendMessage", _message("work")).json()
        assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert recorder.threads[1] is threading.current_thread()  # the unary send: inline
        canceled = app.handler.dispatch(
            Operation.CANCEL_TASK, TaskIdParams(id=recorder.task_ids[0]), CallContext()
        )
        assert canceled.status.state is TaskState.canceled
        stream.read()  # ends with the canceled status
        assert app.active_streams == 0
    finally:
        assert app.close(WAIT)


def test_the_proof_asked_after_a_slow_run_doubles_and_is_earned_back(clock: Clock) -> None:
    policy = inline.InlinePolicy(Recorder(), blocking_timeout=WAIT)

    def runs(count: int, seconds: float = 0.0) -> None:
        for _ in range(count):
            token = policy.run_started()
            clock.now += seconds
            policy.run_ended(token)

    runs(inline.PROMOTE_AFTER - 1)
    assert not policy.allows()
    runs(1)
    assert policy.allows()
    runs(1, inline.QUICK_RUN * 2)  # slow: off, and twice the proof asked
    assert not policy.allows()
    runs(2 * inline.PROMOTE_AFTER - 1)
    assert not policy.allows()
    runs(1)
    assert policy.allows()
    runs(1, inline.QUICK_RUN * 2)
    runs(4 * inline.PROMOTE_AFTER)  # 4x now: promoted again
    assert policy.allows()
    runs(4 * inline.PROMOTE_AFTER)  # as many quick runs since: back to 2x
    runs(1, inline.QUICK_RUN * 2)  # the next slow run asks 4x, not 8x
    runs(4 * inline.PROMOTE_AFTER - 1)
    assert not policy.allows()
    runs(1)
    assert policy.allows()


def test_opted_out_agents_are_neither_timed_nor_promoted() -> None:
    policy = inline.InlinePolicy(HandsOff(), blocking_timeout=WAIT)
    for _ in range(inline.PROMOTE_AFTER + 1):
        policy.run_ended(policy.run_started())
    assert not policy.allows()
