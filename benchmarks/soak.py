"""Soak: does the client keep memory, threads or file descriptors per call under faults?

Issue 12 §4 saw client RSS grow from 37.6 to 49.4 MB over 2,000 faulted calls. This runs
``--calls`` (20,000) calls of a :class:`ResilientA2AClient` through the test suite's
fault proxy (tests/support/faultproxy.py, loopback) to an A2A server in another process,
rotating the fault per call:

* ``ok``: no fault;
* ``reset``: the response is cut by an RST after 60 bytes (the call fails or is retried);
* ``cut``: the response is cut by a FIN after 60 bytes;
* ``stale``: the kept-alive connection is closed before the call (reconnect);
* ``timeout``: every 50th call, the response is held past the call's timeout.

Calls alternate SendMessage (not retried: its outcome is unknown after a cut) and GetTask
(retried). Every ``--every`` calls it prints this process's RSS, threads and open FDs
(after ``gc.collect()``) and the outcomes so far; the verdict compares the first sample
after warm-up (call 2,000) with the last. Target: flat (RSS within a few MB, threads and
FDs equal). Stops by itself (about four minutes)::

    .venv/bin/python -m benchmarks.soak
    .venv/bin/python -m benchmarks.soak --calls 4000 --every 500

Measured (shared 2-core box): RSS 33.4 MB at start, 34.6 MB at call 2,000, 35.3 MB at call
20,000 (+0.7 MB: the resilient client's task-owner memory, capped at 10,000 tasks);
threads 5 and FDs 12 throughout. The growth issue 12 reported (37.6 → 49.4 MB over 2,000
calls) was the fault proxy, in the same process, keeping a ``Thread`` object per proxied
connection (now dropped once finished); with the old proxy this script grew 33.4 → 43.3 MB in 2,000
calls.
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import sys
import threading
import time

from a2a_sync._net.http import HTTPTransport
from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.errors import A2ASyncError
from a2a_sync.policies import ResilienceConfig
from a2a_sync.types import Task
from benchmarks.processes import spawn_server
from tests.support.faultproxy import FaultProxy

WARM_UP = 2000
CALL_TIMEOUT = 2.0
TIMEOUT_CALL_TIMEOUT = 0.1
CONFIG = ResilienceConfig(max_transport_retries=2, retry_base_delay=0.001, retry_max_delay=0.005)

SERVER = """
import sys
import attrs
from a2a_sync.server import A2AApplication, serve
from benchmarks.processes import report_serve_url
from tests.server.agents import EchoAgent, card

report_serve_url()
serve(A2AApplication(attrs.evolve(card(), supported_interfaces=[]), EchoAgent()), port=0)
"""


def sample() -> tuple[float, int, int]:
    """RSS (MB), threads and open FDs of this process."""
    gc.collect()
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status.read().splitlines())
    rss = int(fields["VmRSS"].split()[0]) / 1024
    return rss, threading.active_count(), len(os.listdir("/proc/self/fd"))


def soak(url: str, calls: int, every: int) -> list[tuple[int, float, int, int]]:
    outcomes: collections.Counter[str] = collections.Counter()
    samples: list[tuple[int, float, int, int]] = []
    with FaultProxy(url) as proxy:
        agent = A2AClient(proxy.url + "/", transport=HTTPTransport(timeout=CALL_TIMEOUT))
        quick = A2AClient(proxy.url + "/", transport=HTTPTransport(timeout=TIMEOUT_CALL_TIMEOUT))
        client = ResilientA2AClient(agent, CONFIG)
        hasty = ResilientA2AClient(quick, CONFIG)
        task_id = ""
        started = time.perf_counter()
        for i in range(1, calls + 1):
            proxy.clear()
            # Pairs of calls (a send, then a get) share a fault: both kinds see every one.
            fault = ("ok", "reset", "cut", "stale")[(i // 2) % 4] if i % 50 else "timeout"
            caller = client
            if fault == "reset":
                proxy.reset_after(60)
            elif fault == "cut":
                proxy.cut_after(60)
            elif fault == "stale":
                proxy.close_connections()
            elif fault == "timeout":
                proxy.stall(direction="downstream")
                caller = hasty
            try:
                if i % 2 or not task_id:
                    result = caller.send_message(f"soak {i}")
                    if isinstance(result, Task):
                        task_id = result.id
                else:
                    caller.get_task(task_id)
                outcomes[f"{fault}:ok"] += 1
            except A2ASyncError as exc:
                outcomes[f"{fault}:{type(exc).__name__}"] += 1
            if i % every == 0:
                rss, threads, fds = sample()
                samples.append((i, rss, threads, fds))
                rate = i / (time.perf_counter() - started)
                print(
                    f"{i:>7} calls  RSS {rss:6.1f} MB  threads {threads:3d}  fds {fds:4d}  "
                    f"({rate:.0f} calls/s)",
                    flush=True,
                )
        proxy.clear()
        client.close()
        hasty.close()
        agent.close()
        quick.close()
    print("outcomes:", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--every", type=int, default=2000)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    server, port = spawn_server([sys.executable, "-c", SERVER], env=env, quiet=True)
    try:
        start = sample()
        print(f"{0:>7} calls  RSS {start[0]:6.1f} MB  threads {start[1]:3d}  fds {start[2]:4d}")
        samples = soak(f"http://127.0.0.1:{port}", args.calls, args.every)
    finally:
        server.terminate()
        server.wait(30)
    warm = next((s for s in samples if s[0] >= min(WARM_UP, samples[-1][0])), samples[0])
    last = samples[-1]
    print(
        f"after warm-up (call {warm[0]}) to call {last[0]}: RSS {last[1] - warm[1]:+.1f} MB, "
        f"threads {last[2] - warm[2]:+d}, fds {last[3] - warm[3]:+d}"
    )


if __name__ == "__main__":
    main()
