"""Issue 14 part A: A2A server deviations, black-box over HTTP against a2a_sync's server.

Each test names the specification section it checks (A2A 1.0 draft, a2aproject/A2A
``docs/specification.md``; A2A 0.3 for the 0.3 methods). Where the official server
(a2a-sdk 1.3.0, :mod:`tests.peers.a2a_sdk_agent`) shows the same behaviour, the test runs
against it too (``server`` fixture ``a2a_sdk``), to show the assertion itself is right.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.server.card import CardPublisher
from a2a_sync.server.executor import RequestContext, TaskUpdater
from tests.server.agents import WAIT, EchoAgent, card, wait_either

V1 = {"A2A-Version": "1.0"}


class Agent(EchoAgent):
    """EchoAgent plus what the a2a-sdk script does: ``need auth`` (auth-required; the
    next message completes it) and ``slow N`` (works until canceled or released)."""

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        if context.current_task is None and context.text == "need auth":
            updater.start_work()
            updater.require_auth("log in first")
            return
        if context.current_task is None and context.text.startswith("slow "):
            updater.start_work()
            if wait_either(self.release, context):
                updater.complete()
            return
        super().execute(context, updater)


@pytest.fixture
def agent() -> Agent:
    return Agent()


@pytest.fixture
def own(agent: Agent) -> Iterator[str]:
    """a2a_sync's server (card completed with its own URL), base URL ending in ``/``."""
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent)
    with serve_in_thread(app) as url:
        yield url + "/"
    agent.release.set()


@pytest.fixture(params=["a2a_sync", pytest.param("a2a_sdk", marks=pytest.mark.peer)])
def server(request: pytest.FixtureRequest, agent: Agent) -> Iterator[str]:
    """The server under test: a2a_sync's, or the official a2a-sdk one (same script)."""
    if request.param == "a2a_sdk":
        yield request.getfixturevalue("a2a_sdk_agent").url
        return
    yield request.getfixturevalue("own")


def post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    response = requests.post(url, json=body, headers=headers or {}, timeout=WAIT)
    assert response.status_code == 200, response.text
    return response.json()


def rpc(url: str, method: str, params: Any, *, version: str = "1.0") -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return post(url, body, V1 if version == "1.0" else {})


def user(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


def send(url: str, message: dict[str, Any]) -> dict[str, Any]:
    answer = rpc(url, "SendMessage", {"message": message})
    assert "result" in answer, answer
    return dict(answer["result"])


def events(response: requests.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("data:"):
            yield json.loads(line[5:])


# -- 14A.1 ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "state"),
    [("need input", "TASK_STATE_INPUT_REQUIRED"), ("need auth", "TASK_STATE_AUTH_REQUIRED")],
)
def test_a2a_1_0_s3_1_6_subscribe_open_until_terminal(server: str, text: str, state: str) -> None:
    """§3.1.6: SubscribeToTask works on any non-terminal task and the stream MUST end
    when the task reaches a terminal state, so an interrupted task's stream stays open
    and shows the follow-up that completes it."""
    task = send(server, user(text))["task"]
    assert task["status"]["state"] == state
    body = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task["id"]}}
    with requests.post(server, json=body, headers=V1, stream=True, timeout=WAIT) as response:
        stream = events(response)
        first = next(stream)["result"]
        assert first["task"]["id"] == task["id"]
        assert first["task"]["status"]["state"] == state
        follow_up = user("Paris", taskId=task["id"], contextId=task["contextId"])
        assert send(server, follow_up)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        rest = [event["result"] for event in stream]
    states = [e["statusUpdate"]["status"]["state"] for e in rest if "statusUpdate" in e]
    assert states[-1] == "TASK_STATE_COMPLETED"
    assert "statusUpdate" in rest[-1]  # the terminal update is the last event


# -- 14A.2 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "t"])
def test_a2a_1_0_s3_1_11_extended_card_capability_before_caller(
    agent: Agent, token: str | None
) -> None:
    """§3.1.11 / §3.3.4: without ``capabilities.extendedAgentCard`` the answer is the
    protocol error UnsupportedOperationError (-32004); declared but not configured it is
    ExtendedAgentCardNotConfiguredError (-32007) — for every caller, as JSON-RPC."""
    headers = {**V1, **({"Authorization": f"Bearer {token}"} if token else {})}
    body = {"jsonrpc": "2.0", "id": 7, "method": "GetExtendedAgentCard", "params": {}}
    for extended, code in ((False, -32004), (True, -32007)):
        app = A2AApplication(
            card(extended=extended),
            agent,
            authenticate=BearerTokens({"t": "a"}),
            allow_anonymous=True,  # other methods are open; the card method needs a caller
        )
        with serve_in_thread(app) as url:
            response = requests.post(url + "/", json=body, headers=headers, timeout=WAIT)
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("application/json")
        answer = response.json()
        assert answer["id"] == 7
        assert answer["error"]["code"] == code


