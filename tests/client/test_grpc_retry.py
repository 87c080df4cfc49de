"""Retries of the gRPC client binding (issue 19): the client's RetryPolicy applies to
UNAVAILABLE as over HTTP — always when no connection was made, after the request may
have reached the agent only for operations safe to repeat — and the timeout bounds the
whole call. Real pieces: a2a_sync's GRPCServer, grpcio's channel, the suite's fault proxy
(a TCP proxy, so it carries HTTP/2)."""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from tests.support.grpc import import_grpc

grpc = import_grpc()

from a2a_sync.a2a.methods import Operation  # noqa: E402
from a2a_sync.client import A2AClient  # noqa: E402
from a2a_sync.client.auth import AuthRetry  # noqa: E402
from a2a_sync.client.bindings.grpc import GRPCTransport  # noqa: E402
from a2a_sync.client.bindings.grpc_retry import Attempts  # noqa: E402
from a2a_sync.errors import ConnectError, ConnectionLost, DeadlineExceeded  # noqa: E402
from a2a_sync.policies import RetryPolicy, Timeout  # noqa: E402
from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.bindings.grpc import GRPCServer  # noqa: E402
from tests.server.agents import WAIT, EchoAgent, card  # noqa: E402
from tests.support.fixtures import FaultProxyFactory  # noqa: E402

POLICY = RetryPolicy(max_retries=3, backoff_base=0.5, jitter=0.0)


