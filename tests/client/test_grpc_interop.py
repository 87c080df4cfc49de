"""a2a_sync's client over gRPC against a2a-sdk 1.3's gRPC server (``grpc.aio``).

The scripted agent (tests/peers) serves a2a-sdk's ``GrpcHandler`` on a second port and
lists that ``GRPC`` 1.0 interface first in its card. Every operation runs over gRPC; error
cases must raise the same a2a_sync exception types as over JSON-RPC (the ErrorInfo reason
of ``grpc-status-details-bin``, through the one error table). Streams are read on the
binding's reader thread and can be closed from another thread. The scenarios shared with
the other bindings live in :mod:`tests.client._sdk_grpc_server_scenarios`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.client import A2AClient  # noqa: E402
from a2a_sync.errors import Cancelled, ConnectError, DeadlineExceeded  # noqa: E402
from a2a_sync.types import Task  # noqa: E402
from tests.peers.fixtures import AgentProcess  # noqa: E402
from tests.support.ports import refused_port  # noqa: E402

from ._sdk_grpc_server_scenarios import *  # noqa: E402, F403 - collected here
from .conftest import PEER_TIMEOUT  # noqa: E402

pytestmark = pytest.mark.peer


@pytest.fixture
def client(a2a_sdk_grpc_agent: AgentProcess) -> Iterator[A2AClient]:
    with A2AClient.from_url(
        a2a_sdk_grpc_agent.url,
        bindings=["GRPC", "JSONRPC"],
        timeout=PEER_TIMEOUT,
    ) as opened:
        yield opened


def test_from_url_picks_the_grpc_interface_by_preference(
    client: A2AClient, jsonrpc_client: A2AClient
) -> None:
    assert client.binding == "GRPC"
    assert client.revision == "1.0"
    assert client.url.startswith("127.0.0.1:")
    assert jsonrpc_client.binding == "JSONRPC"


@pytest.mark.parametrize("threaded", [True, False])
def test_a_stream_closed_from_another_thread_stops_the_reader(
    client: A2AClient, threaded: bool
) -> None:
    """Read ahead by the binding's thread or by the consumer (``threaded_streams``): a
    close from another thread ends a blocked read with Cancelled."""
    started = client.send_message("slow 200", return_immediately=True)
    assert isinstance(started, Task)
    with A2AClient(
        client.url, binding="GRPC", timeout=PEER_TIMEOUT, threaded_streams=threaded
    ) as reading:
        stream = reading.subscribe(started.id)
        next(iter(stream))
        blocked = threading.Event()
        outcome: list[BaseException] = []

        def read() -> None:
            blocked.set()
            try:
                for _ in stream:
                    pass
            except BaseException as exc:
                outcome.append(exc)

        reader = threading.Thread(target=read, name="a2a-sync-test-reader")
        reader.start()
        assert blocked.wait(PEER_TIMEOUT)
        stream.close()
        reader.join(PEER_TIMEOUT)
        assert not reader.is_alive()
        assert outcome == [] or isinstance(outcome[0], Cancelled)
    client.cancel_task(started.id)
    assert not [t for t in threading.enumerate() if t.name.startswith("a2a-sync-grpc-stream")]


def test_deadline_from_the_timeout(client: A2AClient) -> None:
    started = client.send_message("slow 100", return_immediately=True)
    assert isinstance(started, Task)
    blocking = client.with_options(timeout=0.2)
    with pytest.raises(DeadlineExceeded):
        # a blocking send on the running task waits for it to settle (5 s)
        blocking.send_message("echo late", task_id=started.id, context_id=started.context_id)
    client.cancel_task(started.id)


def test_nothing_listening_is_a_connect_error() -> None:
    port = refused_port()  # bound and never listening: nothing else can take it meanwhile
    with (
        A2AClient(f"127.0.0.1:{port}", binding="GRPC", timeout=2.0) as client,
        pytest.raises(ConnectError),
    ):
        client.get_task("t")


def test_closing_the_client_closes_its_channel(a2a_sdk_grpc_agent: AgentProcess) -> None:
    client = A2AClient.from_url(a2a_sdk_grpc_agent.url, bindings=["GRPC"], timeout=PEER_TIMEOUT)
    task = client.send_message("echo once")
    assert isinstance(task, Task)
    copy = client.with_options(timeout=PEER_TIMEOUT)
    copy.close()  # a copy does not own the channel
    assert client.get_task(task.id).id == task.id
    client.close()
    with pytest.raises(Cancelled):
        client.get_task(task.id)
