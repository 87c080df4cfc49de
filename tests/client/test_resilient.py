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

reliability-cases.md → here (the same cases against a2a-sdk: test_resilient_interop.py):

- CR-01 ``test_stream_cut_after_the_task_event_resubscribes_and_never_reposts``
- CR-02 ``test_stream_cut_before_the_first_event_is_an_unknown_outcome``,
  ``test_opted_in_stream_resends_the_identical_message_after_an_early_cut``
- CR-03 ``test_events_backfilled_after_a_resubscribe_are_not_delivered_twice``,
  ``test_updates_a_subscription_repeats_from_its_snapshot_are_dropped``,
  ``test_new_updates_that_look_like_the_snapshot_are_delivered``,
  ``test_a_repeat_no_client_can_recognise_is_corrected_from_the_stored_task``
- CR-04 ``test_stream_falls_back_to_polling_when_resubscribing_keeps_failing``,
  ``test_unsupported_resubscribe_of_a_running_task_falls_back_to_polling``
- CR-05 ``test_resubscribing_to_a_task_that_just_finished_reads_it_once``
- CR-06 ``test_falls_back_when_the_primary_refuses_connections``,
  ``test_send_is_not_failed_over_after_an_ambiguous_failure``,
  ``test_opted_in_send_falls_back_after_the_primarys_500s``,
  ``test_backup_gets_its_own_credentials_never_the_primarys``
- CR-07 ``test_agent_without_streaming_gets_a_send_and_polling``
- CT-03/CT-08 ``test_retry_after_is_honoured``, ``test_retry_after_beyond_the_cap_*``;
  CT-05/CT-07 the opted-in resend tests; CT-06 ``test_send_is_not_failed_over_after_an_*``;
  CT-09 ``test_get_task_is_retried_after_transient_500s``;
  CT-18 ``test_twenty_threads_ride_out_an_outage_with_bounded_spread_attempts``
