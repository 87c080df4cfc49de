"""a2a_sync's client over HTTP+JSON (REST) against a2a-sdk 1.3's REST server.

The scripted agent (tests/peers) serves ``create_rest_routes`` under ``/rest`` (1.0 and the
0.3 compat mode: ``/rest/v1/...`` with the 0.3 proto JSON) beside its JSON-RPC endpoint,
and lists the REST interfaces first. Each operation runs over REST in both revisions;
error cases run over both bindings and must raise the same a2a_sync exception type. The
resilient client resumes a cut REST stream by resubscribing. The scenarios shared with
the gRPC binding live in :mod:`tests.client._sdk_server_scenarios`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync.client import A2AClient, BearerToken, ResilientA2AClient
from a2a_sync.errors import (
    ConfigurationError,
    HTTPStatusError,
    InvalidParams,
    StreamInterrupted,
    TaskNotCancelable,
    TaskNotFound,
    UnsupportedOperation,
)
from a2a_sync.types import Task, TaskState
from tests.peers.fixtures import AgentProcess
from tests.support.faultproxy import FaultProxy
from tests.support.fixtures import FaultProxyFactory

from ._sdk_server_scenarios import *  # noqa: F403 - collected here
from .conftest import PEER_TIMEOUT
from .test_resilient import Sleeps, delivered_text
from .test_resilient_interop import CONFIG, ClearProxy

pytestmark = pytest.mark.peer


def client_of(agent: AgentProcess, binding: str, **kwargs: object) -> A2AClient:
    return A2AClient.from_url(
        agent.url,
        bindings=[binding],
        credentials=BearerToken(agent.token),
        timeout=PEER_TIMEOUT,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture(params=["1.0", "0.3"])
def client(request: pytest.FixtureRequest, a2a_sdk_rest_agent: AgentProcess) -> Iterator[A2AClient]:
    with client_of(a2a_sdk_rest_agent, "HTTP+JSON", revisions=(request.param,)) as opened:
        assert (opened.binding, opened.revision) == ("HTTP+JSON", request.param)
        yield opened


@pytest.fixture(
    params=[("HTTP+JSON", "1.0"), ("JSONRPC", "1.0"), ("HTTP+JSON", "0.3"), ("JSONRPC", "0.3")]
)
def either(request: pytest.FixtureRequest, a2a_sdk_rest_agent: AgentProcess) -> Iterator[A2AClient]:
    binding, revision = request.param
    with client_of(a2a_sdk_rest_agent, binding, revisions=(revision,)) as client:
        yield client


def test_from_url_follows_the_preference_over_the_cards_order(
    a2a_sdk_rest_agent: AgentProcess,
) -> None:
    base = a2a_sdk_rest_agent.url
    with A2AClient.from_url(base, bindings=["HTTP+JSON", "JSONRPC"]) as c:
        assert (c.binding, c.revision, c.url) == (
            "HTTP+JSON",
            "1.0",
            a2a_sdk_rest_agent.url + "rest",
        )
    with A2AClient.from_url(a2a_sdk_rest_agent.url, bindings=["JSONRPC", "HTTP+JSON"]) as c:
        assert (c.binding, c.url) == ("JSONRPC", a2a_sdk_rest_agent.url)


def test_no_interface_of_the_wanted_binding_is_a_configuration_error(
    a2a_sdk_rest_agent: AgentProcess,
) -> None:
    with pytest.raises(ConfigurationError, match="GRPC"):
        A2AClient.from_url(a2a_sdk_rest_agent.url, bindings=["GRPC"])


def test_subscribe_follows_a_running_task(client: A2AClient) -> None:
    started = client.send_message("slow 5", return_immediately=True)
    assert isinstance(started, Task)
    with client.subscribe(started.id) as stream:
        events = list(stream)
        final = stream.get_final_task()
    assert isinstance(events[0], Task)
    assert final.state is TaskState.completed
    assert final.text == "0,1,2,3,4,"


def test_cancel_a_running_task(client: A2AClient) -> None:
    started = client.send_message("slow 100", return_immediately=True)
    assert isinstance(started, Task)
    canceled = client.cancel_task(started.id)
    assert canceled.state is TaskState.canceled


def test_extended_card_needs_the_token(a2a_sdk_rest_agent: AgentProcess, client: A2AClient) -> None:
    assert client.get_extended_card().name == "Scripted (extended)"
    with (
        A2AClient.from_url(
            a2a_sdk_rest_agent.url, bindings=["HTTP+JSON"], timeout=PEER_TIMEOUT
        ) as anonymous,
        pytest.raises(HTTPStatusError) as caught,
    ):
        anonymous.get_extended_card()
    assert caught.value.status_code == 401


# -- the same error types on both bindings ---------------------------------------------------


def test_unknown_task_is_task_not_found(either: A2AClient) -> None:
    with pytest.raises(TaskNotFound):
        either.get_task(str(uuid.uuid4()))
    with pytest.raises(TaskNotFound):
        either.cancel_task(str(uuid.uuid4()))


def test_settled_task_is_not_cancelable_nor_subscribable(either: A2AClient) -> None:
    task = either.send_message("echo done")
    assert isinstance(task, Task)
    with pytest.raises(TaskNotCancelable):
        either.cancel_task(task.id)
    if (either.binding, either.revision) == ("HTTP+JSON", "0.3"):
        # a2a-sdk's 0.3 REST adapter answers 200 and drops the connection (verified with
        # http.client): the client reports the dropped stream, typed.
        with pytest.raises(StreamInterrupted):
            either.subscribe(task.id).get_final_task()
    else:
        with pytest.raises(UnsupportedOperation):
            either.subscribe(task.id).get_final_task()
    with pytest.raises(UnsupportedOperation):
        either.send_message("again", task_id=task.id)


def test_bad_params_are_invalid_params(either: A2AClient) -> None:
    with pytest.raises(InvalidParams):
        either.send_message("echo x", history_length=-1) if either.revision == "0.3" else (
            either.list_tasks(page_size=-1)
        )


# -- the resilient client over REST ----------------------------------------------------------


@pytest.fixture
def proxy(a2a_sdk_rest_agent: AgentProcess, fault_proxy: FaultProxyFactory) -> FaultProxy:
    return fault_proxy(a2a_sdk_rest_agent.url)


def via_rest(proxy: FaultProxy, revision: str = "1.0") -> A2AClient:
    return A2AClient(
        proxy.url + "/rest",
        binding="HTTP+JSON",
        revision=revision,  # type: ignore[arg-type]
        transport=HTTPTransport(timeout=PEER_TIMEOUT),
    )


def test_resilient_stream_cut_is_resumed_over_rest(proxy: FaultProxy, client: A2AClient) -> None:
    """Both revisions: 1.0 resubscribes with POST /tasks/{id}:subscribe, 0.3 with
    POST /v1/tasks/{id}:subscribe (the `client` fixture runs each)."""
    client = ResilientA2AClient(via_rest(proxy, client.revision), CONFIG, sleep=ClearProxy(proxy))
    proxy.cut_after_events(1)
    stream = client.stream_message("slow 10")
    events = list(stream)
    assert stream.reconnects >= 1
    assert delivered_text(events) == "".join(f"{i}," for i in range(10))
    final = stream.get_final_task()
    assert final == client.get_task(final.id)


def test_resilient_send_and_wait_over_rest(proxy: FaultProxy) -> None:
    client = ResilientA2AClient(via_rest(proxy), CONFIG, sleep=Sleeps())
    task = client.send_and_wait("echo resilient")
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "resilient")
