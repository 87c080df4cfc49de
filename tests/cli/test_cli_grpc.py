"""``a2a-sync --binding GRPC`` and ``serve --grpc-port`` (issue 19).

In-process (``main(argv, stdout=...)``) against an A2AApplication served over HTTP (for
the card) and gRPC; the HTTP server's access log shows that no A2A call went over HTTP.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import attrs
import pytest

from tests.support.grpc import import_grpc

import_grpc()

from a2a_sync.cli.commands import EXIT_OK, main  # noqa: E402
from a2a_sync.server.app import A2AApplication  # noqa: E402
from a2a_sync.server.serving import grpc_server, serve_in_thread  # noqa: E402
from tests.server.agents import EchoAgent, card  # noqa: E402

from .test_cli_rest import Recording  # noqa: E402


@pytest.fixture
def served() -> Iterator[tuple[str, Recording]]:
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), EchoAgent())
    recording = Recording(app)
    with grpc_server(app), serve_in_thread(recording) as url:
        yield url, recording
    app.close(1.0)


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


@pytest.mark.parametrize("spelling", ["GRPC", "grpc"])
def test_card_and_send_over_grpc(served: tuple[str, Recording], spelling: str) -> None:
    url, recording = served
    code, text = cli("card", url, "--binding", spelling)
    assert code == EXIT_OK
    assert "(A2A 1.0, GRPC)" in text
    code, text = cli("send", url, "hello", "--binding", spelling, "--json")
    assert code == EXIT_OK
    assert json.loads(text)["artifacts"][0]["parts"][0]["text"] == "echo: hello"
    assert set(recording.paths) == {"/.well-known/agent-card.json"}  # A2A calls: gRPC