"""

from __future__ import annotations

import collections
import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.jsonrpc import encode
from a2a_sync.a2a.codec import codec_for
from a2a_sync.client import A2AClient, BearerToken, ResilientA2AClient
from a2a_sync.client.resilient._progress import diff_events
from a2a_sync.errors import (
    AllAgentsFailed,
    AuthRequired,
    Cancelled,
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
)
from a2a_sync.policies import PollPolicy, ResilienceConfig, RetryPolicy
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
from tests.support.faultproxy import FaultProxy
from tests.support.fixtures import FaultProxyFactory, ScriptedServerFactory
from tests.support.ports import refused_url
from tests.support.servers import (
    RecordedRequest,
    close_connection,
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


# -- recorders ------------------------------------------------------------------------------------


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


class LogEvent(logging.Handler):
    """Sets an event when ``logger`` emits a record containing ``text``: event ordering
    for a thread whose next step is a wait that only its log announces."""

    def __init__(self, logger: logging.Logger, text: str) -> None:
        super().__init__(logging.DEBUG)
        self._logger, self._text = logger, text
        self._seen = threading.Event()
        self._level = logger.level

    def emit(self, record: logging.LogRecord) -> None:
        if self._text in record.getMessage():
            self._seen.set()

    def wait(self, timeout: float) -> bool:
        return self._seen.wait(timeout)

    def __enter__(self) -> LogEvent:
        self._logger.addHandler(self)
        self._logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)


class FakeClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# -- a scripted A2A agent -------------------------------------------------------------------------

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


def sent_task(result: Task | Message) -> Task:
    assert isinstance(result, Task)
    return result


def resilient(
    *agents: A2AClient, config: ResilienceConfig = FAST, sleep: Sleeps | None = None, **kw: Any
) -> ResilientA2AClient:
    primary, *fallbacks = agents
    return ResilientA2AClient(primary, config, fallbacks=fallbacks, sleep=sleep or Sleeps(), **kw)


def resilient_through(proxy: FaultProxy) -> ResilientA2AClient:
    """A resilient client of the scripted agent behind ``proxy`` (the fault under test)."""
    return resilient(A2AClient(proxy.url + "/", transport=HTTPTransport(timeout=CALL_TIMEOUT)))


# -- L1: transport retry (seed ports) -------------------------------------------------------------


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
        assert len(sleeps.delays) == 2
        assert all(d > 0 for d in sleeps.delays)
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

    assert sent_task(client.send_message("hi")).state is TaskState.completed
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


@pytest.mark.parametrize("method", ["GetTask", "SendMessage"])
def test_retry_after_is_honoured(scripted_server: ScriptedServerFactory, method: str) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on(
        method,
        status(429, {"Retry-After": "2"}),
        status(503, {"Retry-After": "3"}),
        agent.task(task_(TaskState.working)),
    )
    sleeps = Sleeps()
    client = resilient(agent.client(sleep=sleeps), sleep=sleeps)

    if method == "GetTask":
        client.get_task("t1")
    else:  # "not processed": resent on the same agent without opting in
        client.send_message("hi")
        first, second, third = (json.loads(b)["params"] for b in agent.raw_bodies(method))
        assert first == second == third
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


# -- L4: fallback agents --------------------------------------------------------------------------


def test_falls_back_when_the_primary_refuses_connections(
    scripted_server: ScriptedServerFactory,
) -> None:
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed, task_id="from-fallback")))
    sleeps = Sleeps()
    down = A2AClient(refused_url(), transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=sleeps))
    client = resilient(down, backup.client(), config=attrs.evolve(FAST, max_transport_retries=1))

    # A refused connection means the message never left: no opt-in needed to fail over.
    assert sent_task(client.send_message("hi")).id == "from-fallback"
    assert len(sleeps.delays) == 1  # the primary was retried once (L1) before L4
    assert len(backup.calls("SendMessage")) == 1


def test_opted_in_send_falls_back_after_the_primarys_500s(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server).on("SendMessage", status(500))
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed, task_id="from-fallback")))
    client = resilient(
        primary.client(sleep=Sleeps()),
        backup.client(),
        config=attrs.evolve(FAST, max_transport_retries=1),
    )
    message = Message.user("hi")

    assert sent_task(client.send_message(message, idempotent=True)).id == "from-fallback"
    assert len(primary.calls("SendMessage")) == 2
    assert primary.calls("SendMessage")[0]["params"] == backup.calls("SendMessage")[0]["params"]


def test_send_is_not_failed_over_after_an_ambiguous_failure(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server).on("SendMessage", hang_up)
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed)))
    client = resilient(primary.client(sleep=Sleeps()), backup.client())

    with pytest.raises(OutcomeUnknown):
        client.send_message("hi")
    assert len(primary.calls("SendMessage")) == 1
    assert backup.calls() == []


def test_unparsable_answer_is_not_a_reason_to_fall_back(
    scripted_server: ScriptedServerFactory,
) -> None:
    def garbage(sock: socket.socket, request: RecordedRequest) -> None:
        respond(sock, 200, b"not-json{{{", headers={"Content-Type": "application/json"})

    primary = ScriptedAgent(scripted_server).on("SendMessage", garbage)
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed)))
    client = resilient(primary.client(), backup.client())

    with pytest.raises(ProtocolError):
        client.send_message("hi", idempotent=True)
    assert backup.calls() == []


def test_input_required_is_not_a_reason_to_fall_back(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server)
    asking = task_(TaskState.input_required, message="which city?")
    primary.on("SendMessage", primary.task(asking))
    backup = ScriptedAgent(scripted_server)
    client = resilient(primary.client(), backup.client())

    with pytest.raises(InputRequired):
        client.send_and_wait("hi")
    assert backup.calls() == []


def test_json_rpc_error_falls_back_to_the_next_agent(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server)
    primary.on("SendMessage", primary.error(-32603, "internal"))
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed, task_id="from-fallback")))
    client = resilient(primary.client(), backup.client())

    # The agent answered (it refused): another agent may serve the same message.
    assert sent_task(client.send_message("hi")).id == "from-fallback"
    assert len(primary.calls("SendMessage")) == 1


def test_all_agents_failing_lists_each_failure_in_order(
    scripted_server: ScriptedServerFactory,
) -> None:
    first = ScriptedAgent(scripted_server)
    first.on("ListTasks", first.error(-32603, "internal"))
    second = ScriptedAgent(scripted_server).on("ListTasks", status(503))
    down = A2AClient(refused_url(), transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps()))
    client = resilient(first.client(), second.client(sleep=Sleeps()), down)

    with pytest.raises(AllAgentsFailed) as info:
        client.list_tasks()  # not bound to a task: every agent may serve it
    urls = [url for url, _ in info.value.failures]
    assert urls == [agent.url for agent in client.agents]
    kinds = [type(exc) for _, exc in info.value.failures]
    assert issubclass(kinds[0], RPCError)
    assert kinds[1] is HTTPStatusError
    assert issubclass(kinds[2], ConnectError)
    for url in urls:
        assert url in str(info.value)


def test_backup_gets_its_own_credentials_never_the_primarys(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server).on("SendMessage", status(503))
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed)))
    client = resilient(
        primary.client(credentials=BearerToken("primary-secret")),
        backup.client(credentials=BearerToken("backup-secret")),
    )

    # 503 says "not processed": after L1's retries, failing over is safe without opting in.
    client.send_message("hi")
    to_primary = {r.headers["Authorization"] for r in primary.server.requests}
    to_backup = {r.headers["Authorization"] for r in backup.server.requests}
    assert to_primary == {"Bearer primary-secret"}
    assert to_backup == {"Bearer backup-secret"}
    assert "primary-secret" not in repr(client)


def test_operations_on_a_task_stay_with_the_agent_that_owns_it(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server).on("SendMessage", status(503))
    backup = ScriptedAgent(scripted_server)
    created = task_(TaskState.working, task_id="on-backup")
    backup.on("SendMessage", backup.task(created))
    backup.on("GetTask", backup.task(created), status(503))
    backup.on(
        "CancelTask",
        backup.task(attrs.evolve(created, status=TaskStatus(state=TaskState.canceled))),
    )
    client = resilient(primary.client(), backup.client(sleep=Sleeps()))

    assert sent_task(client.send_message("hi")).id == "on-backup"
    primary.on("GetTask", primary.task(created))  # would answer, but does not own the task
    assert client.get_task("on-backup") == created
    assert client.cancel_task("on-backup").state is TaskState.canceled
    with pytest.raises(HTTPStatusError):
        client.get_task("on-backup")  # the owner is down: no other agent is asked
    assert {c["method"] for c in primary.calls()} == {"SendMessage"}


def test_a_task_of_unknown_owner_is_looked_up_agent_by_agent(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server)
    primary.on("GetTask", primary.error(-32001, "no such task"))
    backup = ScriptedAgent(scripted_server)
    backup.on("GetTask", backup.task(task_(TaskState.working, task_id="elsewhere")))
    client = resilient(primary.client(), backup.client())

    assert client.get_task("elsewhere").id == "elsewhere"
    assert client.get_task("elsewhere").id == "elsewhere"  # now known to live on the backup
    assert len(primary.calls("GetTask")) == 1
    assert len(backup.calls("GetTask")) == 2


def test_a_reply_to_a_task_of_unknown_owner_is_tried_agent_by_agent(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server)
    primary.on("SendMessage", primary.error(-32001, "no such task"))
    backup = ScriptedAgent(scripted_server)
    backup.on("SendMessage", backup.task(task_(TaskState.completed, task_id="elsewhere")))
    client = resilient(primary.client(), backup.client())

    assert sent_task(client.reply("elsewhere", "Paris")).id == "elsewhere"
    assert backup.calls("SendMessage")[0]["params"]["message"]["taskId"] == "elsewhere"


def test_a_task_no_agent_knows_is_not_found(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", agent.error(-32001, "no such task"))
    client = resilient(agent.client())

    with pytest.raises(TaskNotFound):
        client.wait_for_task("nope")


# -- L3: task recovery ----------------------------------------------------------------------------


def test_send_and_wait_recovers_a_pending_task_by_polling(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("SendMessage", agent.task(task_(TaskState.working)))
    done = task_(TaskState.completed, artifacts=[Artifact.create("recovered", artifact_id="a")])
    agent.on("GetTask", agent.task(task_(TaskState.working)), agent.task(done))
    client = resilient(agent.client())

    result = client.send_and_wait("hi")
    assert isinstance(result, Task)
    assert result.text == "recovered"
    (send,) = agent.calls("SendMessage")
    assert send["params"]["configuration"]["returnImmediately"] is True
    assert len(agent.calls("GetTask")) == 2  # recovered by id, never re-sent


def test_send_and_wait_returns_a_reply_message(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    reply = Message.agent("hello", message_id="r1")
    agent.on("SendMessage", agent.result(agent.codec.dump_send_result(reply)))
    client = resilient(agent.client())

    assert client.send_and_wait("hi") == reply


def test_wait_timeout_carries_the_task_id_and_the_wait_can_be_resumed(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", agent.task(task_(TaskState.working, task_id="t-stuck")))
    clock = FakeClock()
    client = resilient(agent.client(), sleep=Sleeps(clock), clock=clock)

    with pytest.raises(TaskWaitTimeout) as info:
        client.wait_for_task("t-stuck", timeout=0.1)
    assert info.value.task_id == "t-stuck"
    assert info.value.timeout == 0.1
    assert isinstance(info.value, TimeoutError)
    assert info.value.task is not None
    assert info.value.task.state is TaskState.working

    agent.on("GetTask", agent.task(task_(TaskState.completed, task_id="t-stuck")))
    assert client.wait_for_task(info.value.task_id).state is TaskState.completed


def test_wait_deadline_defaults_to_the_configs_task_timeout(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", agent.task(task_(TaskState.working)))
    clock = FakeClock()
    client = resilient(
        agent.client(),
        config=attrs.evolve(FAST, task_timeout=0.5),
        sleep=Sleeps(clock),
        clock=clock,
    )
    start = clock()

    with pytest.raises(TaskWaitTimeout) as info:
        client.wait_for_task("t1")
    assert info.value.timeout == 0.5
    assert clock() - start == pytest.approx(0.5)  # the last sleep is cut to the deadline


def test_poll_interval_grows_from_a_short_first_interval_to_a_cap(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    working = agent.task(task_(TaskState.working))
    agent.on("GetTask", *[working] * 6, agent.task(task_(TaskState.completed)))
    sleeps = Sleeps()
    config = attrs.evolve(
        FAST, poll=PollPolicy(initial_interval=0.1, max_interval=0.3, multiplier=2)
    )
    client = resilient(agent.client(), config=config, sleep=sleeps)

    client.wait_for_task("t1")
    assert sleeps.delays == pytest.approx([0.1, 0.2, 0.3, 0.3, 0.3, 0.3])


def test_a_failed_poll_does_not_end_the_wait(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on(
        "GetTask",
        status(500),
        status(500),
        status(500),
        hang_up,
        agent.task(task_(TaskState.completed)),
    )
    client = resilient(agent.client(sleep=Sleeps()))

    assert client.wait_for_task("t1").state is TaskState.completed
    assert len(agent.calls("GetTask")) == 5


@pytest.mark.parametrize(
    ("state", "error"),
    [
        (TaskState.failed, TaskFailed),
        (TaskState.canceled, TaskCanceled),
        (TaskState.rejected, TaskRejected),
        (TaskState.auth_required, AuthRequired),
        (TaskState.input_required, InputRequired),
    ],
)
def test_wait_maps_each_settled_state_to_its_error(
    scripted_server: ScriptedServerFactory, state: TaskState, error: type[Exception]
) -> None:
    agent = ScriptedAgent(scripted_server)
    settled = task_(state, message="why")
    agent.on("GetTask", agent.task(task_(TaskState.working)), agent.task(settled))
    client = resilient(agent.client())

    with pytest.raises(error) as info:
        client.wait_for_task("t1")
    assert info.value.task_id == "t1"  # type: ignore[attr-defined]
    assert info.value.task == settled  # type: ignore[attr-defined]


def test_input_required_carries_the_prompt_and_is_answered_with_one_call(
    scripted_server: ScriptedServerFactory,
) -> None:
    primary = ScriptedAgent(scripted_server).on("SendMessage", status(503))
    backup = ScriptedAgent(scripted_server)
    asking = task_(TaskState.input_required, task_id="trip", message="which city?")
    answered = task_(
        TaskState.completed, task_id="trip", artifacts=[Artifact.create("city: Paris")]
    )
    backup.on("SendMessage", backup.task(asking), backup.task(answered))
    client = resilient(primary.client(), backup.client())

    with pytest.raises(InputRequired) as info:
        client.send_and_wait("book a trip")
    assert info.value.prompt == "which city?"

    refused = len(primary.calls())
    assert client.reply(info.value.task_id, "Paris").text == "city: Paris"
    answer = backup.calls("SendMessage")[1]["params"]["message"]
    assert answer["taskId"] == "trip"
    assert len(primary.calls()) == refused  # the answer went to the agent that owns the task


# -- L2: stream re-establishment ------------------------------------------------------------------


def chunk(index: int, *, last: bool = False, task_id: str = "t1") -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id="c1",
        artifact=Artifact(artifact_id="chunks", parts=[Part.from_text(f"{index},")]),
        append=index > 0,
        last_chunk=last,
    )


def chunks_artifact(count: int) -> Artifact:
    return Artifact(artifact_id="chunks", parts=[Part.from_text(f"{i},") for i in range(count)])


def status_event(state: TaskState, task_id: str = "t1") -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task_id, context_id="c1", status=TaskStatus(state=state))


def delivered_text(events: Iterable[StreamEvent]) -> str:
    """The artifact text as a consumer printing every chunk would show it."""
    text = ""
    for event in events:
        if isinstance(event, TaskArtifactUpdateEvent):
            text += event.artifact.text
        elif isinstance(event, Task):
            text += "".join(a.text for a in event.artifacts)
    return text


def fold(events: Iterable[StreamEvent]) -> Task:
    from a2a_sync.a2a.accumulate import accumulate

    task: Task | None = None
    for event in events:
        task = accumulate(task, event)
    assert task is not None
    return task


def test_stream_cut_after_the_task_event_resubscribes_and_never_reposts(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """CR-01: the server saw exactly one message; the gap is filled from the snapshot."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(3)])
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0), chunk(1)]))
    agent.on(
        "SubscribeToTask",
        agent.stream(
            [
                task_(TaskState.working, artifacts=[chunks_artifact(2)]),
                chunk(2, last=True),
                status_event(TaskState.completed),
            ],
            before=proxy.clear,  # the resubscription's connection is left alone
        ),
    )
    agent.on("GetTask", agent.task(final))
    sleeps = Sleeps()
    client = resilient(
        A2AClient(proxy.url + "/", transport=HTTPTransport(timeout=CALL_TIMEOUT)), sleep=sleeps
    )

    proxy.cut_after_events(1)
    stream = client.stream_message("chunks 3")
    events = list(stream)

    assert len(agent.calls("SendStreamingMessage")) == 1
    assert len(agent.calls("SubscribeToTask")) == 1
    assert agent.calls("SubscribeToTask")[0]["params"]["id"] == "t1"
    assert stream.reconnects == 1
    assert len(sleeps.delays) == 1
    assert isinstance(events[0], Task)
    assert events[0].artifacts == []
    assert delivered_text(events) == "0,1,2,"  # every chunk once, in order
    assert stream.get_final_task() == client.get_task("t1") == final
    assert fold(events).artifacts == final.artifacts
    assert fold(events).state is TaskState.completed


