"""Scale-out: 1 and 2 gunicorn workers serving one PostgreSQL database, vs the memory store.

Each worker set is gunicorn (``--worker-class gthread --threads 40``, no ``--preload``)
importing ``benchmarks/scale_out_app.py`` (the deployment of docs/scale-out.md: each
worker opens its own ``PostgresTaskStore``), on a throwaway PostgreSQL cluster started by
this script (tests/support/postgres.py; PostgreSQL's durability defaults unless
``--fast``); each worker set has a database of its own (a NOTIFY wakes only the listeners
of its database). The baseline is one gunicorn worker with the in-memory store. Client
threads speak JSON-RPC with ``http.client`` keep-alive to the set's port (the kernel
spreads the connections over its workers), so most of the two cores go to the workers
and the database. Every variant runs once per repetition, interleaved.

Variants (N: workers):

* ``send-Nw`` / ``mem-send``: blocking SendMessage → completed Task (task, working,
  artifact, done: four appends), 8 client threads. One op = one message; p50/p99 are the
  client's request latencies.
* ``stream-Nw`` / ``mem-stream``: SendStreamingMessage of 100 artifact chunks, 4 client
  threads. One op = one streamed event.

Below the table: **workers µs/op** (CPU of the gunicorn master and its workers per
operation, from ``/proc``) and **postgres µs/op** (CPU of the postmaster and all its
processes: backends, WAL writer, ...), min - median - max over the repetitions; the worker
CPU of each PostgreSQL variant over the memory store's (paired per repetition; issue 18
goal: send <= 2x, postgres <= 600 µs per message). Then the **cross-process event
latency**, per repetition: an agent on worker A emits timestamped chunks 10 ms apart; one
SSE client follows the stream on A (same process), another SubscribeToTask on B (the event
crosses processes through NOTIFY and a log read; A and B are two single-worker gunicorns
on one database); p50 and p99 of each path and of the hop (per event, B minus A).

Run from the repo top (takes a few minutes)::

    .venv/bin/python -m benchmarks.scale_out
    .venv/bin/python -m benchmarks.scale_out --reps 3 --n 400 --workers 1,2 --fast
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from benchmarks.a2a_server import Client
from benchmarks.harness import Result, Variant, measure, render

SEND_THREADS = 8
STREAM_THREADS = 4
CHUNKS = 100
TICKS = 200
GUNICORN_THREADS = 40
ROOT = Path(__file__).parents[1]
_TICK = os.sysconf("SC_CLK_TCK")


# -- CPU accounting -------------------------------------------------------------------------------


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rpartition(")")[2].split()


def tree_cpu_seconds(root: int, *, reaped: bool = False) -> float:
    """CPU of process ``root`` and its live children (plus its reaped ones if asked)."""
    fields = _stat(root)
    total = sum(int(fields[i]) for i in ((11, 12, 13, 14) if reaped else (11, 12)))
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            child = _stat(int(entry.name))
        except OSError:
            continue  # exited meanwhile
        if int(child[1]) == root:  # ppid
            total += int(child[11]) + int(child[12])
    return total / _TICK


def postgres_cpu_seconds(postmaster: int) -> float:
    """CPU of the postmaster, its live backends and its reaped children."""
    return tree_cpu_seconds(postmaster, reaped=True)


class CPUMeter:
    """Charges the CPU of a variant's gunicorn and of PostgreSQL to each of its timed runs."""

    def __init__(self, postmaster: int) -> None:
        self.postmaster = postmaster
        self.samples: dict[str, list[tuple[int, float, float]]] = {}

    def wrap(
        self, name: str, master: int, run: Callable[[int], list[float] | int]
    ) -> Callable[[int], list[float] | int]:
        def timed(n: int) -> list[float] | int:
            w0, p0 = tree_cpu_seconds(master), postgres_cpu_seconds(self.postmaster)
            done = run(n)
            w1, p1 = tree_cpu_seconds(master), postgres_cpu_seconds(self.postmaster)
            ops = done if isinstance(done, int) else len(done)
            self.samples.setdefault(name, []).append((ops, w1 - w0, p1 - p0))
            return done

        return timed

    def per_op(self, name: str) -> tuple[list[float], list[float]]:
        """Worker and PostgreSQL CPU per op (µs) of each timed run (the warm-up excluded)."""
        rows = self.samples[name][1:]
        return [w / n * 1e6 for n, w, _ in rows], [p / n * 1e6 for n, _, p in rows]


