"""Push notifications: the limits and secrets policy cost ordinary traffic nothing, and a
held webhook does not slow another destination's notifications (issue 20 items 3-4,
issue 12 §4).

Handler variants (in process, in-memory store, blocking SendMessage of an echo agent;
CPU per call of this process, all threads, including the sender's):

* ``push off``: the card declares no push notifications (the baseline);
* ``push on``: a :class:`PushSender` and the default :class:`PushSettings` (limits on),
  no configs: ordinary traffic. Target: CPU x base within noise (<= 1.05);
* ``config``: every message registers a webhook inline (limit checks, redaction, one
  delivery per event to a local receiver);
* ``config enc``: the same with ``encryption_keys`` (Fernet at rest, decrypt per event).

Sender variants (latency from ``notify()`` to the receiver having the POST; p50/p99):

* ``notify``: one fast local receiver;
* ``notify, held``: the same while another destination holds 20 notifications without
  answering (before issue 20.3 every one of these waited for the held webhook's
  timeout). Target: p99 within a few ms of ``notify``.

Run from the repo top::

    .venv/bin/python -m benchmarks.push
    .venv/bin/python -m benchmarks.push --reps 7 --n 500
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from a2a_sync.a2a.methods import Operation
from a2a_sync.server.auth import Principal
from a2a_sync.server.context import CallContext
from a2a_sync.server.executor import RequestContext, TaskUpdater
from a2a_sync.server.handler import DefaultRequestHandler
from a2a_sync.server.push import PushSender
from a2a_sync.server.push_policy import PushSettings
from a2a_sync.server.stores.base import StoredPushConfig, StoredTask
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    AuthenticationInfo,
    Message,
    PushNotificationConfig,
    SendMessageConfiguration,
    SendMessageParams,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from .harness import Variant, run_cli

WAIT = 10.0
CALL = CallContext(principal=Principal("bench"))


class Receiver:
    """A local webhook counting the POSTs it answered."""

    def __init__(self) -> None:
        self.count = 0
        self.cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                with receiver.cond:
                    receiver.count += 1
                    receiver.cond.notify_all()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="a2a-sync-bench-hook", daemon=True
        )
        self.thread.start()

    def wait(self, count: int) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.count >= count, WAIT):
                raise RuntimeError(f"receiver got {self.count} of {count}")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(WAIT)


class Held:
    """A destination that accepts connections and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/held"

    def close(self) -> None:
        self.listener.close()


def echo(context: RequestContext, updater: TaskUpdater) -> None:
    updater.add_artifact(f"echo: {context.text}", last_chunk=True)
    updater.complete()


def card(push: bool) -> AgentCard:
    return AgentCard(
        name="bench",
        description="push benchmark",
        version="1",
        capabilities=AgentCapabilities(push_notifications=push),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )


def sends(handler: DefaultRequestHandler, url: str | None) -> Any:
    def run(n: int) -> int:
        for i in range(n):
            config = None
            if url is not None:
                webhook = PushNotificationConfig(
                    url=url,
                    token=f"tok-{i}",
                    authentication=AuthenticationInfo(scheme="Bearer", credentials="cred"),
                )
                config = SendMessageConfiguration(push_notification_config=webhook)
            params = SendMessageParams(message=Message.user(f"m{i}"), configuration=config)
            handler.dispatch(Operation.SEND_MESSAGE, params, CALL)
        return n

    return run


def notifies(sender: PushSender, receiver: Receiver, held: Held | None) -> Any:
    event = TaskStatusUpdateEvent(
        task_id="t", context_id="c", status=TaskStatus(state=TaskState.working)
    )
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.working))

    def run(n: int) -> list[float]:
        if held is not None:  # 20 notifications the held destination sits on
            for i in range(20):
                sitting = PushNotificationConfig(url=held.url, id=f"h{i}", task_id=f"h{i}")
                sender.notify(StoredTask(task, 2, ""), event, [StoredPushConfig(sitting, "1.0")])
        config = StoredPushConfig(
            PushNotificationConfig(url=receiver.url, id="fast", task_id="t"), "1.0"
        )
        latencies = []
        for _ in range(n):
            start = receiver.count
            began = time.perf_counter()
            sender.notify(StoredTask(task, 2, ""), event, [config])
            receiver.wait(start + 1)
            latencies.append(time.perf_counter() - began)
        return latencies

    return run


def main() -> None:
    from cryptography.fernet import Fernet

    receiver = Receiver()
    held = Held()
    sender = PushSender(allow_private=True, timeout=30.0)  # the held ones never time out here
    handlers = {
        "push off": DefaultRequestHandler(card(False), echo),
        "push on": DefaultRequestHandler(card(True), echo, push_sender=sender),
        "config": DefaultRequestHandler(
            card(True),
            echo,
            push_sender=sender,
            push=PushSettings(max_configs_per_caller=10**9),
        ),
        "config enc": DefaultRequestHandler(
            card(True),
            echo,
            push_sender=sender,
            push=PushSettings(max_configs_per_caller=10**9, encryption_keys=Fernet.generate_key()),
        ),
    }
    variants = [
        Variant("push off", sends(handlers["push off"], None)),
        Variant("push on", sends(handlers["push on"], None)),
        Variant("config", sends(handlers["config"], receiver.url)),
        Variant("config enc", sends(handlers["config enc"], receiver.url)),
        Variant("notify", notifies(sender, receiver, None)),
        Variant("notify, held", notifies(sender, receiver, held), baseline="notify"),
    ]
    try:
        run_cli(
            variants,
            baseline="push off",
            default_n=1000,
            title="push: ordinary sends with limits on; notification latency beside a held webhook",
        )
    finally:
        for handler in handlers.values():
            handler.close(WAIT)
        held.close()
        sender.close(1.0)
        receiver.close()


if __name__ == "__main__":
    main()
