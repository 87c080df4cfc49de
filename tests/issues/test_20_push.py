"""Issue 20 items 3-4 and issue 12 §4 (first bullet): push notifications cannot be turned
against anyone.

* a slow or dripping webhook holds neither another destination's notifications nor a
  delivery thread past the total deadline;
* configs per task and per caller are capped (``-32602``), and so are the webhook calls
  one event causes;
* tokens and credentials are never answered back, and with a key they are encrypted in
  every store (checked in the raw database).
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import itertools
import socket
import sqlite3
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_sync.a2a.methods import Operation
from a2a_sync.errors import ConfigurationError, InvalidParams
from a2a_sync.server._push_http import Deadline
from a2a_sync.server.app import A2AApplication
from a2a_sync.server.auth import Principal
from a2a_sync.server.context import CallContext
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.push import PushSender
from a2a_sync.server.push_policy import PushSettings
from a2a_sync.server.stores import InMemoryTaskStore, SQLiteTaskStore, TaskStore
from a2a_sync.server.stores.base import StoredPushConfig, StoredTask
from a2a_sync.types import (
    AuthenticationInfo,
    ListPushConfigsParams,
    Message,
    PushConfigParams,
    PushNotificationConfig,
    SendMessageConfiguration,
    SendMessageParams,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.server.agents import EchoAgent, card
from tests.server.webhook import WebhookReceiver, receiver

WAIT = 10.0
ALICE = CallContext(principal=Principal("alice"))
BOB = CallContext(principal=Principal("bob"))
TOKEN = "push-secret-token"
CREDENTIALS = "push-secret-credentials"

hook = pytest.fixture(receiver)


class SlowWebhook:
    """A webhook on a raw socket: reads each request, then either says nothing until
    ``release`` (``drip=None``) or sends a status line and then one header byte every
    ``drip`` seconds, forever, until the sender hangs up (``hung_up``)."""

    def __init__(self, drip: float | None = None, tls: ssl.SSLContext | None = None) -> None:
        self._drip = drip
        self._tls = tls
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://127.0.0.1:{self._listener.getsockname()[1]}/hook"
        self.release = threading.Event()
        self.hung_up = threading.Event()
        self.requests = 0
        self.bytes_sent = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._start(self._accept)

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(
            target=target,  # type: ignore[arg-type]
            args=args,
            name="a2a-sync-test-slow-webhook",
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._start(self._serve, conn)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(WAIT)
        if self._tls is not None:
            try:
                conn = self._tls.wrap_socket(conn, server_side=True)
            except OSError:
                conn.close()
                return
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            with self._cond:
                self.requests += 1
                self._cond.notify_all()
            if self._drip is None:
                if self.release.wait(WAIT * 3):
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                return
            drip = itertools.chain(b"HTTP/1.1 200 OK\r\nX-Drip: ", itertools.repeat(ord("a")))
            for byte in drip:
                if self.release.wait(self._drip):
                    return
                try:
                    conn.send(bytes([byte]))
                except OSError:
                    self.hung_up.set()
                    return
                self.bytes_sent += 1

    def wait_requests(self, count: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.requests >= count, WAIT)

    def close(self) -> None:
        self.release.set()
        self._stop.set()
        self._listener.close()
        for thread in self._threads:
            thread.join(WAIT)


@pytest.fixture
def slow() -> Iterator[SlowWebhook]:
    made = SlowWebhook()
    yield made
    made.close()


def _task(task_id: str) -> Task:
    return Task(
        id=task_id,
        context_id="c1",
        status=TaskStatus(state=TaskState.working),
        history=[Message.user("hi", message_id="m-" + task_id)],
    )


def _notify(sender: PushSender, task_id: str, url: str) -> None:
    event = TaskStatusUpdateEvent(
        task_id=task_id, context_id="c1", status=TaskStatus(state=TaskState.working)
    )
    config = PushNotificationConfig(url=url, id="p1", task_id=task_id)
    sender.notify(StoredTask(_task(task_id), 2, ""), event, [StoredPushConfig(config, "1.0")])


# -- 20.3: one slow webhook must not delay the others ----------------------------------------


def test_a_held_webhook_does_not_delay_another_destinations_notification(
    slow: SlowWebhook, hook: WebhookReceiver
) -> None:
    # Before: one delivery thread waited out the held webhook (30 s here) before Bob's
    # notification left. Now a destination gets at most two workers; the others go on.
    sender = PushSender(allow_private=True, timeout=30.0, backoff_base=0.01)
    try:
        for i in range(6):
            _notify(sender, f"alice-{i}", slow.url)
        _notify(sender, "bob", hook.url)
        (got,) = hook.wait_for(1, timeout=WAIT)
        assert got.json()["statusUpdate"]["taskId"] == "bob"
        assert not slow.release.is_set()  # Bob's arrived while Alice's webhook still holds
        assert slow.wait_requests(2)
        assert slow.requests == 2  # the held destination occupies two workers, not all
        slow.release.set()
        assert sender.flush(WAIT)
        assert slow.requests == 6
        assert sender.delivered == 7
    finally:
        assert sender.close(WAIT)


def test_the_total_deadline_holds_against_a_webhook_dripping_its_answer() -> None:
    # Before: the timeout bounded each read, and a byte every 50 ms never let one time out,
    # so the delivery (and the only sender thread) stayed with the dripping webhook.
    dripping = SlowWebhook(drip=0.05)
    sender = PushSender(allow_private=True, timeout=1.0, max_attempts=1)
    try:
        _notify(sender, "t1", dripping.url)
        assert dripping.hung_up.wait(WAIT)  # it drips forever: only the sender can end it
        assert sender.flush(WAIT)
        assert (sender.delivered, sender.dropped) == (0, 1)
    finally:
        assert sender.close(WAIT)
        dripping.close()


def _self_signed(tmp_path: Path) -> tuple[ssl.SSLContext, str]:
    """A server context for 127.0.0.1 and the path of its certificate (the CA to trust)."""
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
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = tmp_path / "cert.pem"
    key_path = tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context, str(cert_path)


def test_the_total_deadline_holds_over_tls_too(tmp_path: Path) -> None:
    server_tls, ca = _self_signed(tmp_path)
    dripping = SlowWebhook(drip=0.05, tls=server_tls)
    sender = PushSender(allow_private=True, timeout=1.0, max_attempts=1, verify=ca)
    try:
        _notify(sender, "t1", dripping.url)
        assert dripping.hung_up.wait(WAIT)
        assert sender.flush(WAIT)
        assert (sender.delivered, sender.dropped) == (0, 1)
        assert dripping.requests == 1  # the TLS handshake and the request went through
    finally:
        assert sender.close(WAIT)
        dripping.close()


class StepClock:
    """A monotonic clock that advances ``step`` seconds every time it is read."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.now += self.step
            return self.now


