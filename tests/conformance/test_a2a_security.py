"""A2A 1.0 security requirements that fall on a library (§7, §13): authorization scoping
of every task operation, push-notification security on the webhook caller's side, secrets
kept out of answers and logs, request limits, and TLS on the client side.

a2a_sync only, black-box over HTTP on 127.0.0.1: the a2a-sdk peer script has a single
caller, runs no push sender and its client is asynchronous, so there is nothing of it to
compare with here.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

from a2a_sync import A2AClient
from a2a_sync.client import APIKey, BasicAuth, BearerToken
from a2a_sync.client.bindings.grpc_target import parse_grpc_url
from a2a_sync.errors import A2ASyncError, ConfigurationError
from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.server.push import PushSender
from a2a_sync.server.push_options import PushSenderOptions
from tests.server.agents import card
from tests.server.webhook import WebhookReceiver, receiver

from .a2a_wire import V1, WAIT, error_code, post, rpc, send, user
from .agents import ConformanceAgent

requirement = pytest.mark.requirement
webhook = pytest.fixture(scope="module")(receiver)
TOKEN = "sec-token-7"
SECRETS = ("tok-secret-1", "cred-secret-2", "wrong-bearer-3")
GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "none"}}


def as_owner(url: str, method: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": 8, "method": method, "params": params}
    return post(url, body, {**V1, "Authorization": f"Bearer {TOKEN}"}).json()


@pytest.fixture(scope="module")
def sender() -> Iterator[PushSender]:
    push = PushSender(backoff_base=0.01)  # the default policy: no private addresses
    yield push
    assert push.close()


@pytest.fixture(scope="module")
def guarded(agent: ConformanceAgent, sender: PushSender) -> Iterator[str]:
    """a2a_sync's server with callers (bearer ``TOKEN``, anonymous allowed), the default
    push policy and a small body limit."""
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        agent,
        authenticate=BearerTokens({TOKEN: "owner"}),
        allow_anonymous=True,
        push_sender=sender,
        max_body_bytes=64 * 1024,
    )
    with serve_in_thread(app) as url:
        yield url + "/"
    agent.release.set()


# -- §13.1 authorization scoping -----------------------------------------------------------


@requirement("a2a-1.0-§13.1-every-task-operation-scoped")
def test_every_task_operation_is_scoped_to_the_caller(guarded: str) -> None:
    """Subscribing to, continuing, and configuring push for another caller's task are
    answered like a task that does not exist (-32001), and leave the task untouched."""
    theirs = as_owner(guarded, "SendMessage", {"message": user("need input")})["result"]["task"]
    calls = [
        ("SubscribeToTask", {"id": theirs["id"]}),
        ("SendMessage", {"message": user("Paris", taskId=theirs["id"])}),
        ("CreateTaskPushNotificationConfig", {"taskId": theirs["id"], "url": "https://e.com/h"}),
        ("ListTaskPushNotificationConfigs", {"taskId": theirs["id"]}),
    ]
    for method, params in calls:
        response = post(
            guarded, {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, V1
        )
        answer = response.json() if "json" in response.headers["Content-Type"] else None
        if answer is None:  # a stream: its one event is the error
            line = next(
                x for x in response.iter_lines(decode_unicode=True) if x.startswith("data:")
            )
            answer = json.loads(line[5:])
        assert error_code(answer) == -32001, method
    after = as_owner(guarded, "GetTask", {"id": theirs["id"]})["result"]
    assert after["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    configs = as_owner(guarded, "ListTaskPushNotificationConfigs", {"taskId": theirs["id"]})
    assert configs["result"].get("configs", []) == []


@requirement("a2a-1.0-§3.3.2-reject-invalid-credentials")
def test_invalid_credentials_are_rejected_even_where_anonymous_callers_are_served(
    guarded: str,
) -> None:
    """Where anonymous callers are allowed, a caller presenting credentials the server
    does not accept is still refused with 401 and a challenge, not served as anonymous;
    without credentials, and with valid ones, it is served."""
    wrong = post(guarded, GET_TASK, {**V1, "Authorization": "Bearer not-a-token"})
    assert wrong.status_code == 401
    assert "bearer" in wrong.headers["WWW-Authenticate"].lower()
    assert error_code(post(guarded, GET_TASK, V1).json()) == -32001
    assert error_code(as_owner(guarded, "GetTask", {"id": "none"})) == -32001


# -- §13.2 push notification security (the agent as webhook caller) -------------------------


@requirement("a2a-1.0-§13.2-webhook-urls-validated")
def test_webhooks_on_private_addresses_are_refused(
    guarded: str, sender: PushSender, webhook: WebhookReceiver
) -> None:
    """Loopback, private, link-local and unique-local literal addresses are refused when
    the config is created (-32602); a host name that resolves to one (``localhost``) is
    refused at delivery: nothing reaches the receiver."""
    task = send(guarded, user("need input"))["task"]
    for host in ("127.0.0.1", "10.0.0.8", "172.16.0.1", "192.168.1.1", "169.254.169.254", "[::1]"):
        config = {"taskId": task["id"], "url": f"http://{host}:8080/hook"}
        assert error_code(rpc(guarded, "CreateTaskPushNotificationConfig", config)) == -32602
    port = webhook.url.rsplit(":", 1)[1]
    config = {"taskId": task["id"], "url": f"http://localhost:{port}/hook"}
    assert "result" in rpc(guarded, "CreateTaskPushNotificationConfig", config)
    send(guarded, user("Paris", taskId=task["id"]))
    assert sender.flush(WAIT)
    assert webhook.received == []


@requirement("a2a-1.0-§13.2-webhook-timeout")
def test_webhook_calls_have_a_bounded_timeout() -> None:
    """Each webhook attempt is bounded by default, within the recommended 10-30 s."""
    assert 10 <= PushSenderOptions().timeout <= 30


@requirement("a2a-1.0-§13.2-webhook-retry-with-backoff")
@requirement("a2a-1.0-§13.2-webhook-carries-credentials")
@requirement("a2a-1.0-§13.4-logs-hold-no-credentials")
def test_failed_deliveries_are_retried_and_logs_hold_no_secrets(
    agent: ConformanceAgent, caplog: pytest.LogCaptureFixture
) -> None:
    """A webhook answering 503 gets the same notification again (backoff), every attempt
    authenticated with the config's credentials, and neither
    the push token and credentials nor a refused bearer token appear in any log record."""
    push = PushSender(allow_private=True, backoff_base=0.01)
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]),
        agent,
        authenticate=BearerTokens({TOKEN: "owner"}),
        allow_anonymous=True,
        push_sender=push,
    )
    caplog.set_level(logging.DEBUG)
    try:
        with contextlib.contextmanager(receiver)() as hook, serve_in_thread(app) as url:
            task = send(url + "/", user("need input"))["task"]
            config = {
                "taskId": task["id"],
                "url": hook.url + "/hook",
                "token": SECRETS[0],
                "authentication": {"scheme": "Bearer", "credentials": SECRETS[1]},
            }
            assert "result" in rpc(url + "/", "CreateTaskPushNotificationConfig", config)
            hook.answers.extend([(503, {}), (503, {})])
            send(url + "/", user("Paris", taskId=task["id"]))
            attempts = hook.wait_for(3)
            bodies = [r.body for r in attempts]
            assert all(r.headers["authorization"] == f"Bearer {SECRETS[1]}" for r in attempts)
            wrong = {**V1, "Authorization": f"Bearer {SECRETS[2]}"}
            assert post(url + "/", GET_TASK, wrong).status_code == 401
            assert push.flush(WAIT)
    finally:
        assert push.close()
    assert bodies[0] == bodies[1] == bodies[2]
    assert not [s for s in SECRETS if s in caplog.text]
    assert caplog.records  # the failed deliveries and the refusal were logged


@requirement("a2a-1.0-§13.4-credentials-are-secrets")
def test_push_secrets_are_not_echoed(guarded: str) -> None:
    """The token and credentials a client registers are used for its webhook only: Create,
    Get and List answer the config without them (the scheme stays)."""
    task = send(guarded, user("need input"))["task"]
    config = {
        "taskId": task["id"],
        "url": "https://example.com/hook",
        "token": SECRETS[0],
        "authentication": {"scheme": "Bearer", "credentials": SECRETS[1]},
    }
    created = rpc(guarded, "CreateTaskPushNotificationConfig", config)["result"]
    got = rpc(guarded, "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": created["id"]})
    listed = rpc(guarded, "ListTaskPushNotificationConfigs", {"taskId": task["id"]})
    for answer in (created, got["result"], listed["result"]):
        text = json.dumps(answer)
        assert SECRETS[0] not in text
        assert SECRETS[1] not in text
        assert "Bearer" in text


@requirement("a2a-1.0-§13.4-credentials-only-over-tls")
def test_credentials_go_only_over_tls_or_to_loopback(guarded: str) -> None:
    """Static credentials for a plain-HTTP agent elsewhere are refused before anything is
    sent (an explicit opt-in aside); over plain HTTP to loopback they are sent."""
    for credentials in (BearerToken(TOKEN), APIKey(TOKEN), BasicAuth("owner", TOKEN)):
        with pytest.raises(ConfigurationError, match="without TLS") as caught:
            A2AClient("http://agent.example.com/", credentials=credentials)
        assert TOKEN not in str(caught.value)
    assert guarded.startswith("http://127.0.0.1:")
    with A2AClient(guarded, credentials=BearerToken(TOKEN)) as client:
        task = client.send_message("need input")
        assert client.get_task(task.id).id == task.id  # the owner's task: the token went


# -- §13.4 input limits --------------------------------------------------------------------


@requirement("a2a-1.0-§13.4-request-size-limits")
def test_a_request_over_the_size_limit_is_refused_unread(guarded: str) -> None:
    """A body over ``max_body_bytes`` is answered 413 without being processed."""
    big = user("x" * (80 * 1024))
    response = post(
        guarded,
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": big}},
        V1,
    )
    assert response.status_code == 413


# -- §7.2, §10.1 TLS on the client side ----------------------------------------------------


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@requirement("a2a-1.0-§7.2-client-verifies-server-certificate")
def test_the_client_refuses_a_certificate_it_cannot_verify(tmp_path: Path) -> None:
    """An HTTPS agent whose certificate no trusted CA signed is refused at the handshake,
    before any request (here: the card) is read."""
    cert_file, key_file = _self_signed(tmp_path)
    served = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.set()
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(
        target=server.serve_forever, args=(0.01,), name="a2a-sync-test-tls", daemon=True
    )
    thread.start()
    try:
        with pytest.raises(A2ASyncError) as caught:
            A2AClient.from_url(f"https://127.0.0.1:{server.server_port}", timeout=WAIT)
        chain = []
        error: BaseException | None = caught.value
        while error is not None:
            chain.append(error)
            error = error.__cause__ or error.__context__
        assert any(isinstance(e, ssl.SSLError) or "CERTIFICATE" in str(e).upper() for e in chain)
        assert not served.is_set()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


@requirement("a2a-1.0-§10.1-grpc-over-tls")
def test_the_grpc_client_uses_tls_except_on_loopback() -> None:
    """A ``host:port`` gRPC interface is dialled over TLS unless the host is loopback;
    ``grpc://`` (plaintext) must be asked for explicitly."""
    assert parse_grpc_url("agent.example.com:443").secure
    assert parse_grpc_url("10.1.2.3:50051").secure
    assert not parse_grpc_url("127.0.0.1:50051").secure
    assert not parse_grpc_url("localhost:50051").secure
    assert not parse_grpc_url("grpc://agent.example.com:50051").secure
