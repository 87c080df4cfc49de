"""Scale-out: several real worker processes serving one PostgreSQL database.

Each worker is ``serve(agent, card=..., database="postgresql://...")`` in its own
subprocess (the deployment docs/scale-out.md describes). Clients talk to workers directly
or through a round-robin TCP balancer that can cut requests after forwarding them, so a
resilient client's resend lands on another worker while the first delivery still runs.
Agents log what they execute to a file per worker, which the tests count.

Needs PostgreSQL (tests/support/postgres.py starts a throwaway cluster).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
import pytest

from a2a_sync.client import A2AClient, ResilientA2AClient
from a2a_sync.policies import ResilienceConfig
from a2a_sync.server.executor import AgentExecutor, RequestContext, TaskUpdater
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from tests.server.test_serving import _up
from tests.support.polling import wait_until
from tests.support.ports import SERVE_URL_LINE, listening_socket
from tests.support.postgres import Cluster

ROOT = Path(__file__).parents[2]
WAIT = 10.0  # cross-process effects: generous bounds, never asserted as durations
#: Short leases so a killed worker is noticed within ~3.5 s, yet long enough that a live
#: worker's beat is never that late on a loaded 2-core CI box (else its tasks are failed).
HEARTBEAT = 0.25
LEASE = 3.0
CHUNKS = 40
LATE = 0.1


# -- the worker process --------------------------------------------------------------------------


class ScaleAgent(AgentExecutor):
    """Logs every execution (``exec <message id> <task id> <pid>``) and cancel to ``log``.

    ``slow`` streams CHUNKS chunks ``c<i>;`` 25 ms apart; ``wait`` works until canceled;
    anything else is echoed, after LATE seconds before creating the task and LATE more
    before completing it when the text ends with ``late`` (so resends overlap the run).
    """

    def __init__(self, log: Path) -> None:
        self._log = log
        self._lock = threading.Lock()

    def _write(self, *words: str) -> None:
        with self._lock, self._log.open("a") as out:
            out.write(" ".join(words) + "\n")

    def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
        self._write("exec", context.message.message_id, context.task_id, str(os.getpid()))
        late = context.text.endswith("late")
        if late:
            context.wait_cancelled(LATE)  # no task exists yet: a resend must wait for it
        updater.start_work()
        if context.text == "wait":
            self._write("started", context.task_id)
            if context.wait_cancelled(60.0):
                self._write("cancel-seen", context.task_id)
            return
        if context.text == "slow":
            self._write("started", context.task_id)
            aid = None
            for i in range(CHUNKS):
                if context.wait_cancelled(0.025):
                    return
                aid = updater.add_artifact(
                    f"c{i};", artifact_id=aid, append=i > 0, last_chunk=i == CHUNKS - 1
                )
            updater.complete()
            return
        if late:
            context.wait_cancelled(LATE)  # the task works: a blocking resend must wait
        updater.add_artifact(f"echo: {context.text}", name="echo", last_chunk=True)
        updater.complete()

    def cancel(self, context: RequestContext, updater: TaskUpdater) -> None:
        self._write("cancel-hook", context.task_id, str(os.getpid()))
        updater.cancel()


def agent_card() -> AgentCard:
    return AgentCard(
        name="Scale-out test agent",
        description="echo, slow streams, waits",
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
    )


def worker_main(argv: list[str] | None = None) -> None:
    """A worker: ``serve`` on ``--port`` (default 0: the OS picks, the log line
    ``serving ... on URL`` reports it) with the PostgreSQL store at ``--database``."""
    import logging

    from a2a_sync.server.serving import serve
    from a2a_sync.server.stores.postgres import PostgresTaskStore

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--database", required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--plain", action="store_true", help="serve(database=URL), defaults")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("a2a_sync.server.serving").setLevel(logging.INFO)  # reports the URL
    if args.plain:
        serve(ScaleAgent(args.log), port=args.port, card=agent_card(), database=args.database)
        return
    store = PostgresTaskStore(args.database, heartbeat_interval=HEARTBEAT, lease_timeout=LEASE)
    try:
        serve(ScaleAgent(args.log), port=args.port, card=agent_card(), task_store=store, grace=2.0)
    finally:
        store.close()


@attrs.define
class Worker:
    url: str
    log: Path
    process: subprocess.Popen[bytes]
    stderr: Path

    def lines(self, word: str) -> list[list[str]]:
        if not self.log.exists():
            return []
        rows = [line.split() for line in self.log.read_text().splitlines()]
        return [row[1:] for row in rows if row and row[0] == word]

    def wait_for(self, word: str, task_id: str) -> None:
        def logged() -> bool:
            return any(row[0] == task_id for row in self.lines(word))

        # the worker writes its log in another process: poll it (or the exit), bounded
        wait_until(
            lambda: logged() or self.process.poll() is not None,
            f"{self.url} to log {word!r} for {task_id}",
            WAIT,
        )
        assert logged(), self.stderr.read_text()[-2000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(WAIT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(WAIT)


def start_workers(count: int, database: str, tmp: Path, *extra: str) -> list[Worker]:
    """``count`` workers on port 0 each; their URLs are what they report (no port race)."""
    started = []
    for _ in range(count):
        name = f"worker-{uuid.uuid4().hex[:8]}"
        log, stderr = tmp / f"{name}.log", tmp / f"{name}.err"
        with stderr.open("wb") as err:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    "from tests.server.test_scale_out import worker_main; worker_main()",
                    *("--database", database, "--log", str(log)),
                    *extra,
                ],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        started.append((log, process, stderr))

    def reported(stderr: Path) -> re.Match[str] | None:
        return SERVE_URL_LINE.search(stderr.read_text(errors="replace"))

    # a starting worker reports its URL in its log file, then serves: poll both (or the
    # worker's exit), bounded
    wait_until(
        lambda: all(reported(err) or proc.poll() is not None for _, proc, err in started),
        "every worker to report its URL",
        30,
    )
    workers = []
    for log, process, stderr in started:
        match = reported(stderr)
        assert match is not None, stderr.read_text()[-2000:]
        workers.append(Worker(match.group(1), log, process, stderr))
    wait_until(
        lambda: all(_up(w.url) or w.process.poll() is not None for w in workers),
        "every worker to serve its card",
        30,
    )
    for worker in workers:
        assert worker.process.poll() is None, worker.stderr.read_text()[-2000:]
    return workers


@pytest.fixture(scope="module")
def database(postgres_server: Cluster) -> Iterator[str]:
    """One database for the module's workers (a postgresql:// URL)."""
    import psycopg

    name = f"a2a_scale_{os.getpid()}"
    with psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield postgres_server.url(name)
    finally:
        with psycopg.connect(postgres_server.dsn(), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def pair(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Worker]]:
    """Two workers, A and B, on the module's database."""
    workers = start_workers(2, database, tmp_path_factory.mktemp("workers"))
    try:
        yield workers
    finally:
        for worker in workers:
            worker.stop()


