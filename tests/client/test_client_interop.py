"""Every A2AClient operation against the official a2a-sdk 1.3 agent, on A2A 1.0 and 0.3.

The agent (:mod:`tests.peers.a2a_sdk_agent`) serves both revisions on one URL; the
``peer_client`` fixture discovers it from its card and pins one revision, so each test
here runs once per revision.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from a2a_sync.client import A2AClient, BearerToken, TaskStream
from a2a_sync.errors import (
    Cancelled,
    HTTPStatusError,
    InternalError,
    StreamInterrupted,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
    VersionNotSupported,
)
from a2a_sync.types import (
    Message,
    Part,
    PushNotificationConfig,
    Role,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from tests.peers.fixtures import AgentProcess
from tests.support.fixtures import FaultProxyFactory

from .conftest import PEER_TIMEOUT

pytestmark = pytest.mark.peer

WAIT = 5.0  # bound of every wait on another thread


def chunk_text(count: int) -> str:
    return "".join(f"{i}," for i in range(count))


def send_task(client: A2AClient, message: Any, **kwargs: Any) -> Task:
    result = client.send_message(message, **kwargs)
    assert isinstance(result, Task)
    return result


# -- discovery ---------------------------------------------------------------------------


def test_from_url_prefers_the_1_0_interface(a2a_sdk_agent: AgentProcess) -> None:
    with A2AClient.from_url(a2a_sdk_agent.url) as client:
        assert client.revision == "1.0"
        assert client.url == a2a_sdk_agent.url
        assert client.card is not None
        assert client.card.name == "Scripted"
        assert client.card.capabilities.streaming


def test_refresh_card_is_answered_not_modified(peer_client: A2AClient) -> None:
    before = peer_client.card
    # a2a-sdk answers If-None-Match with 304, so the client keeps the very same card object.
    assert peer_client.refresh_card() is before


def test_extended_card_needs_the_bearer_token(
    a2a_sdk_agent: AgentProcess, peer_client: A2AClient, revision: str
) -> None:
    card = peer_client.get_extended_card()
    assert card.name == "Scripted (extended)"
    assert {s.id for s in card.skills} == {"script", "secret"}
    assert peer_client.extended_card == card
    anonymous = A2AClient.from_url(a2a_sdk_agent.url, revisions=(revision,))  # type: ignore[arg-type]
    with anonymous, pytest.raises(HTTPStatusError) as info:
        anonymous.get_extended_card()
    assert info.value.status_code == 401


# -- send -----------------------------------------------------------------------------------


def test_send_message_blocks_until_the_task_completes(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "echo hello")
    assert task.state is TaskState.completed
    assert [a.name for a in task.artifacts] == ["echo"]
    assert task.text == "hello"
    assert task.history[0].text == "echo hello"


def test_send_message_round_trips_file_and_data_parts(peer_client: A2AClient) -> None:
    parts = [
        Part.from_text("echo parts"),
        Part.from_data({"city": "Paris", "n": 3}),
        Part.file_bytes(b"\x00\x01binary", media_type="application/octet-stream", filename="b"),
        Part.file_url("https://example.com/a.png", media_type="image/png"),
    ]
    task = send_task(peer_client, parts)
    (artifact,) = task.artifacts
    assert artifact.parts[0].text == "parts"
    assert artifact.parts[1].data == {"city": "Paris", "n": 3}
    assert artifact.parts[2].raw == b"\x00\x01binary"
    assert artifact.parts[2].media_type == "application/octet-stream"
    assert artifact.parts[3].url == "https://example.com/a.png"


def test_send_message_return_immediately_does_not_wait(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "slow 5", return_immediately=True)
    assert not task.is_terminal
    with peer_client.subscribe(task.id) as stream:
        assert stream.get_final_task().state is TaskState.completed


def test_reply_comes_back_as_a_message(peer_client: A2AClient) -> None:
    result = peer_client.send_message("reply")
    assert isinstance(result, Message)
    assert result.role is Role.agent
    assert result.text == "hello from reply"


def test_input_required_task_is_continued_with_reply(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "need input")
    assert task.state is TaskState.input_required
    assert task.text == "which city?"
    answered = peer_client.reply(task, "Paris")
    assert isinstance(answered, Task)
    assert answered.id == task.id
    assert answered.context_id == task.context_id
    assert answered.state is TaskState.completed
    assert answered.text == "city: Paris"


@pytest.mark.parametrize(
    ("text", "state", "reason"),
    [("fail", TaskState.failed, "it broke"), ("reject", TaskState.rejected, "not doing that")],
)
def test_unsuccessful_tasks_carry_their_state_and_reason(
    peer_client: A2AClient, text: str, state: TaskState, reason: str
) -> None:
    task = send_task(peer_client, text)
    assert task.state is state
    assert task.status.message is not None
    assert task.status.message.text == reason


def test_message_to_a_finished_task_is_unsupported(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "echo done")
    with pytest.raises(UnsupportedOperation):
        peer_client.send_message("more", task_id=task.id)


# -- tasks ------------------------------------------------------------------------------------


def test_get_task_returns_what_send_returned(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "echo stored")
    assert peer_client.get_task(task.id) == task


def test_get_task_history_length_trims_history(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "need input")
    peer_client.reply(task, "Rome")
    full = peer_client.get_task(task.id)
    assert len(full.history) >= 3
    trimmed = peer_client.get_task(task.id, history_length=1)
    assert trimmed.history == full.history[-1:]


def test_get_unknown_task_raises_task_not_found(peer_client: A2AClient) -> None:
    with pytest.raises(TaskNotFound) as info:
        peer_client.get_task(str(uuid.uuid4()))
    assert info.value.code == -32001


def test_list_tasks_pages_through_a_context(peer_client: A2AClient, revision: str) -> None:
    if revision == "0.3":
        with pytest.raises(UnsupportedOperation):
            peer_client.list_tasks()
        return
    context_id = str(uuid.uuid4())
    sent = [send_task(peer_client, f"echo {i}", context_id=context_id) for i in range(3)]
    page = peer_client.list_tasks(context_id=context_id, page_size=2, include_artifacts=True)
    assert len(page.tasks) == 2
    assert page.next_page_token
    assert page.total_size == 3
    listed = list(peer_client.iter_tasks(context_id=context_id, page_size=2))
    assert {t.id for t in listed} == {t.id for t in sent}
    assert all(t.state is TaskState.completed for t in listed)


def test_cancel_running_task(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "slow 100", return_immediately=True)
    canceled = peer_client.cancel_task(task.id)
    assert canceled.id == task.id
    assert canceled.state is TaskState.canceled
    assert peer_client.get_task(task.id).state is TaskState.canceled
    with pytest.raises(TaskNotCancelable):
        peer_client.cancel_task(task.id)


def test_cancel_unknown_task_raises_task_not_found(peer_client: A2AClient) -> None:
    with pytest.raises(TaskNotFound):
        peer_client.cancel_task(str(uuid.uuid4()))


# -- streaming ------------------------------------------------------------------------------


def test_stream_folds_chunked_artifact_into_the_stored_task(peer_client: A2AClient) -> None:
    with peer_client.stream_message("chunks 6") as stream:
        events = list(stream)
        final = stream.get_final_task()
    assert isinstance(events[0], Task)
    chunks = events[1:-1]
    assert all(isinstance(e, TaskArtifactUpdateEvent) for e in chunks)
    assert [e.append for e in chunks] == [False] + [True] * 5  # type: ignore[union-attr]
    assert [e.last_chunk for e in chunks] == [False] * 5 + [True]  # type: ignore[union-attr]
    assert isinstance(events[-1], TaskStatusUpdateEvent)
    assert final.state is TaskState.completed
    (artifact,) = final.artifacts
    assert artifact.text == chunk_text(6)
    assert final == peer_client.get_task(final.id)
    assert stream.done


def test_stream_of_a_reply_is_one_message(peer_client: A2AClient) -> None:
    with peer_client.stream_message("reply") as stream:
        events = list(stream)
    assert len(events) == 1
    assert isinstance(events[0], Message)
    assert stream.message == events[0]
    assert stream.get_final_result() == events[0]
    assert stream.task is None


def test_stream_ends_at_input_required_and_the_answer_streams_on(
    peer_client: A2AClient,
) -> None:
    # a2a-sdk's 0.3 layer marks the input-required update final:false; the stream must
    # still end there (1.0: the server closes it).
    with peer_client.stream_message("need input") as stream:
        asked = stream.get_final_task()
    assert asked.state is TaskState.input_required
    assert asked == peer_client.get_task(asked.id)
    with peer_client.stream_message("Oslo", task_id=asked.id) as stream:
        answered = stream.get_final_task()
    assert answered.id == asked.id
    assert answered.state is TaskState.completed
    assert answered.text == "city: Oslo"
    assert answered == peer_client.get_task(asked.id)


def test_stream_to_a_finished_task_raises_unsupported_operation(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "echo over")
    stream = peer_client.stream_message("again", task_id=task.id)
    with stream, pytest.raises(UnsupportedOperation):
        list(stream)


def test_subscribe_to_running_task_gets_snapshot_then_the_rest(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "slow 8", return_immediately=True)
    with peer_client.subscribe(task.id) as stream:
        first = next(stream)
        assert isinstance(first, Task)
        assert first.id == task.id
        final = stream.get_final_task()
    assert final.state is TaskState.completed
    assert final.artifacts[0].text == chunk_text(8)
    assert final == peer_client.get_task(task.id)


def test_cancel_while_subscribed_ends_the_stream_canceled(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "slow 100", return_immediately=True)
    with peer_client.subscribe(task.id) as stream:
        assert isinstance(next(stream), Task)
        assert isinstance(next(stream), TaskArtifactUpdateEvent)
        peer_client.cancel_task(task.id)
        final = stream.get_final_task()
    assert final.state is TaskState.canceled
    assert len(final.artifacts[0].parts) < 100


def test_subscribe_to_finished_task_raises_unsupported_operation(
    peer_client: A2AClient,
) -> None:
    task = send_task(peer_client, "echo finished")
    with pytest.raises(UnsupportedOperation), peer_client.subscribe(task.id) as stream:
        list(stream)


def test_subscribe_to_unknown_task_raises_task_not_found(peer_client: A2AClient) -> None:
    with pytest.raises(TaskNotFound), peer_client.subscribe(str(uuid.uuid4())) as stream:
        list(stream)


def test_close_from_another_thread_stops_a_stream(peer_client: A2AClient) -> None:
    got_first = threading.Event()
    seen: list[StreamEvent] = []

    def consume(stream: TaskStream) -> None:
        for event in stream:
            seen.append(event)
            got_first.set()

    with peer_client.stream_message("slow 200") as stream:

        def close_after_first_event() -> None:
            if got_first.wait(WAIT):
                stream.close()

        closer = threading.Thread(target=close_after_first_event, name="a2a-sync-test-closer")
        closer.start()
        with pytest.raises(Cancelled):
            consume(stream)
        closer.join(WAIT)
    assert not closer.is_alive()
    assert 1 <= len(seen) < 200
    assert stream.done
    assert stream.task_id is not None
    peer_client.cancel_task(stream.task_id)


# -- push notification configs ---------------------------------------------------------------


def test_push_config_create_get_list_delete(peer_client: A2AClient) -> None:
    task = send_task(peer_client, "need input")
    config = PushNotificationConfig(
        url="https://hooks.example.com/a2a", id="cfg-1", token="hook-secret"
    )
    created = peer_client.create_push_config(task.id, config)
    assert (created.id, created.url, created.task_id) == ("cfg-1", config.url, task.id)
    assert peer_client.get_push_config(task.id, "cfg-1") == created
    second = peer_client.create_push_config(
        task.id, PushNotificationConfig(url="https://hooks.example.com/b", id="cfg-2")
    )
    listed = peer_client.list_push_configs(task.id)
    assert {c.id for c in listed.configs} == {"cfg-1", "cfg-2"}
    peer_client.delete_push_config(task.id, "cfg-1")  # a2a-sdk 0.3: no "result" member
    assert peer_client.list_push_configs(task.id).configs == [second]


# -- versions -------------------------------------------------------------------------------


def test_unsupported_version_header_is_a_typed_error(
    a2a_sdk_agent: AgentProcess, revision: str
) -> None:
    with A2AClient.from_url(
        a2a_sdk_agent.url,
        revisions=(revision,),  # type: ignore[arg-type]
        headers={"A2A-Version": "9.9"},
        credentials=BearerToken(a2a_sdk_agent.token),
        timeout=PEER_TIMEOUT,
    ) as client:
        # a2a-sdk's 0.3 layer reports a version mismatch as -32603, not -32009.
        expected = VersionNotSupported if revision == "1.0" else InternalError
        with pytest.raises(expected):
            client.get_task("any")


# -- dropped streams ----------------------------------------------------------------------------


def test_cut_stream_names_the_task_and_a_resubscribe_finishes_it(
    a2a_sdk_agent: AgentProcess, revision: str, fault_proxy: FaultProxyFactory
) -> None:
    proxy = fault_proxy(a2a_sdk_agent.url)
    proxy.cut_after_events(3)
    with A2AClient(proxy.url + "/", revision=revision, timeout=PEER_TIMEOUT) as client:  # type: ignore[arg-type]
        with client.stream_message("slow 10") as stream, pytest.raises(StreamInterrupted) as info:
            list(stream)
        task_id = info.value.task_id
        assert task_id is not None
        assert stream.task is not None
        assert stream.task.id == task_id
        proxy.clear()
        with client.subscribe(task_id) as resumed:
            final = resumed.get_final_task()
        assert final.state is TaskState.completed
        assert final.artifacts[0].text == chunk_text(10)
        assert final == client.get_task(task_id)
