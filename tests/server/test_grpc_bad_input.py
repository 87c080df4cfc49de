"""Bad input to our gRPC binding: each refusal has its gRPC status and A2A ErrorInfo,
nothing is stored, the server keeps serving and its streams and threads return to rest.

Raw grpcio calls (bytes in, bytes out) so that the tests can send what no generated
client would: broken messages, unknown enum numbers, missing fields, bad metadata.
"""

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

from google.protobuf import json_format  # noqa: E402
from google.rpc import error_details_pb2, status_pb2  # noqa: E402

from a2a_sync.a2a.grpc.messages import METHODS  # noqa: E402
from a2a_sync.a2a.methods import Operation  # noqa: E402
from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from a2a_sync.server.bindings.grpc_service import A2AServiceHandlers  # noqa: E402
from tests.server.agents import WAIT, EchoAgent, card  # noqa: E402

SEND = METHODS[Operation.SEND_MESSAGE]
STREAM = METHODS[Operation.SEND_STREAMING_MESSAGE]
VERSION = (("a2a-version", "1.0"),)
#: The server's configured largest request.
MAX_RECEIVE = 64 * 1024


@pytest.fixture
def agent() -> EchoAgent:
    return EchoAgent()


@pytest.fixture
def app(agent: EchoAgent) -> Iterator[A2AApplication]:
    application = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent)
    yield application
    agent.release.set()
    application.close(WAIT)


@pytest.fixture
def server(app: A2AApplication) -> Iterator[GRPCServer]:
    with GRPCServer(app, max_receive_bytes=MAX_RECEIVE) as running:
        yield running


@pytest.fixture
def channel(server: GRPCServer) -> Iterator[Any]:
    with grpc.insecure_channel(server.address) as opened:
        yield opened


def unary(channel: Any, path: str = SEND.path) -> Any:
    return channel.unary_unary(path)  # bytes in, bytes out


def send_bytes(text: str = "hello", **message: Any) -> bytes:
    fields = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **message,
    }
    return json_format.ParseDict({"message": fields}, SEND.request()).SerializeToString()


def refusal(exc: grpc.RpcError) -> tuple[str, str | None, list[str]]:
    """(status code, ErrorInfo reason, BadRequest fields) of a failed call."""
    trailers = dict(exc.trailing_metadata() or ())
    raw = trailers.get("grpc-status-details-bin")
    if raw is None:
        return exc.code().name, None, []
    status = status_pb2.Status.FromString(raw)
    assert status.code == exc.code().value[0]
    assert status.message == exc.details()
    reason, fields = None, []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            assert info.domain == "a2a-protocol.org"
            reason = info.reason
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            fields = [v.field for v in bad.field_violations]
    return exc.code().name, reason, fields


def refused(call: Any, payload: bytes, metadata: Any = VERSION, **kwargs: Any) -> Any:
    with pytest.raises(grpc.RpcError) as caught:
        call(payload, timeout=WAIT, metadata=metadata, **kwargs)
    return refusal(caught.value)


def still_serving(channel: Any, app: A2AApplication, agent: EchoAgent, stored: int = 1) -> None:
    """A good call works afterwards, and the bad ones stored nothing."""
    answer = SEND.response.FromString(unary(channel)(send_bytes(), timeout=WAIT, metadata=VERSION))
    assert answer.task.status.state == 3  # TASK_STATE_COMPLETED
    assert agent.calls == stored
    listing = METHODS[Operation.LIST_TASKS]
    raw = unary(channel, listing.path)(b"", timeout=WAIT, metadata=VERSION)
    assert listing.response.FromString(raw).total_size == stored


def test_malformed_message_is_invalid_argument(
    channel: Any, app: A2AApplication, agent: EchoAgent
) -> None:
    assert refused(unary(channel), b"\xff\xff\xff\x0f garbage") == (
        "INVALID_ARGUMENT",
        "INVALID_REQUEST",
        [],
    )
    still_serving(channel, app, agent)


def test_oversized_message_is_resource_exhausted(
    channel: Any, app: A2AApplication, agent: EchoAgent
) -> None:
    """grpcio refuses a message over the configured size before any handler runs (so no
    ErrorInfo can be attached: the status is grpc core's)."""
    code, reason, _ = refused(unary(channel), send_bytes("x" * (MAX_RECEIVE + 1)))
    assert (code, reason) == ("RESOURCE_EXHAUSTED", None)
    still_serving(channel, app, agent)