# -- 14A.3 ---------------------------------------------------------------------------------


def test_a2a_1_0_s3_3_1_reused_message_id_on_another_task_is_a_new_message(server: str) -> None:
    """§3.3.1: agents MAY use messageId to detect duplicates — of the same message. A
    follow-up to task B that reuses the id of a message sent to task A is answered by
    task B, never with task A."""
    first = user("hello")
    task_a = send(server, first)["task"]
    task_b = send(server, user("need input"))["task"]
    reused = user("Paris", taskId=task_b["id"], contextId=task_b["contextId"])
    reused["messageId"] = first["messageId"]
    answer = send(server, reused)["task"]
    assert answer["id"] == task_b["id"] != task_a["id"]
    assert answer["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_true_resend_is_answered_with_its_task_and_dedup_can_be_switched_off(
    agent: Agent,
) -> None:
    """The same message again (same id, conversation and parts) is a resend: its first
    task answers and the agent does not run again; ``deduplicate_messages=False`` runs it."""
    for dedup, runs in ((True, 1), (False, 2)):
        agent.calls = 0
        app = A2AApplication(card(), agent, deduplicate_messages=dedup)
        with serve_in_thread(app) as url:
            message = user("hello")
            first = send(url + "/", message)["task"]
            again = send(url + "/", message)["task"]
            changed = send(url + "/", {**message, "parts": [{"text": "other"}]})["task"]
        assert (again["id"] == first["id"]) is dedup
        assert changed["id"] != first["id"]  # same id, other content: a new message
        assert agent.calls == runs + 1


# -- 14A.4 ---------------------------------------------------------------------------------


def test_a2a_1_0_s5_proto_field_names_are_accepted_on_input(server: str) -> None:
    """ProtoJSON (the 1.0 JSON-RPC payload format): parsers accept the lowerCamelCase
    JSON name and the original proto field name; output stays lowerCamelCase;
    free-form members (metadata) keep their keys as sent."""
    message = {
        "message_id": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": "hello"}],
        "context_id": "ctx-snake",
        "metadata": {"my_key": "v"},
    }
    task = send(server, message)["task"]
    assert task["contextId"] == "ctx-snake"
    assert "context_id" not in task
    full = rpc(server, "GetTask", {"id": task["id"]})["result"]
    assert full["history"][0]["metadata"] == {"my_key": "v"}
    trimmed = rpc(server, "GetTask", {"id": task["id"], "history_length": 0})["result"]
    assert not trimmed.get("history")


# -- 14A.5 ---------------------------------------------------------------------------------


def test_a2a_1_0_s4_1_4_message_without_parts_is_invalid_params(server: str) -> None:
    """A Message holds one or more parts (proto ``parts`` is REQUIRED, min 1; §3.3.2:
    servers MUST validate input): ``parts: []`` is -32602, and no agent runs."""
    answer = rpc(server, "SendMessage", {"message": {**user("x"), "parts": []}})
    assert answer["error"]["code"] == -32602


def test_a2a_0_3_part_without_kind_is_invalid_params(own: str, agent: Agent) -> None:
    """A2A 0.3 §6.5: Part is TextPart | FilePart | DataPart, told apart by the required
    ``kind``; an untagged part is refused, not guessed. (a2a-sdk 1.3.0 reads it as text,
    so this is checked on a2a_sync only.)"""
    message = {"kind": "message", "messageId": "m-kind", "role": "user", "parts": [{"text": "hi"}]}
    answer = rpc(own, "message/send", {"message": message}, version="0.3")
    assert answer["error"]["code"] == -32602
    assert agent.calls == 0


def test_a2a_1_0_s3_1_1_direct_reply_names_no_task_that_does_not_exist(server: str) -> None:
    """§3.1.1: a direct Message answer involves no task; a taskId in it must name a task
    GetTask finds."""
    reply = send(server, user("reply"))["message"]
    if "taskId" in reply:
        assert "result" in rpc(server, "GetTask", {"id": reply["taskId"]})


# -- 14A.6 ---------------------------------------------------------------------------------


def test_a2a_0_3_cancel_of_a_canceled_task_is_not_cancelable(server: str) -> None:
    """A2A 0.3 §7.4: tasks/cancel on a task in a terminal state (canceled included) is
    TaskNotCancelableError (-32002)."""
    message = {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": "slow 1000"}],
    }
    params = {"message": message, "configuration": {"blocking": False}}
    task = rpc(server, "message/send", params, version="0.3")["result"]
    first = rpc(server, "tasks/cancel", {"id": task["id"]}, version="0.3")
    assert first["result"]["status"]["state"] == "canceled"
    second = rpc(server, "tasks/cancel", {"id": task["id"]}, version="0.3")
    assert second["error"]["code"] == -32002


