"""A2A 0.3 push notifications, black-box: a2a_sync's server, configured over 0.3 JSON-RPC
(``tasks/pushNotificationConfig/set``), posts to a webhook receiver on 127.0.0.1.

0.3 shows the notification by example (§9.5): a POST whose body is the Task object
(``"kind": "task"``), ``Content-Type: application/json``, the config's token in
``X-A2A-Notification-Token`` (§6.8: the server SHOULD send the token) and an
``Authorization`` header from the config's authentication (§6.9, §10.2).

a2a_sync only: the a2a-sdk peer script stores push configs but runs no push sender.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.push import PushSender
from tests.server.agents import card
from tests.server.webhook import WebhookReceiver, receiver

from .a2a_wire import error_code, rpc, user03
from .agents import ConformanceAgent

requirement = pytest.mark.requirement
webhook = pytest.fixture(scope="module")(receiver)


def send03(url: str, message: dict[str, Any]) -> dict[str, Any]:
    answer = rpc(url, "message/send", {"message": message}, version=None)
    assert "result" in answer, answer
    return dict(answer["result"])


@pytest.fixture(scope="module")
def pushing_server(agent: ConformanceAgent) -> Iterator[str]:
    sender = PushSender(allow_private=True, backoff_base=0.01)
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, push_sender=sender)
    with serve_in_thread(app) as url:
        yield url + "/"
    assert sender.close()


@pytest.fixture(scope="module")
def delivered(pushing_server: str, webhook: WebhookReceiver) -> tuple[str, list[Any]]:
    """A 0.3 config set on an interrupted task, then the follow-up that completes it; the
    task id and what the webhook received once the completed task came."""
    task = send03(pushing_server, user03("need input"))
    assert task["kind"] == "task"
    assert task["status"]["state"] == "input-required"
    config = {
        "taskId": task["id"],
        "pushNotificationConfig": {
            "url": webhook.url + "/hook03",
            "token": "tok-03",
            "authentication": {"schemes": ["Bearer"], "credentials": "cred-03"},
        },
    }
    answer = rpc(pushing_server, "tasks/pushNotificationConfig/set", config, version=None)
    assert "result" in answer, answer
    send03(pushing_server, user03("Paris", taskId=task["id"], contextId=task["contextId"]))

    def completed() -> bool:
        return any(r.json().get("status", {}).get("state") == "completed" for r in webhook.received)

    count = 1
    while not completed():
        count = len(webhook.wait_for(count)) + 1
    return task["id"], list(webhook.received)


@requirement("a2a-0.3-§9.5-push-payload-is-the-task")
def test_each_notification_is_the_task_as_json(delivered: tuple[str, list[Any]]) -> None:
    """Every body is the 0.3 Task (``kind: task``, 0.3 state names) of the configured
    task, sent as ``application/json``."""
    task_id, received = delivered
    assert received
    for item in received:
        body = json.loads(item.body)
        assert (body["kind"], body["id"]) == ("task", task_id)
        assert body["status"]["state"] in {"working", "input-required", "completed"}
        assert item.headers["content-type"].split(";")[0] == "application/json"


@requirement("a2a-0.3-§6.8-push-token-header")
def test_each_notification_carries_the_token(delivered: tuple[str, list[Any]]) -> None:
    _, received = delivered
    assert all(r.headers.get("x-a2a-notification-token") == "tok-03" for r in received)


@requirement("a2a-0.3-§6.9-push-authenticates-to-the-webhook")
def test_each_notification_carries_the_configured_credentials(
    delivered: tuple[str, list[Any]],
) -> None:
    """The config's first scheme and its credentials become ``Authorization``."""
    _, received = delivered
    assert all(r.headers.get("authorization") == "Bearer cred-03" for r in received)


@requirement("a2a-0.3-§10.2-push-webhook-url-validated")
def test_a_webhook_on_a_private_address_is_refused(agent: ConformanceAgent) -> None:
    """With the default push policy a 0.3 config naming a loopback or private address is
    refused with -32602 Invalid params."""
    sender = PushSender()
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, push_sender=sender)
    try:
        with serve_in_thread(app) as url:
            task = send03(url + "/", user03("need input"))
            for host in ("127.0.0.1", "10.1.2.3", "169.254.169.254"):
                config = {
                    "taskId": task["id"],
                    "pushNotificationConfig": {"url": f"http://{host}/hook"},
                }
                answer = rpc(url + "/", "tasks/pushNotificationConfig/set", config, version=None)
                assert error_code(answer) == -32602, host
    finally:
        assert sender.close()
