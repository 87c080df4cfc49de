"""Issue 16 gaps, item 1: the A2A server's authorization (JWTBearerAuth's challenge, its
scopes per operation) applies to the HTTP+JSON and gRPC bindings as to JSON-RPC — one
function of the application (``_challenge``/``_refusal``) that every binding asks — and
``A2AClient(auth=OAuth(...))`` logs in and steps up over HTTP+JSON.

Real components: the authlib authorization server of the suite, JWTs verified against its
JWKS over HTTP, the REST binding under a WSGI server, grpcio's server and channel."""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.auth.oauth import OAuth
from a2a_sync.auth.oauth.challenge import parse_bearer_challenge
from a2a_sync.auth.verify import JWTVerifier
from a2a_sync.client import A2AClient
from a2a_sync.errors import TaskNotFound
from a2a_sync.server import A2AApplication
from a2a_sync.server.jwt_auth import JWTBearerAuth
from tests.auth.oauth.conftest import (  # the fixtures of the OAuth suite
    Agent,
    Approve,
    authorization_server,
    make_oauth,
)
from tests.server.agents import EchoAgent, card
from tests.support.fixtures import WsgiServerFactory
from tests.support.oauth_server import AuthorizationServerFixture, Client

VERSION = {"A2A-Version": "1.0"}
__all__ = ["authorization_server", "make_oauth"]  # used as fixtures here


@pytest.fixture
def agent(
    authorization_server: AuthorizationServerFixture, wsgi_server: WsgiServerFactory
) -> Iterator[Agent]:
    """The suite's protected agent, serving HTTP+JSON below its JSON-RPC URL (so the
    resource identifier ``/a2a`` is a parent path of the REST interface URL)."""
    holder: dict[str, Any] = {}

    def late(environ: Any, start_response: Callable[..., Any]) -> Iterable[bytes]:
        return holder["app"](environ, start_response)  # type: ignore[no-any-return]

    base = wsgi_server(late)
    verifier = JWTVerifier(
        issuer=authorization_server.issuer,
        audience=f"{base}/a2a",
        jwks_uri=f"{authorization_server.issuer}/jwks",
        require_at_jwt=True,
    )
    auth = JWTBearerAuth(
        verifier,
        resource=f"{base}/a2a",
        required_scopes=["read"],
        operation_scopes={"send_message": ["write"]},
    )
    declared = auth.declare(
        attrs.evolve(card(), supported_interfaces=[]),
        authorization_url=f"{authorization_server.issuer}/authorize",
        token_url=f"{authorization_server.issuer}/token",
        metadata_url=authorization_server.metadata_url,
    )
    app = A2AApplication(
        declared, EchoAgent(), authenticate=auth, rpc_path="/a2a", rest_path="/a2a/rest"
    )
    holder["app"] = app
    try:
        yield Agent(base, auth, app)
    finally:
        app.close()
        verifier.close()


