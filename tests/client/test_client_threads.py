"""One A2AClient shared by many threads (reliability-cases CT-13): every answer reaches
the thread that asked, the pool does not thrash, and close() from any thread releases
every blocked call."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pytest

from a2a_sync.client import A2AClient, BearerToken
from a2a_sync.errors import Cancelled
from a2a_sync.types import Task, TaskState
from tests.peers.fixtures import AgentProcess
from tests.support.fixtures import ScriptedServerFactory, WsgiServerFactory
from tests.support.servers import RecordedRequest, hold

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

THREADS = 32
CALLS = 50
WAIT = 10.0


def echo_task_app(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
    """A JSON-RPC endpoint answering GetTask with a task whose id is the one asked for."""
    size = int(environ.get("CONTENT_LENGTH") or 0)
    request = json.loads(environ["wsgi.input"].read(size))
    task = {
        "id": request["params"]["id"],
        "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": task}).encode()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


def run_threads(count: int, work: Callable[[int], None]) -> list[BaseException]:
    """Run ``work(index)`` in ``count`` threads started together; return their failures."""
    failures: list[BaseException] = []
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        try:
            barrier.wait(WAIT)
            work(index)
        except BaseException as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=run, args=(i,), name=f"a2a-sync-test-worker-{i}")
        for i in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 3)
    assert not any(t.is_alive() for t in threads)
    return failures


def test_32_threads_share_one_client_without_cross_talk(
    wsgi_server: WsgiServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    url = wsgi_server(echo_task_app)
    answered: dict[int, int] = {}

    with A2AClient(url + "/rpc", timeout=WAIT) as client:

        def work(index: int) -> None:
            for call in range(CALLS):
                task_id = f"thread-{index}-call-{call}"
                assert client.get_task(task_id).id == task_id
            answered[index] = CALLS

        failures = run_threads(THREADS, work)
    assert failures == []
    assert sum(answered.values()) == THREADS * CALLS
    # The pool holds a connection per thread: none is opened and thrown away.
    assert "Connection pool is full" not in caplog.text


def test_close_from_another_thread_releases_every_blocked_call(
    scripted_server: ScriptedServerFactory,
) -> None:
    release = threading.Event()
    arrived = threading.Semaphore(0)

    def handler(sock: Any, request: RecordedRequest) -> None:
        arrived.release()
        hold(release, WAIT * 2)

    server = scripted_server(handler)
    client = A2AClient(server.url + "/", timeout=(WAIT, 30.0))
    outcomes: list[BaseException] = []
    try:

        def work(index: int) -> None:
            try:
                client.get_task(f"t{index}")
            except Cancelled as exc:
                outcomes.append(exc)

        def close_when_all_blocked() -> None:
            for _ in range(8):
                arrived.acquire(timeout=WAIT)
            client.close()

        closer = threading.Thread(target=close_when_all_blocked, name="a2a-sync-test-closer")
        closer.start()
        failures = run_threads(8, work)
        closer.join(WAIT)
    finally:
        release.set()
        client.close()
    assert failures == []
    assert len(outcomes) == 8  # every call ended with Cancelled, long before the 30 s read timeout


@pytest.mark.peer
def test_32_threads_send_and_stream_through_one_client_to_a2a_sdk(
    a2a_sdk_agent: AgentProcess,
) -> None:
    results: dict[int, tuple[str, str, str]] = {}
    with A2AClient.from_url(
        a2a_sdk_agent.url, credentials=BearerToken(a2a_sdk_agent.token), timeout=WAIT
    ) as client:

        def work(index: int) -> None:
            sent = client.send_message(f"echo from {index}")
            assert isinstance(sent, Task)
            with client.stream_message(f"chunks {index % 5 + 1}") as stream:
                streamed = stream.get_final_task()
            assert streamed.state is TaskState.completed
            fetched = client.get_task(sent.id)
            results[index] = (sent.text, fetched.text, streamed.artifacts[0].text)

        failures = run_threads(THREADS, work)
    assert failures == []
    for index, (sent_text, fetched_text, chunks) in results.items():
        assert sent_text == fetched_text == f"from {index}"
        assert chunks == "".join(f"{i}," for i in range(index % 5 + 1))
    assert len(results) == THREADS
