"""The app on waitress over real loopback sockets: streaming latency, disconnects, the
stream cap, slow clients, graceful shutdown, push delivery, serve() and restarts."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server.app import A2AApplication
from a2a_sync.server.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.server.push import PushSender
from a2a_sync.server.serving import RunningServer, serve_in_thread
from tests.server.agents import WAIT, EchoAgent, card
from tests.server.webhook import WebhookReceiver, receiver
from tests.support.polling import wait_until
from tests.support.ports import SERVE_URL_LINE

hook = pytest.fixture(receiver)
ROOT = Path(__file__).parents[2]


def bare_card(**kwargs: Any) -> Any:
    return attrs.evolve(card(**kwargs), supported_interfaces=[])


def send_body(
    text: str, method: str = "SendMessage", message_id: str | None = None
) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": message_id or text,
                "parts": [{"text": text}],
            }
        },
    }


V1 = {"A2A-Version": "1.0"}


def post(url: str, body: dict[str, Any], **kwargs: Any) -> requests.Response:
    return requests.post(
        url + "/", json=body, headers={**V1, **kwargs.pop("headers", {})}, timeout=WAIT, **kwargs
    )


def server_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("waitress", "a2a-sync"))]


class Handshake(AgentExecutor):
    """Publishes one event per step and waits for the test to confirm each was received."""

    def __init__(self) -> None:
        self.step = threading.Semaphore(0)

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        updater.start_work()
        for i in range(3):
            assert self.step.acquire(timeout=WAIT), "the client never saw the previous event"
            updater.add_artifact(f"part {i}", artifact_id="a", append=i > 0)
        assert self.step.acquire(timeout=WAIT)
        updater.complete()


def test_each_event_reaches_the_client_before_the_next_is_produced() -> None:
    agent = Handshake()
    app = A2AApplication(bare_card(), agent)
    with serve_in_thread(app) as url:
        response = post(url, send_body("go", "SendStreamingMessage"), stream=True)
        assert response.headers["content-type"] == "text/event-stream"
        assert response.headers.get("transfer-encoding") == "chunked"
        lines = response.iter_lines()
        seen = []
        for line in lines:
            if not line.startswith(b"data: "):
                continue
            event = json.loads(line[6:])["result"]
            seen.append(next(iter(event)))
            if (
                "statusUpdate" in event
                and event["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
            ):
                break
            if len(seen) >= 2:
                agent.step.release()  # only now may the agent produce the next event
        response.close()
        assert seen == [
            "task",
            "statusUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate",
        ]
    assert server_threads() == []


def test_a_disconnected_client_is_noticed_and_unsubscribed_while_the_task_runs_on() -> None:
    agent = EchoAgent()
    app = A2AApplication(bare_card(), agent, heartbeat_interval=0.05)
    with serve_in_thread(app) as url:
        port = int(url.rsplit(":", 1)[1])
        payload = json.dumps(send_body("wait", "SendStreamingMessage")).encode()
        sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"A2A-Version: 1.0\r\nContent-Length: "
            + str(len(payload)).encode()
            + b"\r\n\r\n"
            + payload
        )
        received = b""
        while b"data: " not in received or b"\n\n" not in received.split(b"data: ", 1)[1]:
            received += sock.recv(65536)
        first = received.split(b"data: ", 1)[1].split(b"\n", 1)[0]
        task_id = json.loads(first)["result"]["task"]["id"]
        broker = app.handler.store._broker
        assert broker.subscriber_count(task_id) == 1
        sock.close()  # the client goes away; the next heartbeat write notices
        wait_until(lambda: broker.subscriber_count(task_id) == 0, "the subscriber to go")
        wait_until(lambda: app.active_streams == 0, "the stream to end")
        agent.release.set()
        state = ""

        def finished() -> bool:
            nonlocal state
            got = post(
                url, {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}}
            )
            state = got.json()["result"]["status"]["state"]
            return state == "TASK_STATE_COMPLETED"

        wait_until(finished, "the held task to complete")


def test_stream_cap_answers_503_while_unary_calls_still_get_a_thread() -> None:
    agent = EchoAgent()
    app = A2AApplication(bare_card(), agent, max_streams=2)
    with serve_in_thread(app, threads=3) as url:
        streams = []
        for i in range(2):
            response = post(url, send_body("wait", "SendStreamingMessage", f"s{i}"), stream=True)
            next(line for line in response.iter_lines() if line.startswith(b"data: "))
            streams.append(response)
        refused = post(url, send_body("x", "SendStreamingMessage"))
        assert refused.status_code == 503
        assert int(refused.headers["Retry-After"]) > 0
        unary = post(url, send_body("hello"))
        assert unary.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        agent.release.set()
        for response in streams:
            response.close()


def test_slow_clients_do_not_starve_unary_calls() -> None:
    app = A2AApplication(bare_card(), EchoAgent(), max_streams=1)
    with serve_in_thread(app, threads=2) as url:
        port = int(url.rsplit(":", 1)[1])
        slow = []
        for i in range(20):
            sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            if i % 2:
                sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # headers never end
            else:
                sock.sendall(
                    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n{"  # body never arrives
                )
            slow.append(sock)
        response = post(url, send_body("hello"))
        assert response.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        for sock in slow:
            sock.close()


def test_graceful_stop_ends_streams_and_lets_unary_calls_finish() -> None:
    agent = EchoAgent()
    app = A2AApplication(bare_card(), agent)
    server = RunningServer(app, "127.0.0.1", 0)
    runner = threading.Thread(target=server.run, name="a2a-sync-test-run")
    runner.start()
    url = server.url
    stream = post(url, send_body("wait", "SendStreamingMessage", "st"), stream=True)
    next(line for line in stream.iter_lines() if line.startswith(b"data: "))
    unary_result: list[requests.Response] = []
    unary = threading.Thread(
        target=lambda: unary_result.append(post(url, send_body("wait", message_id="u")))
    )
    unary.start()
    wait_until(lambda: agent.calls == 2, "both calls to reach the agent")
    stopped: list[bool] = []
    stopper = threading.Thread(target=lambda: stopped.append(server.stop(WAIT)))
    stopper.start()
    rest = b"".join(stream.iter_content(None))  # the stream ends without the agent finishing
    assert b"TASK_STATE_COMPLETED" not in rest
    agent.release.set()  # the unary call's agent finishes within the grace period
    unary.join(WAIT)
    stopper.join(WAIT + 2)
    runner.join(WAIT)
    assert unary_result
    assert unary_result[0].json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert stopped == [True]
    assert server_threads() == []
    with pytest.raises(requests.ConnectionError):
        post(url, send_body("late"))


def test_loopback_bind_refuses_foreign_host_headers() -> None:
    with serve_in_thread(A2AApplication(bare_card(), EchoAgent())) as url:
        evil = requests.get(
            url + "/.well-known/agent-card.json", headers={"Host": "evil.example"}, timeout=WAIT
        )
        assert evil.status_code == 421
        ok = requests.get(url + "/.well-known/agent-card.json", timeout=WAIT)
        assert ok.status_code == 200
        assert ok.json()["supportedInterfaces"][0]["url"] == url + "/"


def test_push_notifications_are_delivered_with_auth_headers(hook: WebhookReceiver) -> None:
    sender = PushSender(allow_private=True, backoff_base=0.01)
    app = A2AApplication(bare_card(), EchoAgent(), push_sender=sender)
    with serve_in_thread(app) as url:
        body = send_body("need input")
        body["params"]["configuration"] = {
            "taskPushNotificationConfig": {
                "url": hook.url + "/v1",
                "token": "tok-1",
                "authentication": {"scheme": "Bearer", "credentials": "cred-1"},
            }
        }
        task = post(url, body).json()["result"]["task"]
        received = hook.wait_for(3)  # the task, working, input-required
        kinds = [next(iter(r.json())) for r in received]
        assert kinds == ["task", "statusUpdate", "statusUpdate"]
        assert all(r.headers["authorization"] == "Bearer cred-1" for r in received)
        assert all(r.headers["x-a2a-notification-token"] == "tok-1" for r in received)
        legacy = requests.post(
            url + "/",
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tasks/pushNotificationConfig/set",
                "params": {
                    "taskId": task["id"],
                    "pushNotificationConfig": {"url": hook.url + "/v03", "id": "legacy"},
                },
            },
            timeout=WAIT,
        )
        assert legacy.json()["result"]["pushNotificationConfig"]["id"] == "legacy"
        answer = send_body("Paris")
        answer["params"]["message"]["taskId"] = task["id"]
        post(url, answer)
        assert sender.flush(WAIT)
        v03 = [r for r in hook.received if r.path == "/v03"]
        assert v03
        assert v03[-1].json()["kind"] == "task"
        assert v03[-1].json()["status"]["state"] == "completed"
    sender.close(WAIT)


def _start_serve(database: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``serve`` in a subprocess on port 0, its stderr in ``log``; returns the process and
    the URL it reported (no port is guessed: no race with other processes)."""
    script = textwrap.dedent(
        f"""
        import logging
        import attrs
        from a2a_sync.server.serving import serve
        from tests.server.agents import EchoAgent, card
        logging.basicConfig(level=logging.INFO, format="%(message)s")
        serve(EchoAgent(), port=0, card=attrs.evolve(card(), supported_interfaces=[]),
              database={str(database)!r}, grace=2.0)
        """
    )
    with log.open("wb") as err:
        process = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stderr=err)
    return process, _reported_url(process, log)


