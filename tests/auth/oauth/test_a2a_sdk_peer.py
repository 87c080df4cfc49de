"""The official a2a-sdk 1.3 client against our JWTBearerAuth-protected server: it reads
the security scheme our card declares, and its AuthInterceptor sends the token our OAuth
client obtained (client credentials from the test authorization server)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from a2a_sync.auth.oauth import OAuth
from tests.auth.oauth.conftest import Agent
from tests.support.oauth_server import AuthorizationServerFixture, Client

pytestmark = pytest.mark.peer
pytest.importorskip("a2a")

WAIT = 30.0


async def _send(base: str, token: str | None) -> list[Any]:
    from a2a.client import create_client
    from a2a.client.auth import AuthInterceptor, CredentialService
    from a2a.types import Message, Part, Role, SendMessageRequest

    class Credentials(CredentialService):  # type: ignore[misc]
        async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
            return token if security_scheme_name == "oauth2" else None

    client = await create_client(base, interceptors=[AuthInterceptor(Credentials())])
    try:
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text="hello")]
        )
        return [event async for event in client.send_message(SendMessageRequest(message=message))]
    finally:
        await client.close()


def test_a2a_sdk_client_sends_our_token_for_the_scheme_our_card_declares(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.add_client(
        Client("svc", "pw", "client_secret_basic", grant_types=["client_credentials"])
    )
    oauth = make_oauth(
        client_id="svc", client_secret="pw", grant="client_credentials", scopes=["read", "write"]
    )
    oauth.login(agent.rpc)
    header = oauth.authorization(agent.rpc)
    assert header is not None

    events = asyncio.run(asyncio.wait_for(_send(agent.base, header.removeprefix("Bearer ")), WAIT))

    assert "TASK_STATE_COMPLETED" in repr(events[-1])
    assert "hello" in repr(events)  # the echo


def test_a2a_sdk_client_without_a_token_is_refused(agent: Agent) -> None:
    with pytest.raises(Exception) as caught:
        asyncio.run(asyncio.wait_for(_send(agent.base, None), WAIT))
    assert "401" in repr(caught.value) or "nauthor" in repr(caught.value)