def test_events_backfilled_after_a_resubscribe_are_not_delivered_twice(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """CR-03: a server that replays its event log from the start on resubscribe."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    log: list[StreamEvent] = [
        task_(TaskState.working),
        chunk(0),
        chunk(1),
        chunk(2),
        chunk(3, last=True),
        status_event(TaskState.completed),
    ]
    agent.on("SendStreamingMessage", agent.stream(log[:4]))
    agent.on("SubscribeToTask", agent.stream(log, before=proxy.clear))
    agent.on("GetTask", agent.task(task_(TaskState.completed, artifacts=[chunks_artifact(4)])))
    client = resilient_through(proxy)

    proxy.cut_after_events(3)  # the client saw the task, chunk 0 and chunk 1
    stream = client.stream_message("chunks 4")
    events = list(stream)

    assert delivered_text(events) == "0,1,2,3,"
    assert [type(e).__name__ for e in events] == [
        "Task",
        *["TaskArtifactUpdateEvent"] * 4,
        "TaskStatusUpdateEvent",
    ]
    final = stream.get_final_task()
    assert final.artifacts == [chunks_artifact(4)]
    assert fold(events).artifacts == final.artifacts


def test_updates_a_subscription_repeats_from_its_snapshot_are_dropped(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """CR-03 as a2a-sdk 1.3 does it: the snapshot, then again the updates it holds."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    snapshot = task_(TaskState.working, artifacts=[chunks_artifact(3)])
    repeats: list[StreamEvent] = [status_event(TaskState.working), chunk(1), chunk(2)]
    live: list[StreamEvent] = [chunk(3, last=True), status_event(TaskState.completed)]
    agent.on("SubscribeToTask", agent.stream([snapshot, *repeats, *live], before=proxy.clear))
    final = task_(TaskState.completed, artifacts=[chunks_artifact(4)])
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 4")
    events = list(stream)

    assert delivered_text(events) == "0,1,2,3,"
    assert events[-2:] == live
    assert stream.get_final_task() == final
    assert len(agent.calls("GetTask")) == 1  # the stored task confirms the reassembly


def test_new_updates_that_look_like_the_snapshot_are_delivered(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """Content equal to the snapshot's parts is held only while it could be a repeat."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)

    def same(text: str, last: bool = False) -> TaskArtifactUpdateEvent:
        parts = [Part.from_text(text)]
        artifact = Artifact(artifact_id="chunks", parts=parts)
        return TaskArtifactUpdateEvent(
            task_id="t1", context_id="c1", artifact=artifact, append=True, last_chunk=last
        )

    first = Artifact(artifact_id="chunks", parts=[Part.from_text("a")])
    agent.on(
        "SendStreamingMessage",
        agent.stream(
            [
                task_(TaskState.working),
                TaskArtifactUpdateEvent(task_id="t1", context_id="c1", artifact=first),
            ]
        ),
    )
    snapshot = task_(
        TaskState.working,
        artifacts=[attrs.evolve(first, parts=[Part.from_text("a"), Part.from_text("b")])],
    )
    live: list[StreamEvent] = [same("a"), same("c", last=True), status_event(TaskState.completed)]
    agent.on("SubscribeToTask", agent.stream([snapshot, *live], before=proxy.clear))
    texts = ["a", "b", "a", "c"]
    final = task_(
        TaskState.completed,
        artifacts=[Artifact(artifact_id="chunks", parts=[Part.from_text(t) for t in texts])],
    )
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    events = list(client.stream_message("abac"))

    # "a" matched the snapshot's first part but did not end where the snapshot ends.
    assert delivered_text(events) == "abac"
    assert fold(events).artifacts == final.artifacts


def test_a_repeat_no_client_can_recognise_is_corrected_from_the_stored_task(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """The final GetTask wins: what the stream got wrong is replaced, once."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    snapshot = task_(TaskState.working, artifacts=[chunks_artifact(3)])
    # chunk 1 again (not ending where the snapshot ends: not recognisable), then chunk 3.
    agent.on(
        "SubscribeToTask",
        agent.stream(
            [snapshot, chunk(1), chunk(3, last=True), status_event(TaskState.completed)],
            before=proxy.clear,
        ),
    )
    final = task_(TaskState.completed, artifacts=[chunks_artifact(4)])
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 4")
    events = list(stream)

    assert stream.get_final_task() == final
    assert fold(events).artifacts == final.artifacts
    correction = events[-1]
    assert isinstance(correction, TaskArtifactUpdateEvent)
    assert not correction.append
    assert correction.artifact == chunks_artifact(4)
    assert events[4].last_chunk  # type: ignore[union-attr]


def test_stream_cut_before_the_first_event_is_an_unknown_outcome(
    scripted_server: ScriptedServerFactory,
) -> None:
    """CR-02: no task id known; the message is not resent."""

    def head_then_hang_up(sock: socket.socket, request: RecordedRequest) -> None:
        write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        close_connection(sock)

    agent = ScriptedAgent(scripted_server).on("SendStreamingMessage", head_then_hang_up)
    sleeps = Sleeps()
    client = resilient(agent.client(sleep=sleeps), sleep=sleeps)
    message = Message.user("chunks 3")

    with pytest.raises(OutcomeUnknown) as info:
        list(client.stream_message(message))
    assert info.value.message_id == message.message_id
    assert len(agent.calls("SendStreamingMessage")) == 1
    assert agent.calls("SubscribeToTask") == []


@pytest.mark.parametrize("where", ["before the answer", "after the head"])
def test_opted_in_stream_resends_the_identical_message_after_an_early_cut(
    scripted_server: ScriptedServerFactory, where: str
) -> None:
    def early_cut(sock: socket.socket, request: RecordedRequest) -> None:
        if where == "after the head":
            write_head(
                sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
            )
        close_connection(sock)

    agent = ScriptedAgent(scripted_server)
    done: list[StreamEvent] = [
        task_(TaskState.working),
        chunk(0, last=True),
        status_event(TaskState.completed),
    ]
    agent.on("SendStreamingMessage", early_cut, agent.stream(done))
    client = resilient(agent.client(sleep=Sleeps()))

    final = client.stream_message("chunks 1", idempotent=True).get_final_task()
    assert final.state is TaskState.completed
    first, second = agent.raw_bodies("SendStreamingMessage")
    assert json.loads(first)["params"] == json.loads(second)["params"]


def test_stream_send_answered_not_processed_is_resent_to_the_same_agent(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    done: list[StreamEvent] = [task_(TaskState.working), status_event(TaskState.completed)]
    agent.on("SendStreamingMessage", status(503, {"Retry-After": "1"}), agent.stream(done))
    sleeps = Sleeps()
    client = resilient(agent.client(), sleep=sleeps)

    assert client.stream_message("hi").get_final_task().state is TaskState.completed
    first, second = (json.loads(b)["params"] for b in agent.raw_bodies("SendStreamingMessage"))
    assert first == second
    assert sleeps.delays == [1.0]


def test_resubscribing_to_a_task_that_just_finished_reads_it_once(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """CR-05: UnsupportedOperation on resubscribe → one GetTask → the final task."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(2)])
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on("SubscribeToTask", agent.error(-32004, "task is terminal"))
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 2")
    events = list(stream)

    assert len(agent.calls("SubscribeToTask")) == 1
    assert len(agent.calls("GetTask")) == 1
    assert delivered_text(events) == "0,1,"
    assert stream.get_final_task() == final
    assert not stream.polled


def test_stream_falls_back_to_polling_when_resubscribing_keeps_failing(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """CR-04: after the reconnect budget, GetTask polling until the task settles."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on("SubscribeToTask", status(500))
    agent.on(
        "GetTask",
        agent.task(task_(TaskState.working, artifacts=[chunks_artifact(2)])),
        agent.task(task_(TaskState.completed, artifacts=[chunks_artifact(3)])),
    )
    sleeps = Sleeps()
    client = resilient(
        A2AClient(proxy.url + "/", transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps())),
        sleep=sleeps,
    )

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 3")
    events = list(stream)

    assert len(agent.calls("SubscribeToTask")) == FAST.max_reconnect_attempts
    assert len(agent.calls("GetTask")) == 2
    assert stream.polled
    assert delivered_text(events) == "0,1,2,"
    assert stream.get_final_task().state is TaskState.completed


def test_unsupported_resubscribe_of_a_running_task_falls_back_to_polling(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """CR-04: the agent cannot re-attach (UnsupportedOperation) while the task still runs."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on("SubscribeToTask", agent.error(-32004, "cannot resubscribe"))
    agent.on(
        "GetTask",
        agent.task(task_(TaskState.working, artifacts=[chunks_artifact(1)])),
        agent.task(task_(TaskState.completed, artifacts=[chunks_artifact(2)])),
    )
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 2")
    events = list(stream)

    assert stream.get_final_task().state is TaskState.completed
    assert delivered_text(events) == "0,1,"


def test_agent_without_streaming_gets_a_send_and_polling(
    scripted_server: ScriptedServerFactory,
) -> None:
    """CR-07: the card says streaming: false — no stream request at all."""
    agent = ScriptedAgent(scripted_server)
    card = AgentCard(
        name="no streams",
        description="",
        version="1",
        capabilities=AgentCapabilities(streaming=False),
        supported_interfaces=[AgentInterface(url=agent.url)],
    )
    agent.on("SendMessage", agent.task(task_(TaskState.submitted)))
    agent.on(
        "GetTask",
        agent.task(task_(TaskState.working, artifacts=[chunks_artifact(1)])),
        agent.task(task_(TaskState.completed, artifacts=[chunks_artifact(2)])),
    )
    client = resilient(agent.client(card=card))

    stream = client.stream_message("chunks 2")
    events = list(stream)

    assert [c["method"] for c in agent.calls()] == ["SendMessage", "GetTask", "GetTask"]
    assert agent.calls("SendMessage")[0]["params"]["configuration"]["returnImmediately"] is True
    assert stream.polled
    assert delivered_text(events) == "0,1,"
    assert fold(events) == stream.get_final_task()


def test_subscription_is_reestablished_after_a_transient_failure(
    scripted_server: ScriptedServerFactory,
) -> None:
    """Seed connect_sse_reconnects_after_transient_failure: the first attempt gets a 500."""
    agent = ScriptedAgent(scripted_server)
    agent.on(
        "SubscribeToTask",
        status(500),
        agent.stream([task_(TaskState.working), status_event(TaskState.completed)]),
    )
    agent.on("GetTask", agent.task(task_(TaskState.completed)))
    sleeps = Sleeps()
    client = resilient(agent.client(), sleep=sleeps)

    assert client.subscribe("t1").get_final_task().state is TaskState.completed
    assert len(agent.calls("SubscribeToTask")) == 2
    assert len(sleeps.delays) == 1


def test_stream_delivers_a_reply_message(scripted_server: ScriptedServerFactory) -> None:
    agent = ScriptedAgent(scripted_server)
    reply = Message.agent("hello", message_id="r1")
    agent.on("SendStreamingMessage", agent.stream([reply]))
    client = resilient(agent.client())

    stream = client.stream_message("reply")
    assert list(stream) == [reply]
    assert stream.get_final_result() == reply
    with pytest.raises(ProtocolError):
        stream.get_final_task()


def test_stream_close_from_another_thread_ends_a_reconnect_wait(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    # A 30 s reconnect delay: only close() can end the wait within the test's bound.
    config = attrs.evolve(FAST, retry_base_delay=30.0, retry_max_delay=30.0, jitter=0.0)
    client = ResilientA2AClient(
        A2AClient(proxy.url + "/", transport=HTTPTransport(timeout=CALL_TIMEOUT)), config
    )
    proxy.cut_after_events(1)
    stream = client.stream_message("chunks 1")
    assert isinstance(next(stream), Task)
    ended = threading.Event()

    def consume() -> None:
        list(stream)
        ended.set()

    with LogEvent(logging.getLogger("a2a_sync.client.resilient"), "resubscribing") as dropped:
        consumer = threading.Thread(target=consume, name="a2a-sync-test-consumer", daemon=True)
        consumer.start()
        # The stream logs the drop right before it waits the 30 s to resubscribe.
        assert dropped.wait(WAIT)
    assert not ended.is_set()
    stream.close()
    assert ended.wait(WAIT)  # well before the 30 s reconnect delay
    consumer.join(WAIT)
    assert agent.calls("SubscribeToTask") == []


def test_client_close_from_another_thread_ends_wait_for_task(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", agent.task(task_(TaskState.working)))
    config = attrs.evolve(FAST, poll=PollPolicy(initial_interval=30.0, max_interval=30.0))
    client = ResilientA2AClient(agent.client(), config)  # the default, interruptible wait
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            client.wait_for_task("t1", timeout=60)
        except Exception as exc:
            errors.append(exc)

    waiter = threading.Thread(target=wait, name="a2a-sync-test-waiter", daemon=True)
    waiter.start()
    agent.server.wait_for_requests(1)
    client.close()
    waiter.join(WAIT)
    assert not waiter.is_alive()
    assert len(errors) == 1
    assert isinstance(errors[0], Cancelled)


# -- configuration and building blocks ------------------------------------------------------------


def test_config_is_immutable_and_validated() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        FAST.max_transport_retries = 9  # type: ignore[misc]
    with pytest.raises(ConfigurationError):
        ResilienceConfig(jitter=2.0)
    with pytest.raises(ConfigurationError):
        ResilienceConfig(max_transport_retries=-1)
    with pytest.raises(ConfigurationError):
        ResilienceConfig(max_reconnect_attempts=-1)
    policy = FAST.retry_policy()
    assert (policy.max_retries, policy.backoff_base, policy.backoff_max) == (2, 0.01, 0.05)
    assert 500 in policy.statuses


def test_retry_policy_reaches_each_agent_without_changing_the_agent(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("GetTask", status(503), status(503), agent.task(task_(TaskState.working)))
    plain = A2AClient(
        agent.url,
        transport=HTTPTransport(timeout=CALL_TIMEOUT, retry=RetryPolicy.none(), sleep=Sleeps()),
    )
    client = resilient(plain)

    with pytest.raises(HTTPStatusError):
        plain.get_task("t1")  # the agent as built: no retries
    assert client.get_task("t1").state is TaskState.working  # L1 of the config
    assert len(agent.calls("GetTask")) == 3


def test_diff_events_moves_only_forward() -> None:
    delivered = task_(TaskState.working, artifacts=[chunks_artifact(3)])

    # Behind (a replayed prefix, an older status): nothing.
    assert diff_events(delivered, task_(TaskState.working, artifacts=[chunks_artifact(1)])) == []
    assert diff_events(delivered, task_(TaskState.submitted, artifacts=[chunks_artifact(3)])) == []
    # Ahead: just the new parts, as an append; settled → last chunk and the status.
    events = diff_events(delivered, task_(TaskState.completed, artifacts=[chunks_artifact(5)]))
    assert events == [
        TaskArtifactUpdateEvent(
            task_id="t1",
            context_id="c1",
            artifact=Artifact(
                artifact_id="chunks", parts=[Part.from_text("3,"), Part.from_text("4,")]
            ),
            append=True,
            last_chunk=True,
        ),
        TaskStatusUpdateEvent(
            task_id="t1", context_id="c1", status=TaskStatus(state=TaskState.completed), final=True
        ),
    ]
    # Replaced content and new artifacts come whole.
    other = Artifact(artifact_id="chunks", parts=[Part.from_text("x")])
    new = Artifact.create("new", artifact_id="n")
    events = diff_events(delivered, task_(TaskState.working, artifacts=[other, new]))
    assert [e.artifact for e in events] == [other, new]  # type: ignore[union-attr]
    assert not any(e.append for e in events)  # type: ignore[union-attr]
    assert fold([delivered, *events]).artifacts == [other, new]
    # Nothing delivered yet: the task itself.
    assert diff_events(None, delivered) == [delivered]


def test_status_with_an_older_timestamp_is_not_delivered_again() -> None:
    now = datetime.now(timezone.utc)
    newer = attrs.evolve(
        task_(TaskState.working), status=TaskStatus(state=TaskState.working, timestamp=now)
    )
    older = attrs.evolve(
        task_(TaskState.working),
        status=TaskStatus(state=TaskState.working, timestamp=now - timedelta(seconds=1)),
    )
    assert diff_events(newer, older) == []
    assert len(diff_events(older, newer)) == 1


# -- CT-18: many threads, one client, an outage ---------------------------------------------------


class RealSleeps(Sleeps):
    """Records each delay (and the thread that waited) and really waits it: the jitter
    has to spread real attempts. A wait that paces the client, not a synchronisation."""

    def __init__(self) -> None:
        super().__init__()
        self.waits_by_thread: collections.Counter[str] = collections.Counter()

    def __call__(self, seconds: float) -> None:
        super().__call__(seconds)
        with self._lock:
            self.waits_by_thread[threading.current_thread().name] += 1
        time.sleep(seconds)


def test_twenty_threads_ride_out_an_outage_with_bounded_spread_attempts(
    scripted_server: ScriptedServerFactory,
) -> None:
    threads = 20
    up = threading.Event()
    refused: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()
    codec = codec_for("1.0")

    def handler(sock: socket.socket, request: RecordedRequest) -> None:
        body = request.json()
        task_id = body["params"]["id"]
        if not up.is_set():
            with lock:
                refused[task_id] += 1
                # Down until every thread had two whole polls refused (each poll is
                # 1 + max_transport_retries attempts): longer than one call's retries.
                if len(refused) == threads and min(refused.values()) >= outage:
                    up.set()
            respond(sock, 503, b"down")
            return
        payload = codec.dump_task(task_(TaskState.completed, task_id=task_id))
        respond_json(sock, {"jsonrpc": "2.0", "id": body["id"], "result": payload})

    server = scripted_server(handler)
    transport_sleeps = RealSleeps()
    poll_sleeps = RealSleeps()  # the client's waits between polls, one per poll but the last
    config = ResilienceConfig(
        max_transport_retries=2,
        retry_base_delay=0.02,
        retry_max_delay=0.1,
        jitter=0.5,
        task_timeout=WAIT,
        poll=PollPolicy(initial_interval=0.05, max_interval=0.1),
    )
    client = ResilientA2AClient(
        A2AClient(
            server.url + "/", transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=transport_sleeps)
        ),
        config,
        sleep=poll_sleeps,
    )
    outage = 2 * (1 + config.max_transport_retries)
    results: dict[str, Task] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work(index: int) -> None:
        try:
            start.wait(WAIT)
            results[f"t{index}"] = client.wait_for_task(f"t{index}")
        except Exception as exc:
            errors.append(exc)

    workers = [
        threading.Thread(target=work, args=(i,), name=f"a2a-sync-test-w{i}", daemon=True)
        for i in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(2 * WAIT)

    assert errors == []
    assert sorted(results) == sorted(f"t{i}" for i in range(threads))  # all recovered
    assert all(task.state is TaskState.completed for task in results.values())
    per_task = collections.Counter(r.json()["params"]["id"] for r in server.requests)
    # Each poll makes at most 1 + max_transport_retries attempts, and the client waits
    # between two polls: no thread can exceed this, however the outage went.
    for i in range(threads):
        polls = 1 + poll_sleeps.waits_by_thread[f"a2a-sync-test-w{i}"]
        assert per_task[f"t{i}"] <= (1 + config.max_transport_retries) * polls
        assert per_task[f"t{i}"] >= outage  # the outage lasted: retries and polls happened
    # Jitter spread the retries: the first-retry delays differ between threads.
    first_retries = [d for d in transport_sleeps.delays if d <= config.retry_base_delay]
    assert len(set(first_retries)) > threads // 2
    assert all(0.01 <= d <= 0.02 for d in first_retries)
