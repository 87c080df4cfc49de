"""Issue 22: lenient where it is safe with the peers users meet; recovery keeps its cause.

Scripted agents (tests/support/servers.py via test_resilient's ``ScriptedAgent``) send
what fasta2a and VoltAgent were seen to send — an ``append`` on an artifact's first chunk,
SSE data behind an ASCII RS — and what a lagging resubscribe snapshot looks like;
recovery runs through the fault proxy. The real peers are in
tests/client/test_interop_third_party.py.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterable, Sequence

import pytest

from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.jsonrpc import decode_json, encode
from a2a_sync.a2a.accumulate import accumulate
from a2a_sync.client import A2AClient
from a2a_sync.errors import (
    ConfigurationError,
    ConnectError,
    HTTPStatusError,
    ProtocolError,
    TaskNotFound,
    TaskWaitTimeout,
)
from a2a_sync.types import Artifact, Part, StreamEvent, Task, TaskArtifactUpdateEvent, TaskState
from tests.client.test_resilient import (
    CALL_TIMEOUT,
    Answer,
    FakeClock,
    ScriptedAgent,
    Sleeps,
    chunk,
    chunks_artifact,
    delivered_text,
    resilient,
    resilient_through,
    status,
    status_event,
    task_,
)
from tests.support.fixtures import FaultProxyFactory, ScriptedServerFactory
from tests.support.ports import refused_url
from tests.support.servers import RecordedRequest, respond_json, write_chunk, write_head


def lenient_fold(events: Iterable[StreamEvent]) -> Task:
    """The task a consumer folding every event gets (tolerating a first ``append``)."""
    task: Task | None = None
    for event in events:
        task = accumulate(task, event, notes=[])
    assert task is not None
    return task


def first_chunk_appended(index: int = 0) -> TaskArtifactUpdateEvent:
    """What fasta2a behind pydantic-ai sends: ``append`` already on the first chunk."""
    return TaskArtifactUpdateEvent(
        task_id="t1",
        context_id="c1",
        artifact=Artifact(artifact_id="chunks", parts=[Part.from_text(f"{index},")]),
        append=True,
    )


# -- 1. an append to an artifact not seen yet ---------------------------------------------------


def test_a_first_chunk_with_append_creates_the_artifact_and_is_confirmed(
    scripted_server: ScriptedServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    agent = ScriptedAgent(scripted_server)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(2)])
    agent.on(
        "SendStreamingMessage",
        agent.stream(
            [
                task_(TaskState.working),
                first_chunk_appended(),
                chunk(1),
                status_event(TaskState.completed),
            ]
        ),
    )
    agent.on("GetTask", agent.task(final))
    caplog.set_level(logging.DEBUG, logger="a2a_sync")

    with agent.client() as client, client.stream_message("go") as stream:
        events = list(stream)
        task = stream.get_final_task()

    assert delivered_text(events) == "0,1,"
    assert task == final
    assert len(agent.calls("GetTask")) == 1  # the tolerated deviation is confirmed once
    assert any(
        "tolerated" in r.getMessage() and "'chunks'" in r.getMessage() for r in caplog.records
    )


def test_a_resilient_stream_confirms_a_first_append_with_get_task(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(2)])
    agent.on(
        "SendStreamingMessage",
        agent.stream(
            [
                task_(TaskState.working),
                first_chunk_appended(),
                chunk(1),
                status_event(TaskState.completed),
            ]
        ),
    )
    agent.on("GetTask", agent.task(final))
    client = resilient(agent.client())

    stream = client.stream_message("go")
    events = list(stream)

    assert stream.get_final_task() == final
    assert lenient_fold(events).artifacts == final.artifacts


def test_a_resubscribe_snapshot_lagging_its_stream_is_reconciled_by_polling(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """The snapshot lacks the artifact its stream appends to: GetTask decides, every
    chunk is delivered once, and the stream does not fail."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(3)])
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on(
        "SubscribeToTask",
        agent.stream(
            [task_(TaskState.working), chunk(1), chunk(2), status_event(TaskState.completed)]
        ),
    )
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 3")
    events = list(stream)

    assert stream.reconnects == 1
    assert stream.polled
    assert delivered_text(events) == "0,1,2,"
    assert stream.get_final_task() == final
    assert lenient_fold(events).artifacts == final.artifacts


