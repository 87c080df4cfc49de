"""A2A 0.3 requirements found by the section-by-section audit of issue #14 that no other
conformance module claimed: transport declaration in the card (§3.4.2, §5.6), functional
equivalence of the transports (§3.4.1), authentication of every request (§4.4), JSON-RPC
response ids (§6.11.2) and the client's handling of the A2A error codes (§11.2.2).

Sections are those of the A2A 0.3.0 specification (a2aproject/A2A tag ``v0.3.0``,
``docs/specification.md``; read at the 0.3-line commit 9384703 that keeps its layout).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync import errors
from a2a_sync.client import A2AClient, BearerToken
from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.types import Task
from tests.peers.fixtures import AGENT_TOKEN
from tests.server.agents import card
from tests.support.servers import RecordedRequest, ScriptedServer, respond_json

from .a2a_wire import WAIT, error_code, post, rpc, user03
from .agents import ConformanceAgent, own_app

requirement = pytest.mark.requirement


@pytest.fixture(scope="module")
def multi(agent: ConformanceAgent) -> Iterator[str]:
    """a2a_sync's server with JSON-RPC at ``/`` and HTTP+JSON at ``/rest``; base URL."""
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, rest_path="/rest")
    with serve_in_thread(app) as url:
        yield url


def card03(base: str) -> dict[str, Any]:
    """The card as a 0.3 client reads it."""
    response = requests.get(base + "/.well-known/agent-card.json", timeout=WAIT)
    assert response.status_code == 200
    return dict(response.json())


def serves(transport: str, url: str) -> bool:
    """Whether ``url`` answers ``transport`` in its 0.3 form (an unknown-task read)."""
    if transport == "JSONRPC":
        return error_code(rpc(url, "tasks/get", {"id": "no-such-task"}, version=None)) == -32001
    if transport == "HTTP+JSON":
        answer = requests.get(url.rstrip("/") + "/v1/tasks/no-such-task", timeout=WAIT)
        return answer.status_code == 404 and answer.headers["Content-Type"].startswith(
            "application/json"
        )
    return False


@requirement("a2a-0.3-§5.6.1-preferred-transport-at-main-url")
def test_the_preferred_transport_is_declared_and_served_at_the_main_url(multi: str) -> None:
    """``preferredTransport`` is present, and the main ``url`` speaks it."""
    served = card03(multi)
    assert served["preferredTransport"] == "JSONRPC"
    assert serves(served["preferredTransport"], served["url"])


@requirement("a2a-0.3-§5.6.2-interfaces-declare-their-transport")
def test_each_additional_interface_serves_its_declared_transport(multi: str) -> None:
    """Every ``additionalInterfaces`` entry answers the transport it declares at its URL
    (HTTP+JSON: the 0.3 ``/v1`` routes with JSON bodies)."""
    interfaces = card03(multi)["additionalInterfaces"]
    assert interfaces
    for interface in interfaces:
        assert serves(interface["transport"], interface["url"]), interface


@requirement("a2a-0.3-§5.6.2-main-url-in-additional-interfaces")
def test_additional_interfaces_include_the_main_url(multi: str) -> None:
    """A 0.3 client choosing from ``additionalInterfaces`` alone still finds the main
    url with its preferred transport, and every other served transport."""
    served = card03(multi)
    listed = [(i["url"], i["transport"]) for i in served["additionalInterfaces"]]
    assert (served["url"], served["preferredTransport"]) in listed
    assert {transport for _, transport in listed} == {"JSONRPC", "HTTP+JSON"}


@requirement("a2a-0.3-§3.4.2-all-transports-declared")
@requirement("a2a-0.3-§5.6.4-no-conflicting-transports")
def test_every_served_transport_is_declared_without_conflicts(multi: str) -> None:
    """With JSON-RPC and HTTP+JSON served, the 0.3 card declares both (main url plus
    additionalInterfaces), and no URL is declared with two different transports."""
    served = card03(multi)
    declared = [(served["url"], served["preferredTransport"])] + [
        (i["url"], i["transport"]) for i in served.get("additionalInterfaces", [])
    ]
    assert {transport for _, transport in declared} == {"JSONRPC", "HTTP+JSON"}
    by_url: dict[str, set[str]] = {}
    for url, transport in declared:
        by_url.setdefault(url.rstrip("/"), set()).add(transport)
    assert all(len(transports) == 1 for transports in by_url.values()), by_url


@requirement("a2a-0.3-§3.4.1-functional-equivalence")
def test_jsonrpc_and_rest_see_the_same_task_and_errors(multi: str) -> None:
    """A task sent over 0.3 JSON-RPC reads back identically over 0.3 HTTP+JSON (same id,
    context and state), and an unknown task is TaskNotFound on both (-32001 / 404)."""
    task = rpc(multi + "/", "message/send", {"message": user03("hello")}, version=None)["result"]
    over_rest = requests.get(f"{multi}/rest/v1/tasks/{task['id']}", timeout=WAIT)
    assert over_rest.status_code == 200
    rest_task = over_rest.json()
    assert (rest_task["id"], rest_task["contextId"]) == (task["id"], task["contextId"])
    assert rest_task["status"]["state"] == "TASK_STATE_" + task["status"]["state"].upper()
    assert serves("JSONRPC", multi + "/")
    assert serves("HTTP+JSON", multi + "/rest")