def test_the_deadline_counts_every_operation_of_one_delivery_on_an_injected_clock() -> None:
    # Each socket operation reads the clock; 0.25 s per read against a 1 s deadline ends
    # the delivery after a handful of operations however fast the bytes arrive.
    dripping = SlowWebhook(drip=0.01)
    sender = PushSender(allow_private=True, timeout=1.0, max_attempts=1, clock=StepClock(0.25))
    try:
        _notify(sender, "t1", dripping.url)
        assert dripping.hung_up.wait(WAIT)
        assert sender.flush(WAIT)
        assert sender.dropped == 1
        assert dripping.bytes_sent < 20  # ended by the clock, long before any wall limit
    finally:
        assert sender.close(WAIT)
        dripping.close()


def test_deadline_remaining_time_and_expiry() -> None:
    clock = StepClock(0.0)
    deadline = Deadline(1.0, clock)
    assert deadline.remaining() == 1.0
    clock.now += 0.75
    assert deadline.remaining() == 0.25
    clock.now += 0.25
    with pytest.raises(TimeoutError):
        deadline.remaining()


def test_a_full_destination_queue_drops_only_that_destinations_notifications(
    slow: SlowWebhook, hook: WebhookReceiver
) -> None:
    sender = PushSender(
        allow_private=True, timeout=30.0, destination_queue_limit=3, per_destination=1
    )
    try:
        for i in range(5):  # 3 accepted (one in flight), 2 dropped
            _notify(sender, f"alice-{i}", slow.url)
        _notify(sender, "bob", hook.url)
        hook.wait_for(1, timeout=WAIT)
        assert sender.dropped == 2
        slow.release.set()
        assert sender.flush(WAIT)
        assert slow.requests == 3
    finally:
        assert sender.close(WAIT)


