"""Every issue-18 path side by side: a2a_sync, the raw floor and the official SDK.

One command, one run; within each section every variant runs once per repetition, in an
order rotated each time (``benchmarks/harness.py``), so the load of a shared machine hits
all of them alike. Figures are **CPU per operation** (user + system), min - median - max
over the repetitions, and the ratio to the section's floor, paired per repetition
(median). Compare ratios, not absolute figures across runs.

Sections:

* ``client``: A2A ``SendMessage`` answered with a Message by the near-free server of
  ``benchmarks/a2a_client.py``; client process CPU (``time.process_time``).
  a2a_sync (``A2AClient.send_message``), ``requests.Session.post``, the floor
  (``urllib3.HTTPConnectionPool.urlopen`` and ``http.client``, each building the same JSON
  body and parsing the answer) and the official a2a-sdk client. Goal: a2a_sync <= 1.5 x
  urllib3.
* ``server``: blocking ``SendMessage``, one keep-alive ``http.client`` connection; server
  process CPU from ``/proc`` (10 ms ticks: use n >= 500). a2a_sync on waitress (direct
  reply ``msg``, completed task ``task``), the floor (a bare WSGI app on waitress with a
  fixed reply) and the official a2a-sdk server on uvicorn; ``a2a_sync-workers`` is the
  same agent with ``run_inline = False`` (every run handed to a worker thread). Goal:
  ours-msg <= 2 x bare.
* ``import``: a fresh interpreter per statement; its CPU (``wait4`` rusage) minus that of
  ``python -c pass`` in the same repetition, in ms. Goal: ``import a2a_sync`` <= 1.05 x
  the imports of what it loads; also shown: a client import against its dependencies.

Run from the repository root::

    .venv/bin/python -m benchmarks.run_all                 # everything (a few minutes)
    .venv/bin/python -m benchmarks.run_all --quick         # smoke run (CI)
    .venv/bin/python -m benchmarks.run_all --only client --reps 9
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import a2a_client, a2a_server
from benchmarks.harness import Result, Variant, measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass(frozen=True)
class Row:
    """One variant's line: CPU per op (min, median, max) and the paired median ratio."""

    name: str
    unit: str
    low: float
    median: float
    high: float
    ratio: float | None
    base: str


def _rows(results: Sequence[Result], *, server: bool, scale: float, unit: str) -> list[Row]:
    def cost(sample: Any) -> float:
        spent = sample.server_cpu if server else sample.cpu
        return float(spent or 0.0) / sample.ops * scale

    by_name = {r.name: r for r in results}
    rows = []
    for result in results:
        costs = [cost(s) for s in result.samples]
        base = {s.rep: cost(s) for s in by_name[result.base].samples}
        ratios = [cost(s) / base[s.rep] for s in result.samples if base[s.rep] > 0]
        rows.append(
            Row(
                result.name,
                unit,
                min(costs),
                statistics.median(costs),
                max(costs),
                statistics.median(ratios) if ratios else None,
                result.base,
            )
        )
    return rows


def render(title: str, rows: Sequence[Row]) -> str:
    """A text table: CPU per op as min - median - max, and the ratio to the base."""
    unit = rows[0].unit if rows else ""
    lines = [title, f"{'variant':<34} {'CPU ' + unit + '/op  min - median - max':>36}  x base"]
    for row in rows:
        spread = f"{row.low:8.1f} - {row.median:8.1f} - {row.high:8.1f}"
        ratio = "-" if row.ratio is None else f"{row.ratio:5.2f}"
        lines.append(f"{row.name:<34} {spread:>36}  {ratio:>6} ({row.base})")
    return "\n".join(lines)


# -- client ------------------------------------------------------------------------------------


def _body(request_id: int) -> bytes:
    message = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": "reply"}]}
    envelope = {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage", "params": {}}
    envelope["params"] = {"message": message}
    return json.dumps(envelope).encode()


_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def _check_reply(payload: bytes) -> None:
    text = json.loads(payload)["result"]["message"]["parts"][0]["text"]
    assert text == a2a_client.REPLY_TEXT, text


def _urllib3_loop(url: str) -> tuple[Callable[[int], int], Callable[[], None]]:
    import urllib3

    pool = urllib3.connection_from_url(url)

    def run(n: int) -> int:
        for i in range(n):
            response = pool.urlopen("POST", "/", body=_body(i), headers=_HEADERS)
            _check_reply(response.data)
        return n

    return run, pool.close


def _http_client_loop(url: str) -> tuple[Callable[[int], int], Callable[[], None]]:
    host, port = url.split("//", 1)[1].rstrip("/").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)

    def run(n: int) -> int:
        for i in range(n):
            conn.request("POST", "/", _body(i), _HEADERS)
            _check_reply(conn.getresponse().read())
        return n

    return run, conn.close


def client_section(n: int, reps: int, *, official: bool) -> list[Row]:
    with a2a_client.raw_server() as (url, pid), contextlib.ExitStack() as stack:
        variants = []
        builders: list[tuple[str, Callable[[str], tuple[Any, ...]]]] = [
            ("urllib3", _urllib3_loop),
            ("http.client", _http_client_loop),
            ("a2a_sync", a2a_client.ours_variants),
            ("requests", a2a_client.requests_variants),
        ]
        if official:
            builders.append(("a2a-sdk", a2a_client.official_variants))
        for name, build in builders:
            built = build(url)
            stack.callback(built[-1])
            variants.append(Variant(name, built[0], server_pid=pid))
        results = measure(variants, n=n, reps=reps, baseline="urllib3")
    return _rows(results, server=False, scale=1e6, unit="µs")


