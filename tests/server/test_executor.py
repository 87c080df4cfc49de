"""TaskUpdater: the first-event rule, the end of a task, ids, and the helpers' events."""

from __future__ import annotations

import threading

import pytest

from a2a_sync.errors import InvalidAgentResponse, TaskCanceled
from a2a_sync.server.executor import FunctionExecutor, RequestContext, TaskUpdater
from a2a_sync.types import (
    Message,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def make(current: Task | None = None) -> tuple[TaskUpdater, list[StreamEvent]]:
    published: list[StreamEvent] = []
    context = RequestContext(
        message=Message.user("hi", message_id="m1"),
        task_id="t1",
        context_id="c1",
        current_task=current,
    )
    return TaskUpdater(context, published.append), published


def test_helpers_create_the_task_first_with_the_users_message() -> None:
    updater, published = make()
    updater.start_work("thinking")
    assert isinstance(published[0], Task)
    assert published[0].id == "t1"
    assert published[0].status.state is TaskState.submitted
    assert [m.message_id for m in published[0].history] == ["m1"]
    assert isinstance(published[1], TaskStatusUpdateEvent)
    assert published[1].status.state is TaskState.working
    assert published[1].status.message is not None
    assert published[1].status.message.text == "thinking"
    assert published[1].status.message.task_id == "t1"
    assert published[1].status.timestamp is not None


def test_artifact_chunks_share_the_returned_id() -> None:
    updater, published = make()
    aid = updater.add_artifact("Hel", name="answer")
    updater.add_artifact("lo", artifact_id=aid, append=True, last_chunk=True)
    chunks = [e for e in published if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.artifact.artifact_id for c in chunks] == [aid, aid]
    assert [(c.append, c.last_chunk) for c in chunks] == [(False, False), (True, True)]
    assert chunks[0].artifact.name == "answer"


def test_a_raw_status_update_as_first_event_of_a_new_task_is_refused() -> None:
    updater, published = make()
    event = TaskStatusUpdateEvent(
        task_id="t1", context_id="c1", status=TaskStatus(state=TaskState.working)
    )
    with pytest.raises(InvalidAgentResponse, match="first event"):
        updater.publish(event)
    assert published == []


def test_a_continued_task_takes_updates_without_a_new_task() -> None:
    current = Task(id="t1", context_id="c1", status=TaskStatus(state=TaskState.input_required))
    updater, published = make(current)
    updater.complete()
    assert len(published) == 1
    assert isinstance(published[0], TaskStatusUpdateEvent)
    with pytest.raises(InvalidAgentResponse):
        updater.reply("too late")


def test_a_direct_reply_must_be_the_only_event() -> None:
    updater, published = make()
    message = updater.reply("hello back")
    assert published == [message]
    assert message.role.value == "agent"
    assert updater.finished
    with pytest.raises(InvalidAgentResponse, match="only event"):
        updater.complete()


def test_reply_after_task_events_is_refused() -> None:
    updater, _ = make()
    updater.start_work()
    with pytest.raises(InvalidAgentResponse, match="cannot follow"):
        updater.reply("hi")


def test_nothing_follows_a_terminal_state() -> None:
    updater, published = make()
    updater.complete("done")
    with pytest.raises(InvalidAgentResponse, match="already completed"):
        updater.add_artifact("late")
    assert isinstance(published[-1], TaskStatusUpdateEvent)
    assert updater.finished


def test_updates_after_cancellation_raise_task_canceled() -> None:
    updater, _ = make()
    updater.start_work()
    updater.context._cancel()
    updater.cancel()
    assert updater.context.is_cancelled
    with pytest.raises(TaskCanceled):
        updater.add_artifact("more")


def test_events_for_another_task_are_refused() -> None:
    updater, _ = make()
    updater.submit()
    event = TaskStatusUpdateEvent(
        task_id="t2", context_id="c1", status=TaskStatus(state=TaskState.working)
    )
    with pytest.raises(InvalidAgentResponse, match="t2"):
        updater.publish(event)


def test_wait_cancelled_wakes_when_cancelled_from_another_thread() -> None:
    updater, _ = make()
    threading.Timer(0.01, updater.context._cancel).start()
    assert updater.context.wait_cancelled(5)


def test_function_executor_calls_the_function() -> None:
    calls: list[str] = []
    executor = FunctionExecutor(lambda ctx, upd: calls.append(ctx.text))
    updater, _ = make()
    executor.execute(updater.context, updater)
    assert calls == ["hi"]
    executor.cancel(updater.context, updater)
    assert updater.finished
