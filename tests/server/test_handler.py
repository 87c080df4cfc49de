"""DefaultRequestHandler: every operation over a store and an executor, without HTTP."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from a2a_sync.a2a.methods import Operation
from a2a_sync.errors import (
    ExtendedAgentCardNotConfigured,
    InternalError,
    InvalidAgentResponse,
    InvalidParams,
    MethodNotFound,
    PushNotificationNotSupported,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
)
from a2a_sync.server.auth import Principal
from a2a_sync.server.context import CallContext
from a2a_sync.server.executor import RequestContext, TaskUpdater
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.types import (
    GetTaskParams,
    ListPushConfigsParams,
    ListTasksParams,
    Message,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageConfiguration,
    SendMessageParams,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskState,
    TaskStatusUpdateEvent,
)
from tests.server.agents import WAIT, EchoAgent, card
from tests.support.polling import wait_until

ALICE = CallContext(principal=Principal("alice"))
BOB = CallContext(principal=Principal("bob"))


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture
def handler(agent: EchoAgent) -> Iterator[DefaultRequestHandler]:
    h = DefaultRequestHandler(card(extended=True), agent, blocking_timeout=WAIT)
    yield h
    agent.release.set()
    assert h.close(WAIT)


def send(
    handler: DefaultRequestHandler,
    text: str,
    call: CallContext = ALICE,
    **options: object,
) -> Task | Message:
    message = options.pop("message", None) or Message.user(
        text, task_id=options.pop("task_id", None)
    )  # type: ignore[arg-type]
    config = SendMessageConfiguration(**options) if options else None  # type: ignore[arg-type]
    return handler.dispatch(
        Operation.SEND_MESSAGE, SendMessageParams(message=message, configuration=config), call
    )


def drain(stream: Iterator[StreamEvent]) -> list[StreamEvent]:
    return list(stream)


def test_blocking_send_returns_the_completed_task(handler: DefaultRequestHandler) -> None:
    task = send(handler, "hello")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.completed
    assert task.text == "echo: hello"
    assert [m.role.value for m in task.history] == ["user"]
    got = handler.dispatch(Operation.GET_TASK, GetTaskParams(id=task.id), ALICE)
    assert got == task
    trimmed = handler.dispatch(
        Operation.GET_TASK, GetTaskParams(id=task.id, history_length=0), ALICE
    )
    assert trimmed.history == []


def test_return_immediately_answers_before_the_agent_finishes(
    handler: DefaultRequestHandler, agent: EchoAgent
) -> None:
    task = send(handler, "wait", return_immediately=True)
    assert isinstance(task, Task)
    assert not task.status.state.is_terminal
    agent.release.set()
    sub = handler.dispatch_stream(Operation.SUBSCRIBE_TO_TASK, TaskIdParams(id=task.id), ALICE)
    events = drain(sub)
    assert isinstance(events[-1], TaskStatusUpdateEvent)
    assert events[-1].status.state is TaskState.completed


def test_direct_reply_is_returned_as_a_message(handler: DefaultRequestHandler) -> None:
    result = send(handler, "reply")
    assert isinstance(result, Message)
    assert result.text == "echo: reply"


def test_agent_exception_fails_the_task_without_its_text(
    handler: DefaultRequestHandler, caplog: pytest.LogCaptureFixture
) -> None:
    task = send(handler, "boom")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.failed
    assert task.status.message is None
    assert "RuntimeError" in caplog.text  # logged server-side


def test_agent_rpc_error_message_reaches_the_failed_status(handler: DefaultRequestHandler) -> None:
    task = send(handler, "bad params")
    assert isinstance(task, Task)
    assert task.status.state is TaskState.failed
    assert task.status.message is not None
    assert task.status.message.text == "the agent refuses this"


def test_agent_exception_before_any_task_is_an_internal_error(
    handler: DefaultRequestHandler,
) -> None:
    with pytest.raises(InternalError) as caught:
        send(handler, "boom early")
    assert "secret" not in str(caught.value)


def test_agent_publishing_nothing_is_an_invalid_agent_response(
    handler: DefaultRequestHandler,
) -> None:
    with pytest.raises(InvalidAgentResponse):
        send(handler, "nothing")


def test_a_client_invented_task_id_is_task_not_found(handler: DefaultRequestHandler) -> None:
    with pytest.raises(TaskNotFound):
        send(handler, "hi", task_id="made-up")


def test_a_message_to_a_terminal_task_is_unsupported(handler: DefaultRequestHandler) -> None:
    task = send(handler, "hello")
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperation):
        send(handler, "again", task_id=task.id)


def test_input_required_continues_with_the_next_message(
    handler: DefaultRequestHandler,
) -> None:
    first = send(handler, "need input")
    assert isinstance(first, Task)
    assert first.status.state is TaskState.input_required
    assert first.status.message is not None
    assert first.status.message.text == "which city?"
    second = send(handler, "Paris", task_id=first.id)
    assert isinstance(second, Task)
    assert second.id == first.id
    assert second.status.state is TaskState.completed
    assert second.text == "answer: Paris"
    texts = [m.text for m in second.history]
    assert texts == ["need input", "which city?", "Paris"]


def test_a_repeated_message_id_returns_the_existing_task_without_rerunning(
    handler: DefaultRequestHandler, agent: EchoAgent
) -> None:
    message = Message.user("hello")
    first = send(handler, "", message=message)
    again = send(handler, "", message=message)
    assert isinstance(first, Task)
    assert again == first
    assert agent.calls == 1
    other = send(handler, "", message=message, call=BOB)  # another principal: its own task
    assert isinstance(other, Task)
    assert other.id != first.id
    assert agent.calls == 2


def test_a_repeat_while_the_first_is_running_waits_for_the_same_run(
    handler: DefaultRequestHandler, agent: EchoAgent
) -> None:
    message = Message.user("wait")
    results: list[Task | Message] = []
    first = threading.Thread(target=lambda: results.append(send(handler, "", message=message)))
    first.start()
    assert agent.started.wait(WAIT)
    second = threading.Thread(target=lambda: results.append(send(handler, "", message=message)))
    second.start()
    agent.release.set()
    first.join(WAIT)
    second.join(WAIT)
    assert len(results) == 2
    assert results[0] == results[1]
    assert agent.calls == 1


def test_cancel_a_running_task_then_again_then_a_completed_one(
    handler: DefaultRequestHandler, agent: EchoAgent
) -> None:
    task = send(handler, "wait", return_immediately=True)
    assert isinstance(task, Task)
    assert agent.started.wait(WAIT)
    canceled = handler.dispatch(Operation.CANCEL_TASK, TaskIdParams(id=task.id), ALICE)
    assert canceled.status.state is TaskState.canceled
    again = handler.dispatch(Operation.CANCEL_TASK, TaskIdParams(id=task.id), ALICE)
    assert again.status.state is TaskState.canceled
    done = send(handler, "hello")
    assert isinstance(done, Task)
    with pytest.raises(TaskNotCancelable):
        handler.dispatch(Operation.CANCEL_TASK, TaskIdParams(id=done.id), ALICE)


def test_concurrent_cancels_all_answer_the_canceled_task(
    handler: DefaultRequestHandler, agent: EchoAgent
) -> None:
    task = send(handler, "need input")
    assert isinstance(task, Task)
    results: list[object] = []
    barrier = threading.Barrier(8)

    def cancel() -> None:
        barrier.wait(WAIT)
        try:
            results.append(handler.dispatch(Operation.CANCEL_TASK, TaskIdParams(id=task.id), ALICE))
        except TaskNotCancelable as exc:
            results.append(exc)

    threads = [threading.Thread(target=cancel) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert len(results) == 8
    assert all(isinstance(r, Task) and r.status.state is TaskState.canceled for r in results)


def test_stream_yields_task_then_updates_then_ends(handler: DefaultRequestHandler) -> None:
    stream = handler.dispatch_stream(
        Operation.SEND_STREAMING_MESSAGE,
        SendMessageParams(message=Message.user("chunks 3")),
        ALICE,
    )
    events = drain(stream)
    assert isinstance(events[0], Task)
    assert [type(e).__name__ for e in events[1:]] == [
        "TaskStatusUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskStatusUpdateEvent",
    ]
    chunks = [e for e in events if isinstance(e, TaskArtifactUpdateEvent)]
    assert [c.last_chunk for c in chunks] == [False, False, True]
    final = handler.dispatch(Operation.GET_TASK, GetTaskParams(id=events[0].id), ALICE)
    assert final.text == "c0;c1;c2;"


def test_stream_of_a_direct_reply_is_that_one_message(handler: DefaultRequestHandler) -> None:
    stream = handler.dispatch_stream(
        Operation.SEND_STREAMING_MESSAGE, SendMessageParams(message=Message.user("reply")), ALICE
    )
    events = drain(stream)
    assert len(events) == 1
    assert isinstance(events[0], Message)


def test_stream_of_a_continuation_starts_with_the_task(handler: DefaultRequestHandler) -> None:
    first = send(handler, "need input")
    assert isinstance(first, Task)
    stream = handler.dispatch_stream(
        Operation.SEND_STREAMING_MESSAGE,
        SendMessageParams(message=Message.user("Rome", task_id=first.id)),
        ALICE,
    )
    events = drain(stream)
    assert isinstance(events[0], Task)
    assert events[0].history[-1].text == "Rome"
    assert isinstance(events[-1], TaskStatusUpdateEvent)
    assert events[-1].status.state is TaskState.completed


def test_stream_error_before_any_task_is_raised_from_the_stream(
    handler: DefaultRequestHandler,
) -> None:
    stream = handler.dispatch_stream(
        Operation.SEND_STREAMING_MESSAGE, SendMessageParams(message=Message.user("nothing")), ALICE
    )
    with pytest.raises(InvalidAgentResponse):
        drain(stream)


def test_subscribe_gives_the_snapshot_then_live_events(
    handler: DefaultRequestHandler, agent: EchoAgent
) -> None:
    task = send(handler, "wait", return_immediately=True)
    assert isinstance(task, Task)
    assert agent.started.wait(WAIT)
    subs = [
        handler.dispatch_stream(Operation.SUBSCRIBE_TO_TASK, TaskIdParams(id=task.id), ALICE)
        for _ in range(3)
    ]
    firsts = [next(s) for s in subs]
    assert all(isinstance(f, Task) and f.status.state is TaskState.working for f in firsts)
    subs[1].close()
    agent.release.set()
    rest = [drain(subs[0]), drain(subs[2])]
    assert rest[0] == rest[1]
    assert isinstance(rest[0][-1], TaskStatusUpdateEvent)
    assert rest[0][-1].status.state is TaskState.completed


def test_subscribe_to_a_terminal_task_is_unsupported(handler: DefaultRequestHandler) -> None:
    task = send(handler, "hello")
    assert isinstance(task, Task)
    with pytest.raises(UnsupportedOperation):
        handler.dispatch_stream(Operation.SUBSCRIBE_TO_TASK, TaskIdParams(id=task.id), ALICE)


def test_another_principal_sees_no_task_anywhere(handler: DefaultRequestHandler) -> None:
    task = send(handler, "need input")
    assert isinstance(task, Task)
    for operation, params in [
        (Operation.GET_TASK, GetTaskParams(id=task.id)),
        (Operation.CANCEL_TASK, TaskIdParams(id=task.id)),
        (Operation.LIST_PUSH_CONFIGS, ListPushConfigsParams(task_id=task.id)),
        (Operation.GET_PUSH_CONFIG, PushConfigParams(task_id=task.id, config_id="x")),
        (
            Operation.CREATE_PUSH_CONFIG,
            PushNotificationConfig(url="https://h.example/", task_id=task.id),
        ),
    ]:
        with pytest.raises(TaskNotFound):
            handler.dispatch(operation, params, BOB)
    with pytest.raises(TaskNotFound):
        handler.dispatch_stream(Operation.SUBSCRIBE_TO_TASK, TaskIdParams(id=task.id), BOB)
    with pytest.raises(TaskNotFound):
        send(handler, "answer", task_id=task.id, call=BOB)
    assert handler.dispatch(Operation.LIST_TASKS, ListTasksParams(), BOB).tasks == []


def test_list_drops_artifacts_unless_asked(handler: DefaultRequestHandler) -> None:
    send(handler, "one")
    send(handler, "two")
    listed = handler.dispatch(Operation.LIST_TASKS, ListTasksParams(), ALICE)
    assert [t.history[0].text for t in listed.tasks] == ["two", "one"]
    assert all(t.artifacts == [] for t in listed.tasks)
    full = handler.dispatch(Operation.LIST_TASKS, ListTasksParams(include_artifacts=True), ALICE)
    assert [t.text for t in full.tasks] == ["echo: two", "echo: one"]
    with pytest.raises(InvalidParams):
        handler.dispatch(Operation.LIST_TASKS, ListTasksParams(page_size=101), ALICE)


def test_push_config_crud(handler: DefaultRequestHandler) -> None:
    task = send(handler, "hello")
    assert isinstance(task, Task)
    created = handler.dispatch(
        Operation.CREATE_PUSH_CONFIG,
        PushNotificationConfig(url="https://hooks.example/a", task_id=task.id, token="t"),
        ALICE,
    )
    assert created.id
    assert created.task_id == task.id
    got = handler.dispatch(
        Operation.GET_PUSH_CONFIG, PushConfigParams(task_id=task.id, config_id=created.id), ALICE
    )
    assert got == created
    listed = handler.dispatch(
        Operation.LIST_PUSH_CONFIGS, ListPushConfigsParams(task_id=task.id), ALICE
    )
    assert listed.configs == [created]
    handler.dispatch(
        Operation.DELETE_PUSH_CONFIG, PushConfigParams(task_id=task.id, config_id=created.id), ALICE
    )
    with pytest.raises(TaskNotFound):
        handler.dispatch(
            Operation.GET_PUSH_CONFIG,
            PushConfigParams(task_id=task.id, config_id=created.id),
            ALICE,
        )
    with pytest.raises(InvalidParams):
        handler.dispatch(
            Operation.CREATE_PUSH_CONFIG,
            PushNotificationConfig(url="file:///etc/passwd", task_id=task.id),
            ALICE,
        )


def test_capabilities_not_declared_are_refused(agent: EchoAgent) -> None:
    bare = DefaultRequestHandler(card(streaming=False, push=False), agent)
    try:
        with pytest.raises(UnsupportedOperation):
            bare.dispatch_stream(
                Operation.SEND_STREAMING_MESSAGE,
                SendMessageParams(message=Message.user("x")),
                ALICE,
            )
        with pytest.raises(PushNotificationNotSupported):
            bare.dispatch(Operation.LIST_PUSH_CONFIGS, ListPushConfigsParams(task_id="t"), ALICE)
        with pytest.raises(UnsupportedOperation):
            bare.dispatch(Operation.GET_EXTENDED_CARD, None, ALICE)
        with pytest.raises(MethodNotFound):
            bare.dispatch(Operation.SUBSCRIBE_TO_TASK, TaskIdParams(id="t"), ALICE)
    finally:
        bare.close(WAIT)


def test_extended_card_declared_but_missing_is_not_configured(
    handler: DefaultRequestHandler,
) -> None:
    with pytest.raises(ExtendedAgentCardNotConfigured):
        handler.dispatch(Operation.GET_EXTENDED_CARD, None, ALICE)


def test_extended_card_may_depend_on_the_caller(agent: EchoAgent) -> None:
    base = card(extended=True)
    h = DefaultRequestHandler(
        base, agent, extended_card=lambda call: base if call.principal.name == "alice" else None
    )
    try:
        assert h.dispatch(Operation.GET_EXTENDED_CARD, None, ALICE) is base
        with pytest.raises(ExtendedAgentCardNotConfigured):
            h.dispatch(Operation.GET_EXTENDED_CARD, None, BOB)
    finally:
        h.close(WAIT)


def test_after_close_new_messages_fail_with_internal_error(agent: EchoAgent) -> None:
    h = DefaultRequestHandler(card(), agent)
    assert h.close(WAIT)
    with pytest.raises(InternalError):
        send(h, "hello")


def test_context_ids_are_per_caller(handler: DefaultRequestHandler) -> None:
    """Issue 20.7: Bob naming Alice's contextId starts his own conversation; nothing
    tells him Alice uses the id, and Alice's conversation is untouched."""
    task = send(handler, "hello")
    assert isinstance(task, Task)
    assert task.context_id
    bobs = send(handler, "", message=Message.user("hi", context_id=task.context_id), call=BOB)
    assert isinstance(bobs, Task)
    assert bobs.id != task.id
    assert bobs.context_id == task.context_id
    again = send(handler, "", message=Message.user("more", context_id=task.context_id))
    assert isinstance(again, Task)
    assert again.context_id == task.context_id