def _reported_url(process: subprocess.Popen[bytes], log: Path) -> str:
    """The URL a2a_sync's ``serve`` logged once it listens (bounded wait)."""
    found: list[str] = []

    def reported() -> bool:
        match = SERVE_URL_LINE.search(log.read_text(errors="replace"))
        if match is not None:
            found.append(match.group(1))
        return bool(found) or process.poll() is not None

    wait_until(reported, "serve to report its URL", 30)
    assert found, f"serve exited with {process.returncode}: {_tail(log)}"
    return found[0]


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


def test_serve_stops_on_sigterm_and_a_restart_keeps_finished_tasks(tmp_path: Path) -> None:
    database = tmp_path / "tasks.sqlite3"
    log = tmp_path / "serve.err"
    process, url = _start_serve(database, log)
    try:
        wait_until(lambda: _up(url), f"{url} to answer", 20)
        task = post(url, send_body("hello")).json()["result"]["task"]
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0, _tail(log)
        process, url = _start_serve(database, log)
        wait_until(lambda: _up(url), f"{url} to answer", 20)
        got = post(
            url, {"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task["id"]}}
        )
        assert got.json()["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert got.json()["result"]["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(20)


def _up(url: str) -> bool:
    """One readiness probe. A server still starting may refuse, reset or not answer in
    time (a gunicorn worker importing its app on a loaded machine): every one of those is
    "not up yet", so catch requests' base class, not only ConnectionError (ReadTimeout is
    not one). The callers bound the whole wait."""
    try:
        return requests.get(url + "/.well-known/agent-card.json", timeout=5).status_code == 200
    except requests.RequestException:
        return False
