"""Scale-out: 1, 2 and 4 worker processes serving one PostgreSQL database.

Each worker is ``serve(agent, card=..., database="postgresql://...")`` in its own process
(the deployment of docs/scale-out.md) on a throwaway PostgreSQL cluster started by this
script (tests/support/postgres.py; PostgreSQL's durability defaults unless ``--fast``).
Client threads spread over the workers (connection ``i`` goes to worker ``i % N``, what a
round-robin balancer does) and speak JSON-RPC with ``http.client`` keep-alive, so most of
the two cores go to the workers and the database.

Variants per worker count N:

* ``send-Nw``: blocking SendMessage → completed Task (task, working, artifact, done: four
  appends), 8 client threads. One op = one message.
* ``stream-Nw``: SendStreamingMessage of 100 artifact chunks, 4 client threads. One op =
  one streamed event.

The extra columns: **workers µs/op** (CPU of all worker processes per operation, from
``/proc``) and **postgres µs/op** (CPU of the postmaster and its backends). Then the
**cross-process event latency**: an agent on worker A emits timestamped chunks 10 ms
apart; one SSE client follows the stream on A (same process), another SubscribeToTask
on B (the event crosses processes through NOTIFY and a log read); the table gives each
path's median and p95 and the added latency of the hop (per event, B minus A).

Run from the repo top (takes about a minute)::

    .venv/bin/python -m benchmarks.scale_out
    .venv/bin/python -m benchmarks.scale_out --reps 3 --n 400 --workers 1,2 --fast
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks.a2a_server import Client
from benchmarks.harness import Result, Variant, measure, render, server_cpu_seconds
from benchmarks.processes import report_serve_url, spawn_server

SEND_THREADS = 8
STREAM_THREADS = 4
CHUNKS = 100
TICKS = 200
TICK_INTERVAL = 0.01
_TICK = os.sysconf("SC_CLK_TCK")


# -- the worker process ---------------------------------------------------------------------------


def serve_worker(port: int, database: str) -> None:
    from a2a_sync.server import AgentExecutor, RequestContext, TaskUpdater
    from a2a_sync.server.serving import serve
    from a2a_sync.types import AgentCapabilities, AgentCard

    class Agent(AgentExecutor):
        def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
            text = context.text
            updater.start_work()
            if text.startswith("chunks "):
                aid = None
                count = int(text.split()[1])
                for i in range(count):
                    aid = updater.add_artifact(
                        f"c{i};", artifact_id=aid, append=i > 0, last_chunk=i == count - 1
                    )
            elif text.startswith("tick "):
                context.wait_cancelled(0.3)  # let the subscriber on the other worker attach
                aid = None
                for i in range(int(text.split()[1])):
                    aid = updater.add_artifact(
                        f"{time.monotonic_ns()}", artifact_id=aid, append=i > 0
                    )
                    context.wait_cancelled(TICK_INTERVAL)
            else:
                updater.add_artifact(f"echo: {text}", name="echo", last_chunk=True)
            updater.complete()

    card = AgentCard(
        name="Echo",
        description="echo",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )
    report_serve_url()  # port 0: the parent learns the port serve got
    serve(Agent(), port=port, card=card, database=database)


# -- CPU accounting -------------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rpartition(")")[2].split()


def postgres_cpu_seconds(postmaster: int) -> float:
    """CPU of the postmaster, its live backends and its reaped children."""
    fields = _stat(postmaster)
    total = sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            child = _stat(int(entry.name))
        except OSError:
            continue  # exited meanwhile
        if int(child[1]) == postmaster:  # ppid
            total += int(child[11]) + int(child[12])
    return total / _TICK


class CPUMeter:
    """Charges worker and PostgreSQL CPU to each timed run of a variant."""

    def __init__(self, workers: list[int], postmaster: int) -> None:
        self.workers = workers
        self.postmaster = postmaster
        self.samples: dict[str, list[tuple[int, float, float]]] = {}

    def wrap(self, name: str, run: Callable[[int], int]) -> Callable[[int], int]:
        def timed(n: int) -> int:
            w0 = sum(server_cpu_seconds(pid) for pid in self.workers)
            p0 = postgres_cpu_seconds(self.postmaster)
            done = run(n)
            w1 = sum(server_cpu_seconds(pid) for pid in self.workers)
            p1 = postgres_cpu_seconds(self.postmaster)
            self.samples.setdefault(name, []).append((done, w1 - w0, p1 - p0))
            return done

        return timed

    def per_op(self, name: str, warmup: bool = True) -> tuple[float, float]:
        """Median worker and PostgreSQL CPU per op (µs), warm-up run excluded."""
        rows = self.samples[name][1:] if warmup else self.samples[name]
        return (
            statistics.median(w / done * 1e6 for done, w, _ in rows),
            statistics.median(p / done * 1e6 for done, _, p in rows),
        )


# -- load -----------------------------------------------------------------------------------------


def sends(ports: list[int]) -> Callable[[int], int]:
    clients = [Client(ports[i % len(ports)]) for i in range(SEND_THREADS)]
    for client in clients:
        result = client.send("hi")
        assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", result

    def run(n: int) -> int:
        per = max(1, n // SEND_THREADS)

        def work(client: Client) -> None:
            for _ in range(per):
                client.send("hi")

        _in_threads(work, clients)
        return per * SEND_THREADS

    return run


def streams(ports: list[int]) -> Callable[[int], int]:
    clients = [Client(ports[i % len(ports)]) for i in range(STREAM_THREADS)]
    for client in clients:
        assert client.stream(f"chunks {CHUNKS}") == CHUNKS + 3  # task, working, chunks, done

    def run(n: int) -> int:
        per = max(1, n // (STREAM_THREADS * (CHUNKS + 3)))
        counts = [0] * len(clients)

        def work(client: Client) -> None:
            index = clients.index(client)
            for _ in range(per):
                counts[index] += client.stream(f"chunks {CHUNKS}")

        _in_threads(work, clients)
        return sum(counts)

    return run


def _in_threads(work: Callable[[Client], None], clients: list[Client]) -> None:
    threads = [threading.Thread(target=work, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# -- cross-process latency ------------------------------------------------------------------------


def _sse_events(response: http.client.HTTPResponse) -> Iterator[tuple[int, dict[str, object]]]:
    while line := response.readline():
        if line.startswith(b"data:"):
            yield time.monotonic_ns(), json.loads(line[5:])["result"]


def _tick_latencies(
    response: http.client.HTTPResponse, out: list[float], first: list[str] | None = None
) -> None:
    for received, result in _sse_events(response):
        if first is not None and "task" in result:
            first.append(str(result["task"]["id"]))  # type: ignore[index]
        update = result.get("artifactUpdate")
        if isinstance(update, dict):
            emitted = int(update["artifact"]["parts"][0]["text"])
            out.append((received - emitted) / 1e6)


def cross_process_latency(port_a: int, port_b: int) -> tuple[list[float], list[float]]:
    """Per-event delivery latency (ms) to a stream on A (same process) and on B."""
    on_a, on_b = http.client.HTTPConnection("127.0.0.1", port_a, timeout=60), None
    same: list[float] = []
    cross: list[float] = []
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "role": "ROLE_USER",
                "messageId": f"tick-{time.monotonic_ns()}",
                "parts": [{"text": f"tick {TICKS}"}],
            }
        },
    }
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    on_a.request("POST", "/", json.dumps(body).encode(), headers)
    response_a = on_a.getresponse()
    events_a = _sse_events(response_a)
    _, opening = next(events_a)
    task_id = opening["task"]["id"]  # type: ignore[index]
    on_b = http.client.HTTPConnection("127.0.0.1", port_b, timeout=60)
    subscribe = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
    on_b.request("POST", "/", json.dumps(subscribe).encode(), headers)
    response_b = on_b.getresponse()
    reader = threading.Thread(target=_tick_latencies, args=(response_b, cross))
    reader.start()
    _tick_latencies(response_a, same)
    reader.join(60)
    on_a.close()
    on_b.close()
    return same, cross


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


# -- orchestration --------------------------------------------------------------------------------


@contextlib.contextmanager
def workers(count: int, database: str) -> Iterator[list[tuple[subprocess.Popen[bytes], int]]]:
    processes: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    try:
        for _ in range(count):  # each worker binds port 0 and reports what it got
            argv = [sys.executable, "-m", "benchmarks.scale_out", "--serve", "0", database]
            process, port = spawn_server(argv)
            processes.append(process)
            ports.append(port)
        for port, process in zip(ports, processes, strict=True):
            _wait_up(port, process)
        yield list(zip(processes, ports, strict=True))
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


def _wait_up(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "worker exited"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/.well-known/agent-card.json")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "worker did not come up"
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--reps", type=int, default=5, help="repetitions")
    parser.add_argument("--n", type=int, default=800, help="messages per send run")
    parser.add_argument("--workers", default="1,2,4", help="worker counts, comma-separated")
    parser.add_argument("--fast", action="store_true", help="PostgreSQL without fsync")
    args = parser.parse_args()
    if args.serve:
        serve_worker(int(args.serve[0]), args.serve[1])
        return
    root = str(Path(__file__).parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)
    import psycopg

    from tests.support.postgres import postgres_cluster

    counts = [int(c) for c in args.workers.split(",")]
    results: list[Result] = []
    cpu: dict[str, tuple[float, float]] = {}
    with postgres_cluster(durable=not args.fast) as cluster:
        with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
            admin.execute("CREATE DATABASE bench")
        database = cluster.url("bench")
        for count in counts:
            with workers(count, database) as running:
                ports = [port for _, port in running]
                meter = CPUMeter([process.pid for process, _ in running], cluster.pid)
                variants = [
                    Variant(f"send-{count}w", meter.wrap(f"send-{count}w", sends(ports))),
                    Variant(
                        f"stream-{count}w",
                        meter.wrap(f"stream-{count}w", streams(ports)),
                        baseline=f"stream-{counts[0]}w",
                    ),
                ]
                group = measure(variants, n=args.n, reps=args.reps, baseline=f"send-{count}w")
                for result in group:
                    result.base = f"{result.name.split('-')[0]}-{counts[0]}w"
                    cpu[result.name] = meter.per_op(result.name)
                results += group
                if count >= 2 and count == max(counts):
                    same, cross = cross_process_latency(ports[0], ports[1])
        durability = "fsync off" if args.fast else "durable defaults"
        title = (
            f"scale-out on PostgreSQL 15 ({durability}), {os.cpu_count()} cores"
            f"  (n={args.n}, reps={args.reps}; medians; client CPU in 'CPU µs/op')"
        )
        print(render(results, title))
        print()
        print(f"{'variant':<12} {'workers µs/op':>14} {'postgres µs/op':>15} {'total µs/op':>12}")
        for result in results:
            w, p = cpu[result.name]
            print(f"{result.name:<12} {w:>14.0f} {p:>15.0f} {w + p:>12.0f}")
        if max(counts) >= 2:
            added = [b - a for a, b in zip(same, cross, strict=False)]
            print()
            print(f"event delivery latency, {TICKS} events 10 ms apart, idle system (ms)")
            print(f"{'path':<28} {'median':>8} {'p95':>8}")
            for name, values in (
                ("same process (stream on A)", same),
                ("cross-process (B via NOTIFY)", cross),
                ("added by the hop (B - A)", added),
            ):
                print(f"{name:<28} {statistics.median(values):>8.2f} {_p95(values):>8.2f}")


if __name__ == "__main__":
    main()