def test_unknown_enum_value_is_invalid_params(
    channel: Any, app: A2AApplication, agent: EchoAgent
) -> None:
    request = SEND.request.FromString(send_bytes())
    request.message.role = 7  # proto3 enums are open: the number survives the wire
    code, reason, fields = refused(unary(channel), request.SerializeToString())
    assert (code, reason) == ("INVALID_ARGUMENT", "INVALID_PARAMS")
    assert any("role" in f for f in fields)
    still_serving(channel, app, agent)


@pytest.mark.parametrize("missing", ["messageId", "parts", "role"])
def test_missing_required_fields_are_invalid_params(
    missing: str, channel: Any, app: A2AApplication, agent: EchoAgent
) -> None:
    fields = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}]}
    del fields[missing]
    payload = json_format.ParseDict({"message": fields}, SEND.request()).SerializeToString()
    code, reason, _ = refused(unary(channel), payload)
    assert (code, reason) == ("INVALID_ARGUMENT", "INVALID_PARAMS")
    still_serving(channel, app, agent)


@pytest.mark.parametrize("metadata", [(), (("a2a-version", "9.9"),), (("a2a-version", "x"),)])
def test_invalid_version_metadata_is_version_not_supported(
    metadata: Any, channel: Any, app: A2AApplication, agent: EchoAgent
) -> None:
    assert refused(unary(channel), send_bytes(), metadata=metadata) == (
        "FAILED_PRECONDITION",
        "VERSION_NOT_SUPPORTED",
        [],
    )
    still_serving(channel, app, agent)


class HeldPastDeadline(grpc.ServerInterceptor):  # type: ignore[name-defined,misc]
    """Holds the first call of ``path`` in the server until the server itself has ended
    the call for its deadline, then hands it to our handler: the state of a call that waited
    in a busy server's queue past its deadline. (Ordering by the call's own end event:
    no sleeps and no race with the client's clock.)"""

    def __init__(self, path: str) -> None:
        self.path = path
        self.handled = threading.Event()
        self.armed = True

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = continuation(details)
        if handler is None or details.method != self.path or not self.armed:
            return handler
        self.armed = False
        kind = "unary_stream" if handler.response_streaming else "unary_unary"
        inner = getattr(handler, kind)

        def held(request: Any, context: Any) -> Any:
            ended = threading.Event()
            if not context.add_callback(ended.set):  # False: the call has ended already
                ended.set()
            try:
                assert ended.wait(WAIT)
                answer = inner(request, context)
                return list(answer) if kind == "unary_stream" else answer
            finally:
                self.handled.set()

        return handler._replace(**{kind: held})


def call_once(channel: Any, method: Any) -> Any:
    """The method called with a 0.2 s deadline (a stream read to its end)."""
    if method.streaming:
        return list(channel.unary_stream(method.path)(send_bytes(), timeout=0.2, metadata=VERSION))
    return channel.unary_unary(method.path)(send_bytes(), timeout=0.2, metadata=VERSION)


@pytest.mark.parametrize("method", [SEND, STREAM], ids=["unary", "stream"])
def test_an_expired_deadline_runs_nothing(
    method: Any, app: A2AApplication, agent: EchoAgent
) -> None:
    held = HeldPastDeadline(method.path)
    pool = futures.ThreadPoolExecutor(2, thread_name_prefix="test-grpc-held")
    server = grpc.server(
        pool,
        handlers=[A2AServiceHandlers(app, lambda: address).handler()],
        interceptors=[held],
    )
    address = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    try:
        with grpc.insecure_channel(address) as channel:
            with pytest.raises(grpc.RpcError) as caught:
                call_once(channel, method)
            assert caught.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
            assert held.handled.wait(WAIT)
            assert agent.calls == 0  # our handler saw the passed deadline and ran nothing
            assert app.active_streams == 0
            still_serving(channel, app, agent)
    finally:
        server.stop(None).wait(WAIT)
        pool.shutdown(wait=True)


def test_a_stream_never_read_is_released_when_the_client_goes(
    server: GRPCServer, app: A2AApplication, agent: EchoAgent
) -> None:
    """A client opens a stream and never reads it; once it goes away (cancel, closed
    channel) the server's stream ends and the server keeps serving."""
    for how in ("cancel", "close"):
        agent.started.clear()
        opened = grpc.insecure_channel(server.address)
        call = opened.unary_stream(STREAM.path)(send_bytes("wait"), metadata=VERSION)
        assert agent.started.wait(WAIT)
        with app._lock:
            assert app._lock.wait_for(lambda: app.active_streams == 1, timeout=WAIT)
        if how == "cancel":
            call.cancel()
        opened.close()
        with app._lock:
            assert app._lock.wait_for(lambda: app.active_streams == 0, timeout=WAIT)
    with grpc.insecure_channel(server.address) as channel:
        still_serving(channel, app, agent, stored=3)
