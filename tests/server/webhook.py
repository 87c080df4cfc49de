"""A webhook receiver for push-notification tests: records requests, scripted answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WAIT = 5.0


class Received:
    def __init__(self, path: str, headers: dict[str, str], body: bytes) -> None:
        self.path = path
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


class WebhookReceiver:
    """Serves on 127.0.0.1:<free port>; ``answers`` is consumed per request (default 200)."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.answers: list[tuple[int, dict[str, str]]] = []
        self._cond = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver._cond:
                    receiver.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    status, headers = receiver.answers.pop(0) if receiver.answers else (200, {})
                    receiver._cond.notify_all()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            args=(0.01,),
            name="a2a-sync-test-webhook",
            daemon=True,
        )
        self._thread.start()

    def wait_for(self, count: int, timeout: float = WAIT) -> list[Received]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.received) >= count, timeout), (
                f"got {len(self.received)} of {count} notifications"
            )
            return list(self.received)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT)


def receiver() -> Iterator[WebhookReceiver]:
    hook = WebhookReceiver()
    try:
        yield hook
    finally:
        hook.close()