# -- load -----------------------------------------------------------------------------------------


def sends(port: int) -> Callable[[int], list[float]]:
    clients = [Client(port) for _ in range(SEND_THREADS)]
    for client in clients:
        result = client.send("hi")
        assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", result

    def run(n: int) -> list[float]:
        per = max(1, n // SEND_THREADS)
        latencies: list[list[float]] = [[] for _ in clients]

        def work(index: int) -> None:
            client, out = clients[index], latencies[index]
            for _ in range(per):
                start = time.perf_counter()
                client.send("hi")
                out.append(time.perf_counter() - start)

        _in_threads(work, len(clients))
        return [latency for each in latencies for latency in each]

    return run


def streams(port: int) -> Callable[[int], int]:
    clients = [Client(port) for _ in range(STREAM_THREADS)]
    for client in clients:
        assert client.stream(f"chunks {CHUNKS}") == CHUNKS + 3  # task, working, chunks, done

    def run(n: int) -> int:
        per = max(1, n // (STREAM_THREADS * (CHUNKS + 3)))
        counts = [0] * len(clients)

        def work(index: int) -> None:
            for _ in range(per):
                counts[index] += clients[index].stream(f"chunks {CHUNKS}")

        _in_threads(work, len(clients))
        return sum(counts)

    return run


def _in_threads(work: Callable[[int], None], count: int) -> None:
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# -- cross-process latency ------------------------------------------------------------------------


def _sse_events(response: http.client.HTTPResponse) -> Iterator[tuple[int, dict[str, object]]]:
    while line := response.readline():
        if line.startswith(b"data:"):
            yield time.monotonic_ns(), json.loads(line[5:])["result"]


def _tick_latencies(events: Iterator[tuple[int, dict[str, object]]], out: list[float]) -> None:
    for received, result in events:
        update = result.get("artifactUpdate")
        if isinstance(update, dict):
            emitted = int(update["artifact"]["parts"][0]["text"])
            out.append((received - emitted) / 1e6)


def cross_process_latency(port_a: int, port_b: int) -> tuple[list[float], list[float]]:
    """Per-event delivery latency (ms) to a stream on A (same process) and on B."""
    on_a = http.client.HTTPConnection("127.0.0.1", port_a, timeout=60)
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
    events_a = _sse_events(on_a.getresponse())
    _, opening = next(events_a)
    task_id = opening["task"]["id"]  # type: ignore[index]
    on_b = http.client.HTTPConnection("127.0.0.1", port_b, timeout=60)
    subscribe = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
    on_b.request("POST", "/", json.dumps(subscribe).encode(), headers)
    events_b = _sse_events(on_b.getresponse())
    reader = threading.Thread(target=_tick_latencies, args=(events_b, cross))
    reader.start()
    _tick_latencies(events_a, same)
    reader.join(60)
    on_a.close()
    on_b.close()
    return same, cross


def _pct(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _spread(values: Sequence[float], spec: str = ".0f") -> str:
    """min - median - max."""
    return " - ".join(
        format(v, spec) for v in (min(values), statistics.median(values), max(values))
    )


# -- orchestration --------------------------------------------------------------------------------


@contextlib.contextmanager
def gunicorn(count: int, database: str) -> Iterator[tuple[int, int]]:
    """gunicorn with ``count`` gthread workers on a free port; yields (master pid, port).
    ``database`` empty: the in-memory store. The port is bound here (port 0) and the
    listening socket handed to gunicorn (``--bind fd://N``): no bind-close-reuse race."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = int(listener.getsockname()[1])
    cwd = tempfile.mkdtemp(prefix="a2a-scale-out-")
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)
    env = {**os.environ, "A2A_DATABASE_URL": database, "PYTHONPATH": path}
    command = [
        sys.executable, "-m", "gunicorn",
        "--worker-class", "gthread", "--workers", str(count),
        "--threads", str(GUNICORN_THREADS), "--bind", f"fd://{listener.fileno()}",
        "--graceful-timeout", "15", "--log-level", "warning", "--chdir", cwd,
        "-c", "python:benchmarks.scale_out_gunicorn",
        "benchmarks.scale_out_app:app",
    ]  # fmt: skip
    # A neutral working directory: ``-m`` and gunicorn put it first on sys.path, and a
    # PYTHONPATH given to this script (another a2a_sync to compare with) must come first.
    with listener:
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, pass_fds=[listener.fileno()]
        )
    try:
        _wait_up(port, process)
        _wait_workers(process.pid, count)
        yield process.pid, port
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        os.rmdir(cwd)


def _served_from() -> str:
    """Where the workers import a2a_sync from (a PYTHONPATH given to this script wins)."""
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), str(ROOT)) if p)
    code = "import os, a2a_sync; print(os.path.dirname(a2a_sync.__file__))"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": path},
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()


def _wait_workers(master: int, count: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        children = 0
        for entry in os.scandir("/proc"):
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and int(_stat(int(entry.name))[1]) == master:
                    children += 1
        if children >= count:
            return
        assert time.monotonic() < deadline, "gunicorn workers did not start"
        time.sleep(0.1)


def _wait_up(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert process.poll() is None, "gunicorn exited"
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/.well-known/agent-card.json")
            if conn.getresponse().status == 200:
                conn.close()
                return
        except OSError:
            pass
        assert time.monotonic() < deadline, "gunicorn did not come up"
        time.sleep(0.1)


def _report(results: list[Result], meter: CPUMeter) -> None:
    print(f"{'variant':<11} {'workers µs/op':>22} {'postgres µs/op':>22} {'workers x memory':>18}")
    for result in results:
        workers, postgres = meter.per_op(result.name)
        ratio = ""
        if not result.name.startswith("mem-"):
            memory = meter.per_op(result.base)[0]
            ratio = _spread([w / m for w, m in zip(workers, memory, strict=True)], ".2f")
        print(f"{result.name:<11} {_spread(workers):>22} {_spread(postgres):>22} {ratio:>18}")


def _report_hop(runs: list[tuple[list[float], list[float]]]) -> None:
    print(f"event delivery latency, {TICKS} events 10 ms apart per repetition (ms),")
    print(f"min - median - max over {len(runs)} repetitions")
    print(f"{'path':<30} {'p50':>20} {'p99':>20}")
    paths = {
        "same process (stream on A)": [same for same, _ in runs],
        "cross-process (B via NOTIFY)": [cross for _, cross in runs],
        "added by the hop (B - A)": [
            [b - a for a, b in zip(same, cross, strict=False)] for same, cross in runs
        ],
    }
    for name, per_rep in paths.items():
        p50 = [statistics.median(values) for values in per_rep]
        p99 = [_pct(values, 0.99) for values in per_rep]
        print(f"{name:<30} {_spread(p50, '.2f'):>20} {_spread(p99, '.2f'):>20}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=5, help="repetitions")
    parser.add_argument("--n", type=int, default=800, help="messages per send run")
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument("--fast", action="store_true", help="PostgreSQL without fsync")
    args = parser.parse_args()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import psycopg

    from tests.support.postgres import postgres_cluster

    counts = [int(c) for c in args.workers.split(",")]
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(postgres_cluster(durable=not args.fast))
        with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
            for name in [f"bench{count}" for count in counts] + ["hop"]:
                admin.execute(f"CREATE DATABASE {name}")
        meter = CPUMeter(cluster.pid)
        master, port = stack.enter_context(gunicorn(1, ""))
        variants = [
            Variant("mem-send", meter.wrap("mem-send", master, sends(port))),
            Variant("mem-stream", meter.wrap("mem-stream", master, streams(port))),
        ]
        for count in counts:
            master, port = stack.enter_context(gunicorn(count, cluster.url(f"bench{count}")))
            send, stream = f"send-{count}w", f"stream-{count}w"
            variants.append(Variant(send, meter.wrap(send, master, sends(port))))
            variants.append(Variant(stream, meter.wrap(stream, master, streams(port))))
        _, port_a = stack.enter_context(gunicorn(1, cluster.url("hop")))
        _, port_b = stack.enter_context(gunicorn(1, cluster.url("hop")))
        results = measure(variants, n=args.n, reps=args.reps, baseline="mem-send")
        for result in results:
            result.base = "mem-stream" if "stream" in result.name else "mem-send"
        hops = [cross_process_latency(port_a, port_b) for _ in range(args.reps)]
    durability = "fsync off" if args.fast else "durable defaults"
    title = (
        f"scale-out, gunicorn gthread workers, PostgreSQL ({durability}), {os.cpu_count()} cores"
        f"  (n={args.n}, reps={args.reps}; medians; client CPU in 'CPU µs/op')"
    )
    print(render(results, title))
    print(f"workers' a2a_sync: {_served_from()}")
    print()
    _report(results, meter)
    print()
    _report_hop(hops)


if __name__ == "__main__":
    main()
