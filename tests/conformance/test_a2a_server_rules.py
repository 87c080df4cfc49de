"""A2A 1.0 server rules over the JSON-RPC binding, black-box over HTTP: capabilities and
errors (§3.3), contexts (§3.4), versions (§3.6), data conventions (§5), the card (§8) and
the JSON-RPC binding (§9). The operations themselves are in :mod:`.test_a2a_server`.

Every test runs against a2a_sync's server and (``peer``) the official a2a-sdk 1.3.0 server
running the same script, unless its docstring says why it cannot.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.types import AgentExtension
from tests.server.agents import card

from .a2a_wire import (
    V1,
    WAIT,
    data_lines,
    error_code,
    post,
    rpc,
    send,
    stream,
    user,
)
from .agents import ConformanceAgent, own_app

requirement = pytest.mark.requirement


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


# -- §3.1.11, §3.3.2, §3.3.4 capabilities and errors ----------------------------------------


@requirement("a2a-1.0-§3.3.2-reject-missing-credentials")
def test_extended_card_needs_the_declared_credentials(a2a_server: str) -> None:
    """The extended card is refused without credentials and served with them."""
    body = {"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard", "params": {}}
    anonymous = post(a2a_server, body, V1)
    assert anonymous.status_code == 401 or error_code(anonymous.json()) is not None
    bearer = {**V1, "Authorization": "Bearer test-token"}
    assert post(a2a_server, body, bearer).json()["result"]["name"]


@requirement("a2a-1.0-§7.4-authenticate-every-request")
@requirement("a2a-1.0-§7.4-auth-challenge-information")
@requirement("a2a-0.3-§4.4-auth-errors-use-http-status")
def test_without_anonymous_access_every_call_needs_credentials(agent: ConformanceAgent) -> None:
    """A server that declares bearer authentication and allows no anonymous callers
    refuses every call without a valid token with 401 and a ``WWW-Authenticate`` challenge
    naming the scheme, 1.0 and 0.3 alike, and serves it with one. (a2a_sync only: the peer
    script guards only its extended card.)"""
    public = attrs.evolve(card(), supported_interfaces=[])
    app = A2AApplication(public, agent, authenticate=BearerTokens({"tok-7": "carol"}))
    calls = [
        ({"method": "SendMessage", "params": {"message": user("hello")}}, V1),
        ({"method": "GetTask", "params": {"id": "t"}}, V1),
        ({"method": "tasks/get", "params": {"id": "t"}}, {}),
    ]
    with serve_in_thread(app) as url:
        for call, headers in calls:
            body = {"jsonrpc": "2.0", "id": 1, **call}
            for token in (None, "wrong"):
                sent = {**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
                refused = post(url + "/", body, sent)
                assert refused.status_code == 401, call
                assert refused.headers["WWW-Authenticate"].lower().startswith("bearer")
            served = post(url + "/", body, {**headers, "Authorization": "Bearer tok-7"})
            assert served.status_code == 200, call


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
            (
                "CreateTaskPushNotificationConfig",
                {"taskId": task["id"], "url": "https://h.example/"},
            ),
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


@requirement("a2a-1.0-§4.6.3-unknown-extension-ignored")
def test_an_extension_the_agent_does_not_know_is_ignored(a2a_server: str) -> None:
    """A request naming an extension the agent does not support (and does not require)
    is served as if it had not been named."""
    body = {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": user("hi")}}
    headers = {**V1, "A2A-Extensions": "https://example.com/ext/unknown/v9"}
    answer = post(a2a_server, body, headers).json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


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
