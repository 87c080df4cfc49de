"""A2A with OAuth end to end: ``A2AClient.from_url(url, auth=OAuth(...))`` against an
``A2AApplication`` protected by :class:`JWTBearerAuth` (JWTs of the test authorization
server, JWKS fetched over HTTP), and the server's answers on their own."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import attrs
import pytest
import requests
from joserfc.jwk import RSAKey

from a2a_sync.auth.oauth import OAuth
from a2a_sync.auth.oauth.challenge import parse_bearer_challenge
from a2a_sync.client import A2AClient
from a2a_sync.errors import AuthorizationError, TaskNotFound
from tests.auth.oauth.conftest import Agent, Approve
from tests.support.oauth_server import AuthorizationServerFixture, Client


def test_a2a_client_logs_in_and_steps_up_for_the_operation(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    with A2AClient.from_url(agent.base, auth=oauth) as client:
        assert client.card.security_requirements == [{"oauth2": ["read"]}]
        task = client.send_message("hello")

    assert "hello" in json.dumps(attrs.asdict(task), default=str)
    scopes = [u.split("scope=")[1].split("&")[0] for u in approve.urls]
    assert scopes == ["read", "read+write"]  # the challenge's scope, then the step-up


def test_client_credentials_principal_is_the_client(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.add_client(
        Client("svc", "pw", "client_secret_post", grant_types=["client_credentials"])
    )
    oauth = make_oauth(
        client_id="svc",
        client_secret="pw",
        token_endpoint_auth_method="client_secret_post",
        grant="client_credentials",
        scopes=["read", "write"],
    )
    with A2AClient.from_url(agent.base, auth=oauth) as client:
        task = client.send_message("hi")
        assert client.get_task(task.id).id == task.id


def test_the_server_challenges_and_serves_its_metadata(
    authorization_server: AuthorizationServerFixture, agent: Agent
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    answer = requests.post(agent.rpc, json=body, timeout=10)
    assert answer.status_code == 401
    challenge = parse_bearer_challenge(answer.headers["WWW-Authenticate"])
    assert challenge is not None
    assert challenge.error is None
    assert challenge.scope == ("read",)
    assert challenge.resource_metadata == f"{agent.base}/.well-known/oauth-protected-resource/a2a"

    metadata = requests.get(challenge.resource_metadata, timeout=10).json()
    assert metadata["resource"] == agent.rpc
    assert metadata["authorization_servers"] == [authorization_server.issuer]

    bad = requests.post(
        agent.rpc, json=body, headers={"Authorization": "Bearer not.a.jwt"}, timeout=10
    )
    assert bad.status_code == 401
    assert 'error="invalid_token"' in bad.headers["WWW-Authenticate"]


def test_a_token_for_another_audience_is_refused(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.audience_override = "https://other.example/a2a"
    oauth = make_oauth(handler=Approve(authorization_server))
    with (
        pytest.raises(AuthorizationError, match="just issued"),
        A2AClient.from_url(agent.base, auth=oauth) as client,
    ):
        client.get_task("x")


def test_key_rotation_is_picked_up_from_the_jwks_at_most_once_per_interval(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    authorization_server.add_client(
        Client("svc", "pw", "client_secret_basic", grant_types=["client_credentials"])
    )
    oauth = make_oauth(
        client_id="svc", client_secret="pw", grant="client_credentials", scopes=["read"]
    )
    verifier = agent.auth.verifier
    later = [0.0]
    verifier._clock = lambda: time.time() + later[0]  # type: ignore[method-assign]
    with A2AClient.from_url(agent.base, auth=oauth) as client:
        with pytest.raises(TaskNotFound):  # authorized: the agent looked for the task
            client.get_task("missing")
        authorization_server.key = RSAKey.generate_key(2048, parameters={"kid": "k2"})
        oauth.logout(agent.rpc)
        # Within the refresh interval an unknown key id does not refetch (no storms).
        with pytest.raises(AuthorizationError, match="just issued"):
            client.get_task("missing")
        later[0] = verifier.refresh_interval + 1
        oauth.logout(agent.rpc)
        with pytest.raises(TaskNotFound):  # the new key verified after one refetch
            client.get_task("missing")
    jwks_fetches = [p for p in authorization_server.paths if p.endswith("/jwks")]
    assert len(jwks_fetches) == 2


def test_a_stream_as_the_first_call_logs_in_too(
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
    with A2AClient.from_url(agent.base, auth=oauth) as client, client.stream_message("hi") as s:
        events = list(s)

    assert events
    assert len(authorization_server.token_requests) == 1


def test_without_resource_metadata_the_card_names_the_server_and_the_scopes(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    agent.auth.metadata_path = "/not-published"  # no RFC 9728 metadata anywhere
    agent.auth.required_scopes = ()  # and no scope in the challenge
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    with A2AClient.from_url(agent.base, auth=oauth) as client, pytest.raises(TaskNotFound):
        client.get_task("missing")  # authorized: the agent looked for it

    (url,) = approve.urls
    assert "scope=read&" in url  # the card's security requirement
    assert url.startswith(f"{authorization_server.issuer}/authorize")


def test_a_card_metadata_url_not_derived_from_its_issuer_is_refused(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    agent.auth.metadata_path = "/not-published"
    authorization_server.advertised_issuer = "https://evil.example/tenant1"
    with (
        pytest.raises(AuthorizationError, match=r"RFC 8414 §3\.3"),
        A2AClient.from_url(agent.base, auth=make_oauth(handler=Approve(authorization_server))) as c,
    ):
        c.get_task("missing")


def test_tasks_stay_with_the_verified_principal(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    for name in ("svc-a", "svc-b"):
        authorization_server.add_client(
            Client(name, "pw", "client_secret_basic", grant_types=["client_credentials"])
        )

    def client_for(name: str) -> A2AClient:
        oauth = make_oauth(
            client_id=name, client_secret="pw", grant="client_credentials", scopes=["read", "write"]
        )
        return A2AClient.from_url(agent.base, auth=oauth)

    with client_for("svc-a") as a, client_for("svc-b") as b:
        task = a.send_message("mine")
        assert a.get_task(task.id).id == task.id
        with pytest.raises(TaskNotFound):
            b.get_task(task.id)
