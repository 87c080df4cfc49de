"""The HTTP+JSON binding under gunicorn (gthread; paths arrive via ``RAW_URI``) and mounted
inside Flask (``DispatcherMiddleware``; ``SCRIPT_NAME`` + ``REQUEST_URI``)."""

from __future__ import annotations

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
from a2a_sync.types import Task
from tests.server.agents import WAIT, EchoAgent, card
from tests.server.test_serving import _up
from tests.support.polling import wait_until
from tests.support.ports import listening_socket

ROOT = Path(__file__).parents[2]


def test_gunicorn_serves_rest_in_both_revisions(tmp_path: Path) -> None:
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
        for revision in ("1.0", "0.3"):
            with A2AClient.from_url(
                url,
                bindings=["HTTP+JSON"],
                revisions=(revision,),
            ) as client:
                assert client.url == url + "/rest"
                task = client.send_message("hello")
                assert isinstance(task, Task)
                assert client.get_task(task.id).text == "echo: hello"
                with client.stream_message("chunks 3") as stream:
                    assert stream.get_final_task().text == "c0;c1;c2;"
        # gunicorn hands the raw path over (RAW_URI): an encoded slash stays visible
        answer = requests.get(
            url + "/rest/tasks/a%2Fb", headers={"A2A-Version": "1.0"}, timeout=WAIT
        )
        assert answer.status_code == 404
        assert answer.json()["error"]["code"] == 404
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        assert process.stderr is not None
        process.stderr.close()


def test_rest_mounted_inside_flask() -> None:
    from flask import Flask
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    site = Flask("site")
    agent_app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]), EchoAgent(), rest_path="/rest"
    )
    site.wsgi_app = DispatcherMiddleware(site.wsgi_app, {"/agents/echo": agent_app})  # type: ignore[method-assign]
    with serve_in_thread(site) as url:
        document: dict[str, Any] = requests.get(
            url + "/agents/echo/.well-known/agent-card.json", timeout=WAIT
        ).json()
        rest = {
            i["url"] for i in document["supportedInterfaces"] if i["protocolBinding"] == "HTTP+JSON"
        }
        assert rest == {url + "/agents/echo/rest"}
        with A2AClient.from_url(url + "/agents/echo", bindings=["HTTP+JSON"]) as client:
            task = client.send_message("hello")
            assert isinstance(task, Task)
            assert client.get_task(task.id).text == "echo: hello"
            with client.stream_message("chunks 2") as stream:
                assert stream.get_final_task().text == "c0;c1;"
    agent_app.close(WAIT)