class _Swarm(EchoAgent):
    """32 threads publish chunks of one artifact while the test reads the task."""

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        aid = updater.add_artifact("", artifact_id="a")
        start = threading.Barrier(32)

        def publish(i: int) -> None:
            start.wait(WAIT)
            for j in range(10):
                updater.add_artifact(f"{i}.{j};", artifact_id=aid, append=True)

        threads = [threading.Thread(target=publish, args=(i,)) for i in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(WAIT)
        updater.complete()


def test_32_publishing_threads_and_concurrent_reads_lose_nothing() -> None:
    h = DefaultRequestHandler(card(), _Swarm())
    try:
        task = send(h, "go", return_immediately=True)
        assert isinstance(task, Task)
        sizes: list[int] = []
        latest: list[Task] = []

        def read_completed() -> bool:
            current = h.dispatch(Operation.GET_TASK, GetTaskParams(id=task.id), ALICE)
            latest[:] = [current]
            sizes.append(len(current.artifacts[0].parts) if current.artifacts else 0)
            return current.status.state is TaskState.completed

        # read as often as possible while the 32 threads publish, until the task completes
        wait_until(read_completed, "the swarm's task to complete", WAIT, interval=0)
        [current] = latest
        assert sizes == sorted(sizes)  # snapshots only ever grow
        pieces = current.artifacts[0].text.split(";")[:-1]
        assert sorted(pieces) == sorted(f"{i}.{j}" for i in range(32) for j in range(10))
        for i in range(32):
            assert [p for p in pieces if p.startswith(f"{i}.")] == [f"{i}.{j}" for j in range(10)]
    finally:
        assert h.close(WAIT)
