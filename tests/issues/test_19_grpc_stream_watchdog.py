"""The gRPC client's event stream after issue 19's CPU work: the consuming thread reads
the call, and a watchdog thread (woken once per idle timeout, not per event) bounds the
wait for one event. Real pieces: a bare grpcio server whose stream goes silent on
command, a2a_sync's GRPCTransport and grpcio's channel."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import pytest

from tests.support.grpc import import_grpc

grpc = import_grpc()

from google.protobuf import json_format  # noqa: E402

from a2a_sync.a2a.grpc import protojson  # noqa: E402
from a2a_sync.a2a.grpc.messages import message_class  # noqa: E402
from a2a_sync.a2a.methods import Operation  # noqa: E402
from a2a_sync.client.bindings.grpc import GRPCTransport  # noqa: E402
from a2a_sync.errors import Cancelled, MethodNotFound, ReadTimeout  # noqa: E402
from a2a_sync.policies import Timeout  # noqa: E402

WAIT = 30.0
IDLE = 1.0
EVENT = {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}
PARAMS = {"message": {"role": "ROLE_USER", "parts": [{"text": "hi"}], "messageId": "m1"}}


class Agent:
    """Sends ``burst`` events, then stays silent until ``release`` (bounded), then ends."""

    def __init__(self, burst: int) -> None:
        self.burst = burst
        self.release = threading.Event()
        self.cancelled = threading.Event()

    def stream(self, request: Any, context: Any) -> Iterator[Any]:
        context.add_callback(self.cancelled.set)
        response = message_class("StreamResponse")
        for _ in range(self.burst):
            yield protojson.parse(EVENT, response())
        self.release.wait(WAIT)


@pytest.fixture
def agent() -> Iterator[Agent]:
    agent = Agent(burst=2)
    yield agent
    agent.release.set()


@pytest.fixture
def port(agent: Agent) -> Iterator[int]:
    server = grpc.server(futures.ThreadPoolExecutor(4))
    handler = grpc.unary_stream_rpc_method_handler(
        agent.stream,
        request_deserializer=message_class("SendMessageRequest").FromString,
        response_serializer=lambda message: message.SerializeToString(),
    )
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                "lf.a2a.v1.A2AService", {"SendStreamingMessage": handler}
            )
        ]
    )
    bound = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield bound
    server.stop(None).wait(WAIT)


def transport(port: int, *, idle: float | None, threaded: bool = True) -> GRPCTransport:
    return GRPCTransport(
        url=f"127.0.0.1:{port}",
        revision="1.0",
        timeout=Timeout.coerce(WAIT),
        retry=None,
        headers={},
        credentials=None,
        tenant=None,
        stream_idle_timeout=idle,
        threaded_streams=threaded,
    )


def connected(client: GRPCTransport) -> GRPCTransport:
    """``client`` with its connection made (an rpc the agent does not serve), so that an
    idle limit bounds the wait for events, not the connection."""
    with pytest.raises(MethodNotFound):
        client.call(Operation.GET_TASK, {"id": "t1"}, timeout=WAIT)
    return client


def stream_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("a2a-sync-grpc-stream")]


def test_a_silent_stream_ends_with_read_timeout_and_the_call_is_cancelled(
    agent: Agent, port: int
) -> None:
    client = connected(transport(port, idle=IDLE))
    try:
        stream, _ = client.open_stream(Operation.SEND_STREAMING_MESSAGE, PARAMS)
        assert [stream.next_event().json() for _ in range(2)] == [EVENT, EVENT]
        with pytest.raises(ReadTimeout, match="no event on the gRPC stream"):
            stream.next_event()
        assert stream.closed
        assert agent.cancelled.wait(WAIT)  # the agent saw the call end
        assert stream_threads() == []
    finally:
        client.close()


def test_a_slow_consumer_is_not_an_idle_stream(agent: Agent, port: int) -> None:
    """The limit bounds the wait for one event, not the time between reads: a consumer
    busy longer than the idle timeout still gets the events that arrived meanwhile."""
    client = connected(transport(port, idle=IDLE))
    try:
        stream, _ = client.open_stream(Operation.SEND_STREAMING_MESSAGE, PARAMS)
        assert stream.next_event().json() == EVENT
        time.sleep(2.5 * IDLE)  # the consumer's own work, longer than the idle timeout
        assert stream.next_event().json() == EVENT
        agent.release.set()
        assert stream.next_event() is None
        assert stream_threads() == []
    finally:
        client.close()


@pytest.mark.parametrize("threaded", [True, False])
def test_close_from_another_thread_ends_a_blocked_read(
    agent: Agent, port: int, threaded: bool
) -> None:
    client = transport(port, idle=None if not threaded else WAIT, threaded=threaded)
    try:
        stream, _ = client.open_stream(Operation.SEND_STREAMING_MESSAGE, PARAMS)
        assert stream.next_event().json() == EVENT
        assert stream.next_event().json() == EVENT
        closer = threading.Timer(0.2, stream.close)
        closer.start()
        with pytest.raises(Cancelled):
            stream.next_event()  # blocked: the agent is silent
        closer.join(WAIT)
        assert agent.cancelled.wait(WAIT)
        assert stream_threads() == []
    finally:
        client.close()


def test_readers_and_writers_built_by_racing_threads_are_complete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Per-type plans are built once under a lock and published complete: threads that
    meet a type first at the same time all convert it right."""
    monkeypatch.setattr(protojson, "_READERS", {})
    monkeypatch.setattr(protojson, "_WRITERS", {})
    task = {
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05.123Z"},
        "artifacts": [{"artifactId": "a", "parts": [{"text": "x", "metadata": {"k": [1]}}]}],
        "history": [{"messageId": "m", "role": "ROLE_AGENT", "parts": [{"raw": "AAE="}]}],
        "metadata": {"n": None},
    }
    cls = message_class("Task")
    expected = json_format.MessageToDict(json_format.ParseDict(task, cls()))
    start = threading.Barrier(8)
    results: list[Any] = []

    def convert() -> None:
        start.wait(WAIT)
        results.append(protojson.to_dict(protojson.parse(task, cls())))

    threads = [threading.Thread(target=convert) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert results == [expected] * 8
