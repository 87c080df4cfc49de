"""A2A 1.0 server requirements over the JSON-RPC binding, black-box over HTTP.

Every test runs against a2a_sync's server and (``peer``) the official a2a-sdk 1.3.0 server
running the same script, unless its docstring says why it cannot (a capability the peer's
card declares, say). Sections are those of a2aproject/A2A ``docs/specification.md`` (1.0).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.types import AgentExtension
from tests.server.agents import card

from .a2a_wire import (
    TERMINAL,
    V1,
    WAIT,
    data_lines,
    error_code,
    kind,
    post,
    rpc,
    send,
    stream,
    user,
)
from .agents import ConformanceAgent

requirement = pytest.mark.requirement


def own_app(
    agent: ConformanceAgent, *, streaming: bool = True, push: bool = True, extended: bool = False
) -> A2AApplication:
    """a2a_sync's server with other card capabilities (capability-validation tests)."""
    declared = card(streaming=streaming, push=push, extended=extended)
    return A2AApplication(attrs.evolve(declared, supported_interfaces=[]), agent)


def started(url: str, text: str) -> dict[str, Any]:
    """A task sent with ``returnImmediately`` (still running when it comes back)."""
    result = send(url, user(text), configuration={"returnImmediately": True})
    return dict(result["task"])


def keys(value: Any) -> Iterator[str]:
    """Every object key in a JSON value, except inside free-form ``metadata``/``data``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            if key not in ("metadata", "data"):
                yield from keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item)


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
@pytest.mark.known_failure
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


# -- §3.1.11, §3.3.2, §3.3.4 capabilities and errors ----------------------------------------


@requirement("a2a-1.0-§3.3.2-reject-missing-credentials")
def test_extended_card_needs_the_declared_credentials(a2a_server: str) -> None:
    """The extended card is refused without credentials and served with them."""
    body = {"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard", "params": {}}
    anonymous = post(a2a_server, body, V1)
    assert anonymous.status_code == 401 or error_code(anonymous.json()) is not None
    bearer = {**V1, "Authorization": "Bearer test-token"}
    assert post(a2a_server, body, bearer).json()["result"]["name"]


@requirement("a2a-1.0-§3.3.4-streaming-undeclared-unsupported")
def test_streaming_calls_without_the_capability_are_unsupported(agent: ConformanceAgent) -> None:
    """A card without ``streaming``: SendStreamingMessage and SubscribeToTask are -32004.
    (a2a_sync only: the peer's card declares streaming.)"""
    with serve_in_thread(own_app(agent, streaming=False)) as url:
        base = url + "/"
        task = send(base, user("need input"))["task"]
        for method, params in (
            ("SendStreamingMessage", {"message": user("hi")}),
            ("SubscribeToTask", {"id": task["id"]}),
        ):
            assert error_code(rpc(base, method, params)) == -32004, method


@requirement("a2a-1.0-§3.3.4-push-undeclared-not-supported")
def test_push_calls_without_the_capability_are_push_not_supported(
    agent: ConformanceAgent,
) -> None:
    """A card without ``pushNotifications``: every push config method is -32003.
    (a2a_sync only: the peer's card declares push.)"""
    with serve_in_thread(own_app(agent, push=False)) as url:
        base = url + "/"
        task = send(base, user("need input"))["task"]
        ref = {"taskId": task["id"], "id": "c1"}
        for method, params in (
            ("CreateTaskPushNotificationConfig", _push_config(task["id"])),
            ("GetTaskPushNotificationConfig", ref),
            ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
            ("DeleteTaskPushNotificationConfig", ref),
        ):
            assert error_code(rpc(base, method, params)) == -32003, method


@requirement("a2a-1.0-§3.3.4-extended-card-undeclared-unsupported")
@requirement("a2a-1.0-§3.3.4-extended-card-unconfigured")
def test_extended_card_capability_errors(agent: ConformanceAgent) -> None:
    """Not declared: -32004; declared without a configured card: -32007. (a2a_sync only:
    the peer has an extended card.)"""
    body = {"jsonrpc": "2.0", "id": 4, "method": "GetExtendedAgentCard", "params": {}}
    for extended, code in ((False, -32004), (True, -32007)):
        with serve_in_thread(own_app(agent, extended=extended)) as url:
            assert error_code(post(url + "/", body, V1).json()) == code


@requirement("a2a-1.0-§3.3.4-required-extension-enforced")
@pytest.mark.known_failure
def test_a_required_extension_the_client_did_not_declare_is_refused(
    agent: ConformanceAgent,
) -> None:
    """A card extension with ``required: true``: a request without it in A2A-Extensions
    is ExtensionSupportRequiredError (-32008); with it, served. (a2a_sync only: the peer's
    card requires no extension.)"""
    uri = "https://example.com/ext/required/v1"
    base_card = card()
    required = attrs.evolve(
        base_card,
        supported_interfaces=[],
        capabilities=attrs.evolve(
            base_card.capabilities, extensions=[AgentExtension(uri=uri, required=True)]
        ),
    )
    with serve_in_thread(A2AApplication(required, agent)) as url:
        plain = rpc(url + "/", "SendMessage", {"message": user("hello")})
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {"message": user("hi")},
        }
        declared = post(url + "/", body, {**V1, "A2A-Extensions": uri}).json()
    assert error_code(plain) == -32008
    assert "result" in declared


