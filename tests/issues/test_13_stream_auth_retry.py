"""A stream whose opening is refused (401/403) goes through the same decision as a unary
call (:class:`~a2a_sync.client.auth.AuthRetry`): one refresh after a 401, or the OAuth
credential's answer to the challenge; and it is sent again at most once, on both the
JSON-RPC and the HTTP+JSON binding. A real socket server, no mocks.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from a2a_sync.client import A2AClient
from a2a_sync.errors import HTTPStatusError
from a2a_sync.types import TaskState
from tests.support.fixtures import ScriptedServerFactory
from tests.support.servers import RecordedRequest, respond, write_chunk, write_head

WAIT = 5.0
BINDINGS = ["JSONRPC", "HTTP+JSON"]
DONE = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}


class RefreshingToken:
    """A credential with a refresh: the first token is refused, the next one accepted."""

    def __init__(self, *tokens: str) -> None:
        self.tokens = list(tokens)
        self.refreshes = 0

    def headers(self, card: object) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[0]}"}

    def refresh(self) -> None:
        self.refreshes += 1
        self.tokens.pop(0)


class EagerChallengeAuth:
    """An OAuth-style credential that always has another token to try."""

    def __init__(self) -> None:
        self.challenges: list[tuple[int, int]] = []

    def authorization(self, url: str) -> str | None:
        return f"Bearer attempt-{len(self.challenges) + 1}"

    def challenged(
        self, url: str, status: int, challenge: str | None, sent: str | None, attempt: int
    ) -> bool:
        self.challenges.append((status, attempt))
        return True


def handler(accepted: str, refusal: int = 401) -> Any:
    """Refuse every request without ``Bearer <accepted>``; stream one final task to it."""

    def handle(sock: socket.socket, request: RecordedRequest) -> None:
        if request.headers.get("Authorization") != f"Bearer {accepted}":
            respond(sock, refusal, b"refused")
            return
        if request.path.startswith("/rpc"):
            event: Any = {"jsonrpc": "2.0", "id": request.json()["id"], "result": {"task": DONE}}
        else:
            event = {"task": DONE}
        write_head(sock, 200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
        write_chunk(sock, f"data: {json.dumps(event)}\n\n".encode())
        write_chunk(sock, b"")

    return handle


def client_for(url: str, binding: str, credentials: Any) -> A2AClient:
    endpoint = url + ("/rpc" if binding == "JSONRPC" else "")
    return A2AClient(endpoint, binding=binding, credentials=credentials, timeout=WAIT)


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_opened_on_a_refused_token_is_sent_again_once_refreshed(
    scripted_server: ScriptedServerFactory, binding: str
) -> None:
    server = scripted_server(handler("fresh"))
    token = RefreshingToken("expired", "fresh")
    with client_for(server.url, binding, token) as client, client.subscribe("t1") as stream:
        events = list(stream)
    assert events[-1].status.state is TaskState.completed
    assert token.refreshes == 1
    sent = server.requests
    assert [r.headers["Authorization"] for r in sent] == ["Bearer expired", "Bearer fresh"]
    assert sent[0].path == sent[1].path
    assert sent[0].body == sent[1].body  # the same opening (same JSON-RPC id) again


@pytest.mark.parametrize("binding", BINDINGS)
def test_stream_refused_after_the_refresh_is_an_http_status_error(
    scripted_server: ScriptedServerFactory, binding: str
) -> None:
    server = scripted_server(handler("never"))
    token = RefreshingToken("expired", "still-bad")
    with (
        client_for(server.url, binding, token) as client,
        pytest.raises(HTTPStatusError) as info,
    ):
        client.subscribe("t1")
    assert info.value.status_code == 401
    assert token.refreshes == 1
    assert len(server.requests) == 2


@pytest.mark.parametrize("binding", BINDINGS)
def test_oauth_challenge_on_a_stream_opening_is_answered_once(
    scripted_server: ScriptedServerFactory, binding: str
) -> None:
    server = scripted_server(handler("never", refusal=403))
    auth = EagerChallengeAuth()
    with (
        client_for(server.url, binding, auth) as client,
        pytest.raises(HTTPStatusError) as info,
    ):
        client.subscribe("t1")
    assert info.value.status_code == 403
    assert auth.challenges == [(403, 1)]  # asked once, though it would go on forever
    assert [r.headers["Authorization"] for r in server.requests] == [
        "Bearer attempt-1",
        "Bearer attempt-2",
    ]
