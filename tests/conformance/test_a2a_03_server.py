"""A2A 0.3 server requirements over JSON-RPC (no ``A2A-Version`` header), black-box.

Sections are those of the A2A 0.3.0 specification (a2aproject/A2A tag ``v0.3.0``,
``docs/specification.md``). Every test runs against a2a_sync's server and (``peer``) the
a2a-sdk 1.3.0 server's 0.3 compatibility mode, unless its docstring says why not.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server import A2AApplication, serve_in_thread
from tests.server.agents import card

from .a2a_wire import WAIT, data_lines, error_code, post, rpc, stream, user03
from .agents import ConformanceAgent

requirement = pytest.mark.requirement
TERMINAL03 = frozenset({"completed", "failed", "canceled", "rejected"})


def send03(url: str, text: str, **configuration: Any) -> Any:
    params: dict[str, Any] = {"message": user03(text)}
    if configuration:
        params["configuration"] = configuration
    answer = rpc(url, "message/send", params, version=None)
    assert "result" in answer, answer
    return answer["result"]


def follow_up03(url: str, task: dict[str, Any], text: str) -> Any:
    message = user03(text, taskId=task["id"], contextId=task["contextId"])
    return rpc(url, "message/send", {"message": message}, version=None)["result"]


@requirement("a2a-0.3-§7.1-send-returns-kind-tagged-task-or-message")
def test_send_returns_a_kind_tagged_task_or_message(a2a_server: str) -> None:
    task = send03(a2a_server, "hello")
    assert (task["kind"], task["status"]["state"]) == ("task", "completed")
    assert send03(a2a_server, "reply")["kind"] == "message"


@requirement("a2a-0.3-§7.2-stream-events-are-jsonrpc-responses")
@requirement("a2a-0.3-§7.2-last-status-update-is-final")
def test_stream_is_jsonrpc_responses_ending_with_a_final_update(a2a_server: str) -> None:
    """Each SSE event is a JSON-RPC response with the request's id; the stream's last
    event is the status update with ``final: true``, and no earlier one is final."""
    params = {"message": user03("chunks 3")}
    with stream(a2a_server, "message/stream", params, version=None, request_id="s03") as response:
        assert response.headers["Content-Type"].startswith("text/event-stream")
        events = list(data_lines(response))
    assert all((e["jsonrpc"], e["id"]) == ("2.0", "s03") for e in events)
    results = [e["result"] for e in events]
    assert results[0]["kind"] == "task"
    assert results[-1]["kind"] == "status-update"
    assert results[-1]["final"] is True
    assert results[-1]["status"]["state"] in TERMINAL03
    assert not [r for r in results[:-1] if r.get("final")]


@requirement("a2a-0.3-§7.1-non-blocking-send-returns-at-once")
@requirement("a2a-0.3-§6.3-task-state-names")
def test_a_non_blocking_send_returns_the_running_task(a2a_server: str) -> None:
    """``blocking: false`` answers while the task still works; states use the 0.3
    lower-case names."""
    task = send03(a2a_server, "slow 1000", blocking=False)
    assert task["status"]["state"] in ("submitted", "working")
    asked = send03(a2a_server, "need input")
    assert asked["status"]["state"] == "input-required"
    rpc(a2a_server, "tasks/cancel", {"id": task["id"]}, version=None)


@requirement("a2a-0.3-§6.1-context-id-assigned")
def test_every_task_has_a_context_id(a2a_server: str) -> None:
    assert send03(a2a_server, "hello")["contextId"]


@requirement("a2a-0.3-§7.10-extended-card-needs-authentication")
def test_the_extended_card_is_served_only_to_an_authenticated_caller(a2a_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 3, "method": "agent/getAuthenticatedExtendedCard"}
    anonymous = post(a2a_server, body)
    assert anonymous.status_code == 401 or error_code(anonymous.json()) is not None
    answer = post(a2a_server, body, {"Authorization": "Bearer test-token"}).json()
    assert answer["result"]["name"]
    assert answer["result"]["protocolVersion"].startswith("0.3")


@requirement("a2a-0.3-§8.2-capability-errors")
def test_methods_of_undeclared_capabilities_are_refused(agent: ConformanceAgent) -> None:
    """A card without streaming or push: message/stream and tasks/resubscribe are
    UnsupportedOperationError (-32004), push config methods PushNotificationNotSupported
    (-32003). (a2a_sync only: the peer's card declares both.)"""
    bare = attrs.evolve(card(streaming=False, push=False), supported_interfaces=[])
    with serve_in_thread(A2AApplication(bare, agent)) as url:
        base = url + "/"
        task = send03(base, "need input")
        config = {"taskId": task["id"], "pushNotificationConfig": {"url": "https://h.example/"}}
        for method, params, code in (
            ("message/stream", {"message": user03("hi")}, -32004),
            ("tasks/resubscribe", {"id": task["id"]}, -32004),
            ("tasks/pushNotificationConfig/set", config, -32003),
            ("tasks/pushNotificationConfig/list", {"id": task["id"]}, -32003),
        ):
            assert error_code(rpc(base, method, params, version=None)) == code, method


@requirement("a2a-0.3-§7.3-get-unknown-task-not-found")
def test_get_of_an_unknown_task_is_task_not_found(a2a_server: str) -> None:
    assert error_code(rpc(a2a_server, "tasks/get", {"id": "nope"}, version=None)) == -32001


@requirement("a2a-0.3-§7.3-history-length-bounds-history")
def test_history_length_bounds_the_history(a2a_server: str) -> None:
    task = send03(a2a_server, "need input")
    follow_up03(a2a_server, task, "Paris")
    full = rpc(a2a_server, "tasks/get", {"id": task["id"]}, version=None)["result"]
    assert len(full["history"]) >= 2
    params = {"id": task["id"], "historyLength": 1}
    one = rpc(a2a_server, "tasks/get", params, version=None)["result"]
    assert one["history"] == full["history"][-1:]


@requirement("a2a-0.3-§7.4-cancel-terminal-task-not-cancelable")
def test_cancel_of_any_terminal_task_is_not_cancelable(a2a_server: str) -> None:
    """Completed, and canceled once already: both are TaskNotCancelableError (-32002)."""
    done = send03(a2a_server, "hello")
    assert error_code(rpc(a2a_server, "tasks/cancel", {"id": done["id"]}, version=None)) == -32002
    running = send03(a2a_server, "slow 1000", blocking=False)
    first = rpc(a2a_server, "tasks/cancel", {"id": running["id"]}, version=None)
    assert first["result"]["status"]["state"] == "canceled"
    again = rpc(a2a_server, "tasks/cancel", {"id": running["id"]}, version=None)
    assert error_code(again) == -32002


@requirement("a2a-0.3-§7.4-cancel-unknown-task-not-found")
def test_cancel_of_an_unknown_task_is_task_not_found(a2a_server: str) -> None:
    assert error_code(rpc(a2a_server, "tasks/cancel", {"id": "nope"}, version=None)) == -32001


@requirement("a2a-0.3-§7.5-push-config-set-and-get")
@requirement("a2a-0.3-§7.7-push-config-list")
@requirement("a2a-0.3-§7.8-push-config-delete")
def test_push_config_methods_round_trip(a2a_server: str) -> None:
    """set returns the stored config; get and list show it; delete removes it."""
    task = send03(a2a_server, "slow 1000", blocking=False)
    config = {"url": "https://hooks.example/a2a03", "token": "tok"}
    params = {"taskId": task["id"], "pushNotificationConfig": config}
    created = rpc(a2a_server, "tasks/pushNotificationConfig/set", params, version=None)["result"]
    assert created["taskId"] == task["id"]
    config_id = created["pushNotificationConfig"]["id"]
    assert created["pushNotificationConfig"]["url"] == config["url"]
    ref = {"id": task["id"], "pushNotificationConfigId": config_id}
    got = rpc(a2a_server, "tasks/pushNotificationConfig/get", ref, version=None)["result"]
    assert got["pushNotificationConfig"]["url"] == config["url"]
    listed = rpc(a2a_server, "tasks/pushNotificationConfig/list", {"id": task["id"]}, version=None)
    assert [c["pushNotificationConfig"]["id"] for c in listed["result"]] == [config_id]
    deleted = rpc(a2a_server, "tasks/pushNotificationConfig/delete", ref, version=None)
    assert "error" not in deleted
    after = rpc(a2a_server, "tasks/pushNotificationConfig/list", {"id": task["id"]}, version=None)
    assert after["result"] == []
    rpc(a2a_server, "tasks/cancel", {"id": task["id"]}, version=None)


@requirement("a2a-0.3-§7.9-resubscribe-streams-later-events")
def test_resubscribe_streams_the_rest_of_an_ongoing_task(a2a_server: str) -> None:
    """tasks/resubscribe on an interrupted task streams what follows, up to the final
    update."""
    task = send03(a2a_server, "need input")
    with stream(a2a_server, "tasks/resubscribe", {"id": task["id"]}, version=None) as response:
        events = data_lines(response)
        first = next(events)["result"]
        assert first.get("id", first.get("taskId")) == task["id"]
        follow_up03(a2a_server, task, "Paris")
        rest = [first, *(e["result"] for e in events)]
    assert rest[-1]["kind"] == "status-update"
    assert (rest[-1]["final"], rest[-1]["status"]["state"]) == (True, "completed")


@requirement("a2a-0.3-§6.4-message-parts-required")
def test_a_message_without_parts_is_invalid_params(a2a_server: str) -> None:
    message = {**user03("x"), "parts": []}
    answer = rpc(a2a_server, "message/send", {"message": message}, version=None)
    assert error_code(answer) == -32602


@requirement("a2a-0.3-§6.5-part-kind-discriminator-required")
def test_a_part_without_kind_is_invalid_params(own_server: str, agent: ConformanceAgent) -> None:
    """Parts are told apart by their required ``kind``; an untagged part is refused, not
    guessed. (a2a_sync only: a2a-sdk 1.3.0 reads an untagged part as text.)"""
    calls = agent.calls
    message = {**user03("x"), "parts": [{"text": "hi"}]}
    answer = rpc(own_server, "message/send", {"message": message}, version=None)
    assert error_code(answer) == -32602
    assert agent.calls == calls


@requirement("a2a-0.3-§8.1-standard-jsonrpc-errors")
def test_standard_jsonrpc_errors(a2a_server: str) -> None:
    """Unknown method -32601; not a request object -32600."""
    assert error_code(rpc(a2a_server, "tasks/nope", {}, version=None)) == -32601
    assert error_code(post(a2a_server, {"jsonrpc": "2.0", "id": 1}).json()) == -32600


@requirement("a2a-0.3-§8.1-invalid-params")
def test_wrong_params_are_invalid_params(own_server: str) -> None:
    """Params of the wrong type are -32602. (a2a_sync only: a2a-sdk 1.3.0's 0.3 mode
    answers -32600 here, against JSON-RPC 2.0 §5.1.)"""
    answer = rpc(own_server, "tasks/get", {"id": ["x"]}, version=None)
    assert error_code(answer) == -32602


@requirement("a2a-0.3-§3.2.1-jsonrpc-over-http-json")
def test_requests_and_answers_are_json(a2a_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": "x1", "method": "tasks/get", "params": {"id": "nope"}}
    response = post(a2a_server, body)
    assert response.headers["Content-Type"].startswith("application/json")
    assert (response.json()["jsonrpc"], response.json()["id"]) == ("2.0", "x1")


@requirement("a2a-0.3-§5.5-card-url-serves-jsonrpc")
def test_the_card_names_a_url_that_serves_0_3(a2a_server: str) -> None:
    """The card a 0.3 client reads has a top-level ``url`` and ``protocolVersion``; the
    url answers 0.3 JSON-RPC."""
    served = requests.get(a2a_server + ".well-known/agent-card.json", timeout=WAIT).json()
    assert served["protocolVersion"].startswith("0.3")
    answer = rpc(served["url"], "tasks/get", {"id": "nope"}, version=None)
    assert error_code(answer) == -32001
