"""A2A 1.0 server requirements over the JSON-RPC binding, black-box over HTTP: the
operations (§3.1, §3.2). The rules that cut across them (capabilities, errors, contexts,
versions, data conventions, card, JSON-RPC binding) are in :mod:`.test_a2a_server_rules`.

Every test runs against a2a_sync's server and (``peer``) the official a2a-sdk 1.3.0 server
running the same script, unless its docstring says why it cannot (a capability the peer's
card declares, say). Sections are those of a2aproject/A2A ``docs/specification.md`` (1.0).
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest

from .a2a_wire import (
    TERMINAL,
    WAIT,
    data_lines,
    error_code,
    kind,
    rpc,
    send,
    started,
    stream,
    user,
)

requirement = pytest.mark.requirement


# -- §3.1.1 / §3.1.2 send ------------------------------------------------------------------


@requirement("a2a-1.0-§3.1.1-send-returns-task-or-message")
def test_send_returns_a_task_or_a_message(a2a_server: str) -> None:
    """SendMessage answers with exactly one of a Task or a direct Message."""
    assert set(send(a2a_server, user("hello"))) == {"task"}
    assert set(send(a2a_server, user("reply"))) == {"message"}


@requirement("a2a-1.0-§3.1.1-terminal-task-refuses-messages")
def test_message_to_a_terminal_task_is_unsupported_operation(a2a_server: str) -> None:
    """A message for a task in a terminal state is UnsupportedOperationError (-32004)."""
    task = send(a2a_server, user("hello"))["task"]
    assert task["status"]["state"] in TERMINAL
    follow = user("again", taskId=task["id"], contextId=task["contextId"])
    assert error_code(rpc(a2a_server, "SendMessage", {"message": follow})) == -32004


@requirement("a2a-1.0-§3.1.2-message-stream-one-message-then-close")
def test_message_only_stream_holds_one_message(a2a_server: str) -> None:
    """A streamed direct reply is exactly one Message, then the stream closes."""
    with stream(a2a_server, "SendStreamingMessage", {"message": user("reply")}) as response:
        events = [e["result"] for e in data_lines(response)]
    assert [kind(e) for e in events] == ["message"]


@requirement("a2a-1.0-§3.1.2-task-stream-starts-with-task")
@requirement("a2a-1.0-§3.1.2-task-stream-closes-at-terminal")
def test_task_stream_starts_with_the_task_and_ends_at_its_terminal_state(a2a_server: str) -> None:
    """A task stream begins with the Task and closes once the task is terminal (the
    terminal status update is the last event)."""
    with stream(a2a_server, "SendStreamingMessage", {"message": user("chunks 3")}) as response:
        events = [e["result"] for e in data_lines(response)]
    assert kind(events[0]) == "task"
    assert kind(events[-1]) == "statusUpdate"
    assert events[-1]["statusUpdate"]["status"]["state"] in TERMINAL
    assert all(
        e["statusUpdate"]["status"]["state"] not in TERMINAL
        for e in events[:-1]
        if kind(e) == "statusUpdate"
    )


def _first_stream_answer(url: str, params: dict[str, Any]) -> Any:
    with stream(url, "SendStreamingMessage", params) as response:
        if response.headers["Content-Type"].startswith("text/event-stream"):
            return next(data_lines(response))
        return response.json()


@requirement("a2a-1.0-§3.1.2-stream-to-terminal-task-unsupported")
def test_streaming_to_a_finished_task_is_unsupported_operation(a2a_server: str) -> None:
    task = send(a2a_server, user("hello"))["task"]
    follow = user("again", taskId=task["id"], contextId=task["contextId"])
    assert error_code(_first_stream_answer(a2a_server, {"message": follow})) == -32004


@requirement("a2a-1.0-§3.1.2-stream-unknown-task-not-found")
def test_streaming_to_an_unknown_task_is_task_not_found(a2a_server: str) -> None:
    message = user("hello", taskId="no-such-task")
    assert error_code(_first_stream_answer(a2a_server, {"message": message})) == -32001


@requirement("a2a-1.0-§3.2.2-default-send-waits-for-the-outcome")
@requirement("a2a-1.0-§3.1.1-return-immediately-vs-blocking")
def test_default_send_returns_the_finished_task(a2a_server: str) -> None:
    """Without ``returnImmediately`` SendMessage waits for the outcome: the answer
    carries the terminal state and the artifacts."""
    task = send(a2a_server, user("chunks 2"))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"]


@requirement("a2a-1.0-§3.2.2-blocking-waits-until-terminal")
def test_default_send_returns_at_an_interrupted_state(a2a_server: str) -> None:
    """The reading both servers follow (see the catalogue's spec-conflict entry): a
    waiting send also comes back when the task is interrupted (input required), since it
    cannot reach a terminal state without the caller."""
    task = send(a2a_server, user("need input"))["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


@requirement("a2a-1.0-§3.2.2-return-immediately-does-not-wait")
def test_return_immediately_answers_before_the_task_ends(a2a_server: str) -> None:
    """``returnImmediately`` answers at once with a task still in progress."""
    task = started(a2a_server, "slow 1000")
    assert task["status"]["state"] not in TERMINAL
    rpc(a2a_server, "CancelTask", {"id": task["id"]})


# -- §3.1.3 .. §3.1.5 tasks ----------------------------------------------------------------


@requirement("a2a-1.0-§3.1.3-get-unknown-task-not-found")
def test_get_of_an_unknown_task_is_task_not_found(a2a_server: str) -> None:
    assert error_code(rpc(a2a_server, "GetTask", {"id": "no-such-task"})) == -32001


@requirement("a2a-1.0-§3.2.4-history-length-bounds-history")
def test_history_length_bounds_the_history(a2a_server: str) -> None:
    """historyLength 0 omits the history; N > 0 returns at most N messages."""
    task = send(a2a_server, user("need input"))["task"]
    send(a2a_server, user("Paris", taskId=task["id"], contextId=task["contextId"]))
    full = rpc(a2a_server, "GetTask", {"id": task["id"]})["result"]
    assert len(full["history"]) >= 2
    none = rpc(a2a_server, "GetTask", {"id": task["id"], "historyLength": 0})["result"]
    assert not none.get("history")
    one = rpc(a2a_server, "GetTask", {"id": task["id"], "historyLength": 1})["result"]
    assert one["history"] == full["history"][-1:]


@requirement("a2a-1.0-§3.1.4-list-omits-artifacts-by-default")
def test_list_tasks_omits_artifacts_unless_asked(a2a_server: str) -> None:
    """Without ``includeArtifacts`` no listed task has an ``artifacts`` member at all."""
    context = send(a2a_server, user("hello"))["task"]["contextId"]
    plain = rpc(a2a_server, "ListTasks", {"contextId": context})["result"]
    assert plain["tasks"]
    assert all("artifacts" not in task for task in plain["tasks"])
    full = rpc(a2a_server, "ListTasks", {"contextId": context, "includeArtifacts": True})
    assert all(task["artifacts"] for task in full["result"]["tasks"])


@requirement("a2a-1.0-§3.1.4-list-cursor-pagination")
def test_list_tasks_pages_by_cursor(a2a_server: str) -> None:
    """A page of ``pageSize`` tasks names the next page by ``nextPageToken``."""
    context = send(a2a_server, user("hello"))["task"]["contextId"]
    send(a2a_server, user("hello", contextId=context))
    page1 = rpc(a2a_server, "ListTasks", {"contextId": context, "pageSize": 1})["result"]
    assert len(page1["tasks"]) == 1
    assert page1["nextPageToken"]
    params = {"contextId": context, "pageSize": 1, "pageToken": page1["nextPageToken"]}
    page2 = rpc(a2a_server, "ListTasks", params)["result"]
    assert len(page2["tasks"]) == 1
    assert page2["tasks"][0]["id"] != page1["tasks"][0]["id"]


@requirement("a2a-1.0-§3.1.4-list-next-page-token-always-present")
def test_the_last_page_carries_an_empty_next_page_token(a2a_server: str) -> None:
    """``nextPageToken`` is always present; ``""`` marks the last page."""
    context = send(a2a_server, user("hello"))["task"]["contextId"]
    last = rpc(a2a_server, "ListTasks", {"contextId": context, "pageSize": 10})["result"]
    assert last["nextPageToken"] == ""


@requirement("a2a-1.0-§3.1.4-list-newest-update-first")
def test_list_tasks_is_sorted_by_last_update_newest_first(a2a_server: str) -> None:
    """The task updated last comes first, even when it was created first."""
    older = send(a2a_server, user("need input"))["task"]
    context = older["contextId"]
    send(a2a_server, user("hello", contextId=context))
    send(a2a_server, user("Paris", taskId=older["id"], contextId=context))  # update the first
    listed = rpc(a2a_server, "ListTasks", {"contextId": context})["result"]["tasks"]
    assert listed[0]["id"] == older["id"]
    stamps = [t["status"]["timestamp"] for t in listed]
    assert stamps == sorted(stamps, reverse=True)


@requirement("a2a-1.0-§3.1.5-cancel-terminal-task-not-cancelable")
def test_cancel_of_a_finished_task_is_not_cancelable(a2a_server: str) -> None:
    task = send(a2a_server, user("hello"))["task"]
    assert error_code(rpc(a2a_server, "CancelTask", {"id": task["id"]})) == -32002


@requirement("a2a-1.0-§3.1.5-cancel-returns-updated-task")
def test_cancel_returns_the_canceled_task(a2a_server: str) -> None:
    task = started(a2a_server, "slow 1000")
    answer = rpc(a2a_server, "CancelTask", {"id": task["id"]})["result"]
    assert answer["id"] == task["id"]
    assert answer["status"]["state"] == "TASK_STATE_CANCELED"


@requirement("a2a-1.0-§3.3.1-cancel-idempotent-vs-not-cancelable")
def test_a_second_cancel_returns_the_canceled_task(own_server: str) -> None:
    """The reading a2a_sync follows for 1.0 (see the catalogue's spec-conflict entry):
    cancelling is idempotent, a repeat returns the task, still canceled. (a2a_sync only:
    a2a-sdk 1.3.0 follows the other reading and answers -32002.)"""
    task = started(own_server, "slow 1000")
    first = rpc(own_server, "CancelTask", {"id": task["id"]})["result"]
    assert first["status"]["state"] == "TASK_STATE_CANCELED"
    again = rpc(own_server, "CancelTask", {"id": task["id"]})["result"]
    assert (again["id"], again["status"]) == (first["id"], first["status"])


@requirement("a2a-1.0-§3.1.5-cancel-unknown-task-not-found")
def test_cancel_of_an_unknown_task_is_task_not_found(a2a_server: str) -> None:
    assert error_code(rpc(a2a_server, "CancelTask", {"id": "no-such-task"})) == -32001


# -- §3.1.6 subscribe, §3.5.2 event delivery -----------------------------------------------


@requirement("a2a-1.0-§3.1.6-subscribe-first-event-is-task")
@requirement("a2a-1.0-§3.1.6-subscribe-open-until-terminal")
def test_subscribe_starts_with_the_task_and_stays_open_until_terminal(a2a_server: str) -> None:
    """The first event is the Task as it is now; an interrupted task's stream stays open
    and shows the follow-up that completes it, and ends with the terminal update."""
    task = send(a2a_server, user("need input"))["task"]
    with stream(a2a_server, "SubscribeToTask", {"id": task["id"]}) as response:
        events = data_lines(response)
        first = next(events)["result"]
        assert first["task"]["id"] == task["id"]
        assert first["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        send(a2a_server, user("Paris", taskId=task["id"], contextId=task["contextId"]))
        rest = [e["result"] for e in events]
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@requirement("a2a-1.0-§3.1.6-subscribe-terminal-task-unsupported")
def test_subscribe_to_a_finished_task_is_unsupported_operation(a2a_server: str) -> None:
    task = send(a2a_server, user("hello"))["task"]
    with stream(a2a_server, "SubscribeToTask", {"id": task["id"]}) as response:
        if response.headers["Content-Type"].startswith("text/event-stream"):
            answer = next(data_lines(response))
        else:
            answer = response.json()
    assert error_code(answer) == -32004


@requirement("a2a-1.0-§3.1.6-subscribe-unknown-task-not-found")
def test_subscribe_to_an_unknown_task_is_task_not_found(a2a_server: str) -> None:
    with stream(a2a_server, "SubscribeToTask", {"id": "no-such-task"}) as response:
        if response.headers["Content-Type"].startswith("text/event-stream"):
            answer = next(data_lines(response))
        else:
            answer = response.json()
    assert error_code(answer) == -32001


@requirement("a2a-1.0-§3.5.2-events-in-generation-order")
def test_stream_events_arrive_in_the_order_generated(a2a_server: str) -> None:
    """Artifact chunks of one artifact arrive in the order the agent produced them."""
    with stream(a2a_server, "SendStreamingMessage", {"message": user("chunks 6")}) as response:
        events = [e["result"] for e in data_lines(response)]
    texts = [
        part["text"]
        for e in events
        if kind(e) == "artifactUpdate"
        for part in e["artifactUpdate"]["artifact"]["parts"]
    ]
    numbers = [int(re.sub(r"\D", "", text)) for text in texts]
    assert numbers == list(range(6))


@requirement("a2a-1.0-§3.5.2-broadcast-to-every-stream")
@requirement("a2a-1.0-§3.5.2-closing-one-stream-leaves-others")
def test_every_stream_of_a_task_gets_the_same_events(a2a_server: str) -> None:
    """Two subscribers of one task get the same events in the same order; a third that
    closes early does not disturb them."""
    task = send(a2a_server, user("need input"))["task"]
    seen: list[list[Any]] = [[], []]
    ready = [threading.Event(), threading.Event()]

    def follow(index: int) -> None:
        with stream(a2a_server, "SubscribeToTask", {"id": task["id"]}) as response:
            for event in data_lines(response):
                seen[index].append(event["result"])
                ready[index].set()

    threads = [
        threading.Thread(target=follow, args=(i,), name=f"a2a-sync-test-sub-{i}") for i in (0, 1)
    ]
    for thread in threads:
        thread.start()
    assert all(event.wait(WAIT) for event in ready)
    with stream(a2a_server, "SubscribeToTask", {"id": task["id"]}) as early:
        next(data_lines(early))  # opened, then closed at once
    send(a2a_server, user("Paris", taskId=task["id"], contextId=task["contextId"]))
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert seen[0] == seen[1]
    assert seen[0][-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- §3.1.7 .. §3.1.10 push configs ----------------------------------------------------------


def _push_config(task_id: str, url: str = "https://hooks.example/a2a") -> dict[str, Any]:
    return {"taskId": task_id, "url": url, "token": "tok-123"}


def _set(server: str, task_id: str, url: str = "https://hooks.example/a2a") -> Any:
    params = _push_config(task_id, url)
    answer = rpc(server, "CreateTaskPushNotificationConfig", params)
    if error_code(answer) == -32601:  # the draft's name for the same method
        answer = rpc(server, "SetTaskPushNotificationConfig", params)
    return answer


@requirement("a2a-1.0-§3.1.7-push-config-persists")
@requirement("a2a-1.0-§3.1.8-push-get-returns-details")
def test_a_push_config_is_kept_and_read_back(a2a_server: str) -> None:
    """A config set for a task is kept and read back with its webhook URL."""
    task = started(a2a_server, "slow 1000")
    created = _set(a2a_server, task["id"])["result"]
    assert created["id"]
    params = {"taskId": task["id"], "id": created["id"]}
    got = rpc(a2a_server, "GetTaskPushNotificationConfig", params)["result"]
    assert got["url"] == "https://hooks.example/a2a"
    assert got["taskId"] == task["id"]
    rpc(a2a_server, "CancelTask", {"id": task["id"]})


@requirement("a2a-1.0-§3.1.8-push-get-missing-fails")
def test_get_of_a_missing_push_config_fails(a2a_server: str) -> None:
    task = started(a2a_server, "slow 1000")
    params = {"taskId": task["id"], "id": "no-such-config"}
    assert error_code(rpc(a2a_server, "GetTaskPushNotificationConfig", params)) is not None
    rpc(a2a_server, "CancelTask", {"id": task["id"]})


@requirement("a2a-1.0-§3.1.9-push-list-returns-all")
def test_list_returns_every_push_config_of_the_task(a2a_server: str) -> None:
    task = started(a2a_server, "slow 1000")
    ids = {_set(a2a_server, task["id"], f"https://hooks.example/{n}")["result"]["id"] for n in "ab"}
    listed = rpc(a2a_server, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    if error_code(listed) == -32601:  # the draft's singular name
        listed = rpc(a2a_server, "ListTaskPushNotificationConfig", {"taskId": task["id"]})
    assert {c["id"] for c in listed["result"]["configs"]} == ids
    rpc(a2a_server, "CancelTask", {"id": task["id"]})


@requirement("a2a-1.0-§3.1.10-push-delete-removes-idempotently")
def test_delete_removes_the_config_and_is_idempotent(a2a_server: str) -> None:
    """After a delete the config is gone; deleting it again has the same effect."""
    task = started(a2a_server, "slow 1000")
    config = _set(a2a_server, task["id"])["result"]
    params = {"taskId": task["id"], "id": config["id"]}
    assert "error" not in rpc(a2a_server, "DeleteTaskPushNotificationConfig", params)
    assert error_code(rpc(a2a_server, "GetTaskPushNotificationConfig", params)) is not None
    assert "error" not in rpc(a2a_server, "DeleteTaskPushNotificationConfig", params)
    rpc(a2a_server, "CancelTask", {"id": task["id"]})
