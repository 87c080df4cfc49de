"""Overload: ordinary calls while streams or slow clients pile up on ``serve()`` (issue 12 §2).

The server is ``serve(A2AApplication(...))`` with the default :class:`ServerLimits` in its
own process on 127.0.0.1 (32 streams + 8 unary threads). One client thread makes ordinary
calls (blocking SendMessage answered at once, ``http.client`` keep-alive) back to back,
and the script reports their p50/p99/max latency in three phases:

* ``idle``: nothing else going on (the baseline).
* ``stream flood``: one task runs (its own stream open), then ``--streams`` (1,000)
  clients send SubscribeToTask for it at once and keep their connections. Target: the
  other 31 stream slots are served, every other subscriber gets a prompt 503 with
  ``Retry-After`` (the table gives the slowest), none goes unanswered; ordinary calls stay
  within ~100 ms p99.
* ``slow clients``: ``--slow`` (200) connections send half a request head and then drip
  one byte a second. Target: ordinary calls unaffected; the drippers get 408 at the
  header deadline (10 s) whatever they send.

Then the server's threads, open file descriptors and RSS (from ``/proc``) before and after
(target: back to baseline once the clients are gone). Loopback only; every phase is
bounded, so the script stops by itself (about a minute)::

    .venv/bin/python -m benchmarks.overload
    .venv/bin/python -m benchmarks.overload --streams 300 --slow 50 --seconds 5
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import selectors
import socket
import statistics
import sys
import threading
import time
from collections.abc import Iterator

from benchmarks.processes import spawn_server

#: Longest any client waits for an answer.
ANSWER_BOUND = 20.0

SERVER = """
import sys, threading
from a2a_sync.server import A2AApplication, AgentExecutor, serve
from benchmarks.processes import report_serve_url
from tests.server.agents import card
import attrs

class Agent(AgentExecutor):
    def execute(self, context, updater):
        if context.text.startswith("hold "):  # a stream that lasts a while
            updater.start_work()
            context.wait_cancelled(float(context.text.split()[1]))
        updater.complete()

app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), Agent())
report_serve_url()
serve(app, port=0)
"""


def _body(method: str, text: str, message_id: str) -> bytes:
    message = {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}
    envelope = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    return json.dumps(envelope).encode()


def _raw(body: bytes) -> bytes:
    return (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"A2A-Version: 1.0\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


# -- the server's resources ------------------------------------------------------------------------


def resources(pid: int) -> dict[str, float]:
    with open(f"/proc/{pid}/status") as file:
        status = dict(line.split(":", 1) for line in file.read().splitlines())
    return {
        "threads": int(status["Threads"]),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "rss_mb": int(status["VmRSS"].split()[0]) / 1024,
    }


# -- ordinary calls --------------------------------------------------------------------------------


class Caller:
    """Back-to-back ordinary calls on one keep-alive connection until stopped."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._stop = threading.Event()
        self.latencies: list[float] = []
        self.failures = 0
        self._thread = threading.Thread(target=self._run, name="overload-caller", daemon=True)

    def _run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self._port, timeout=ANSWER_BOUND)
        i = 0
        while not self._stop.is_set():
            i += 1
            body = _body("SendMessage", "hello", f"call-{i}-{time.monotonic_ns()}")
            headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
            started = time.perf_counter()
            try:
                conn.request("POST", "/", body, headers)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
            if ok:
                self.latencies.append(time.perf_counter() - started)
            else:
                self.failures += 1
            self._stop.wait(0.005)  # pace: ~150 calls a second, not a synchronisation
        conn.close()

    @contextlib.contextmanager
    def running(self) -> Iterator[Caller]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(ANSWER_BOUND + 5)


def _row(name: str, caller: Caller, extra: str) -> str:
    values = sorted(caller.latencies)
    if not values:
        return f"{name:<14} {'-':>6} {'-':>8} {'-':>8} {'-':>8} {caller.failures:>6}  {extra}"
    p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
    return (
        f"{name:<14} {len(values):>6} {statistics.median(values) * 1e3:>8.1f} "
        f"{p99 * 1e3:>8.1f} {values[-1] * 1e3:>8.1f} {caller.failures:>6}  {extra}"
    )


# -- the phases ------------------------------------------------------------------------------------


def idle(port: int, seconds: float) -> str:
    with Caller(port).running() as caller:
        time.sleep(seconds)  # the measurement window
    return _row("idle", caller, "")