@requirement("a2a-1.0-§3.3.2-validate-input")
@requirement("a2a-1.0-§5.7-required-arrays-non-empty")
def test_invalid_params_are_refused_before_processing(a2a_server: str) -> None:
    """A message without parts, or no message at all, is -32602."""
    no_parts = {"message": {**user("x"), "parts": []}}
    assert error_code(rpc(a2a_server, "SendMessage", no_parts)) == -32602
    assert error_code(rpc(a2a_server, "SendMessage", {})) == -32602


@requirement("a2a-1.0-§3.3.2-error-has-code-and-message")
def test_every_error_carries_a_code_and_a_message(a2a_server: str) -> None:
    answer = rpc(a2a_server, "GetTask", {"id": "no-such-task"})
    assert isinstance(answer["error"]["code"], int)
    assert isinstance(answer["error"]["message"], str)
    assert answer["error"]["message"]


def _as_alice(url: str, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 8, "method": method, "params": params}
    return post(url, body, {**V1, "Authorization": "Bearer test-token"}).json()


@requirement("a2a-1.0-§3.1.4-list-only-visible-tasks")
def test_list_shows_only_the_callers_tasks(own_server: str) -> None:
    """A task created by one caller is not listed for another. (a2a_sync only: the peer
    script has a single caller.)"""
    context = "ctx-visibility"
    mine = _as_alice(own_server, "SendMessage", {"message": user("hello", contextId=context)})
    assert mine["result"]["task"]["id"]
    alice = _as_alice(own_server, "ListTasks", {"contextId": context})["result"]["tasks"]
    anonymous = rpc(own_server, "ListTasks", {"contextId": context})["result"].get("tasks", [])
    assert [t["id"] for t in alice] == [mine["result"]["task"]["id"]]
    assert anonymous == []


@requirement("a2a-1.0-§3.3.2-no-existence-leak")
def test_another_callers_task_looks_like_no_task(own_server: str) -> None:
    """Reading or cancelling another caller's task is answered exactly like a task that
    does not exist (-32001). (a2a_sync only: the peer script has a single caller.)"""
    theirs = _as_alice(own_server, "SendMessage", {"message": user("need input")})
    task_id = theirs["result"]["task"]["id"]
    for method in ("GetTask", "CancelTask"):
        assert error_code(rpc(own_server, method, {"id": task_id})) == -32001, method


# -- §3.4 contexts --------------------------------------------------------------------------


@requirement("a2a-1.0-§3.4.1-context-id-generated")
def test_a_context_id_is_generated_when_the_message_has_none(a2a_server: str) -> None:
    assert send(a2a_server, user("hello"))["task"]["contextId"]
    assert send(a2a_server, user("reply"))["message"]["contextId"]


@requirement("a2a-1.0-§3.4.1-context-id-preserved")
def test_a_client_context_id_is_kept(a2a_server: str) -> None:
    assert send(a2a_server, user("hello", contextId="ctx-kept"))["task"]["contextId"] == "ctx-kept"


@requirement("a2a-1.0-§3.4.2-context-inferred-from-task")
def test_the_context_is_taken_from_the_task(a2a_server: str) -> None:
    """A follow-up with only ``taskId`` continues in the task's context."""
    task = send(a2a_server, user("need input"))["task"]
    after = send(a2a_server, user("Paris", taskId=task["id"]))["task"]
    assert after["contextId"] == task["contextId"]


@requirement("a2a-1.0-§3.4.2-mismatched-context-rejected")
def test_a_context_that_contradicts_the_task_is_refused(a2a_server: str) -> None:
    task = send(a2a_server, user("need input"))["task"]
    follow = user("Paris", taskId=task["id"], contextId="another-context")
    assert error_code(rpc(a2a_server, "SendMessage", {"message": follow})) is not None


# -- §3.6 versions ----------------------------------------------------------------------------


