"""JSON-RPC round-trip cost: HTTPTransport.request against a bare requests.Session loop.

One operation is what an A2A client does per blocking ``SendMessage``: encode a
SendMessage-sized JSON-RPC request, POST it over a kept-alive connection, read the body
and decode the JSON-RPC response (a completed Task with one artifact, ~1.3 KB). The
baseline is the usual hand-written loop, ``requests.Session.post`` + ``.json()``; ours goes
through :class:`a2a_sync._net.http.HTTPTransport` (per-call Retry, deadline-capped reads,
cancellation tracking, capped body). Both talk to the same JSON echo server, which runs in
a separate process (``http.server``, HTTP/1.1 keep-alive) so its CPU is not charged to the
client. The figure to read is ``CPU x base`` of ``ours``: the target is <= 1.10.

Run from the repository root: ``.venv/bin/python -m benchmarks.jsonrpc_roundtrip [--reps 7]``
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

from a2a_sync._net.http import HTTPTransport
from benchmarks.harness import Variant, run_cli

_SERVE_FLAG = "--serve"
_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
_TIMEOUT = (5.0, 60.0)  # connect, read: what a careful requests user passes


def send_message_request(number: int) -> dict[str, Any]:
    """A SendMessage JSON-RPC request of realistic size (~600 bytes)."""
    text = "Summarise the attached quarterly figures and flag anything unusual. " * 4
    return {
        "jsonrpc": "2.0",
        "id": f"req-{number}",
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": f"4f9c2a4e-1b7e-4a55-9f1e-{number:012d}",
                "contextId": "ctx-8d1f6a0b",
                "role": "ROLE_USER",
                "parts": [{"text": text}],
                "metadata": {"source": "benchmark"},
            },
            "configuration": {"acceptedOutputModes": ["text/plain"], "blocking": True},
        },
    }


def task_response(request: dict[str, Any]) -> dict[str, Any]:
    """The completed Task a server answers with (echoes the message in its history)."""
    message = request["params"]["message"]
    answer = "Revenue grew 4 % quarter on quarter; costs are flat; nothing unusual. " * 6
    task = {
        "id": "task-" + message["messageId"][-12:],
        "contextId": message["contextId"],
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-08-01T12:00:00Z"},
        "history": [message],
        "artifacts": [{"artifactId": "a-1", "name": "summary", "parts": [{"text": answer}]}],
    }
    return {"jsonrpc": "2.0", "id": request["id"], "result": {"task": task}}


# -- the server process ------------------------------------------------------------------


class _EchoHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # head and body are two writes

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = json.dumps(task_response(json.loads(body))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve() -> None:
    """Serve on 127.0.0.1:0; print the port on stdout; run until stdin closes."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EchoHandler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the parent closes our stdin (or dies): stop
    server.shutdown()


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.jsonrpc_roundtrip", _SERVE_FLAG],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}/"


# -- the client variants ---------------------------------------------------------------------

#: One round trip: request number in, decoded JSON-RPC response out.
RoundTrip = Callable[[int], Any]


def _bare_requests(url: str) -> tuple[RoundTrip, Callable[[], None]]:
    session = requests.Session()

    def call(number: int) -> Any:
        body = json.dumps(send_message_request(number)).encode()
        response = session.post(url, data=body, headers=_HEADERS, timeout=_TIMEOUT)
        response.raise_for_status()
        return response.json()

    return call, session.close


def _ours(url: str) -> tuple[RoundTrip, Callable[[], None]]:
    transport = HTTPTransport()

    def call(number: int) -> Any:
        body = json.dumps(send_message_request(number)).encode()
        result = transport.request("POST", url, body=body, headers=_HEADERS)
        if not result.ok:
            raise RuntimeError(f"HTTP {result.status}")
        return json.loads(result.content)

    return call, transport.close


def _loop(call: RoundTrip) -> Callable[[int], int]:
    def run(n: int) -> int:
        for number in range(n):
            call(number)
        return n

    return run


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if _SERVE_FLAG in args:
        serve()
        return
    process, url = start_server()
    closers: list[Callable[[], None]] = []
    try:
        calls: dict[str, RoundTrip] = {}
        for name, make in (("requests", _bare_requests), ("ours", _ours)):
            calls[name], close = make(url)
            closers.append(close)
        expected = task_response(send_message_request(7))
        if any(call(7) != expected for call in calls.values()):
            sys.exit("the variants disagree on the round trip")
        variants = [
            Variant(name, _loop(call), server_pid=process.pid) for name, call in calls.items()
        ]
        size = len(json.dumps(expected))
        title = f"JSON-RPC SendMessage round trip ({size} B answer), server in a separate process"
        run_cli(variants, baseline="requests", default_n=2000, title=title, argv=args)
    finally:
        for close in closers:
            close()
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


if __name__ == "__main__":
    main()
