"""``a2a-sync --binding``: the command talks HTTP+JSON when asked (issue 15).

In-process (``main(argv, stdout=...)``) against an A2AApplication that serves both
bindings on waitress; the server's own access decides which binding was used.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.cli.commands import EXIT_OK, EXIT_USAGE, main
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.serving import serve_in_thread
from tests.server.agents import EchoAgent, card


class Recording:
    """WSGI middleware noting each request path (which binding the CLI used)."""

    def __init__(self, app: A2AApplication) -> None:
        self.app = app
        self.paths: list[str] = []

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.paths.append(environ["PATH_INFO"])
        return self.app(environ, start_response)


@pytest.fixture
def served() -> Iterator[tuple[str, Recording]]:
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]), EchoAgent(), rest_path="/rest"
    )
    recording = Recording(app)
    with serve_in_thread(recording) as url:
        yield url, recording
    app.close(1.0)


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


def test_card_and_send_over_rest(served: tuple[str, Recording]) -> None:
    url, recording = served
    code, text = cli("card", url, "--binding", "HTTP+JSON")
    assert code == EXIT_OK
    assert "(A2A 1.0, HTTP+JSON)" in text
    code, text = cli("send", url, "hello", "--binding", "HTTP+JSON", "--json")
    assert code == EXIT_OK
    assert json.loads(text)["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    assert "/rest/message:send" in recording.paths
    assert "/" not in recording.paths  # no JSON-RPC call


def test_default_binding_stays_json_rpc(served: tuple[str, Recording]) -> None:
    url, recording = served
    code, _ = cli("send", url, "hello")
    assert code == EXIT_OK
    assert "/" in recording.paths
    assert not any(p.startswith("/rest/") for p in recording.paths)


def test_rest_on_an_agent_without_it_is_a_usage_error() -> None:
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), EchoAgent())
    with serve_in_thread(app) as url:
        code, _ = cli("card", url, "--binding", "HTTP+JSON")
    app.close(1.0)
    assert code == EXIT_USAGE