class Reserved:
    """A loopback port that refuses connections (bound, not listening) until ``free``."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port: int = self.sock.getsockname()[1]

    def free(self) -> int:
        self.sock.close()
        return self.port


@pytest.fixture
def agent() -> Iterator[EchoAgent]:
    agent = EchoAgent()
    yield agent
    agent.release.set()


@pytest.fixture
def app(agent: EchoAgent) -> Iterator[A2AApplication]:
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent)
    yield app
    app.close(WAIT)


def transport(target: str, sleep: Any, policy: RetryPolicy = POLICY) -> GRPCTransport:
    return GRPCTransport(
        url=target,
        revision="1.0",
        timeout=Timeout(total=WAIT * 4),
        retry=policy,
        headers={"a2a-version": "1.0"},
        credentials=None,
        tenant=None,
        stream_idle_timeout=WAIT,
        threaded_streams=True,
        sleep=sleep,
    )


def send_params(text: str, message_id: str | None = None) -> dict[str, Any]:
    return {
        "message": {
            "messageId": message_id or str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
    }


def test_a_message_to_an_agent_that_is_down_is_sent_once_it_is_up(
    app: A2AApplication, agent: EchoAgent
) -> None:
    """Connection refused: the request never left, so even SendMessage is retried."""
    reserved = Reserved()
    servers: list[GRPCServer] = []
    delays: list[float] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        if len(delays) == 2:  # down for two attempts, then up
            servers.append(GRPCServer(app, port=reserved.free()).start())
            # Instead of really waiting out the backoff: until the channel reconnected.
            grpc.channel_ready_future(rpc.channel._channel).result(timeout=WAIT)

    rpc = transport(f"127.0.0.1:{reserved.port}", sleep)
    try:
        answer = rpc.call(Operation.SEND_MESSAGE, send_params("echo hi"), timeout=None)
    finally:
        rpc.close()
        for server in servers:
            server.stop(None)
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert delays == [0.5, 1.0]  # the policy's backoff, no jitter
    assert agent.calls == 1


def test_without_retries_a_refused_connection_fails_at_once() -> None:
    reserved = Reserved()
    delays: list[float] = []
    rpc = transport(f"127.0.0.1:{reserved.port}", delays.append, RetryPolicy.none())
    with contextlib.closing(rpc), pytest.raises(ConnectError):
        rpc.call(Operation.GET_TASK, {"id": "t"}, timeout=None)
    reserved.free()
    assert delays == []


def test_retries_stop_when_the_budget_would_be_exceeded() -> None:
    """Through A2AClient: a 1 s timeout with 0.4 s, 0.8 s backoffs waits once, then fails
    with the connect error instead of sleeping past the deadline."""
    reserved = Reserved()
    policy = RetryPolicy(max_retries=10, backoff_base=0.4, jitter=0.0)
    with (
        A2AClient(f"127.0.0.1:{reserved.port}", binding="GRPC", timeout=1.0, retry=policy) as c,
        pytest.raises(ConnectError) as caught,
    ):
        c.get_task("t")
    reserved.free()
    assert "unavailable" in str(caught.value)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Unavailable(grpc.RpcError):  # type: ignore[misc]
    def code(self) -> Any:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return "failed to connect to all addresses; last error: Connection refused"

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()


def test_each_attempt_gets_what_is_left_of_the_budget() -> None:
    clock = FakeClock()
    deadlines: list[float | None] = []

    def send(metadata: Any, deadline: float | None) -> Any:
        deadlines.append(deadline)
        clock.now += 0.1  # each failed attempt takes 0.1 s
        raise Unavailable()

    def wait(seconds: float) -> None:
        clock.now += seconds

    attempts = Attempts(
        policy=RetryPolicy(max_retries=10, backoff_base=1.0, jitter=0.0),
        resend_safe=False,
        budget=5.0,
        wait=wait,
        clock=clock,
    )
    with pytest.raises(Unavailable):
        attempts.run(send, lambda: (), AuthRetry(None, "http://127.0.0.1:1"))
    # 0.1 + 1 + 0.1 + 2 + 0.1 = 3.3 s used; the next 4 s backoff would pass 5 s: stop.
    assert deadlines == pytest.approx([5.0, 3.9, 1.8])


def test_a_message_cut_in_flight_is_not_resent(
    app: A2AApplication, agent: EchoAgent, fault_proxy: FaultProxyFactory
) -> None:
    """The connection breaks while the agent works on the message: it may have acted on
    it, so SendMessage fails with ConnectionLost (not ConnectError) and is not resent."""
    delays: list[float] = []
    with GRPCServer(app) as server:
        proxy = fault_proxy(("127.0.0.1", server.port))
        rpc = transport(f"127.0.0.1:{proxy.address[1]}", delays.append)

        def cut() -> None:
            assert agent.started.wait(WAIT)
            proxy.reset_peer()

        with contextlib.closing(rpc), _in_thread(cut), pytest.raises(ConnectionLost):
            rpc.call(Operation.SEND_MESSAGE, send_params("wait"), timeout=None)
        agent.release.set()
    assert delays == []
    assert agent.calls == 1


def test_an_idempotent_message_cut_in_flight_is_resent_with_its_id(
    app: A2AApplication, agent: EchoAgent, fault_proxy: FaultProxyFactory
) -> None:
    delays: list[float] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        agent.release.set()  # the resend finds the agent free
        grpc.channel_ready_future(rpc.channel._channel).result(timeout=WAIT)  # reconnected

    message_id = str(uuid.uuid4())
    with GRPCServer(app) as server:
        proxy = fault_proxy(("127.0.0.1", server.port))
        rpc = transport(f"127.0.0.1:{proxy.address[1]}", sleep)
        with contextlib.closing(rpc):

            def cut() -> None:
                assert agent.started.wait(WAIT)
                proxy.reset_peer()

            with _in_thread(cut):
                answer = rpc.call(
                    Operation.SEND_MESSAGE,
                    send_params("wait", message_id),
                    timeout=None,
                    idempotent=True,
                )
        resent_on = proxy.connections_accepted
    # The first resend waits the policy's first back-off. grpcio may still report the
    # cut connection READY for a moment, so that resend can meet it and be retried once
    # more (seen under load): what matters is that the message was sent again, with its
    # id, on a new connection, and ran once.
    assert delays[0] == 0.5
    assert len(delays) <= 2
    assert resent_on >= 2  # sent again, on a new connection
    # a2a_sync's server answers the resent messageId from the first run (deduplication)
    assert agent.calls == 1
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_deadline_still_holds_with_retries(app: A2AApplication, agent: EchoAgent) -> None:
    with GRPCServer(app) as server:
        rpc = attrs.evolve(transport(server.address, None), timeout=Timeout(total=0.5))
        with contextlib.closing(rpc), pytest.raises(DeadlineExceeded):
            rpc.call(Operation.SEND_MESSAGE, send_params("wait"), timeout=None)
        agent.release.set()
    assert agent.calls == 1


class _in_thread:
    """Run ``target`` on a named thread for the block, joined (and its failure raised)."""

    def __init__(self, target: Any) -> None:
        self.error: BaseException | None = None

        def run() -> None:
            try:
                target()
            except BaseException as exc:  # re-raised on the test thread
                self.error = exc

        self.thread = threading.Thread(target=run, name="a2a-sync-test-cut", daemon=True)

    def __enter__(self) -> None:
        self.thread.start()

    def __exit__(self, *exc: object) -> None:
        self.thread.join(WAIT * 2)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error


class PushedBack(Unavailable):
    def __init__(self, millis: str) -> None:
        self.millis = millis

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("grpc-retry-pushback-ms", self.millis),)


@pytest.mark.parametrize(("millis", "waits"), [("250", [0.25]), ("90000", []), ("soon", [0.5])])
def test_the_servers_pushback_replaces_the_backoff_within_retry_after_max(
    millis: str, waits: list[float]
) -> None:
    """``grpc-retry-pushback-ms`` is gRPC's Retry-After: honoured up to the policy's
    ``retry_after_max`` (60 s; longer fails the call now); malformed: the backoff."""
    delays: list[float] = []
    answers: list[Any] = [PushedBack(millis), "answer"]

    def send(metadata: Any, deadline: float | None) -> Any:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    attempts = Attempts(policy=POLICY, resend_safe=True, budget=None, wait=delays.append)
    if waits:
        assert attempts.run(send, lambda: (), AuthRetry(None, "http://127.0.0.1:1")) == "answer"
    else:
        with pytest.raises(PushedBack):
            attempts.run(send, lambda: (), AuthRetry(None, "http://127.0.0.1:1"))
    assert delays == waits