def _start_held_task(port: int, hold: float) -> tuple[socket.socket, str]:
    """A task that runs ``hold`` seconds (or until canceled), its stream open."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_BOUND)
    sock.sendall(_raw(_body("SendStreamingMessage", f"hold {hold}", "held")))
    received = b""
    while b"\n\n" not in received.partition(b"data: ")[2]:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("the server closed the held task's stream")
        received += chunk
    event = json.loads(received.partition(b"data: ")[2].split(b"\n", 1)[0])
    return sock, event["result"]["task"]["id"]


def _cancel(port: int, task_id: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=ANSWER_BOUND)
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": task_id}}
    )
    conn.request("POST", "/", body, {"Content-Type": "application/json", "A2A-Version": "1.0"})
    conn.getresponse().read()
    conn.close()


def stream_flood(port: int, count: int, hold: float) -> str:
    """``count`` subscribers at once; each keeps its connection until the phase ends."""
    held, task_id = _start_held_task(port, hold)
    subscribe = _raw(
        json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
        ).encode()
    )
    with Caller(port).running() as caller:
        time.sleep(0.5)  # calls before the flood too
        selector = selectors.DefaultSelector()
        heads: dict[socket.socket, bytes] = {}
        answered_at: dict[socket.socket, float] = {}
        started = time.monotonic()
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_BOUND)
            sock.sendall(subscribe)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ, sock)
            heads[sock] = b""
        deadline = started + ANSWER_BOUND
        while len(answered_at) < count and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=max(0.0, deadline - time.monotonic())):
                ready = key.data
                try:
                    chunk = ready.recv(65536)
                except OSError:
                    chunk = b""
                heads[ready] += chunk
                if b"\r\n\r\n" in heads[ready] or not chunk:
                    answered_at[ready] = time.monotonic() - started
                    selector.unregister(ready)
        time.sleep(1.0)  # calls while the served streams are still open
        selector.close()
        for sock in heads:
            sock.close()
    _cancel(port, task_id)
    held.close()
    statuses = [head.split(b"\r\n", 1)[0].split(b" ")[1:2] for head in heads.values()]
    served = statuses.count([b"200"])
    refused = [s for s in heads if heads[s].startswith(b"HTTP/1.1 503")]
    retry = all(b"\r\nRetry-After: " in heads[s] for s in refused)
    slowest = max((answered_at[s] for s in refused), default=0.0)
    extra = (
        f"{count} subscribers: {served} served, {len(refused)} got 503 "
        f"(Retry-After on all: {retry}; slowest {slowest * 1e3:.0f} ms), "
        f"{count - len(answered_at)} unanswered in {ANSWER_BOUND:.0f} s"
    )
    return _row("stream flood", caller, extra)


def slow_clients(port: int, count: int, seconds: float) -> str:
    """``count`` connections dripping one byte a second into a request head."""
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
    stop = threading.Event()
    cut = [0]

    def drip() -> None:
        for sock in sockets:
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: ")
        while not stop.wait(1.0):  # one byte a second per connection
            for sock in sockets:
                if sock.fileno() == -1:
                    continue
                try:
                    sock.sendall(b"a")
                except OSError:
                    cut[0] += 1
                    sock.close()

    dripper = threading.Thread(target=drip, name="overload-drip", daemon=True)
    with Caller(port).running() as caller:
        dripper.start()
        time.sleep(seconds)  # the measurement window
        stop.set()
        dripper.join(10)
    for sock in sockets:
        sock.close()
    extra = f"{count} dripping connections; {cut[0]} cut off by the server within {seconds:.0f} s"
    return _row("slow clients", caller, extra)


def settle(pid: int, baseline: dict[str, float], bound: float) -> dict[str, float]:
    """The server's resources once threads and FDs are back at baseline (or ``bound`` s)."""
    deadline = time.monotonic() + bound
    now = resources(pid)
    while time.monotonic() < deadline:
        now = resources(pid)
        if now["threads"] <= baseline["threads"] and now["fds"] <= baseline["fds"]:
            break
        time.sleep(0.2)  # polling another process; nothing to wait on
    return now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--streams", type=int, default=1000, help="flood subscribers")
    parser.add_argument("--slow", type=int, default=200, help="dripping connections")
    parser.add_argument("--hold", type=float, default=60.0, help="longest the held task runs")
    parser.add_argument("--seconds", type=float, default=15.0, help="slow-client phase length")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    server, port = spawn_server([sys.executable, "-c", SERVER], env=env)
    try:
        rows = [idle(port, 2.0)]
        before = resources(server.pid)
        rows.append(stream_flood(port, args.streams, args.hold))
        rows.append(slow_clients(port, args.slow, args.seconds))
        after = settle(server.pid, before, 30.0)
    finally:
        server.terminate()
        server.wait(30)
    print(f"{'phase':<14} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'failed':>6}")
    for row in rows:
        print(row)
    print(
        "server before: {threads:.0f} threads, {fds:.0f} fds, {rss_mb:.1f} MB RSS".format(**before)
    )
    print(
        "server after:  {threads:.0f} threads, {fds:.0f} fds, {rss_mb:.1f} MB RSS".format(**after)
    )


if __name__ == "__main__":
    main()
