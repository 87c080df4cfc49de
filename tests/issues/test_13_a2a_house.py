"""Issue 13 (A2A part): the application's settings and the client's options as frozen
values, and a pinned public surface that ``import *`` can load on a base install."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import attrs
import pytest

import a2a_sync.client
import a2a_sync.server
import a2a_sync.testing
import a2a_sync.types
from a2a_sync._net.http import HTTPTransport
from a2a_sync._net.sse import SSEOptions, SSEStream, StreamRequest
from a2a_sync.a2a.methods import Operation as ProtocolOperation
from a2a_sync.auth.oauth import OAuth, OAuthOptions
from a2a_sync.client import A2AClient, BearerToken, ClientOptions
from a2a_sync.errors import ConfigurationError, HTTPStatusError
from a2a_sync.server import (
    A2AApplication,
    AppSettings,
    BearerTokens,
    Operation,
    Principal,
    PushSender,
    PushSenderOptions,
    serve_in_thread,
)
from a2a_sync.types import Task, TaskState
from tests.server.agents import EchoAgent, card

EXPECTED_SERVER_ALL = {
    "A2AApplication",
    "AppSettings",
    "APIKeys",
    "AgentExecutor",
    "Authenticator",
    "BearerTokens",
    "CallContext",
    "DefaultRequestHandler",
    "EventStream",
    "FunctionExecutor",
    "InMemoryTaskStore",
    "Mount",
    "Operation",
    "Principal",
    "PushSender",
    "PushSenderOptions",
    "PushSettings",
    "RequestContext",
    "RequestHandler",
    "RunningServer",
    "SQLiteTaskStore",
    "ServeOptions",
    "ServerHandle",
    "ServerLimits",
    "StreamingRequestHandler",
    "TaskStore",
    "TaskUpdater",
    "mount",
    "serve",
    "serve_in_thread",
}

EXPECTED_CLIENT_ALL = {
    "A2AClient",
    "APIKey",
    "BasicAuth",
    "BearerToken",
    "ClientOptions",
    "Credentials",
    "ResilientA2AClient",
    "ResilientTaskStream",
    "TaskStream",
}

EXPECTED_TYPES_ALL = {
    "APIKeySecurityScheme",
    "AgentCapabilities",
    "AgentCard",
    "AgentCardSignature",
    "AgentExtension",
    "AgentInterface",
    "AgentProvider",
    "AgentSkill",
    "Artifact",
    "AuthenticationInfo",
    "DEFAULT_PROTOCOL_BINDING",
    "DEFAULT_PROTOCOL_VERSION",
    "GetTaskParams",
    "HTTPAuthSecurityScheme",
    "ListPushConfigsParams",
    "ListPushConfigsResult",
    "ListTasksParams",
    "ListTasksResult",
    "Message",
    "MutualTLSSecurityScheme",
    "OAuth2SecurityScheme",
    "OAuthFlow",
    "OAuthFlows",
    "OpenIdConnectSecurityScheme",
    "Part",
    "PushConfigParams",
    "PushNotificationConfig",
    "Role",
    "SecurityScheme",
    "SendMessageConfiguration",
    "SendMessageParams",
    "SendResult",
    "StreamEvent",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskIdParams",
    "TaskState",
    "TaskStatus",
    "TaskStatusUpdateEvent",
}

EXPECTED_TESTING_ALL = {
    "DEFAULT_HOLD_TIMEOUT",
    "FakeAgent",
    "InMemoryTransport",
    "JSONRPCServer",
    "Script",
    "ScriptedMCPServer",
    "agent_card",
    "agent_server",
    "connect_in_memory",
    "mcp_server_command",
    "recorded_messages",
}


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        (a2a_sync.server, EXPECTED_SERVER_ALL),
        (a2a_sync.client, EXPECTED_CLIENT_ALL),
        (a2a_sync.types, EXPECTED_TYPES_ALL),
        (a2a_sync.testing, EXPECTED_TESTING_ALL),
    ],
    ids=lambda v: getattr(v, "__name__", ""),
)
def test_the_public_surface_is_exactly_the_list(module: Any, expected: set[str]) -> None:
    assert len(module.__all__) == len(set(module.__all__)), "duplicate names in __all__"
    assert set(module.__all__) == expected
    for name in module.__all__:
        assert getattr(module, name) is not None, name


def test_import_star_works_without_the_postgres_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if the postgres extra were not installed\n"
        "sys.modules['psycopg_pool'] = None\n"
        "from a2a_sync import *\n"
        "import a2a_sync\n"
        "assert 'PostgresTaskStore' not in a2a_sync.__all__\n"
        "print('ok', A2AClient.__name__, A2AApplication.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok A2AClient A2AApplication"


def test_handler_authors_get_the_operation_a_dispatch_receives() -> None:
    assert Operation is ProtocolOperation
    assert Operation.SEND_MESSAGE in set(Operation)


# -- A2AApplication: settings --------------------------------------------------------------


def test_app_keywords_and_settings_are_the_same_configuration() -> None:
    base = AppSettings(max_streams=7, rpc_path="/a2a")
    by_value = A2AApplication(card(), EchoAgent(), settings=base)
    by_keyword = A2AApplication(card(), EchoAgent(), max_streams=7, rpc_path="/a2a")
    mixed = A2AApplication(card(), EchoAgent(), settings=base, max_streams=9)
    try:
        assert by_value.settings == by_keyword.settings == base
        assert (by_value.max_streams, by_value.rpc_path) == (7, "/a2a")
        assert (mixed.max_streams, mixed.rpc_path) == (9, "/a2a")
        assert base.max_streams == 7  # a keyword never changes the value it was applied to
    finally:
        for app in (by_value, by_keyword, mixed):
            app.close()


def test_an_unknown_app_keyword_names_the_closest_setting() -> None:
    with pytest.raises(ConfigurationError, match=r"'max_stream'.*did you mean 'max_streams'"):
        A2AApplication(card(), EchoAgent(), max_stream=4)
    with pytest.raises(ConfigurationError, match="did you mean 'settings'"):
        A2AApplication(card(), EchoAgent(), setting=AppSettings())


def test_settings_are_frozen() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        AppSettings().max_streams = 3  # type: ignore[misc]


def test_settings_are_still_checked() -> None:
    with pytest.raises(ConfigurationError, match="rpc_path must start with '/'"):
        A2AApplication(card(), EchoAgent(), settings=AppSettings(rpc_path="a2a"))


# -- A2AClient: options ----------------------------------------------------------------------


def test_an_unknown_client_keyword_names_the_closest_option() -> None:
    with pytest.raises(ConfigurationError, match=r"'timout'.*did you mean 'timeout'"):
        A2AClient("http://127.0.0.1:9/", timout=3)
    with pytest.raises(ConfigurationError, match="did you mean 'options'"):
        A2AClient("http://127.0.0.1:9/", option=ClientOptions())
    with pytest.raises(ConfigurationError, match="did you mean 'headers'"):
        A2AClient.from_url("http://127.0.0.1:9/", header={"X": "1"})


def test_client_options_do_not_show_headers_in_their_repr() -> None:
    options = ClientOptions(headers={"Authorization": "Bearer s3cret"})
    assert "s3cret" not in repr(options)


def test_settings_and_options_reach_the_wire() -> None:
    seen: list[dict[str, Any]] = []
    tokens = BearerTokens({"tok": "alice"})

    def authenticate(environ: Mapping[str, Any]) -> Principal | None:
        seen.append(dict(environ))
        return tokens(environ)

    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        EchoAgent(),
        settings=AppSettings(authenticate=authenticate, rpc_path="/a2a"),
    )
    options = ClientOptions(headers={"X-Trace": "t-1"}, timeout=30)
    with serve_in_thread(app) as url:
        with A2AClient.from_url(url, options=options, credentials=BearerToken("tok")) as client:
            assert client.url.endswith("/a2a")
            assert client.options.timeout == 30
            assert client.options.headers == {"X-Trace": "t-1"}
            task = client.send_message("hello")
        with (
            A2AClient.from_url(url, options=options) as anonymous,  # the setting holds
            pytest.raises(HTTPStatusError) as refused,
        ):
            anonymous.send_message("hello")
    assert refused.value.status_code == 401
    assert isinstance(task, Task)
    assert task.status.state is TaskState.completed
    assert any(e.get("HTTP_X_TRACE") == "t-1" for e in seen)


# -- PushSender: options ---------------------------------------------------------------------


def test_push_sender_keywords_and_options_are_the_same_configuration() -> None:
    base = PushSenderOptions(allow_private=True, max_attempts=2, workers=1)
    by_value = PushSender(base)
    by_keyword = PushSender(allow_private=True, max_attempts=2, workers=1)
    mixed = PushSender(base, max_attempts=3)
    try:
        assert by_value.options == by_keyword.options == base
        assert by_value.allow_private
        assert mixed.allow_private
        assert mixed.options.max_attempts == 3
        assert base.max_attempts == 2
    finally:
        for sender in (by_value, by_keyword, mixed):
            sender.close(0.0)


def test_push_sender_options_are_still_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"'backof_base'.*did you mean 'backoff_base'"):
        PushSender(backof_base=0.1)
    with pytest.raises(ConfigurationError, match="must be >= 1"):
        PushSender(PushSenderOptions(workers=0))


# -- OAuth: options ----------------------------------------------------------------------------


def test_oauth_keywords_and_options_are_the_same_configuration() -> None:
    base = OAuthOptions(client_id="app", client_secret="s3cret", scopes=["read"])
    by_value = OAuth(base)
    by_keyword = OAuth(client_id="app", client_secret="s3cret", scopes=["read"])
    machine = OAuth(base, grant="client_credentials")
    assert by_value.options == by_keyword.options == base
    assert by_value.scopes == ("read",)
    assert (machine.grant, by_value.grant) == ("client_credentials", "authorization_code")
    assert "s3cret" not in repr(base)


def test_oauth_options_are_still_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"'scope'.*did you mean 'scopes'"):
        OAuth(scope=["read"])
    with pytest.raises(ConfigurationError, match="needs a pre-registered client"):
        OAuth(OAuthOptions(grant="client_credentials"))


# -- SSEStream: options ------------------------------------------------------------------------


def test_sse_stream_refuses_an_unknown_option_before_opening() -> None:
    transport = HTTPTransport()
    try:
        with pytest.raises(ConfigurationError, match=r"'idle_timout'.*did you mean 'idle_timeout'"):
            SSEStream(transport, StreamRequest("GET", "http://127.0.0.1:9/"), idle_timout=3)
    finally:
        transport.close()
    assert SSEOptions(idle_timeout=3).evolve(threaded=False) == SSEOptions(
        idle_timeout=3, threaded=False
    )
