"""GRPCServer's own behaviour: graceful stop, the stream cap, authentication, threads."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import attrs
import pytest

from tests.support.grpc import import_grpc

grpc = import_grpc()

from a2a_sync.a2a.grpc.messages import METHODS, message_class  # noqa: E402
from a2a_sync.a2a.methods import Operation  # noqa: E402
from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.auth import BearerTokens  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from tests.server.agents import WAIT, EchoAgent, card  # noqa: E402

SEND = METHODS[Operation.SEND_MESSAGE]
STREAM = METHODS[Operation.SEND_STREAMING_MESSAGE]
VERSION = (("a2a-version", "1.0"),)


def request(text: str) -> Any:
    message = message_class("SendMessageRequest")()
    message.message.message_id = str(uuid.uuid4())
    message.message.role = 1
    message.message.parts.add().text = text
    return message


@pytest.fixture
def agent() -> Iterator[EchoAgent]:
    agent = EchoAgent()
    yield agent
    agent.release.set()


def make_app(agent: EchoAgent, **options: Any) -> A2AApplication:
    return A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, **options)


def grpc_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("a2a-sync-grpc")]


def test_stop_lets_a_call_in_flight_finish_and_refuses_new_ones(agent: EchoAgent) -> None:
    app = make_app(agent)
    server = GRPCServer(app).start()
    channel = grpc.insecure_channel(server.address)
    send = channel.unary_unary(
        SEND.path,
        request_serializer=SEND.request.SerializeToString,
        response_deserializer=SEND.response.FromString,
    )
    with futures.ThreadPoolExecutor(2, thread_name_prefix="a2a-sync-test") as pool:
        in_flight = pool.submit(send, request("wait"), timeout=WAIT * 2, metadata=VERSION)
        assert agent.started.wait(WAIT)
        stopping = pool.submit(server.stop, WAIT)
        agent.release.set()
        answer = in_flight.result(WAIT * 2)
        assert answer.task.status.state == 3  # completed within the grace period
        assert stopping.result(WAIT * 3) is True
    with pytest.raises(grpc.RpcError) as caught:
        send(request("late"), timeout=WAIT, metadata=VERSION)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
    channel.close()
    app.close(WAIT)
    assert grpc_threads() == []


def test_streams_beyond_the_cap_are_unavailable(agent: EchoAgent) -> None:
    app = make_app(agent, max_streams=1)
    with GRPCServer(app) as server, grpc.insecure_channel(server.address) as channel:
        stream = channel.unary_stream(
            STREAM.path,
            request_serializer=STREAM.request.SerializeToString,
            response_deserializer=STREAM.response.FromString,
        )
        first = stream(request("wait"), timeout=WAIT * 2, metadata=VERSION)
        assert next(first).task.id
        with pytest.raises(grpc.RpcError) as caught:
            next(stream(request("second"), timeout=WAIT, metadata=VERSION))
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
        agent.release.set()
        assert [e.WhichOneof("payload") for e in first][-1] == "status_update"
    app.close(WAIT)


def test_callers_the_authenticator_refuses_are_unauthenticated(agent: EchoAgent) -> None:
    app = make_app(agent, authenticate=BearerTokens({"right-token": "alice"}))
    with GRPCServer(app) as server, grpc.insecure_channel(server.address) as channel:
        send = channel.unary_unary(
            SEND.path,
            request_serializer=SEND.request.SerializeToString,
            response_deserializer=SEND.response.FromString,
        )
        for metadata in (VERSION, (*VERSION, ("authorization", "Bearer wrong-token"))):
            with pytest.raises(grpc.RpcError) as caught:
                send(request("hi"), timeout=WAIT, metadata=metadata)
            assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert agent.calls == 0
        good = (*VERSION, ("authorization", "Bearer right-token"))
        assert send(request("hi"), timeout=WAIT, metadata=good).task.status.state == 3
    app.close(WAIT)
