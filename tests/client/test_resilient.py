"""ResilientA2AClient against scripted agents: the four layers, the seed's tests, CR-01..CR-07.

Every agent here is a :class:`ScriptedAgent`: a raw-socket server (tests/support) that
answers each JSON-RPC method with what the test queued, and records every request, so a
test counts exactly what reached the agent ("the server saw one SendStreamingMessage").
Faults come from the scripted answers (500, 503 + Retry-After, a closed connection) and
from the fault proxy (a stream cut after N events). Waits never sleep: the transport and
the resilient client get a recording ``sleep`` (and a fake clock where deadlines matter),
except in the 20-thread outage test, which needs real, short backoff to spread attempts.

Seed (lc-a2a ``ResilientA2AClient``) test → here:

- transport_retry_recovers_from_transient_failures →
  ``test_send_is_resent_after_500s_only_when_idempotent_sending_is_opted_in`` (both forms)
  and ``test_get_task_is_retried_after_transient_500s``
- api_error_is_not_retried → ``test_json_rpc_error_answer_is_not_retried``
- falls_back_to_alternate_agent_when_primary_is_down →
  ``test_falls_back_when_the_primary_refuses_connections``,
  ``test_opted_in_send_falls_back_after_the_primarys_500s``
- does_not_fall_back_on_parse_error → ``test_unparsable_answer_is_not_a_reason_to_fall_back``
- wait_for_task_recovers_a_pending_task_by_id →
  ``test_send_and_wait_recovers_a_pending_task_by_polling``
- wait_for_task_times_out_and_exposes_task_id_for_recovery →
  ``test_wait_timeout_carries_the_task_id_and_the_wait_can_be_resumed``
- connect_sse_reconnects_after_transient_failure →
  ``test_subscription_is_reestablished_after_a_transient_failure``
"""

from __future__ import annotations

import collections
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import pytest

from a2a_sync._codec import codec_for
from a2a_sync._http import HTTPTransport
from a2a_sync._jsonrpc import encode
from a2a_sync.client import A2AClient, BearerToken, ResilientA2AClient, ResilientTaskStream
from a2a_sync.client.resilient import diff_events
from a2a_sync.errors import (
    AllAgentsFailed,
    AuthRequired,
    ConfigurationError,
    ConnectError,
    DeadlineExceeded,
    HTTPStatusError,
    InputRequired,
    OutcomeUnknown,
    ProtocolError,
    RPCError,
    TaskCanceled,
    TaskFailed,
    TaskNotFound,
    TaskRejected,
    TaskWaitTimeout,
    UnsupportedOperation,
)
from a2a_sync.policies import PollPolicy, ResilienceConfig
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    Artifact,
    Message,
    Part,
    StreamEvent,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.support.fixtures import FaultProxyFactory, ScriptedServerFactory
from tests.support.servers import (
    RecordedRequest,
    close_connection,
    hold,
    respond,
    respond_json,
    write_chunk,
    write_head,
)

WAIT = 5.0  # bound of every wait on another thread
CALL_TIMEOUT = 5.0  # per-call limit: loopback answers take milliseconds

#: Fast, deterministic budgets: two retries, reconnects and polls that never really sleep.
FAST = ResilienceConfig(
    max_transport_retries=2,
    retry_base_delay=0.01,
    retry_max_delay=0.05,
    max_reconnect_attempts=2,
    task_timeout=5.0,
    poll=PollPolicy(initial_interval=0.01, max_interval=0.05),
)


# -- recorders ----------------------------------------------------------------------------------


