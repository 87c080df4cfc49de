"""A2A server: a2a_sync on waitress vs the official a2a-sdk server on uvicorn.

Both servers run the same echo agent in their own process (spawned by this script with
``--serve``), with in-memory task stores, A2A 1.0 JSON-RPC on ``/``. One client drives
both: ``http.client`` with keep-alive (cheap, so the box's two cores go to the servers).
The figures to read are **server µs/op** (server process CPU per operation, from
``/proc``) and, for the 8-thread variants, the rate ratio.

Variants (``ours-*`` compared with ``sdk-*``):

* ``*-msg``: SendMessage answered with a direct Message (the agent replies).
* ``*-task``: SendMessage answered with a completed Task (task, working, artifact, done).
* ``*-stream``: SendStreamingMessage with 100 artifact chunks; one op = one event.
* ``*-8t``: ``*-task`` from 8 client threads, each on its own connection.

With ``--stores`` the same agent runs on our server with each task store instead (issue
18): ``mem-*`` (InMemoryTaskStore, the baseline) and ``sqlite-*`` (SQLiteTaskStore on a
temporary file), variants ``-task`` and ``-stream`` as above. Goals: ``sqlite-stream``
server µs/op <= 3x ``mem-stream``; ``sqlite-task`` <= 1.6x ``mem-task``. Below the table
it prints the server CPU ratios (paired per repetition; min, median, max).

Run from the repo top::

    .venv/bin/python -m benchmarks.a2a_server                  # every variant
    .venv/bin/python -m benchmarks.a2a_server --reps 3 --n 400 --only ours-stream
    .venv/bin/python -m benchmarks.a2a_server --stores          # memory vs SQLite store
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from benchmarks.harness import Variant, run_cli
from benchmarks.processes import bound_socket, report_ready, spawn_server

CHUNKS = 100
THREADS = 8


# -- the servers (run in their own process) ------------------------------------------------------


def serve_ours(port: int, store_kind: str = "memory", *, inline: bool = True) -> None:
    """``store_kind``: ``"memory"`` or ``"sqlite"``; ``inline``: the agent's
    ``run_inline`` (default True: blocking sends run it on the request's thread once it
    has shown it is quick; False: always on worker threads)."""
    import tempfile

    from a2a_sync.server import A2AApplication, AgentExecutor, RequestContext, TaskUpdater
    from a2a_sync.server.serving import RunningServer
    from a2a_sync.server.stores import InMemoryTaskStore, SQLiteTaskStore, TaskStore
    from a2a_sync.types import AgentCapabilities, AgentCard

    class Echo(AgentExecutor):
        run_inline = inline

        def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
            text = context.text
            if text == "reply":
                updater.reply(f"echo: {text}")
                return
            updater.start_work()
            if text.startswith("chunks "):
                count = int(text.split()[1])
                aid = None
                for i in range(count):
                    aid = updater.add_artifact(
                        f"c{i};", artifact_id=aid, append=i > 0, last_chunk=i == count - 1
                    )
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
    store: TaskStore = InMemoryTaskStore()
    if store_kind == "sqlite":
        folder = tempfile.mkdtemp(prefix="a2a-bench-")
        store = SQLiteTaskStore(f"{folder}/tasks.db")
    server = RunningServer(A2AApplication(card, Echo(), task_store=store), "127.0.0.1", port)
    report_ready(server.port)
    server.run()


def serve_bare(port: int) -> None:
    """The floor: a bare WSGI app on waitress answering every POST with a fixed reply
    (reads and parses the JSON-RPC body, echoes its id; no A2A, no agent)."""
    import waitress

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        request = json.loads(environ["wsgi.input"].read(length))
        message = {
            "role": "ROLE_AGENT",
            "messageId": "m-bare",
            "contextId": "c-bare",
            "parts": [{"text": "echo: reply"}],
        }
        body = json.dumps(
            {"jsonrpc": "2.0", "id": request["id"], "result": {"message": message}}
        ).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response("200 OK", headers)
        return [body]

    server = waitress.create_server(app, host="127.0.0.1", port=port)
    report_ready(server.effective_port)  # type: ignore[union-attr]
    server.run()


SERVERS: dict[str, Callable[[int], None]] = {}


def serve_sdk(port: int) -> None:
    import uvicorn
    from a2a.helpers import new_task, new_text_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        Part,
        Role,
        TaskState,
    )
    from starlette.applications import Starlette

    class Echo(AgentExecutor):
        async def execute(self, context: RequestContext, queue: EventQueue) -> None:
            text = context.get_user_input()
            if text == "reply":
                await queue.enqueue_event(
                    new_text_message(
                        f"echo: {text}", context_id=context.context_id, role=Role.ROLE_AGENT
                    )
                )
                return
            await queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message],
                )
            )
            updater = TaskUpdater(queue, context.task_id, context.context_id)
            await updater.start_work()
            if text.startswith("chunks "):
                count = int(text.split()[1])
                for i in range(count):
                    await updater.add_artifact(
                        [Part(text=f"c{i};")],
                        artifact_id="a",
                        append=i > 0,
                        last_chunk=i == count - 1,
                    )
            else:
                await updater.add_artifact(
                    [Part(text=f"echo: {text}")], name="echo", last_chunk=True
                )
            await updater.complete()

        async def cancel(self, context: RequestContext, queue: EventQueue) -> None:
            raise NotImplementedError

    sock = bound_socket(port)  # the card names the port: bind first, serve on this socket
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    card = AgentCard(
        name="Echo",
        description="echo",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url)
        ],
        skills=[AgentSkill(id="echo", name="Echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    )
    report_ready(sock.getsockname()[1])
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


SERVERS.update(
    ours=serve_ours,
    mem=serve_ours,  # (--stores: the memory-store baseline)
    bare=serve_bare,
    sdk=serve_sdk,
    sqlite=lambda port: serve_ours(port, "sqlite"),
    **{"ours-workers": lambda port: serve_ours(port, inline=False)},
)


# -- the client (same for both) ------------------------------------------------------------------


def _body(method: str, text: str, request_id: int) -> bytes:
    message = {
        "role": "ROLE_USER",
        "messageId": f"m{request_id}-{time.monotonic_ns()}",
        "parts": [{"text": text}],
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"message": message}}
    ).encode()


_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


class Client:
    """One keep-alive connection; JSON-RPC over http.client."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.ids = 0

    def _post(self, method: str, text: str) -> http.client.HTTPResponse:
        self.ids += 1
        body = _body(method, text, self.ids)
        try:
            self.conn.request("POST", "/", body, _HEADERS)
            return self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # An idle keep-alive connection closed by the server (uvicorn: after 5 s).
            self.conn.close()
            self.conn.request("POST", "/", body, _HEADERS)
            return self.conn.getresponse()

    def send(self, text: str) -> dict[str, Any]:
        response = self._post("SendMessage", text)
        result: dict[str, Any] = json.loads(response.read())["result"]
        return result

    def stream(self, text: str) -> int:
        """Run one stream to its end; return the number of events."""
        response = self._post("SendStreamingMessage", text)
        events = 0
        while True:
            line = response.readline()
            if not line:
                break
            if line.startswith(b"data:"):
                events += 1
        return events

    def close(self) -> None:
        self.conn.close()


