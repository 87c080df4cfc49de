"""Poisoned input: acknowledged vs durable tasks, per store (issue 12 §1). Not a timed test.

For each store (memory, SQLite, PostgreSQL on a throwaway cluster started by this script
when its binaries and psycopg are installed), the server runs in this process
(``serve_in_thread``, an echo agent). ``--senders`` threads send ordinary SendMessage
calls over keep-alive ``http.client`` connections for ``--seconds``, while one thread
sends messages whose text holds a lone surrogate (``"\\ud800"`` in the JSON body),
alternating SendMessage and SendStreamingMessage. Then the server shuts down cleanly,
the store is closed, and its medium is read back (the SQLite file reopened, PostgreSQL
queried on a new connection; the memory store is its own medium).

Printed per store: calls acknowledged COMPLETED, how many of those the medium holds as
``completed`` (must be equal: the ``lost`` column must be 0), other answers to ordinary
calls (must be 0), poisoned calls sent and refused with -32602 (must be equal), and the
ordinary calls per second (for orientation only). Exit status 1 when a verdict fails.

Run from the repo top (about 10 s)::

    .venv/bin/python -m benchmarks.poisoned_input
    .venv/bin/python -m benchmarks.poisoned_input --seconds 6 --store sqlite
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from a2a_sync.server import A2AApplication, AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.server.serving import serve_in_thread
from a2a_sync.server.stores import InMemoryTaskStore, SQLiteTaskStore, TaskStore
from a2a_sync.types import AgentCapabilities, AgentCard

HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}
Durable = Callable[[list[str]], dict[str, str]]


class Echo(AgentExecutor):
    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        updater.start_work()
        updater.add_artifact(f"echo: {context.text}", name="echo", last_chunk=True)
        updater.complete()


CARD = AgentCard(
    name="Echo",
    description="echo",
    version="1",
    capabilities=AgentCapabilities(streaming=True),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
)


def _body(method: str, request_id: int, message_id: str, text: str) -> bytes:
    message = {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}
    envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    envelope["params"] = {"message": message}
    return json.dumps(envelope).encode()  # ensure_ascii: "\ud800" stays an escape


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.completed: list[str] = []
        self.other = 0
        self.poisoned = 0
        self.refused = 0


def _sender(url: str, n: int, stop: threading.Event, tally: Tally) -> None:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    i = 0
    try:
        while not stop.is_set():
            i += 1
            conn.request("POST", "/", _body("SendMessage", i, f"s{n}-{i}", f"hi {i}"), HEADERS)
            answer = json.loads(conn.getresponse().read())
            task = answer.get("result", {}).get("task")
            with tally.lock:
                if task is not None and task["status"]["state"] == "TASK_STATE_COMPLETED":
                    tally.completed.append(task["id"])
                else:
                    tally.other += 1
    finally:
        conn.close()


def _poisoner(url: str, stop: threading.Event, tally: Tally) -> None:
    parts = urlsplit(url)
    i = 0
    while not stop.is_set():
        i += 1
        method = "SendStreamingMessage" if i % 2 else "SendMessage"
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        try:
            conn.request("POST", "/", _body(method, i, f"p{i}", "bad \ud800 text"), HEADERS)
            response = conn.getresponse()
            raw = response.read()
            kind = response.getheader("Content-Type") or ""
        finally:
            conn.close()
        refused = False
        if kind == "application/json":
            refused = json.loads(raw).get("error", {}).get("code") == -32602
        with tally.lock:
            tally.poisoned += 1
            tally.refused += refused


def run(store: TaskStore, durable: Durable, *, senders: int, seconds: float) -> dict[str, Any]:
    tally = Tally()
    stop = threading.Event()
    app = A2AApplication(CARD, Echo(), task_store=store)
    started = time.monotonic()
    with serve_in_thread(app) as url:
        threads = [
            threading.Thread(target=_sender, args=(url, n, stop, tally), name=f"bench-send-{n}")
            for n in range(senders)
        ]
        threads.append(
            threading.Thread(target=_poisoner, args=(url, stop, tally), name="bench-poison")
        )
        for thread in threads:
            thread.start()
        time.sleep(seconds)  # a benchmark's run length, not a synchronisation
        stop.set()
        for thread in threads:
            thread.join(120)
        app.close(30)
    elapsed = time.monotonic() - started
    store.close()
    states = durable(tally.completed)
    kept = sum(1 for task_id in tally.completed if states.get(task_id) == "completed")
    return {
        "acknowledged": len(tally.completed),
        "durable": kept,
        "lost": len(tally.completed) - kept,
        "other": tally.other,
        "poisoned": tally.poisoned,
        "refused": tally.refused,
        "calls/s": len(tally.completed) / elapsed,
    }


@contextlib.contextmanager
def stores(names: list[str], workdir: Path) -> Iterator[Iterator[tuple[str, TaskStore, Durable]]]:
    with contextlib.ExitStack() as stack:

        def each() -> Iterator[tuple[str, TaskStore, Durable]]:
            if "memory" in names:
                memory = InMemoryTaskStore()

                def memory_states(ids: list[str]) -> dict[str, str]:
                    found = {t: memory.get_task(t, principal=None) for t in ids}
                    return {t: s.task.status.state.value for t, s in found.items() if s}

                yield "memory", memory, memory_states
            if "sqlite" in names:
                path = str(workdir / "tasks.db")

                def sqlite_states(ids: list[str]) -> dict[str, str]:
                    with contextlib.closing(sqlite3.connect(path)) as db:
                        rows = db.execute("SELECT id, state FROM a2a_tasks").fetchall()
                    return {str(i): str(s) for i, s in rows}

                yield "sqlite", SQLiteTaskStore(path), sqlite_states
            if "postgres" in names:
                made = _postgres(stack)
                if made is not None:
                    yield made

        yield each()


def _postgres(stack: contextlib.ExitStack) -> tuple[str, TaskStore, Durable] | None:
    try:
        import psycopg

        from a2a_sync.server.stores.postgres import PostgresTaskStore
        from tests.support.postgres import PostgresUnavailable, postgres_cluster
    except ImportError as exc:
        print(f"postgres: skipped ({exc})", file=sys.stderr)
        return None
    try:
        cluster = stack.enter_context(postgres_cluster(durable=True))
    except PostgresUnavailable as exc:
        print(f"postgres: skipped ({exc})", file=sys.stderr)
        return None
    with psycopg.connect(cluster.dsn(), autocommit=True) as admin:
        admin.execute("CREATE DATABASE bench")
    dsn = cluster.dsn("bench")

    def pg_states(ids: list[str]) -> dict[str, str]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute("SELECT id, state FROM a2a_tasks").fetchall()
        return {str(i): str(s) for i, s in rows}

    return "postgres", PostgresTaskStore(dsn), pg_states


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="run length per store")
    parser.add_argument("--senders", type=int, default=8, help="ordinary sender threads")
    parser.add_argument(
        "--store", action="append", choices=["memory", "sqlite", "postgres"], help="repeatable"
    )
    args = parser.parse_args()
    names = args.store or ["memory", "sqlite", "postgres"]
    columns = ["acknowledged", "durable", "lost", "other", "poisoned", "refused", "calls/s"]
    print(f"{'store':<10}" + "".join(f"{c:>14}" for c in columns))
    ok = True
    with tempfile.TemporaryDirectory() as workdir, stores(names, Path(workdir)) as each:
        for name, store, durable in each:
            row = run(store, durable, senders=args.senders, seconds=args.seconds)
            cells = "".join(
                f"{row[c]:>14.0f}" if isinstance(row[c], float) else f"{row[c]:>14}"
                for c in columns
            )
            print(f"{name:<10}{cells}", flush=True)
            ok &= row["lost"] == 0 and row["other"] == 0 and row["poisoned"] == row["refused"]
    print("verdict:", "acknowledged == durable, every poisoned call -32602" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