# -- 2. an assembly problem never ends recovery ---------------------------------------------------


def test_a_first_append_before_the_cut_does_not_stop_recovery(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """Old code raised ProtocolError while assembling the delivered task after the drop."""
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(2)])
    agent.on(
        "SendStreamingMessage", agent.stream([task_(TaskState.working), first_chunk_appended()])
    )
    agent.on("SubscribeToTask", agent.error(-32004, "cannot resubscribe"))
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 2")
    events = list(stream)

    assert delivered_text(events) == "0,1,"
    assert stream.get_final_task() == final


def test_a_subscription_that_does_not_start_with_the_task_falls_back_to_polling(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(2)])
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on("SubscribeToTask", agent.stream([chunk(1), status_event(TaskState.completed)]))
    agent.on("GetTask", agent.task(final))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 2")
    events = list(stream)

    assert agent.calls("GetTask")  # the agent's task, not the broken subscription, decides
    assert delivered_text(events) == "0,1,"
    assert stream.get_final_task() == final


def test_an_agent_without_resubscribe_is_polled_after_a_cut(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    """VoltAgent answers tasks/resubscribe with MethodNotFound: recovery polls instead."""
    agent = ScriptedAgent(scripted_server, revision="0.3")
    proxy = fault_proxy(agent.server.url)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(2)])
    agent.on("message/stream", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on("tasks/resubscribe", agent.error(-32601, "Unknown method 'tasks/resubscribe'"))
    agent.on("tasks/get", agent.task(final))
    client = resilient(
        A2AClient(proxy.url + "/", revision="0.3", transport=HTTPTransport(timeout=CALL_TIMEOUT))
    )

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 2")
    events = list(stream)

    assert len(agent.calls("tasks/resubscribe")) == 1
    assert delivered_text(events) == "0,1,"
    assert stream.get_final_task() == final


# -- 3. SSE data behind an ASCII RS; parse errors show their cause ------------------------------


def rs_stream(agent: ScriptedAgent, events: Sequence[StreamEvent | bytes]) -> Answer:
    """An SSE answer whose every data field starts with an ASCII RS, as VoltAgent's do
    (a ``bytes`` item is sent as the data after the RS, verbatim)."""

    def answer(sock: socket.socket, request: RecordedRequest) -> None:
        request_id = request.json()["id"]
        write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        for event in events:
            if isinstance(event, bytes):
                payload = event
            else:
                result = agent.codec.dump_stream_event(event)
                payload = encode({"jsonrpc": "2.0", "id": request_id, "result": result})
            write_chunk(sock, b"data: \x1e" + payload + b"\n\n")
        write_chunk(sock, b"")

    return answer


def test_sse_data_with_a_leading_record_separator_is_read(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on(
        "SendStreamingMessage",
        rs_stream(agent, [task_(TaskState.working), chunk(0), status_event(TaskState.completed)]),
    )

    with agent.client() as client, client.stream_message("go") as stream:
        task = stream.get_final_task()

    assert task.state is TaskState.completed
    assert task.artifacts == [chunks_artifact(1)]


def test_an_unparsable_sse_event_shows_escaped_control_characters_and_the_position(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("SendStreamingMessage", rs_stream(agent, [b'\x1e{"jsonrpc": "2.0"\x00}']))

    with (
        agent.client() as client,
        client.stream_message("go") as stream,
        pytest.raises(ProtocolError) as info,
    ):
        list(stream)

    message = str(info.value)
    assert "invalid JSON SSE event data" in message
    assert "line 1 column 1, char 0" in message  # the second RS is where parsing stopped
    assert "\\x1e{" in message  # escaped, not stripped away
    assert "\\x00}" in message


def test_every_json_parse_error_names_the_position_and_keeps_whitespace() -> None:
    with pytest.raises(ProtocolError) as info:
        decode_json('  {"a": 1,\n  \x07}', what="response")
    message = str(info.value)
    assert "line 2 column 3, char 13" in message
    assert "\\n  \\x07}" in message
    assert info.value.excerpt.startswith("  {")  # not strip()ped


def test_a_parse_error_far_into_a_body_shows_the_text_around_it() -> None:
    body = json.dumps({"padding": "x" * 1000})[:-1] + ",,}"
    with pytest.raises(ProtocolError) as info:
        decode_json(body)
    assert "[char " in info.value.excerpt
    assert ",," in info.value.excerpt


# -- 4. 0.2.x cards --------------------------------------------------------------------------------


def card_server(scripted_server: ScriptedServerFactory, version: str) -> str:
    def answer(sock: socket.socket, request: RecordedRequest) -> None:
        respond_json(
            sock,
            {
                "name": "old",
                "description": "an agent of the 0.2 era",
                "version": "1",
                "url": base + "/rpc",
                "protocolVersion": version,
                "capabilities": {"streaming": True},
                "defaultInputModes": ["text/plain"],
                "defaultOutputModes": ["text/plain"],
                "skills": [],
            },
        )

    server = scripted_server(answer)
    base = server.url
    return base


@pytest.mark.parametrize("version", ["0.2.5", "0.2.6"])
def test_a_card_declaring_0_2_is_spoken_to_as_0_3(
    scripted_server: ScriptedServerFactory, version: str, caplog: pytest.LogCaptureFixture
) -> None:
    base = card_server(scripted_server, version)
    caplog.set_level(logging.DEBUG, logger="a2a_sync")

    with A2AClient.from_url(base, timeout=CALL_TIMEOUT) as client:
        assert client.revision == "0.3"
        assert client.url == base + "/rpc"
    assert any("tolerated" in r.getMessage() and version in r.getMessage() for r in caplog.records)


def test_a_refused_revision_names_the_override(scripted_server: ScriptedServerFactory) -> None:
    base = card_server(scripted_server, "0.1.0")
    with pytest.raises(ConfigurationError) as info:
        A2AClient.from_url(base, timeout=CALL_TIMEOUT)
    assert f"A2AClient('{base}/rpc', revision=\"0.3\")" in str(info.value)


# -- 5. recovery errors keep their cause ---------------------------------------------------------


def test_polling_an_agent_that_refuses_connections_says_so() -> None:
    clock = FakeClock()
    url = refused_url()
    client = resilient(
        A2AClient(url, transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps())),
        sleep=Sleeps(clock),
        clock=clock,
    )

    with pytest.raises(TaskWaitTimeout) as info:
        client.wait_for_task("t-42", timeout=1.0)

    message = str(info.value)
    assert "t-42" in message
    assert "no poll reached the agent" in message
    assert url in message
    assert "ConnectError" in message
    assert isinstance(info.value.__cause__, ConnectError)


def test_a_resilient_stream_polling_a_refusing_agent_names_what_it_tried() -> None:
    clock = FakeClock()
    client = resilient(
        A2AClient(refused_url(), transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps())),
        sleep=Sleeps(clock),
        clock=clock,
    )

    stream = client.subscribe("t-7")
    with pytest.raises(TaskWaitTimeout) as info:
        list(stream)

    message = str(info.value)
    assert "task t-7 could not be read" in message
    assert "resubscribe(s)" in message
    assert "poll(s)" in message
    assert "ConnectError" in message
    assert isinstance(info.value.__cause__, ConnectError)


def test_task_not_found_after_a_restart_names_the_task_and_the_dropped_stream(
    scripted_server: ScriptedServerFactory, fault_proxy: FaultProxyFactory
) -> None:
    agent = ScriptedAgent(scripted_server)
    proxy = fault_proxy(agent.server.url)
    agent.on("SendStreamingMessage", agent.stream([task_(TaskState.working), chunk(0)]))
    agent.on("SubscribeToTask", agent.error(-32001, "Task not found"))
    client = resilient_through(proxy)

    proxy.cut_after_events(2)
    stream = client.stream_message("chunks 3")
    with pytest.raises(TaskNotFound) as info:
        list(stream)

    message = str(info.value)
    assert info.value.code == -32001
    assert "t1" in message
    assert "stream dropped" in message
    assert "1 resubscribe(s)" in message
    assert isinstance(info.value.__cause__, TaskNotFound)


def test_a_failed_poll_does_not_claim_a_next_agent_when_there_is_none(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    client = resilient(
        A2AClient(refused_url(), transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps())),
        sleep=Sleeps(clock),
        clock=clock,
    )
    caplog.set_level(logging.DEBUG, logger="a2a_sync")

    with pytest.raises(TaskWaitTimeout):
        client.wait_for_task("t1", timeout=1.0)
    assert any("poll of task t1 failed" in r.getMessage() for r in caplog.records)
    assert not any("next agent" in r.getMessage() for r in caplog.records)


# -- 6. consistent endpoint and card wording -------------------------------------------------------


def test_stream_and_unary_errors_write_the_endpoint_alike(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server)
    agent.on("SendStreamingMessage", status(500))
    agent.on("GetTask", status(500))
    url = agent.server.url  # no trailing slash
    client = A2AClient(url, transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps()))

    with client, pytest.raises(HTTPStatusError) as unary:
        client.get_task("t1")
    client = A2AClient(url, transport=HTTPTransport(timeout=CALL_TIMEOUT, sleep=Sleeps()))
    with client, pytest.raises(HTTPStatusError) as streamed:
        client.stream_message("go").get_final_task()

    assert unary.value.url == streamed.value.url == url
    assert f"POST {url} answered HTTP 500" in str(streamed.value)


