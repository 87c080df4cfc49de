"""Issue 17 §6: an A2A agent mounted under a prefix of a real Flask and a real Django site
with ``a2a_sync.server.mount`` (no werkzeug middleware), served by gunicorn's gthread
worker as in production. The sites are the snippets of docs/server.md."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from a2a_sync.client import A2AClient
from a2a_sync.errors import ConfigurationError
from a2a_sync.server import mount
from a2a_sync.types import Task, TaskState
from tests.support.polling import wait_until

ROOT = Path(__file__).parents[2]
WAIT = 30.0

AGENT = """
import attrs
from a2a_sync.server import A2AApplication
from tests.server.agents import EchoAgent, card

a2a_app = A2AApplication(
    attrs.evolve(card(), supported_interfaces=[]), EchoAgent(), allowed_hosts=["127.0.0.1"]
)
"""

FLASK_SITE = """
from flask import Flask
from a2a_sync.server import mount
from agent import a2a_app

flask_app = Flask("site")


@flask_app.get("/")
def home():
    return "flask home"


flask_app.wsgi_app = mount(flask_app.wsgi_app, "/agents/echo", a2a_app)
"""

DJANGO_SETTINGS = """
SECRET_KEY = "test only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "urls"
INSTALLED_APPS = []
MIDDLEWARE = []
"""

DJANGO_URLS = """
from django.http import HttpResponse
from django.urls import path

urlpatterns = [path("", lambda request: HttpResponse("django home"))]
"""

DJANGO_WSGI = """
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")

from django.core.wsgi import get_wsgi_application
from a2a_sync.server import mount
from agent import a2a_app

application = mount(get_wsgi_application(), "/agents/echo", a2a_app)
"""

CONFIG = """
def worker_exit(server, worker):
    from agent import a2a_app

    a2a_app.close(5.0)
"""


class Gunicorn:
    """gunicorn gthread on a port it picks itself (``:0``), reported in its log."""

    def __init__(self, folder: Path, target: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(ROOT)])}
        self.process = subprocess.Popen(
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
                "127.0.0.1:0",
                "--graceful-timeout",
                "10",
                "-c",
                str(folder / "gunicorn_conf.py"),
                target,
            ],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        self._listening = threading.Event()
        self.url = ""
        self._reader = threading.Thread(target=self._read, name="test-gunicorn-log", daemon=True)
        self._reader.start()
        if not self._listening.wait(WAIT):
            self.stop()
            raise AssertionError("gunicorn did not start: " + "".join(self.log)[-2000:])

    def _read(self) -> None:
        """Drain gunicorn's log (it must never block on a full pipe); note its port."""
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)
            found = re.search(r"Listening at: (http://127\.0\.0\.1:\d+)", line)
            if found:
                self.url = found.group(1)
                self._listening.set()
        self._listening.set()  # gunicorn exited

    def wait_up(self, path: str) -> None:
        def answers() -> bool:
            try:
                return requests.get(self.url + path, timeout=5).status_code == 200
            except requests.RequestException:
                return False  # the worker is still importing the site

        # the worker reports no readiness: poll the page (or gunicorn's exit), bounded
        wait_until(
            lambda: answers() or self.process.poll() is not None,
            f"gunicorn's worker to serve {path}",
            WAIT,
        )
        assert self.process.poll() is None, "".join(self.log)[-2000:]

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(WAIT)
            self._reader.join(WAIT)
            assert self.process.stderr is not None
            self.process.stderr.close()


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))


@pytest.fixture(params=["flask", "django"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Gunicorn]]:
    kind: str = request.param
    pytest.importorskip(kind)
    files = {"agent.py": AGENT, "gunicorn_conf.py": CONFIG}
    if kind == "flask":
        files["flask_site.py"] = FLASK_SITE
        target = "flask_site:flask_app"
    else:
        files |= {"settings.py": DJANGO_SETTINGS, "urls.py": DJANGO_URLS, "wsgi.py": DJANGO_WSGI}
        target = "wsgi:application"
    write(tmp_path, files)
    server = Gunicorn(tmp_path, target)
    try:
        server.wait_up("/")
        yield kind, server
    finally:
        if server.process.poll() is None:
            server.stop()


def test_the_agent_answers_under_the_prefix_and_the_site_around_it(
    site: tuple[str, Gunicorn],
) -> None:
    kind, server = site
    url = server.url
    assert requests.get(url + "/", timeout=WAIT).text == f"{kind} home"
    card = requests.get(url + "/agents/echo/.well-known/agent-card.json", timeout=WAIT).json()
    assert {i["url"] for i in card["supportedInterfaces"]} == {url + "/agents/echo/"}
    with A2AClient.from_url(url + "/agents/echo") as client:
        task = client.send_message("hello")
        assert isinstance(task, Task)
        assert task.status.state is TaskState.completed
        assert task.text == "echo: hello"
        with client.stream_message("chunks 3") as stream:
            assert list(stream.text_chunks()) == ["c0;", "c1;", "c2;"]
    # The allowed_hosts of the snippet hold under gunicorn: another Host is refused.
    refused = requests.get(
        url + "/agents/echo/.well-known/agent-card.json",
        headers={"Host": "evil.example"},
        timeout=WAIT,
    )
    assert refused.status_code == 421
    assert server.stop() == 0


def test_a_prefix_must_be_a_path() -> None:
    def site(environ: object, start_response: object) -> list[bytes]:
        return [b""]

    for bad in ("agents", "/", ""):
        with pytest.raises(ConfigurationError, match="must be a path such as '/agents/echo'"):
            mount(site, bad, site)