# -- server ------------------------------------------------------------------------------------


@contextlib.contextmanager
def _server(which: str) -> Iterator[tuple[int, int]]:
    process, port = a2a_server._spawn(which)
    try:
        yield process.pid, port
    finally:
        process.terminate()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


def server_section(n: int, reps: int, *, official: bool) -> list[Row]:
    wanted = ["bare", "ours", "ours-workers", *(["sdk"] if official else [])]
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(_server(name)) for name in wanted}
        variants = []
        for name, (pid, port) in servers.items():
            label = {
                "bare": "waitress-bare",
                "ours": "a2a_sync",
                "ours-workers": "a2a_sync-workers",
                "sdk": "a2a-sdk",
            }[name]
            client = a2a_server.Client(port)
            stack.callback(client.close)
            variants.append(
                Variant(f"{label}-msg", a2a_server.unary(client, "reply", "msg"), server_pid=pid)
            )
            if name != "bare":
                task_client = a2a_server.Client(port)
                stack.callback(task_client.close)
                variants.append(
                    Variant(
                        f"{label}-task", a2a_server.unary(task_client, "hi", "task"), server_pid=pid
                    )
                )
        results = measure(variants, n=n, reps=reps, baseline="waitress-bare-msg")
    return _rows(results, server=True, scale=1e6, unit="µs")


# -- import ------------------------------------------------------------------------------------

#: (label, statement); the first is the interpreter's own start, subtracted from the rest.
IMPORTS: list[tuple[str, str]] = [
    ("python -c pass", "pass"),
    ("import a2a_sync", "import a2a_sync"),
    ("import a2a_sync.types", "import a2a_sync.types"),
    ("its deps: attrs", "import attrs"),
    ("from a2a_sync import A2AClient", "from a2a_sync import A2AClient"),
    ("its deps: requests+attrs+cattrs", "import requests, attrs, cattrs"),
    ("a2a_sync.server A2AApplication", "from a2a_sync.server import A2AApplication"),
    ("a2a-sdk: import a2a.client", "import a2a.client"),
]

#: Pairs reported as ratios: (statement, the imports of what it loads).
IMPORT_RATIOS = [
    ("import a2a_sync.types", "its deps: attrs"),
    ("from a2a_sync import A2AClient", "its deps: requests+attrs+cattrs"),
]


def _child_cpu(statement: str) -> float:
    env = {**os.environ, "PYTHONPATH": ROOT}
    process = subprocess.Popen([sys.executable, "-c", statement], cwd=ROOT, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, f"{statement!r} failed"
    return usage.ru_utime + usage.ru_stime


def import_section(n: int, reps: int, *, official: bool = True) -> tuple[list[Row], list[str]]:
    imports = [(label, code) for label, code in IMPORTS if official or "a2a-sdk" not in label]
    samples: dict[str, list[float]] = {label: [] for label, _ in imports}
    for rep in range(reps):
        order = imports[rep % len(imports) :] + imports[: rep % len(imports)]
        costs = {label: min(_child_cpu(code) for _ in range(n)) for label, code in order}
        for label, _ in imports:
            samples[label].append(
                costs[label] - (0 if label == imports[0][0] else costs[imports[0][0]])
            )
    rows = [
        Row(label, "ms", min(v) * 1e3, statistics.median(v) * 1e3, max(v) * 1e3, None, "-")
        for label, v in samples.items()
    ]
    verdicts = []
    for label, base in IMPORT_RATIOS:
        ratios = [a / b for a, b in zip(samples[label], samples[base], strict=True) if b > 0]
        verdicts.append(f"{label} / {base}: {statistics.median(ratios):.2f}")
    return rows, verdicts


# -- main --------------------------------------------------------------------------------------

GOALS = {
    "client": [("a2a_sync", 1.5, "a2a_sync client CPU <= 1.5 x urllib3")],
    "server": [
        ("a2a_sync-msg", 2.0, "a2a_sync server CPU (msg) <= 2 x bare waitress"),
    ],
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny n, 1 rep")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--only", action="append", choices=["client", "server", "import"])
    parser.add_argument("--no-official", action="store_true", help="skip the a2a-sdk variants")
    args = parser.parse_args(argv)
    sections = args.only or ["client", "server", "import"]
    reps = 1 if args.quick else args.reps
    official = not args.no_official
    print(
        f"# a2a_sync benchmarks, {time.strftime('%Y-%m-%d %H:%M:%S')}, python "
        f"{platform.python_version()}, {os.cpu_count()} CPUs, reps={reps}; CPU = user+sys"
    )
    for section in sections:
        if section == "client":
            n = 20 if args.quick else 1000
            rows = client_section(n, reps, official=official)
            print(render(f"\n## A2A client SendMessage (n={n}/rep, client CPU)", rows))
        elif section == "server":
            n = 20 if args.quick else 1000
            rows = server_section(n, reps, official=official)
            print(render(f"\n## A2A server blocking SendMessage (n={n}/rep, server CPU)", rows))
        else:
            n = 1 if args.quick else 3
            rows, verdicts = import_section(n, reps, official=official)
            print(
                render(f"\n## import (best of {n} processes per rep, minus python -c pass)", rows)
            )
            print("\n".join(verdicts))
        for name, target, text in GOALS.get(section, []) if not args.quick else []:
            ratio = next(row.ratio for row in rows if row.name == name)
            verdict = "met" if ratio is not None and ratio <= target else "MISSED"
            print(f"goal: {text}: {ratio:.2f} {verdict}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