def test_a_bad_extended_card_of_a_0_3_agent_is_described_as_sent(
    scripted_server: ScriptedServerFactory,
) -> None:
    agent = ScriptedAgent(scripted_server, revision="0.3")
    agent.on(
        "agent/getAuthenticatedExtendedCard",
        agent.result(
            {
                "name": "x",
                "description": "d",
                "version": "1",
                "url": 5,
                "protocolVersion": "0.3.0",
                "capabilities": {},
                "defaultInputModes": [],
                "defaultOutputModes": [],
                "skills": [],
                "supportsAuthenticatedExtendedCard": "yes",
            }
        ),
    )

    with agent.client() as client, pytest.raises(ProtocolError) as info:
        client.get_extended_card()

    message = str(info.value)
    assert "invalid A2A 0.3 agent card" in message
    assert "1.0" not in message
    assert "@ $.url" in message
    assert "@ $.supportsAuthenticatedExtendedCard" in message


def test_a_stream_that_contradicts_itself_is_settled_by_get_task(
    scripted_server: ScriptedServerFactory,
) -> None:
    """An update naming another task is not folded (strict: nothing is guessed); the final
    task is the stored one instead of a ProtocolError after a successful iteration."""
    agent = ScriptedAgent(scripted_server)
    final = task_(TaskState.completed, artifacts=[chunks_artifact(1)])
    agent.on(
        "SendStreamingMessage",
        agent.stream(
            [
                task_(TaskState.working),
                chunk(0),
                chunk(1, task_id="other"),
                status_event(TaskState.completed),
            ]
        ),
    )
    agent.on("GetTask", agent.task(final))

    with agent.client() as client, client.stream_message("go") as stream:
        assert stream.get_final_task() == final
    assert agent.calls("GetTask")[0]["params"]["id"] == "t1"