def _check(result: dict[str, Any], kind: str) -> None:
    if kind == "msg":
        assert result["message"]["parts"][0]["text"] == "echo: reply", result
    else:
        assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", result
        assert result["task"]["artifacts"][0]["parts"][0]["text"] == "echo: hi", result


def unary(client: Client, text: str, kind: str) -> Callable[[int], list[float]]:
    _check(client.send(text), kind)

    def run(n: int) -> list[float]:
        latencies = []
        for _ in range(n):
            start = time.perf_counter()
            client.send(text)
            latencies.append(time.perf_counter() - start)
        return latencies

    return run


def streaming(client: Client) -> Callable[[int], int]:
    per_stream = client.stream(f"chunks {CHUNKS}")
    assert per_stream == CHUNKS + 3, per_stream  # task, working, chunks, completed

    def run(n: int) -> int:
        done = 0
        while done < n:
            done += client.stream(f"chunks {CHUNKS}")
        return done

    return run


def threaded(port: int) -> Callable[[int], list[float]]:
    clients = [Client(port) for _ in range(THREADS)]
    for c in clients:
        _check(c.send("hi"), "task")

    def run(n: int) -> list[float]:
        per = max(1, n // THREADS)
        latencies: list[list[float]] = [[] for _ in clients]

        def worker(i: int) -> None:
            for _ in range(per):
                start = time.perf_counter()
                clients[i].send("hi")
                latencies[i].append(time.perf_counter() - start)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [x for group in latencies for x in group]

    return run


# -- orchestration -------------------------------------------------------------------------------


def _spawn(which: str) -> tuple[subprocess.Popen[bytes], int]:
    """A server child on a port it bound itself (port 0) and reported."""
    return spawn_server([sys.executable, "-m", "benchmarks.a2a_server", "--serve", which, "0"])


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--serve", nargs=2)
    parser.add_argument("--stores", action="store_true")
    args, rest = parser.parse_known_args()
    if args.serve:
        which, port = args.serve
        SERVERS[which](int(port))
        return
    if args.stores:
        compare_stores(rest)
        return
    servers = {name: _spawn(name) for name in ("sdk", "ours")}
    try:
        variants = []
        for name, (process, port) in servers.items():
            variants += [
                Variant(
                    f"{name}-msg",
                    unary(Client(port), "reply", "msg"),
                    server_pid=process.pid,
                    baseline="sdk-msg",
                ),
                Variant(
                    f"{name}-task",
                    unary(Client(port), "hi", "task"),
                    server_pid=process.pid,
                    baseline="sdk-task",
                ),
                Variant(
                    f"{name}-stream",
                    streaming(Client(port)),
                    server_pid=process.pid,
                    baseline="sdk-stream",
                ),
                Variant(f"{name}-8t", threaded(port), server_pid=process.pid, baseline="sdk-8t"),
            ]
        run_cli(
            variants,
            baseline="sdk-task",
            default_n=400,
            title="A2A server: a2a_sync (waitress) vs a2a-sdk (uvicorn), same agent and client",
            argv=rest,
        )
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(10)
            if process.stdout is not None:
                process.stdout.close()


def compare_stores(argv: list[str]) -> None:
    """Our server with the memory store vs the SQLite store (issue 18 items 1 and 2)."""
    servers = {name: _spawn(name) for name in ("mem", "sqlite")}
    try:
        variants = []
        for name, (process, port) in servers.items():
            variants += [
                Variant(
                    f"{name}-task",
                    unary(Client(port), "hi", "task"),
                    server_pid=process.pid,
                    baseline="mem-task",
                ),
                Variant(
                    f"{name}-stream",
                    streaming(Client(port)),
                    server_pid=process.pid,
                    baseline="mem-stream",
                ),
            ]
        results = run_cli(
            variants,
            baseline="mem-task",
            default_n=400,
            title="A2A server (waitress): memory vs SQLite task store, same agent and client",
            argv=argv,
        )
        by_name = {r.name: r for r in results}
        for kind, goal in (("task", 1.6), ("stream", 3.0)):
            ours, base = by_name.get(f"sqlite-{kind}"), by_name.get(f"mem-{kind}")
            if ours is None or base is None:
                continue
            paired = {s.rep: s.server_cpu / s.ops for s in base.samples if s.server_cpu}
            ratios = sorted(
                (s.server_cpu / s.ops) / paired[s.rep]
                for s in ours.samples
                if s.server_cpu is not None and paired.get(s.rep)
            )
            if ratios:
                median = statistics.median(ratios)
                print(
                    f"server CPU sqlite-{kind} / mem-{kind}: min {ratios[0]:.2f}"
                    f"  median {median:.2f}  max {ratios[-1]:.2f}"
                    f"  (goal <= {goal}x: {'met' if median <= goal else 'NOT met'})"
                )
    finally:
        for process, _ in servers.values():
            process.terminate()
            process.wait(10)
            if process.stdout is not None:
                process.stdout.close()


if __name__ == "__main__":
    main()