@requirement("a2a-1.0-§3.6.2-unsupported-version-refused")
def test_an_unsupported_version_is_version_not_supported(a2a_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message": user("x")}}
    response = post(a2a_server, body, {"A2A-Version": "9.9"})
    assert error_code(response.json()) == -32009


@requirement("a2a-1.0-§3.6-patch-version-ignored")
def test_a_patch_number_does_not_change_the_version(a2a_server: str) -> None:
    """``A2A-Version: 1.0.7`` is 1.0: the patch number takes no part in negotiation."""
    body = {"jsonrpc": "2.0", "id": 6, "method": "GetTask", "params": {"id": "none"}}
    answer = post(a2a_server, body, {"A2A-Version": "1.0.7"}).json()
    assert error_code(answer) == -32001


@requirement("a2a-1.0-§3.6.2-requested-version-semantics")
@requirement("a2a-1.0-§3.6.2-missing-version-means-v03")
@requirement("a2a-1.0-§5.5-enum-values-kebab-case")
def test_each_request_is_served_in_the_version_it_names(a2a_server: str) -> None:
    """The same task read as 1.0 has ProtoJSON states; as 0.3 (no header) the 0.3 shape."""
    task = send(a2a_server, user("hello"))["task"]
    as10 = rpc(a2a_server, "GetTask", {"id": task["id"]})["result"]
    as03 = rpc(a2a_server, "tasks/get", {"id": task["id"]}, version=None)["result"]
    assert as10["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (as03["kind"], as03["status"]["state"]) == ("task", "completed")


@requirement("a2a-1.0-§9.2-service-parameters-case-insensitive")
def test_service_parameter_names_are_case_insensitive(a2a_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "none"}}
    answer = post(a2a_server, body, {"a2a-version": "1.0"}).json()
    assert error_code(answer) == -32001  # a 1.0 method, served as 1.0


# -- §5 data conventions ----------------------------------------------------------------------


@requirement("a2a-1.0-§5.5-camel-case-field-names")
def test_output_field_names_are_camel_case(a2a_server: str) -> None:
    with stream(a2a_server, "SendStreamingMessage", {"message": user("chunks 2")}) as response:
        events = [e["result"] for e in data_lines(response)]
    task_id = events[0]["task"]["id"]
    documents = [*events, rpc(a2a_server, "GetTask", {"id": task_id})["result"]]
    assert not [k for k in keys(documents) if "_" in k]


@requirement("a2a-1.0-§5.6.1-timestamps-iso-utc")
def test_timestamps_are_iso8601_utc(a2a_server: str) -> None:
    task = send(a2a_server, user("hello"))["task"]
    stamp = task["status"]["timestamp"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", stamp), stamp


@requirement("a2a-1.0-§5.7-unknown-fields-ignored")
def test_unknown_fields_are_ignored(a2a_server: str) -> None:
    message = {**user("hello"), "futureField": {"x": 1}}
    result = send(a2a_server, message, futureParam=True)
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- §8 card, §9 JSON-RPC binding -------------------------------------------------------------


@requirement("a2a-1.0-§8.1-card-published")
@requirement("a2a-1.0-§8.3.1-interfaces-declare-binding-and-url")
def test_the_card_is_published_and_its_interfaces_work(a2a_server: str) -> None:
    """The well-known card is served; each JSON-RPC interface names its binding, version
    and a URL that answers A2A JSON-RPC."""
    response = requests.get(a2a_server + ".well-known/agent-card.json", timeout=WAIT)
    assert response.status_code == 200
    served = response.json()
    assert served["name"]
    interfaces = served["supportedInterfaces"]
    assert interfaces
    for interface in interfaces:
        assert interface["url"]
        assert interface["protocolBinding"]
        assert interface["protocolVersion"]
    jsonrpc10 = [
        i for i in interfaces if (i["protocolBinding"], i["protocolVersion"]) == ("JSONRPC", "1.0")
    ]
    answer = rpc(jsonrpc10[0]["url"], "GetTask", {"id": "none"})
    assert error_code(answer) == -32001


@requirement("a2a-1.0-§9.1-json-content-type")
@requirement("a2a-1.0-§9.3-jsonrpc-2-envelope")
def test_responses_are_jsonrpc_2_with_the_request_id(a2a_server: str) -> None:
    for request_id in ("abc-1", 42):
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "SendMessage",
            "params": {"message": user("hello")},
        }
        response = post(a2a_server, body, V1)
        assert response.headers["Content-Type"].startswith("application/json")
        answer = response.json()
        assert (answer["jsonrpc"], answer["id"]) == ("2.0", request_id)
        assert ("result" in answer) != ("error" in answer)


@requirement("a2a-1.0-§9.4.2-sse-of-jsonrpc-responses")
def test_streams_are_sse_of_jsonrpc_responses(a2a_server: str) -> None:
    params = {"message": user("chunks 2")}
    with stream(a2a_server, "SendStreamingMessage", params, request_id="s-1") as response:
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = list(data_lines(response))
    assert events
    assert all((e["jsonrpc"], e["id"]) == ("2.0", "s-1") and "result" in e for e in events)


@requirement("a2a-1.0-§9.5-parse-error")
def test_invalid_json_is_a_parse_error(a2a_server: str) -> None:
    response = requests.post(
        a2a_server,
        data=b'{"jsonrpc": "2.0", "id": 1, "method": ',
        headers={**V1, "Content-Type": "application/json"},
        timeout=WAIT,
    )
    answer = response.json()
    assert error_code(answer) == -32700
    assert answer["id"] is None


@requirement("a2a-1.0-§9.5-invalid-request")
def test_a_request_object_that_is_not_jsonrpc_is_invalid_request(a2a_server: str) -> None:
    answer = post(a2a_server, {"jsonrpc": "1.0", "id": 1, "method": "GetTask"}, V1).json()
    assert error_code(answer) == -32600


@requirement("a2a-1.0-§9.5-method-not-found")
def test_an_unknown_method_is_method_not_found(a2a_server: str) -> None:
    assert error_code(rpc(a2a_server, "NoSuchMethod", {})) == -32601
