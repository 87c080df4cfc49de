"""PushSender against a real local webhook: bodies per revision, auth headers, order,
retries, no redirects, and the address checks (every resolved address)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from a2a_sync.errors import InvalidParams
from a2a_sync.server.push import PushSender, address_blocked
from a2a_sync.server.stores.base import StoredPushConfig, StoredTask
from a2a_sync.types import (
    AuthenticationInfo,
    Message,
    PushNotificationConfig,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests.server.webhook import WAIT, WebhookReceiver, receiver

hook = pytest.fixture(receiver)


@pytest.fixture
def sender() -> Iterator[PushSender]:
    made = PushSender(allow_private=True, backoff_base=0.01, backoff_max=0.05)
    yield made
    assert made.close(WAIT)


def task(state: TaskState = TaskState.working) -> Task:
    return Task(
        id="t1",
        context_id="c1",
        status=TaskStatus(state=state),
        history=[Message.user("hi", message_id="m1")],
    )


def event(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id="t1", context_id="c1", status=TaskStatus(state=state))


def config(url: str, revision: str = "1.0", **fields: object) -> StoredPushConfig:
    return StoredPushConfig(
        PushNotificationConfig(url=url, id="p1", task_id="t1", **fields), revision
    )  # type: ignore[arg-type]


def test_1_0_posts_the_event_with_authorization_and_token(
    hook: WebhookReceiver, sender: PushSender
) -> None:
    target = config(
        hook.url + "/hook?x=1",
        token="tok-123",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="cred-456"),
    )
    sender.notify(StoredTask(task(), 2, ""), event(TaskState.working), [target])
    (got,) = hook.wait_for(1)
    assert got.path == "/hook?x=1"
    assert got.headers["content-type"] == "application/a2a+json"
    assert got.headers["authorization"] == "Bearer cred-456"
    assert got.headers["x-a2a-notification-token"] == "tok-123"
    assert got.json() == {
        "statusUpdate": {
            "taskId": "t1",
            "contextId": "c1",
            "status": {"state": "TASK_STATE_WORKING"},
        }
    }


def test_0_3_posts_the_task_snapshot(hook: WebhookReceiver, sender: PushSender) -> None:
    sender.notify(
        StoredTask(task(TaskState.completed), 3, ""),
        event(TaskState.completed),
        [config(hook.url, "0.3")],
    )
    (got,) = hook.wait_for(1)
    assert got.headers["content-type"] == "application/json"
    body = got.json()
    assert body["kind"] == "task"
    assert body["status"]["state"] == "completed"
    assert "authorization" not in got.headers


def test_failures_are_retried_in_order_within_a_lane(
    hook: WebhookReceiver, sender: PushSender
) -> None:
    hook.answers = [(503, {}), (500, {})]
    target = config(hook.url)
    for state in (TaskState.working, TaskState.completed):
        sender.notify(StoredTask(task(state), 2, ""), event(state), [target])
    got = hook.wait_for(4)
    states = [r.json()["statusUpdate"]["status"]["state"] for r in got]
    assert states == ["TASK_STATE_WORKING"] * 3 + ["TASK_STATE_COMPLETED"]
    assert sender.flush(WAIT)
    assert sender.delivered == 2


def test_redirects_are_not_followed(hook: WebhookReceiver, sender: PushSender) -> None:
    hook.answers = [(307, {"Location": hook.url + "/elsewhere"})]
    sender.notify(StoredTask(task(), 2, ""), event(TaskState.working), [config(hook.url)])
    assert sender.flush(WAIT)
    assert len(hook.received) == 1
    assert sender.dropped == 1


def test_client_errors_are_not_retried(hook: WebhookReceiver, sender: PushSender) -> None:
    hook.answers = [(400, {})]
    sender.notify(StoredTask(task(), 2, ""), event(TaskState.working), [config(hook.url)])
    assert sender.flush(WAIT)
    assert len(hook.received) == 1


def test_private_targets_are_refused_by_default(hook: WebhookReceiver) -> None:
    strict = PushSender(backoff_base=0.01)
    try:
        with pytest.raises(InvalidParams):
            strict.check_url("http://127.0.0.1:9/hook")
        with pytest.raises(InvalidParams):
            strict.check_url("ftp://example.com/hook")
        strict.check_url("https://hooks.example.com/x")  # names are checked when delivering
        strict.notify(StoredTask(task(), 2, ""), event(TaskState.working), [config(hook.url)])
        assert strict.flush(WAIT)
        assert hook.received == []
        assert strict.dropped == 1
    finally:
        strict.close(WAIT)


def test_every_resolved_address_is_checked(hook: WebhookReceiver) -> None:
    lookups: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["93.184.215.14", "10.0.0.7"]  # one public, one private: refuse

    strict = PushSender(resolve=resolve)
    try:
        strict.notify(
            StoredTask(task(), 2, ""), event(TaskState.working), [config("http://mixed.example/")]
        )
        assert strict.flush(WAIT)
        assert lookups == ["mixed.example"]
        assert strict.dropped == 1
    finally:
        strict.close(WAIT)


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("172.16.0.1", True),
        ("192.168.1.1", True),
        ("169.254.169.254", True),
        ("100.64.0.1", True),
        ("0.0.0.0", True),
        ("::1", True),
        ("fe80::1", True),
        ("fc00::1", True),
        ("::ffff:127.0.0.1", True),
        ("224.0.0.1", True),
        ("not-an-ip", True),
        ("93.184.215.14", False),
        ("2606:4700:4700::1111", False),
    ],
)
def test_address_classification(address: str, blocked: bool) -> None:
    assert address_blocked(address) is blocked


def test_credentials_never_reach_logs(
    hook: WebhookReceiver, sender: PushSender, caplog: pytest.LogCaptureFixture
) -> None:
    hook.answers = [(500, {})] * 10
    target = config(
        hook.url,
        token="tok-secret",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="cred-secret"),
    )
    with caplog.at_level("DEBUG"):
        sender.notify(StoredTask(task(), 2, ""), event(TaskState.working), [target])
        assert sender.flush(WAIT)
    assert "secret" not in caplog.text
    assert "secret" not in repr(target)


@pytest.mark.parametrize(
    "host",
    ["2130706433", "0x7f000001", "0177.0.0.1", "127.1", "[::ffff:127.0.0.1]", "localhost", "[::1]"],
)
def test_loopback_in_any_encoding_is_refused_after_resolution(
    hook: WebhookReceiver, host: str
) -> None:
    port = hook.url.rsplit(":", 1)[1]
    strict = PushSender()
    try:
        target = config(f"http://{host}:{port}/hook")
        strict.notify(StoredTask(task(), 2, ""), event(TaskState.working), [target])
        assert strict.flush(WAIT)
        assert hook.received == []  # the receiver listens right there: nothing reached it
        assert strict.dropped == 1
    finally:
        strict.close(WAIT)