def read_only_token(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> str:
    """``Bearer <JWT>`` for the agent with scope ``read`` only (client credentials)."""
    authorization_server.add_client(
        Client("svc", "pw", "client_secret_basic", grant_types=["client_credentials"])
    )
    oauth = make_oauth(
        client_id="svc", client_secret="pw", grant="client_credentials", scopes=["read"]
    )
    oauth.login(agent.rpc)
    header = oauth.authorization(agent.rpc)
    assert header is not None
    return header


def message_body(text: str) -> dict[str, Any]:
    return {
        "message": {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    }


def test_rest_challenges_and_refuses_an_operation_outside_the_token_scopes(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    rest = f"{agent.base}/a2a/rest"
    anonymous = requests.get(f"{rest}/tasks/x", headers=VERSION, timeout=10)
    assert anonymous.status_code == 401
    challenge = parse_bearer_challenge(anonymous.headers["WWW-Authenticate"])
    assert challenge is not None
    assert challenge.resource_metadata == f"{agent.base}/.well-known/oauth-protected-resource/a2a"
    assert challenge.scope == ("read",)

    headers = {**VERSION, "Authorization": read_only_token(authorization_server, agent, make_oauth)}
    read = requests.get(f"{rest}/tasks/x", headers=headers, timeout=10)
    assert read.status_code == 404  # authorized: the agent looked for the task

    send = requests.post(
        f"{rest}/message:send", json=message_body("hi"), headers=headers, timeout=10
    )
    assert send.status_code == 403
    assert send.json()["error"]["status"] == "PERMISSION_DENIED"
    refused = parse_bearer_challenge(send.headers["WWW-Authenticate"])
    assert refused is not None
    assert refused.error == "insufficient_scope"
    assert refused.scope == ("read", "write")
    assert refused.resource_metadata == challenge.resource_metadata


def test_a2a_client_logs_in_and_steps_up_over_http_json(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    approve = Approve(authorization_server)
    oauth = make_oauth(handler=approve)

    with A2AClient.from_url(agent.base, auth=oauth, bindings=["HTTP+JSON"]) as client:
        assert client.binding == "HTTP+JSON"
        with pytest.raises(TaskNotFound):  # scope "read" suffices
            client.get_task("missing")
        task = client.send_message("hello")  # needs "write": one step-up

    assert "hello" in json.dumps(attrs.asdict(task), default=str)
    scopes = [u.split("scope=")[1].split("&")[0] for u in approve.urls]
    assert scopes == ["read", "read+write"]


@pytest.mark.skipif(importlib.util.find_spec("grpc") is None, reason="needs the grpc extra")
def test_grpc_refuses_an_operation_outside_the_token_scopes(
    authorization_server: AuthorizationServerFixture,
    agent: Agent,
    make_oauth: Callable[..., OAuth],
) -> None:
    import grpc

    from a2a_sync.a2a.grpc.messages import METHODS, message_class
    from a2a_sync.a2a.methods import Operation
    from a2a_sync.server.bindings.grpc import GRPCServer

    send_method, get_method = METHODS[Operation.SEND_MESSAGE], METHODS[Operation.GET_TASK]
    request = message_class("SendMessageRequest")()
    request.message.message_id = str(uuid.uuid4())
    request.message.role = 1
    request.message.parts.add().text = "hi"
    get = message_class("GetTaskRequest")(id="missing")
    token = read_only_token(authorization_server, agent, make_oauth)
    metadata = (("a2a-version", "1.0"), ("authorization", token))

    with GRPCServer(agent.app) as server, grpc.insecure_channel(server.address) as channel:
        send = channel.unary_unary(
            send_method.path,
            request_serializer=send_method.request.SerializeToString,
            response_deserializer=send_method.response.FromString,
        )
        get_task = channel.unary_unary(
            get_method.path,
            request_serializer=get_method.request.SerializeToString,
            response_deserializer=get_method.response.FromString,
        )
        with pytest.raises(grpc.RpcError) as anonymous:
            send(request, timeout=30, metadata=metadata[:1])
        with pytest.raises(grpc.RpcError) as refused:
            send(request, timeout=30, metadata=metadata)
        with pytest.raises(grpc.RpcError) as looked:
            get_task(get, timeout=30, metadata=metadata)

    assert anonymous.value.code() is grpc.StatusCode.UNAUTHENTICATED
    trailers: dict[str, Any] = {m.key: m.value for m in anonymous.value.trailing_metadata()}
    assert "resource_metadata=" in trailers["www-authenticate"]
    assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
    refused_trailers: dict[str, Any] = {m.key: m.value for m in refused.value.trailing_metadata()}
    challenge = parse_bearer_challenge(refused_trailers["www-authenticate"])
    assert challenge is not None
    assert challenge.error == "insufficient_scope"
    assert challenge.scope == ("read", "write")
    assert looked.value.code() is grpc.StatusCode.NOT_FOUND  # authorized: the agent looked
