"""Credentials never travel in plaintext except to loopback (A2A 1.0 §13.4; the project's
rule "never send credentials to another origin or over plain HTTP except loopback").

Before: ``BearerToken``, ``APIKey`` and ``BasicAuth`` went over ``http://`` to any host,
so did a static ``Authorization`` header (A2A client, card fetch, MCP), and the server
accepted webhook tokens and credentials for plain-HTTP webhooks. Now every attach point
refuses with a ConfigurationError (InvalidParams at push registration) naming the
operation, the redacted target and the fix, unless the caller opts in
(``allow_insecure_credentials=True``: sent, one warning per origin). Loopback ``http://``
and ``https://`` work as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import attrs
import pytest
import responses

from a2a_sync._net.secure import credentials_allowed
from a2a_sync.a2a.methods import Operation
from a2a_sync.auth.oauth.urls import check_endpoint
from a2a_sync.client import A2AClient, APIKey, BearerToken
from a2a_sync.client.auth import BasicAuth, Credentials
from a2a_sync.errors import AuthorizationError, ConfigurationError, InvalidParams
from a2a_sync.mcp.connection import MCPConnection
from a2a_sync.mcp.transports._httpbase import Endpoint
from a2a_sync.mcp.transports.http import StreamableHTTPTransport
from a2a_sync.mcp.transports.legacy_sse import LegacySSETransport
from a2a_sync.mcp.transports.options import HTTPOptions
from a2a_sync.server._push_configs import Webhooks
from a2a_sync.server.auth import Principal
from a2a_sync.server.context import CallContext
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.push_policy import PushSettings
from a2a_sync.server.stores.base import StoredPushConfig, StoredTask
from a2a_sync.server.stores.memory import InMemoryTaskStore
from a2a_sync.types import (
    AuthenticationInfo,
    Message,
    PushNotificationConfig,
    SendMessageConfiguration,
    SendMessageParams,
    StreamEvent,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.client.fakes import TASK_1_0, card_json
from tests.server.agents import EchoAgent, card

SECRET = "plain-http-secret-value"
RESULT = {"jsonrpc": "2.0", "id": 1, "result": TASK_1_0}
ALICE = CallContext(principal=Principal("alice"))
WAIT = 10.0

CREDENTIALS: list[Credentials] = [
    BearerToken(SECRET),
    APIKey(SECRET, header="X-API-Key"),
    BasicAuth("user", SECRET),
]


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def _refusal(exc: BaseException, target: str) -> None:
    text = str(exc)
    assert SECRET not in text
    assert target in text
    assert "https://" in text
    assert "allow_insecure_credentials=True" in text


# -- the one rule ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://agent.example/rpc", True),
        ("http://127.0.0.1:8080/rpc", True),
        ("http://127.8.9.10/rpc", True),
        ("http://[::1]:9/rpc", True),
        ("http://LOCALHOST:9/rpc", True),
        ("http://agent.example/rpc", False),
        ("http://10.0.0.5/rpc", False),
        ("http://localhost.evil.example/rpc", False),
        ("http://127.0.0.1.evil.example/rpc", False),
        ("ftp://127.0.0.1/x", False),
    ],
)
def test_credentials_go_over_tls_or_to_loopback_only(url: str, allowed: bool) -> None:
    assert credentials_allowed(url) is allowed
    # OAuth follows the same rule (one helper, not a second copy).
    if allowed:
        assert check_endpoint(url, "the resource", "resource") == url
    else:
        with pytest.raises(AuthorizationError):
            check_endpoint(url, "the resource", "resource")


# -- A2A client: JSON-RPC, HTTP+JSON, gRPC -----------------------------------------------------


@pytest.mark.parametrize("credentials", CREDENTIALS, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_static_credentials_are_refused_over_plain_http(
    rsps: responses.RequestsMock, credentials: Credentials, binding: str
) -> None:
    with pytest.raises(ConfigurationError, match="A2A client") as caught:
        A2AClient("http://agent.example/a2a", binding=binding, credentials=credentials)
    _refusal(caught.value, "http://agent.example")
    assert len(rsps.calls) == 0


def test_grpc_plaintext_credentials_are_refused_the_same_way() -> None:
    from tests.support.grpc import import_grpc

    import_grpc()
    with pytest.raises(ConfigurationError, match="A2A client") as caught:
        A2AClient("grpc://agent.example:50051", binding="GRPC", credentials=BearerToken(SECRET))
    _refusal(caught.value, "agent.example:50051")


def test_a_card_on_plain_http_gets_no_credentials(rsps: responses.RequestsMock) -> None:
    card_url = "http://agent.example/.well-known/agent-card.json"
    rsps.add(
        responses.GET, card_url, json=card_json(("http://agent.example/rpc", "JSONRPC", "1.0"))
    )
    with pytest.raises(ConfigurationError, match="A2A client"):
        A2AClient.from_url("http://agent.example", credentials=BearerToken(SECRET))
    assert [c.request.url for c in rsps.calls] == [card_url]  # no call carried the token
    assert "Authorization" not in rsps.calls[0].request.headers


def test_an_authorization_header_set_by_hand_is_refused_too(
    rsps: responses.RequestsMock,
) -> None:
    with pytest.raises(ConfigurationError, match="headers=") as caught:
        A2AClient("http://agent.example/rpc", headers={"authorization": f"Bearer {SECRET}"})
    _refusal(caught.value, "http://agent.example")
    with pytest.raises(ConfigurationError, match="agent card fetch") as caught:
        A2AClient.from_url("http://agent.example", card_headers={"X-API-Key": SECRET})
    _refusal(caught.value, "http://agent.example")
    assert len(rsps.calls) == 0
    with A2AClient("http://agent.example/rpc", headers={"X-Tenant": "t1"}):
        pass  # a header that is no credential is not a reason to refuse


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"])
def test_loopback_http_still_gets_credentials(rsps: responses.RequestsMock, host: str) -> None:
    rsps.add(responses.POST, f"http://{host}/rpc", json=RESULT)
    with A2AClient(f"http://{host}/rpc", credentials=BearerToken(SECRET)) as client:
        client.get_task("t1")
    assert rsps.calls[0].request.headers["Authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("credentials", CREDENTIALS, ids=lambda c: type(c).__name__)
def test_https_gets_credentials(rsps: responses.RequestsMock, credentials: Credentials) -> None:
    rsps.add(responses.POST, "https://agent.example/rpc", json=RESULT)
    with A2AClient("https://agent.example/rpc", credentials=credentials) as client:
        client.get_task("t1")
    expected = dict(credentials.headers(None))
    sent = rsps.calls[0].request.headers
    assert all(sent[name] == value for name, value in expected.items())


def test_the_opt_in_sends_them_and_warns_once_per_origin(
    rsps: responses.RequestsMock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2a_sync.credentials")
    url = "http://opt-in.internal.example:8080/rpc"
    rsps.add(responses.POST, url, json=RESULT)
    for _ in range(2):
        with A2AClient(
            url, credentials=BearerToken(SECRET), allow_insecure_credentials=True
        ) as client:
            client.get_task("t1")
    assert [c.request.headers["Authorization"] for c in rsps.calls] == [f"Bearer {SECRET}"] * 2
    warnings = [r for r in caplog.records if "opt-in.internal.example:8080" in r.getMessage()]
    assert len(warnings) == 1
    assert warnings[0].levelno == logging.WARNING
    assert SECRET not in caplog.text


# -- MCP HTTP transports -------------------------------------------------------------------------


def test_mcp_static_credentials_are_refused_over_plain_http() -> None:
    url = "http://mcp.example/mcp?key=hidden"
    with pytest.raises(ConfigurationError, match="MCP endpoint") as caught:
        MCPConnection.http(url, auth=SECRET)
    _refusal(caught.value, "http://mcp.example/mcp")
    assert "hidden" not in str(caught.value)
    for transport in (StreamableHTTPTransport, LegacySSETransport):
        with pytest.raises(ConfigurationError, match="MCP endpoint"):
            transport(url, HTTPOptions(headers={"Authorization": f"Bearer {SECRET}"}))
    Endpoint(url, headers={"X-Tenant": "t1"})  # no credential: no reason to refuse


def test_mcp_loopback_https_and_the_opt_in() -> None:
    for url in ("http://127.0.0.1:9/mcp", "https://mcp.example/mcp"):
        assert Endpoint(url, auth=SECRET).headers("*/*")["Authorization"] == f"Bearer {SECRET}"
    opted = Endpoint("http://mcp-opt-in.example/mcp", auth=SECRET, insecure_credentials=True)
    assert opted.headers("*/*")["Authorization"] == f"Bearer {SECRET}"
    assert HTTPOptions(allow_insecure_credentials=True).allow_insecure_credentials


# -- push notification configs the server would call -------------------------------------------


def _handler(settings: PushSettings | None = None) -> DefaultRequestHandler:
    return DefaultRequestHandler(
        card(), EchoAgent(), push=settings or PushSettings(), blocking_timeout=WAIT
    )


def _task(handler: DefaultRequestHandler) -> Task:
    params = SendMessageParams(message=Message.user("hello"))
    task = handler.dispatch(Operation.SEND_MESSAGE, params, ALICE)
    assert isinstance(task, Task)
    return task


@pytest.mark.parametrize(
    ("token", "auth"),
    [(SECRET, None), (None, AuthenticationInfo(scheme="Bearer", credentials=SECRET))],
)
def test_push_secrets_for_a_plain_http_webhook_are_refused(
    token: str | None, auth: AuthenticationInfo | None
) -> None:
    handler = _handler()
    try:
        task = _task(handler)
        config = PushNotificationConfig(
            url="http://hooks.example/a?sig=hidden",
            task_id=task.id,
            token=token,
            authentication=auth,
        )
        with pytest.raises(InvalidParams, match="https://") as caught:
            handler.dispatch(Operation.CREATE_PUSH_CONFIG, config, ALICE)
        assert SECRET not in str(caught.value)
        assert "hidden" not in str(caught.value)
        assert "hooks.example" in str(caught.value)
        with pytest.raises(InvalidParams, match="https://"):
            handler.dispatch(
                Operation.SEND_MESSAGE,
                SendMessageParams(
                    message=Message.user("again"),
                    configuration=SendMessageConfiguration(
                        push_notification_config=attrs.evolve(config, task_id=None)
                    ),
                ),
                ALICE,
            )
        assert handler.store.list_push_configs(task.id) == []
    finally:
        assert handler.close(WAIT)


def test_push_without_secrets_https_loopback_and_the_opt_in_are_accepted() -> None:
    handler = _handler()
    opted = _handler(PushSettings(allow_insecure_credentials=True))
    try:
        task = _task(handler)
        for url, token in [
            ("http://hooks.example/plain", None),
            ("https://hooks.example/tls", SECRET),
            ("http://127.0.0.1:9/local", SECRET),
        ]:
            config = PushNotificationConfig(url=url, task_id=task.id, token=token)
            handler.dispatch(Operation.CREATE_PUSH_CONFIG, config, ALICE)
        assert len(handler.store.list_push_configs(task.id)) == 3
        other = _task(opted)
        config = PushNotificationConfig(
            url="http://hooks-opt-in.example/x", task_id=other.id, token=SECRET
        )
        opted.dispatch(Operation.CREATE_PUSH_CONFIG, config, ALICE)
        assert len(opted.store.list_push_configs(other.id)) == 1
    finally:
        assert handler.close(WAIT)
        assert opted.close(WAIT)


def test_the_cli_refuses_a_token_over_plain_http_unless_told_otherwise(
    rsps: responses.RequestsMock, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from a2a_sync.cli.commands import main
    from a2a_sync.cli.exits import EXIT_OK

    card_url = "http://cli.internal.example/.well-known/agent-card.json"
    rsps.add(
        responses.GET,
        card_url,
        json=card_json(("http://cli.internal.example/rpc", "JSONRPC", "1.0")),
    )
    refused = main(["card", "http://cli.internal.example", "--token", SECRET], stdout=io.StringIO())
    assert refused != EXIT_OK
    assert "allow_insecure_credentials" in capsys.readouterr().err
    assert all("Authorization" not in c.request.headers for c in rsps.calls)
    out = io.StringIO()
    allowed = main(
        ["card", "http://cli.internal.example", "--token", SECRET, "--allow-insecure-credentials"],
        stdout=out,
    )
    assert allowed == EXIT_OK, capsys.readouterr().err
    assert rsps.calls[-1].request.url == card_url


class _Recorder:
    """A PushNotifier that records what it is asked to deliver."""

    def __init__(self) -> None:
        self.sent: list[StoredPushConfig] = []

    def notify(
        self, stored: StoredTask, event: StreamEvent, configs: list[StoredPushConfig]
    ) -> None:
        self.sent.extend(configs)

    def check_url(self, url: str) -> None:
        pass


def test_a_stored_plain_http_config_with_secrets_is_not_delivered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A config that reached the store before the rule (an older release, or written while
    ``allow_insecure_credentials`` was on) is checked again at delivery: skipped with a
    warning naming the fix; configs without secrets, to https or loopback still go."""
    store = InMemoryTaskStore()
    recorder = _Recorder()
    webhooks = Webhooks(store, recorder, enabled=True, settings=PushSettings())
    stored = store.create_task(
        Task(id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.working)),
        principal="alice",
    )
    task_id = stored.task.id
    leaking = PushNotificationConfig(
        id="old", url="http://hooks.example/a?sig=hidden", task_id=task_id, token=SECRET
    )
    kept = [
        PushNotificationConfig(id="bare", url="http://hooks.example/b", task_id=task_id),
        PushNotificationConfig(
            id="tls", url="https://hooks.example/c", task_id=task_id, token=SECRET
        ),
        PushNotificationConfig(id="lo", url="http://127.0.0.1:9/d", task_id=task_id, token=SECRET),
    ]
    for config in [leaking, *kept]:
        store.set_push_config(config, revision="1.0")
    event = TaskStatusUpdateEvent(
        task_id=task_id, context_id=stored.task.context_id, status=stored.task.status
    )
    with caplog.at_level(logging.WARNING, logger="a2a_sync.server.handler"):
        webhooks.on_event(stored, event)
    assert sorted(item.config.id or "" for item in recorder.sent) == ["bare", "lo", "tls"]
    assert "push config old" in caplog.text
    assert "https://" in caplog.text
    assert SECRET not in caplog.text
    assert "hidden" not in caplog.text

    recorder.sent.clear()
    opted = Webhooks(
        store, recorder, enabled=True, settings=PushSettings(allow_insecure_credentials=True)
    )
    opted.on_event(stored, event)
    assert len(recorder.sent) == 4