# -- a round-robin TCP balancer that can cut requests ----------------------------------------


class Balancer:
    """Round-robin per connection; every ``cut_every``-th POST is forwarded whole, then
    both connections are reset before any answer (the outcome is unknown to the client)."""

    def __init__(self, upstreams: list[str], *, cut_every: int = 0) -> None:
        self._upstreams = [("127.0.0.1", int(url.rsplit(":", 1)[1])) for url in upstreams]
        self._next = itertools.count()
        self._posts = itertools.count(1)
        self._cut_every = cut_every
        self.cuts = 0
        self.per_upstream: Counter[int] = Counter()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._spawn(self._accept)

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            index = next(self._next) % len(self._upstreams)
            upstream = socket.create_connection(self._upstreams[index], timeout=WAIT)
            upstream.settimeout(None)
            with self._lock:
                if self._closed:  # accepted just before close(): nobody would close these
                    client.close()
                    upstream.close()
                    return
                self.per_upstream[index] += 1
                self._sockets += [client, upstream]
            self._spawn(self._requests, client, upstream)
            self._spawn(self._pump, upstream, client)

    def _requests(self, client: socket.socket, upstream: socket.socket) -> None:
        buffer = b""
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    upstream.shutdown(socket.SHUT_WR)
                    return
                buffer += data
                while b"\r\n\r\n" in buffer:
                    head, _, rest = buffer.partition(b"\r\n\r\n")
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    if len(rest) < length:
                        break
                    request, buffer = head + b"\r\n\r\n" + rest[:length], rest[length:]
                    upstream.sendall(request)
                    if (
                        head.startswith(b"POST")
                        and self._cut_every
                        and next(self._posts) % self._cut_every == 0
                    ):
                        with self._lock:
                            self.cuts += 1
                        _reset(client)
                        # shutdown wakes the pump thread blocked in upstream.recv(); a
                        # close() alone would leave it blocked until the worker's idle
                        # timeout closed the connection from its side.
                        with contextlib.suppress(OSError):
                            upstream.shutdown(socket.SHUT_RDWR)
                        upstream.close()
                        return
        except OSError:
            return

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            return

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes accept() (close alone does not)
        self._listener.close()
        with self._lock:
            self._closed = True
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a recv() blocked in a pump thread
            sock.close()
        for thread in threads:
            thread.join(WAIT)
            assert not thread.is_alive()


