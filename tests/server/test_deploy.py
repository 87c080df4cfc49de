"""Deployments besides waitress: gunicorn's gthread worker, and mounting under a path
prefix inside a Flask app."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import requests

from a2a_sync.client import A2AClient
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.types import Task, TaskState
from tests.server.agents import WAIT, EchoAgent, card
from tests.server.test_serving import _up
from tests.support.polling import wait_until
from tests.support.ports import listening_socket

ROOT = Path(__file__).parents[2]


def test_gunicorn_gthread_serves_unary_and_streams_and_stops_gracefully(tmp_path: Path) -> None:
    listener = listening_socket()  # gunicorn gets the socket itself: no port race
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    config = tmp_path / "gunicorn.conf.py"
    config.write_text("from tests.server.gunicorn_app import worker_exit  # noqa: F401\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--worker-class",
            "gthread",
            "--workers",
            "1",
            "--threads",
            "8",
            "--bind",
            f"fd://{listener.fileno()}",
            "--graceful-timeout",
            "10",
            "-c",
            str(config),
            "tests.server.gunicorn_app:app",
        ],
        cwd=ROOT,
        pass_fds=(listener.fileno(),),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    listener.close()  # the child holds it now
    try:
        # gunicorn reports no readiness: poll its port (or its exit), bounded
        wait_until(lambda: _up(url) or process.poll() is not None, "gunicorn to come up", 30)
        assert process.poll() is None, process.communicate()[1].decode()[-2000:]
        with A2AClient.from_url(url) as client:
            task = client.send_message("hello")
            assert isinstance(task, Task)
            assert task.text == "echo: hello"
            with client.stream_message("chunks 3") as stream:
                events = list(stream)
                assert stream.get_final_task().text == "c0;c1;c2;"
            assert len(events) == 6
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        assert process.stderr is not None
        process.stderr.close()


def test_mounted_under_a_prefix_inside_flask() -> None:
    from flask import Flask
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    site = Flask("site")

    @site.get("/")
    def home() -> str:
        return "home page"

    agent_app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), EchoAgent())
    site.wsgi_app = DispatcherMiddleware(site.wsgi_app, {"/agents/echo": agent_app})  # type: ignore[method-assign]
    with serve_in_thread(site) as url:
        assert requests.get(url + "/", timeout=WAIT).text == "home page"
        document: dict[str, Any] = requests.get(
            url + "/agents/echo/.well-known/agent-card.json", timeout=WAIT
        ).json()
        assert {i["url"] for i in document["supportedInterfaces"]} == {url + "/agents/echo/"}
        with A2AClient.from_url(url + "/agents/echo") as client:
            task = client.send_message("hello")
            assert isinstance(task, Task)
            assert task.status.state is TaskState.completed
            with client.stream_message("chunks 2") as stream:
                assert stream.get_final_task().text == "c0;c1;"
        raw = requests.post(
            url + "/agents/echo/",
            data=json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}
            ),
            headers={"Content-Type": "application/json"},
            timeout=WAIT,
        )
        assert raw.json()["error"]["code"] == -32001
    agent_app.close(WAIT)