@requirement("a2a-0.3-§4.4-authenticate-every-request")
def test_every_0_3_request_is_authenticated(agent: ConformanceAgent) -> None:
    """Without anonymous access, 0.3 calls without credentials or with unknown ones are
    refused (401) and never processed; with the declared credentials they are served.
    (a2a_sync only: the peer's fixture serves anonymous callers.)"""
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        agent,
        authenticate=BearerTokens({"tok-0-3": "alice"}),
    )
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "none"}}
    with serve_in_thread(app) as url:
        missing = post(url + "/", body)
        wrong = post(url + "/", body, {"Authorization": "Bearer nope"})
        right = post(url + "/", body, {"Authorization": "Bearer tok-0-3"})
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert error_code(right.json()) == -32001


@requirement("a2a-0.3-§6.11.2-response-id-rules")
def test_response_ids_follow_jsonrpc_2(a2a_server: str) -> None:
    """A 0.3 response carries the request's id (a string id and a numeric one alike),
    exactly one of result or error; when the id cannot be read (a parse error) it is
    null."""
    for request_id in ("req-003", 7):
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tasks/get", "params": {"id": "x"}}
        answer = post(a2a_server, body).json()
        assert answer["id"] == request_id
        assert ("result" in answer) != ("error" in answer)
    garbled = requests.post(
        a2a_server,
        data=b'{"jsonrpc": "2.0", "id": 5,',
        headers={"Content-Type": "application/json"},
        timeout=WAIT,
    ).json()
    assert (error_code(garbled), garbled["id"]) == (-32700, None)
    assert "result" not in garbled


@requirement("a2a-0.3-§11.2.2-client-handles-a2a-errors")
def test_the_0_3_client_raises_a_typed_error_for_each_a2a_error(agent: ConformanceAgent) -> None:
    """The 0.3 client turns the A2A error codes the server answers into their typed
    errors: -32001 TaskNotFound, -32002 TaskNotCancelable, -32003
    PushNotificationNotSupported, -32004 UnsupportedOperation (streaming undeclared)."""
    app = own_app(agent, streaming=False, push=False)
    with serve_in_thread(app) as url, A2AClient(url + "/", revision="0.3") as client:
        with pytest.raises(errors.TaskNotFound):
            client.get_task("no-such-task")
        done = client.send_message("hello")
        assert isinstance(done, Task)
        with pytest.raises(errors.TaskNotCancelable):
            client.cancel_task(done.id)
        with pytest.raises(errors.PushNotificationNotSupported):
            client.list_push_configs(done.id)
        with pytest.raises(errors.UnsupportedOperation):
            list(client.subscribe(done.id))


def _task03(sock: socket.socket, request: RecordedRequest) -> None:
    """Answer any 0.3 JSON-RPC call with a completed 0.3 task, echoing the request id."""
    task = {
        "kind": "task",
        "id": "t-1",
        "contextId": "c-1",
        "status": {"state": "completed"},
    }
    respond_json(sock, {"jsonrpc": "2.0", "id": request.json()["id"], "result": task})


@requirement("a2a-0.3-§3.2.1-client-jsonrpc-requests")
def test_the_0_3_client_posts_jsonrpc_2_requests_as_application_json() -> None:
    """Each 0.3 call is an HTTP POST to the endpoint whose body is a JSON-RPC 2.0 request
    object (``jsonrpc: "2.0"``, a string or number id, the method, params) sent as
    ``application/json``; successive calls use distinct ids."""
    with ScriptedServer(_task03) as server:
        with A2AClient(server.url + "/rpc", revision="0.3") as client:
            client.send_message("hello")
            client.get_task("t-1")
        sent = server.wait_for_requests(2)
    bodies = [request.json() for request in sent]
    for request, body in zip(sent, bodies, strict=True):
        assert (request.method, request.path) == ("POST", "/rpc")
        assert request.headers["Content-Type"].split(";")[0].strip() == "application/json"
        assert body["jsonrpc"] == "2.0"
        assert isinstance(body["id"], (str, int))
        assert not isinstance(body["id"], bool)
        assert isinstance(body["params"], dict)
    assert [body["method"] for body in bodies] == ["message/send", "tasks/get"]
    assert bodies[0]["id"] != bodies[1]["id"]


@requirement("a2a-0.3-§7.10-client-authenticates-extended-card")
def test_the_0_3_client_authenticates_the_extended_card_request(own_server: str) -> None:
    """agent/getAuthenticatedExtendedCard carries the client's credentials: the server
    (whose extended card needs ``Bearer test-token``) serves it to a client holding the
    token and refuses the same call without it."""
    with A2AClient(own_server, revision="0.3", credentials=BearerToken(AGENT_TOKEN)) as client:
        assert client.get_extended_card().name == "Test agent (extended)"
    anonymous = A2AClient(own_server, revision="0.3")
    with anonymous, pytest.raises(errors.HTTPStatusError) as refused:
        anonymous.get_extended_card()
    assert refused.value.status_code == 401