def _reset(sock: socket.socket) -> None:
    """Close with RST (SO_LINGER 0): the client sees a reset, not an answer."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


# -- the tests ------------------------------------------------------------------------------------


def test_a_stream_started_on_one_worker_resumes_on_another_without_gaps_or_repeats(
    pair: list[Worker],
) -> None:
    a, b = pair
    with A2AClient.from_url(a.url) as on_a:
        stream = on_a.stream_message("slow")
        first: list[object] = []
        for event in stream:
            first.append(event)
            if sum(isinstance(e, TaskArtifactUpdateEvent) for e in first) == 5:
                break
        stream.close()  # the client goes away mid-stream
    task = first[0]
    assert isinstance(task, Task)
    seen_on_a = "".join(e.artifact.text for e in first if isinstance(e, TaskArtifactUpdateEvent))
    with A2AClient.from_url(b.url) as on_b:
        resumed = list(on_b.subscribe(task.id))
        final = on_b.get_task(task.id)
    snapshot, rest = resumed[0], resumed[1:]
    assert isinstance(snapshot, Task)
    assert snapshot.text.startswith(seen_on_a)
    chunks = [e.artifact.text for e in rest if isinstance(e, TaskArtifactUpdateEvent)]
    expected = "".join(f"c{i};" for i in range(CHUNKS))
    assert snapshot.text + "".join(chunks) == expected  # every chunk once, in order
    last = rest[-1]
    assert isinstance(last, TaskStatusUpdateEvent)
    assert last.status.state is TaskState.completed
    assert final.text == expected
    assert final.status.state is TaskState.completed


def test_cancel_on_one_worker_reaches_the_agent_running_on_another(pair: list[Worker]) -> None:
    a, b = pair
    with A2AClient.from_url(a.url) as on_a, A2AClient.from_url(b.url) as on_b:
        task = on_a.send_message("wait", return_immediately=True)
        assert isinstance(task, Task)
        a.wait_for("started", task.id)
        canceled = on_b.cancel_task(task.id)
        assert canceled.status.state is TaskState.canceled
        a.wait_for("cancel-seen", task.id)  # the agent's wait_cancelled() woke up
        hooks = [row for row in a.lines("cancel-hook") if row[0] == task.id]
        assert len(hooks) == 1  # the agent's cancel hook ran on A, where the agent runs
        assert all(row[0] != task.id for row in b.lines("cancel-hook"))
        assert on_a.get_task(task.id).status.state is TaskState.canceled


def test_a_worker_killed_mid_task_is_reported_failed_by_the_others(
    pair: list[Worker], database: str, tmp_path: Path
) -> None:
    b = pair[1]
    (doomed,) = start_workers(1, database, tmp_path)
    try:
        with A2AClient.from_url(doomed.url) as on_doomed:
            task = on_doomed.send_message("wait", return_immediately=True)
        assert isinstance(task, Task)
        doomed.wait_for("started", task.id)
        with A2AClient.from_url(b.url) as on_b:
            stream = on_b.subscribe(task.id)
            opening = next(stream)
            assert isinstance(opening, Task)
            assert opening.status.state is TaskState.working
            doomed.process.send_signal(signal.SIGKILL)
            doomed.process.wait(WAIT)
            rest = list(stream)  # ends when the lease expires and B fails the task
            assert isinstance(rest[-1], TaskStatusUpdateEvent)
            assert rest[-1].status.state is TaskState.failed
            reported = on_b.get_task(task.id)
        assert reported.status.state is TaskState.failed
        assert reported.status.message is not None  # says why, not just "failed"
    finally:
        doomed.stop()


def test_eight_threads_resending_across_workers_execute_every_message_exactly_once(
    pair: list[Worker],
) -> None:
    threads_count, per_thread = 8, 25
    balancer = Balancer([w.url for w in pair], cut_every=4)
    config = ResilienceConfig(
        idempotent_send=True, max_transport_retries=6, retry_base_delay=0.01, retry_max_delay=0.05
    )
    sent: dict[str, str] = {}
    failures: list[BaseException] = []
    lock = threading.Lock()
    tag = uuid.uuid4().hex[:8]

    def client_thread(n: int) -> None:
        try:
            with ResilientA2AClient(A2AClient.from_url(balancer.url), config) as client:
                for i in range(per_thread):
                    text = f"{tag} {n}.{i}" + (" late" if i % 4 == 0 else "")
                    message = Message.user(text, message_id=f"{tag}-{n}-{i}")
                    result = client.send_message(message)
                    assert isinstance(result, Task)
                    assert result.status.state is TaskState.completed
                    assert result.text == f"echo: {text}"
                    with lock:
                        sent[message.message_id] = result.id
        except BaseException as exc:
            with lock:
                failures.append(exc)

    threads = [threading.Thread(target=client_thread, args=(n,)) for n in range(threads_count)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(50)
            assert not thread.is_alive()
    finally:
        balancer.close()
    assert failures == []
    assert len(sent) == threads_count * per_thread
    assert balancer.cuts >= 10  # resends really happened
    assert all(balancer.per_upstream[i] > 0 for i in range(len(pair)))
    executions = Counter(row[0] for w in pair for row in w.lines("exec") if row[0] in sent)
    assert set(executions) == set(sent)
    assert set(executions.values()) == {1}  # exactly one execution per message id
    assert len(set(sent.values())) == len(sent)  # one task per message
    with A2AClient.from_url(pair[0].url) as on_a:
        for task_id in list(sent.values())[::20]:  # every task is complete on any worker
            assert on_a.get_task(task_id).status.state is TaskState.completed


def test_gunicorn_gthread_workers_share_the_store_and_settle_it_on_exit(
    database: str, tmp_path: Path
) -> None:
    import psycopg

    log = tmp_path / "gunicorn-agent.log"
    (tmp_path / "pg_gunicorn_app.py").write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from a2a_sync.server import A2AApplication
            from a2a_sync.server.stores import PostgresTaskStore
            from tests.server.test_scale_out import HEARTBEAT, LEASE, ScaleAgent, agent_card

            # Imported by each worker after the fork: one store per worker process.
            store = PostgresTaskStore(
                {database!r}, heartbeat_interval=HEARTBEAT, lease_timeout=LEASE
            )
            app = A2AApplication(agent_card(), ScaleAgent(Path({str(log)!r})), task_store=store)
            """
        )
    )
    (tmp_path / "gunicorn.conf.py").write_text(  # as docs/scale-out.md shows it
        textwrap.dedent(
            """
            def worker_exit(server, worker):
                from pg_gunicorn_app import app, store  # the worker's own (no --preload)
                app.close(1.0)  # the "wait" agent never ends by itself
                store.close()
            """
        )
    )
    listener = listening_socket()  # gunicorn gets the socket itself: no port race
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    with (tmp_path / "gunicorn.err").open("wb") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                *("--worker-class", "gthread", "--workers", "2", "--threads", "40"),
                *("--bind", f"fd://{listener.fileno()}", "--graceful-timeout", "10"),
                *("--pythonpath", str(tmp_path), "-c", str(tmp_path / "gunicorn.conf.py")),
                "pg_gunicorn_app:app",
            ],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            pass_fds=(listener.fileno(),),
        )
    listener.close()  # the child holds it now
    try:
        # gunicorn reports no readiness: poll its port (or its exit), bounded
        wait_until(lambda: _up(url) or process.poll() is not None, "gunicorn to come up", 30)
        assert process.poll() is None, (tmp_path / "gunicorn.err").read_text()[-2000:]

        def send(i: int) -> str:
            with A2AClient.from_url(url) as client:  # a new connection each time
                task = client.send_message(f"hello {i}")
            assert isinstance(task, Task)
            return task.id

        # Which worker accepts a connection is the kernel's choice: sequential requests
        # may all land on the worker that just finished (LIFO wake-ups). Concurrent ones
        # keep both busy; send batches until both workers have run agents (bounded).
        tasks: list[str] = []
        pids: set[str] = set()
        with ThreadPoolExecutor(8, thread_name_prefix="a2a-sync-test-sender") as pool:

            def both_workers_ran() -> bool:
                tasks.extend(pool.map(send, range(len(tasks), len(tasks) + 16)))
                pids.update(row[2] for row in Worker(url, log, process, tmp_path).lines("exec"))
                return len(pids) >= 2

            wait_until(both_workers_ran, "both gunicorn workers to run agents", 30)
        assert len(pids) == 2  # both workers ran agents
        for task_id in tasks:  # and each task is found whichever worker answers
            with A2AClient.from_url(url) as client:
                assert client.get_task(task_id).status.state is TaskState.completed
        with A2AClient.from_url(url) as client:
            running = client.send_message("wait", return_immediately=True)
        assert isinstance(running, Task)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
        with psycopg.connect(database) as db:
            state = db.execute("SELECT state FROM a2a_tasks WHERE id = %s", (running.id,))
            assert state.fetchone() == ("failed",)  # settled at shutdown, not left working
            workers_left = db.execute(
                "SELECT count(*) FROM a2a_workers WHERE pid = ANY(%s)", ([int(p) for p in pids],)
            ).fetchone()
            assert workers_left == (0,)  # each worker released its lease
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(WAIT)


def test_serve_with_a_postgresql_url_opens_the_store_and_closes_it_when_stopped(
    database: str, tmp_path: Path
) -> None:
    import psycopg

    (worker,) = start_workers(1, database, tmp_path, "--plain")
    try:
        with A2AClient.from_url(worker.url) as client:
            task = client.send_message("hello")
        assert isinstance(task, Task)
        with psycopg.connect(database) as db:
            registered = db.execute(
                "SELECT count(*) FROM a2a_workers WHERE pid = %s", (worker.process.pid,)
            ).fetchone()
            assert registered == (1,)  # serve opened a PostgreSQL store for the URL
            worker.process.send_signal(signal.SIGTERM)
            assert worker.process.wait(WAIT) == 0
            left = db.execute(
                "SELECT count(*) FROM a2a_workers WHERE pid = %s", (worker.process.pid,)
            ).fetchone()
            assert left == (0,)  # and closed it on the way out (lease released)
            state = db.execute("SELECT state FROM a2a_tasks WHERE id = %s", (task.id,)).fetchone()
            assert state == ("completed",)
    finally:
        worker.stop()
