"""A2A 1.0 push notification delivery (§4.3.3), black-box: a2a_sync's server posts to a
webhook receiver on 127.0.0.1.

a2a_sync only: the a2a-sdk peer script stores push configs but runs no push sender, so it
delivers nothing to compare with.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import attrs
import pytest

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.push import PushSender
from tests.server.agents import card
from tests.server.webhook import WebhookReceiver, receiver

from .a2a_wire import kind, rpc, send, user
from .agents import ConformanceAgent

requirement = pytest.mark.requirement
webhook = pytest.fixture(scope="module")(receiver)


@pytest.fixture(scope="module")
def pushing_server(agent: ConformanceAgent) -> Iterator[str]:
    sender = PushSender(allow_private=True, backoff_base=0.01)
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, push_sender=sender)
    with serve_in_thread(app) as url:
        yield url + "/"
    assert sender.close()


@pytest.fixture(scope="module")
def delivered(pushing_server: str, webhook: WebhookReceiver) -> tuple[str, list[dict[str, str]]]:
    """A config created on an interrupted task, then the follow-up that completes it; the
    task id and what the webhook received (headers and bodies) once the completion came."""
    task = send(pushing_server, user("need input"))["task"]
    config = {
        "taskId": task["id"],
        "url": webhook.url + "/hook",
        "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "cred-1"},
    }
    assert "result" in rpc(pushing_server, "CreateTaskPushNotificationConfig", config)
    send(pushing_server, user("Paris", taskId=task["id"], contextId=task["contextId"]))

    def completed() -> bool:
        return any(
            r.json().get("statusUpdate", {}).get("status", {}).get("state")
            == "TASK_STATE_COMPLETED"
            for r in webhook.received
        )

    count = 1
    while not completed():
        count = len(webhook.wait_for(count)) + 1
    return task["id"], [dict(r.headers) | {"body": r.body.decode()} for r in webhook.received]


@requirement("a2a-1.0-§4.3.3-push-carries-configured-credentials")
def test_each_notification_carries_the_configured_credentials(
    delivered: tuple[str, list[dict[str, str]]],
) -> None:
    _, received = delivered
    assert received
    assert all(r["authorization"] == "Bearer cred-1" for r in received)


@requirement("a2a-1.0-§4.3.3-push-payload-is-stream-response")
def test_each_notification_is_one_stream_response_about_the_task(
    delivered: tuple[str, list[dict[str, str]]],
) -> None:
    """Every body is a StreamResponse with exactly one member, about the configured task."""
    task_id, received = delivered
    for item in received:
        body = json.loads(item["body"])
        member = kind(body)
        payload = body[member]
        assert payload.get("taskId", payload.get("id")) == task_id


@requirement("a2a-1.0-§4.3.3-push-delivered-at-least-once")
@requirement("a2a-1.0-§3.1.7-push-updates-posted")
def test_the_update_after_configuration_is_delivered(
    delivered: tuple[str, list[dict[str, str]]],
) -> None:
    """The completion that follows the configuration reaches the webhook (checked by the
    fixture, which waits for it with a bounded wait per notification)."""
    _, received = delivered
    assert any('"TASK_STATE_COMPLETED"' in r["body"] for r in received)