def test_jsonrpc_request_without_id_gets_method_checked_first(server: str) -> None:
    """JSON-RPC 2.0 §5.1 with A2A (no notifications): a request without ``id`` gets the
    same method check as any other (-32601 for an unknown method), answered with
    ``id: null``."""
    answer = post(server, {"jsonrpc": "2.0", "method": "tasks/nope"})
    assert answer["id"] is None
    assert answer["error"]["code"] == -32601


def test_jsonrpc_request_without_id_gets_params_checked_then_refused(own: str) -> None:
    """Bad params of an id-less request are -32602 (as for any request); a valid one is
    refused -32600, A2A methods are never notifications; both with ``id: null``."""
    bad = post(own, {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": ["x"]}})
    assert (bad["id"], bad["error"]["code"]) == (None, -32602)
    valid = post(own, {"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "nope"}})
    assert (valid["id"], valid["error"]["code"]) == (None, -32600)


# -- 14A.7 ---------------------------------------------------------------------------------


def test_card_last_modified_and_if_modified_since(own: str) -> None:
    """RFC 9110 §8.8.2/§13.1.3: the card carries Last-Modified; If-Modified-Since at or
    after it answers 304, an earlier date 200; If-None-Match takes precedence."""
    card_url = own + ".well-known/agent-card.json"
    first = requests.get(card_url, timeout=WAIT)
    modified = first.headers["Last-Modified"]
    assert first.headers["ETag"]
    same = requests.get(card_url, headers={"If-Modified-Since": modified}, timeout=WAIT)
    assert same.status_code == 304
    assert same.headers["Last-Modified"] == modified
    older = formatdate(0, usegmt=True)
    assert requests.get(card_url, headers={"If-Modified-Since": older}, timeout=WAIT).ok
    other_tag = {"If-Modified-Since": modified, "If-None-Match": 'W/"other"'}
    assert requests.get(card_url, headers=other_tag, timeout=WAIT).status_code == 200


def test_card_headers_and_revision_per_request(agent: Agent) -> None:
    """The application adds card response headers and picks the card per request."""
    public = attrs.evolve(card(), supported_interfaces=[])
    beta = attrs.evolve(public, version="2.0.0-beta")
    app = A2AApplication(
        public,
        agent,
        card_headers=lambda environ: [("X-Card-Channel", environ.get("HTTP_X_CHANNEL", "-"))],
        card_for_request=lambda environ: beta if environ.get("HTTP_X_CHANNEL") else public,
    )
    with serve_in_thread(app) as url:
        card_url = url + "/.well-known/agent-card.json"
        plain = requests.get(card_url, timeout=WAIT)
        chosen = requests.get(card_url, headers={"X-Channel": "beta"}, timeout=WAIT)
    assert plain.json()["version"] == "1.0.0"
    assert plain.headers["X-Card-Channel"] == "-"
    assert chosen.json()["version"] == "2.0.0-beta"
    assert chosen.headers["X-Card-Channel"] == "beta"
    assert chosen.headers["ETag"] != plain.headers["ETag"]
    assert chosen.json()["supportedInterfaces"][0]["url"] == url + "/"


def test_card_interface_urls_come_from_configuration(agent: Agent) -> None:
    """With ``public_url`` the card's interfaces use it whatever the Host; with an
    allowed-hosts list a Host outside it never reaches the card."""
    bare = attrs.evolve(card(), supported_interfaces=[])
    app = A2AApplication(
        bare, agent, allowed_hosts=["127.0.0.1"], public_url="https://agent.example/a2a"
    )
    with serve_in_thread(app) as url:
        served = requests.get(url + "/.well-known/agent-card.json", timeout=WAIT).json()
    assert {i["url"] for i in served["supportedInterfaces"]} == {"https://agent.example/a2a/"}
    publisher = CardPublisher(
        bare, rpc_path="/", signer=None, allowed_hosts=frozenset({"good.example"})
    )
    environ = {
        "HTTP_HOST": "evil.example",
        "SERVER_NAME": "good.example",
        "SERVER_PORT": "8080",
        "wsgi.url_scheme": "http",
    }
    document = json.loads(publisher.document(environ).body)
    assert document["supportedInterfaces"][0]["url"] == "http://good.example:8080/"
    environ["HTTP_HOST"] = "good.example:9000"
    document = json.loads(publisher.document(environ).body)
    assert document["supportedInterfaces"][0]["url"] == "http://good.example:9000/"