def test_sender_threads_are_a_named_pool_joined_on_close() -> None:
    sender = PushSender(workers=3)
    names = sorted(t.name for t in threading.enumerate() if t.name.startswith("a2a-sync-push-"))
    assert names == ["a2a-sync-push-0", "a2a-sync-push-1", "a2a-sync-push-2"]
    assert sender.close(WAIT)
    assert not [t for t in threading.enumerate() if t.name.startswith("a2a-sync-push-")]
    with pytest.raises(ConfigurationError):
        PushSender(workers=0)


# -- 20.4: limits on configs and deliveries ----------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    made: TaskStore
    if request.param == "memory":
        made = InMemoryTaskStore()
    elif request.param == "sqlite":
        made = SQLiteTaskStore(str(tmp_path / "push.db"))
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        from a2a_sync.server.stores.postgres import PostgresTaskStore

        made = PostgresTaskStore(dsn)
    with made:
        yield made


def _handler(
    store: TaskStore, agent: EchoAgent, settings: PushSettings, sender: PushSender | None = None
) -> DefaultRequestHandler:
    return DefaultRequestHandler(
        card(), agent, task_store=store, push_sender=sender, push=settings, blocking_timeout=WAIT
    )


def _send(
    handler: DefaultRequestHandler, text: str, call: CallContext = ALICE, **options: object
) -> Task:
    config = SendMessageConfiguration(**options) if options else None  # type: ignore[arg-type]
    params = SendMessageParams(message=Message.user(text), configuration=config)
    task = handler.dispatch(Operation.SEND_MESSAGE, params, call)
    assert isinstance(task, Task)
    return task


def _create(
    handler: DefaultRequestHandler, task_id: str, config_id: str, call: CallContext = ALICE
) -> PushNotificationConfig:
    config = PushNotificationConfig(
        url=f"https://hooks.example/{config_id}",
        id=config_id,
        task_id=task_id,
        token=TOKEN,
        authentication=AuthenticationInfo(scheme="Bearer", credentials=CREDENTIALS),
    )
    created: PushNotificationConfig = handler.dispatch(Operation.CREATE_PUSH_CONFIG, config, call)
    return created


def test_configs_are_capped_per_task_and_per_caller(store: TaskStore) -> None:
    agent = EchoAgent()
    handler = _handler(store, agent, PushSettings(max_configs_per_task=3, max_configs_per_caller=5))
    try:
        one, two, three = (_send(handler, "hello") for _ in range(3))
        for i in range(3):
            _create(handler, one.id, f"a{i}")
        with pytest.raises(InvalidParams, match=r"3 push notification configs.*delete one"):
            _create(handler, one.id, "a3")
        _create(handler, one.id, "a1")  # replacing one is not a new one
        _create(handler, two.id, "b0")
        _create(handler, two.id, "b1")
        with pytest.raises(InvalidParams, match=r"5 push notification configs.*per caller"):
            _create(handler, three.id, "c0")
        bobs = _send(handler, "hello", BOB)
        _create(handler, bobs.id, "x0", BOB)  # Alice's use does not count against Bob
        listed = handler.dispatch(
            Operation.LIST_PUSH_CONFIGS, ListPushConfigsParams(task_id=one.id), ALICE
        )
        assert sorted(c.id for c in listed.configs) == ["a0", "a1", "a2"]
        assert store.count_push_configs("alice") == 5
    finally:
        assert handler.close(WAIT)


