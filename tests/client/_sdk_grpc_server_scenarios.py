"""The scenarios a2a_sync's client plays against a2a-sdk 1.3's gRPC server, 1.0 and 0.3.

``test_grpc_interop`` (1.0) and ``test_grpc_v03_interop`` (0.3) star-import this module:
the scenarios of every binding (:mod:`tests.client._sdk_server_scenarios`) and these,
which need a ``client`` of the scripted agent's gRPC interface.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.errors import TaskNotCancelable, TaskNotFound, UnsupportedOperation
from a2a_sync.types import Task, TaskState, TaskStatusUpdateEvent
from tests.peers.fixtures import AgentProcess
from tests.support.fixtures import FaultProxyFactory

from . import _sdk_server_scenarios
from ._sdk_server_scenarios import *  # noqa: F403 - re-exported for collection
from .conftest import PEER_TIMEOUT
from .test_resilient import Sleeps, delivered_text
from .test_resilient_interop import CONFIG

#: The scenarios (and the fixture they need) the gRPC modules collect.
__all__ = [
    "jsonrpc_client",
    "test_errors_are_the_same_types_as_over_jsonrpc",
    "test_extended_card_over_grpc",
    "test_resilient_stream_cut_is_resumed_over_grpc",
    "test_subscribe_follows_a_running_task_and_cancel",
]
__all__ += _sdk_server_scenarios.__all__


@pytest.fixture
def jsonrpc_client(a2a_sdk_grpc_agent: AgentProcess, client: A2AClient) -> Iterator[A2AClient]:
    """A JSON-RPC client of the same agent, on ``client``'s revision."""
    with A2AClient.from_url(
        a2a_sdk_grpc_agent.url,
        bindings=["JSONRPC"],
        revisions=[client.revision],
        timeout=PEER_TIMEOUT,
    ) as opened:
        assert (opened.binding, opened.revision) == ("JSONRPC", client.revision)
        yield opened


def test_subscribe_follows_a_running_task_and_cancel(client: A2AClient) -> None:
    started = client.send_message("slow 40", return_immediately=True)
    assert isinstance(started, Task)
    with client.subscribe(started.id) as stream:
        first = next(iter(stream))
        assert getattr(first, "id", getattr(first, "task_id", None)) == started.id
        canceled = client.cancel_task(started.id)
        assert canceled.state is TaskState.canceled
        rest = list(stream)
    assert any(
        isinstance(e, TaskStatusUpdateEvent) and e.status.state is TaskState.canceled
        for e in [first, *rest]
    )
    with pytest.raises(TaskNotCancelable):
        client.cancel_task(started.id)
    with pytest.raises(UnsupportedOperation):  # §10.4.6: terminal task
        list(client.subscribe(started.id))


def test_extended_card_over_grpc(client: A2AClient) -> None:
    """1.0's GetExtendedAgentCard; 0.3's GetAgentCard, which a2a-sdk answers with the
    extended card."""
    card = client.get_extended_card()
    assert card.name == "Scripted (extended)"
    assert [s.id for s in card.skills] == ["script", "secret"]


@pytest.mark.parametrize("call", ["get", "cancel", "subscribe"])
def test_errors_are_the_same_types_as_over_jsonrpc(
    call: str, client: A2AClient, jsonrpc_client: A2AClient
) -> None:
    def attempt(through: A2AClient) -> None:
        if call == "get":
            through.get_task("no-such-task")
        elif call == "cancel":
            through.cancel_task("no-such-task")
        else:
            list(through.subscribe("no-such-task"))

    for through in (client, jsonrpc_client):
        with pytest.raises(TaskNotFound) as caught:
            attempt(through)
        assert caught.value.code == -32001


def test_resilient_stream_cut_is_resumed_over_grpc(
    client: A2AClient, fault_proxy: FaultProxyFactory
) -> None:
    """The connection is reset under a running stream: the binding reports the drop as
    StreamInterrupted and the resilient client, unchanged, resubscribes over gRPC (0.3:
    its TaskSubscription)."""
    proxy = fault_proxy("http://" + client.url)
    through = A2AClient(proxy.url, binding="GRPC", revision=client.revision, timeout=PEER_TIMEOUT)
    resilient = ResilientA2AClient(through, CONFIG, sleep=Sleeps())
    try:
        stream = resilient.stream_message("slow 10")
        events = [next(iter(stream))]
        proxy.reset_peer()
        events += list(stream)
        assert stream.reconnects >= 1
        assert delivered_text(events) == "".join(f"{i}," for i in range(10))
        final = stream.get_final_task()
        assert final == client.get_task(final.id)
    finally:
        resilient.close()
        through.close()