class Sleeps:
    """A ``sleep`` that records the delays instead of waiting (optionally advancing a clock)."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.delays: list[float] = []
        self._clock = clock
        self._lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        with self._lock:
            self.delays.append(seconds)
        if self._clock is not None:
            self._clock.advance(seconds)


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# -- a scripted A2A agent -----------------------------------------------------------------------

Answer = Callable[[socket.socket, RecordedRequest], None]


class ScriptedAgent:
    """An A2A JSON-RPC agent whose answers the test queues per method.

    ``agent.on("GetTask", a, b)`` answers the next GetTask with ``a``, every later one
    with ``b`` (the last answer repeats). Unqueued methods fail the test.
    """

    def __init__(self, scripted_server: ScriptedServerFactory, revision: str = "1.0") -> None:
        self.codec = codec_for(revision)
        self.revision = revision
        self._answers: dict[str, collections.deque[Answer]] = {}
        self._lock = threading.Lock()
        self.server = scripted_server(self._handle)
        self.url = self.server.url + "/"

    def on(self, method: str, *answers: Answer) -> ScriptedAgent:
        with self._lock:
            self._answers[method] = collections.deque(answers)
        return self

    def calls(self, method: str | None = None) -> list[dict[str, Any]]:
        """The JSON-RPC requests received (of ``method``), in arrival order."""
        bodies = [r.json() for r in self.server.requests if r.body]
        return [b for b in bodies if method is None or b["method"] == method]

    def raw_bodies(self, method: str) -> list[bytes]:
        return [r.body for r in self.server.requests if r.body and r.json()["method"] == method]

    def client(self, sleep: Sleeps | None = None, **kwargs: Any) -> A2AClient:
        transport = HTTPTransport(timeout=CALL_TIMEOUT, sleep=sleep)
        return A2AClient(self.url, revision=self.revision, transport=transport, **kwargs)  # type: ignore[arg-type]

    def _handle(self, sock: socket.socket, request: RecordedRequest) -> None:
        method = request.json()["method"]
        with self._lock:
            queue = self._answers.get(method)
            if not queue:
                raise AssertionError(f"unexpected {method}")
            answer = queue.popleft() if len(queue) > 1 else queue[0]
        answer(sock, request)

    # -- answers --------------------------------------------------------------------------

    def result(self, payload: Any) -> Answer:
        def answer(sock: socket.socket, request: RecordedRequest) -> None:
            envelope = {"jsonrpc": "2.0", "id": request.json()["id"], "result": payload}
            respond_json(sock, envelope)

        return answer

    def task(self, task: Task) -> Answer:
        """The task as a SendMessage result or a GetTask/CancelTask result."""

        def answer(sock: socket.socket, request: RecordedRequest) -> None:
            method = request.json()["method"]
            payload = (
                self.codec.dump_send_result(task)
                if method in ("SendMessage", "message/send")
                else self.codec.dump_task(task)
            )
            self.result(payload)(sock, request)

        return answer

    def error(self, code: int, message: str = "refused") -> Answer:
        def answer(sock: socket.socket, request: RecordedRequest) -> None:
            envelope = {
                "jsonrpc": "2.0",
                "id": request.json()["id"],
                "error": {"code": code, "message": message},
            }
            respond_json(sock, envelope)

        return answer

    def stream(
        self,
        events: Iterable[StreamEvent],
        *,
        before: Callable[[], None] | None = None,
        between: Callable[[int], None] | None = None,
    ) -> Answer:
        """An SSE answer with ``events``; ``between(i)`` runs before event ``i``."""
        items = list(events)

        def answer(sock: socket.socket, request: RecordedRequest) -> None:
            if before is not None:
                before()
            request_id = request.json()["id"]
            write_head(
                sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
            )
            for index, event in enumerate(items):
                if between is not None:
                    between(index)
                envelope = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": self.codec.dump_stream_event(event),
                }
                write_chunk(sock, b"data: " + encode(envelope) + b"\n\n")
            write_chunk(sock, b"")

        return answer


def status(code: int, headers: dict[str, str] | None = None, body: bytes = b"down") -> Answer:
    def answer(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, code, body, headers=headers or {})

    return answer


def hang_up(sock: socket.socket, request: RecordedRequest) -> None:
    """Read the request, then close without answering: the outcome is unknown."""
    close_connection(sock)


def task_(
    state: TaskState,
    *,
    task_id: str = "t1",
    artifacts: Sequence[Artifact] = (),
    message: str | None = None,
) -> Task:
    status_message = (
        Message.agent(message, task_id=task_id, context_id="c1", message_id=f"m-{state.value}")
        if message is not None
        else None
    )
    return Task(
        id=task_id,
        context_id="c1",
        status=TaskStatus(state=state, message=status_message),
        artifacts=list(artifacts),
    )


def resilient(
    *agents: A2AClient, config: ResilienceConfig = FAST, sleep: Sleeps | None = None, **kw: Any
) -> ResilientA2AClient:
    primary, *fallbacks = agents
    return ResilientA2AClient(primary, config, fallbacks=fallbacks, sleep=sleep or Sleeps(), **kw)


# -- L1: transport retry (seed ports) -----------------------------------------------------------


@pytest.mark.parametrize("opted_in", [True, False])
def test_send_is_resent_after_500s_only_when_idempotent_sending_is_opted_in(
    scripted_server: ScriptedServerFactory, opted_in: bool
) -> None:
    agent = ScriptedAgent(scripted_server)
    done = task_(TaskState.completed, task_id="task-retry")
    agent.on("SendMessage", status(500), status(500), agent.task(done))
    sleeps = Sleeps()
    client = resilient(agent.client(sleep=sleeps))
    message = Message.user("hi")

    if opted_in:
        assert client.send_message(message, idempotent=True) == done
        # Two failures and one success, each carrying the byte-identical message.
        bodies = agent.raw_bodies("SendMessage")
        assert len(bodies) == 3
        assert {json.dumps(json.loads(b)["params"], sort_keys=True) for b in bodies} == {
            json.dumps(json.loads(bodies[0])["params"], sort_keys=True)
        }
        assert {json.loads(b)["params"]["message"]["messageId"] for b in bodies} == {
            message.message_id
        }
        assert len(sleeps.delays) == 2 and all(d > 0 for d in sleeps.delays)
    else:
        with pytest.raises(OutcomeUnknown) as info:
            client.send_message(message)
        assert info.value.message_id == message.message_id
        assert isinstance(info.value.__cause__, HTTPStatusError)
        assert len(agent.calls("SendMessage")) == 1
        assert sleeps.delays == []


def test_idempotent_send_from_the_config_resends_the_identical_message(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("SendMessage", hang_up, agent.task(task_(TaskState.completed)))
    config = attrs.evolve(FAST, idempotent_send=True)
    client = resilient(agent.client(sleep=Sleeps()), config=config)

    assert client.send_message("hi").state is TaskState.completed
    first, second = agent.raw_bodies("SendMessage")
    assert json.loads(first)["params"] == json.loads(second)["params"]


def test_get_task_is_retried_after_transient_500s(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", status(500), status(502), agent.task(task_(TaskState.working)))
    sleeps = Sleeps()
    client = resilient(agent.client(sleep=sleeps))

    assert client.get_task("t1").state is TaskState.working
    assert len(agent.calls("GetTask")) == 3
    # Capped exponential backoff with jitter: each delay within [base*2^k*(1-j), base*2^k].
    first, second = sleeps.delays
    assert 0.01 * 0.75 <= first <= 0.01
    assert 0.02 * 0.75 <= second <= 0.02


def test_retry_budget_comes_from_the_config(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", status(503))
    client = resilient(
        agent.client(sleep=Sleeps()), config=attrs.evolve(FAST, max_transport_retries=4)
    )

    with pytest.raises(HTTPStatusError) as info:
        client.get_task("t1")
    assert info.value.status_code == 503
    assert len(agent.calls("GetTask")) == 5


def test_json_rpc_error_answer_is_not_retried(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("SendMessage", agent.error(-32000, "denied"))
    sleeps = Sleeps()
    client = resilient(agent.client(sleep=sleeps))

    with pytest.raises(RPCError) as info:
        client.send_message("hi", idempotent=True)
    assert info.value.code == -32000
    assert len(agent.calls("SendMessage")) == 1
    assert sleeps.delays == []


def test_retry_after_is_honoured(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on(
        "GetTask",
        status(429, {"Retry-After": "2"}),
        status(503, {"Retry-After": "3"}),
        agent.task(task_(TaskState.working)),
    )
    sleeps = Sleeps()
    client = resilient(agent.client(sleep=sleeps))

    client.get_task("t1")
    assert sleeps.delays == [2.0, 3.0]


def test_retry_after_beyond_the_cap_fails_at_once_and_falls_back(
    scripted_server: ScriptedServerFactory,
) -> None:
    busy = ScriptedAgent(scripted_server).on("GetTask", status(503, {"Retry-After": "3600"}))
    backup = ScriptedAgent(scripted_server)
    backup.on("GetTask", backup.task(task_(TaskState.working)))
    sleeps = Sleeps()
    config = attrs.evolve(FAST, retry_after_max=10.0)
    client = resilient(busy.client(sleep=sleeps), backup.client(sleep=sleeps), config=config)

    assert client.get_task("t1").state is TaskState.working
    assert len(busy.calls("GetTask")) == 1
    assert all(delay <= 10.0 for delay in sleeps.delays)


def test_retry_after_beyond_the_cap_names_the_budget(
    scripted_server: ScriptedServerFactory,
) -> None:
    busy = ScriptedAgent(scripted_server).on("GetTask", status(503, {"Retry-After": "3600"}))
    sleeps = Sleeps()
    client = resilient(busy.client(sleep=sleeps), config=attrs.evolve(FAST, retry_after_max=10.0))

    with pytest.raises(DeadlineExceeded) as info:
        client.get_task("t1")
    assert "Retry-After" in str(info.value)  # the message is the feature: why it gave up
    assert sleeps.delays == []