def test_the_default_cap_refuses_the_two_hundred_configs_of_the_report(store: TaskStore) -> None:
    agent = EchoAgent()
    handler = _handler(store, agent, PushSettings())
    try:
        task = _send(handler, "hello")
        outcomes = []
        for i in range(200):
            try:
                _create(handler, task.id, f"p{i}")
                outcomes.append("accepted")
            except InvalidParams:
                outcomes.append("refused")
        assert outcomes == ["accepted"] * 10 + ["refused"] * 190
        assert len(store.list_push_configs(task.id)) == 10
    finally:
        assert handler.close(WAIT)


def test_a_config_sent_with_a_message_counts_and_is_refused_before_the_agent_runs(
    store: TaskStore,
) -> None:
    agent = EchoAgent()
    handler = _handler(store, agent, PushSettings(max_configs_per_task=1))
    try:
        task = _send(handler, "need input")
        _create(handler, task.id, "first")
        calls = agent.calls
        extra = PushNotificationConfig(url="https://hooks.example/second", id="second")
        message = Message.user("answer", task_id=task.id)
        params = SendMessageParams(
            message=message, configuration=SendMessageConfiguration(push_notification_config=extra)
        )
        with pytest.raises(InvalidParams):
            handler.dispatch(Operation.SEND_MESSAGE, params, ALICE)
        assert agent.calls == calls
        assert [c.config.id for c in store.list_push_configs(task.id)] == ["first"]
    finally:
        assert handler.close(WAIT)


def test_one_event_causes_at_most_max_deliveries_per_event_calls(hook: WebhookReceiver) -> None:
    # Configs stored by other means (an older version, another tool) are more than the
    # per-task cap: one event still causes only max_deliveries_per_event calls.
    store = InMemoryTaskStore()
    sender = PushSender(allow_private=True, backoff_base=0.01)
    agent = EchoAgent()
    handler = _handler(store, agent, PushSettings(max_deliveries_per_event=3), sender)
    try:
        task = _send(handler, "wait", return_immediately=True)
        assert agent.started.wait(WAIT)
        for i in range(5):
            config = PushNotificationConfig(url=f"{hook.url}/{i}", id=f"p{i}", task_id=task.id)
            store.set_push_config(config, revision="1.0")
        agent.release.set()  # two events follow: the artifact and "completed"
        got = hook.wait_for(6)
        assert sender.flush(WAIT)
        assert len(hook.received) == 6
        assert sorted({r.path for r in got}) == ["/0", "/1", "/2"]
    finally:
        assert handler.close(WAIT)
        assert sender.close(WAIT)
        store.close()


# -- 12 §4: secrets are never answered back, and encrypted at rest with a key ------------------


def test_tokens_and_credentials_are_never_answered_back(store: TaskStore) -> None:
    handler = _handler(store, EchoAgent(), PushSettings())
    try:
        task = _send(handler, "hello")
        created = _create(handler, task.id, "p1")
        got = handler.dispatch(
            Operation.GET_PUSH_CONFIG, PushConfigParams(task_id=task.id, config_id="p1"), ALICE
        )
        listed = handler.dispatch(
            Operation.LIST_PUSH_CONFIGS, ListPushConfigsParams(task_id=task.id), ALICE
        ).configs
        for answered in (created, got, *listed):
            assert answered.token is None
            assert answered.authentication == AuthenticationInfo(scheme="Bearer")
            assert answered.url == "https://hooks.example/p1"
        # kept for delivery: without a key they are stored as given
        (stored,) = store.list_push_configs(task.id)
        assert stored.config.token == TOKEN
    finally:
        assert handler.close(WAIT)


