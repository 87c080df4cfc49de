"""Issue 12 §3: the Host allow-list (DNS-rebinding protection) holds wherever the app runs.

Before, only ``serve()`` on a loopback address checked ``Host``: the bare WSGI app, gunicorn
and a Flask mount answered ``Host: evil.example`` with 200.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import requests

from a2a_sync.server.app import A2AApplication
from a2a_sync.types import AgentInterface
from tests.server.agents import WAIT, EchoAgent, card
from tests.server.test_serving import _up
from tests.server.wsgi import call, rpc
from tests.support.polling import wait_until
from tests.support.ports import listening_socket

ROOT = Path(__file__).parents[2]
GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}


@pytest.fixture
def bare() -> Iterator[A2AApplication]:
    application = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), EchoAgent())
    yield application
    application.close(WAIT)


def test_the_bare_wsgi_app_refuses_a_foreign_host_by_default(bare: A2AApplication) -> None:
    evil = rpc(bare, "GetTask", {"id": "x"}, headers={"Host": "evil.example"})
    assert evil.code == 421
    assert b"allowed_hosts" in evil.read()  # names the fix
    card_evil = call(bare, "GET", "/.well-known/agent-card.json", headers={"Host": "evil.example"})
    assert card_evil.code == 421  # nor does the card advertise the attacker's name
    card_evil.close()
    for host in ("127.0.0.1:8000", "localhost", "[::1]:8000"):
        ok = rpc(bare, "GetTask", {"id": "x"}, headers={"Host": host})
        assert ok.code == 200, host
        ok.close()


def test_the_hosts_of_the_cards_urls_are_allowed_by_default() -> None:
    interface = AgentInterface(
        url="https://agent.example.com/a2a", protocol_binding="JSONRPC", protocol_version="1.0"
    )
    application = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[interface]), EchoAgent()
    )
    try:
        ok = rpc(application, "GetTask", {"id": "x"}, headers={"Host": "Agent.Example.com"})
        assert ok.code == 200
        ok.close()
        evil = rpc(application, "GetTask", {"id": "x"}, headers={"Host": "evil.example"})
        assert evil.code == 421
        evil.close()
    finally:
        application.close(WAIT)


def test_allowed_hosts_replaces_the_default_and_star_accepts_any() -> None:
    named = A2AApplication(card(), EchoAgent(), allowed_hosts=["agent.internal"])
    anyone = A2AApplication(card(), EchoAgent(), allowed_hosts=["*"])
    try:
        assert (
            rpc(named, "GetTask", {"id": "x"}, headers={"Host": "agent.internal:80"}).finish()
            == 200
        )
        assert (
            rpc(named, "GetTask", {"id": "x"}, headers={"Host": "127.0.0.1:8000"}).finish() == 421
        )
        assert rpc(anyone, "GetTask", {"id": "x"}, headers={"Host": "evil.example"}).finish() == 200
    finally:
        named.close(WAIT)
        anyone.close(WAIT)


def test_gunicorn_refuses_a_foreign_host(tmp_path: Path) -> None:
    listener = listening_socket()  # gunicorn gets the socket itself: no port race
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    with (tmp_path / "gunicorn.err").open("wb") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                *("--worker-class", "gthread", "--workers", "1", "--threads", "8"),
                *("--bind", f"fd://{listener.fileno()}"),
                "tests.server.gunicorn_app:app",
            ],
            cwd=ROOT,
            pass_fds=(listener.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    listener.close()  # the child holds it now
    try:
        # gunicorn reports no readiness: poll its port (or its exit), bounded
        wait_until(lambda: _up(url) or process.poll() is not None, "gunicorn to come up", 30)
        assert process.poll() is None, (tmp_path / "gunicorn.err").read_text()[-2000:]
        headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
        evil = requests.post(
            url + "/",
            data=json.dumps(GET_TASK),
            headers={**headers, "Host": "evil.example"},
            timeout=WAIT,
        )
        assert evil.status_code == 421
        ok = requests.post(url + "/", data=json.dumps(GET_TASK), headers=headers, timeout=WAIT)
        assert ok.status_code == 200
        assert ok.json()["error"]["code"] == -32001
    finally:
        process.terminate()
        process.wait(30)


def test_mounted_in_flask_refuses_a_foreign_host(bare: A2AApplication) -> None:
    from flask import Flask
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    site = Flask("site")
    site.wsgi_app = DispatcherMiddleware(site.wsgi_app, {"/agents/echo": bare})  # type: ignore[method-assign]
    client = site.test_client()
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    evil = client.post(
        "/agents/echo/", data=json.dumps(GET_TASK), headers={**headers, "Host": "evil.example"}
    )
    assert evil.status_code == 421
    ok = client.post(
        "/agents/echo/", data=json.dumps(GET_TASK), headers={**headers, "Host": "localhost"}
    )
    assert ok.status_code == 200
    assert ok.get_json()["error"]["code"] == -32001