def _raw_configs(store: TaskStore, request: pytest.FixtureRequest, tmp_path: Path) -> bytes:
    """Every stored config as the database holds it."""
    if isinstance(store, SQLiteTaskStore):
        with contextlib.closing(sqlite3.connect(tmp_path / "push.db")) as db:
            rows = db.execute("SELECT config FROM a2a_push_configs").fetchall()
        return b"".join(bytes(row[0]) for row in rows)
    if isinstance(store, InMemoryTaskStore):
        return b"".join(
            repr((c.config.token, c.config.authentication.credentials)).encode()  # type: ignore[union-attr]
            for task_id in list(store._push)
            for c in store.list_push_configs(task_id)
        )
    import psycopg

    with psycopg.connect(request.getfixturevalue("postgres_dsn")) as db:
        rows = db.execute("SELECT config FROM a2a_push_configs").fetchall()
    return b"".join(bytes(row[0]) for row in rows)


def test_secrets_are_encrypted_at_rest_and_still_delivered(
    store: TaskStore, hook: WebhookReceiver, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from cryptography.fernet import Fernet

    key = Fernet.generate_key()
    sender = PushSender(allow_private=True, backoff_base=0.01)
    agent = EchoAgent()
    handler = _handler(store, agent, PushSettings(encryption_keys=[key]), sender)
    try:
        task = _send(handler, "wait", return_immediately=True)
        assert agent.started.wait(WAIT)
        config = PushNotificationConfig(
            url=hook.url + "/enc",
            id="p1",
            task_id=task.id,
            token=TOKEN,
            authentication=AuthenticationInfo(scheme="Bearer", credentials=CREDENTIALS),
        )
        handler.dispatch(Operation.CREATE_PUSH_CONFIG, config, ALICE)
        raw = _raw_configs(store, request, tmp_path)
        assert b"a2a-sync:fernet:" in raw
        assert b"push-secret" not in raw
        agent.release.set()
        got = hook.wait_for(1)
        assert got[0].headers["authorization"] == f"Bearer {CREDENTIALS}"
        assert got[0].headers["x-a2a-notification-token"] == TOKEN
    finally:
        assert handler.close(WAIT)
        assert sender.close(WAIT)


def test_an_encrypted_secret_without_its_key_is_not_sent(
    hook: WebhookReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    from cryptography.fernet import Fernet

    store = InMemoryTaskStore()
    sender = PushSender(allow_private=True, backoff_base=0.01)
    agent = EchoAgent()
    first = _handler(store, agent, PushSettings(encryption_keys=Fernet.generate_key()))
    other_key = _handler(store, agent, PushSettings(encryption_keys=Fernet.generate_key()), sender)
    try:
        task = _send(other_key, "wait", return_immediately=True)
        assert agent.started.wait(WAIT)
        _create(first, task.id, "sealed-elsewhere")
        plain = PushNotificationConfig(url=hook.url + "/plain", id="plain", task_id=task.id)
        store.set_push_config(plain, revision="1.0")  # stored before keys were set: readable
        agent.release.set()
        assert len(hook.wait_for(2)) == 2
        assert sender.flush(WAIT)
        assert {r.path for r in hook.received} == {"/plain"}
        assert "sealed-elsewhere" in caplog.text
        assert "push-secret" not in caplog.text
    finally:
        assert other_key.close(WAIT)
        assert first.close(WAIT)
        assert sender.close(WAIT)
        store.close()


def test_unusable_encryption_keys_are_refused_at_startup() -> None:
    with pytest.raises(ConfigurationError, match="Fernet key"):
        DefaultRequestHandler(card(), EchoAgent(), push=PushSettings(encryption_keys="short"))
    with pytest.raises(ConfigurationError, match="Fernet key"):
        A2AApplication(card(), EchoAgent(), push=PushSettings(encryption_keys="short"))
    assert not [t for t in threading.enumerate() if t.name.startswith("a2a-sync-push-")]
    with pytest.raises(ConfigurationError):
        PushSettings(max_configs_per_task=0)
    assert "short" not in repr(PushSettings(encryption_keys="short"))
