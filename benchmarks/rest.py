"""HTTP+JSON (REST) vs JSON-RPC: client and server CPU per operation (issue 15).

Two tables from one run.

**Server** (``server µs/op`` is the figure): each server runs the same echo agent in its own
process (spawned with ``--serve``); one cheap ``http.client`` keep-alive client drives it.

* ``ours-rpc-*``: a2a_sync (waitress), JSON-RPC 1.0 on ``/``;
* ``ours-rest-*``: the same process, HTTP+JSON 1.0 under ``/rest`` (baseline ``ours-rpc-*``:
  target ``CPU``/server ratio <= 1.1);
* ``sdk-rest-*``: a2a-sdk 1.3 ``create_rest_routes`` on uvicorn (baseline ``ours-rest-*``:
  target ratio >= 3, i.e. ours <= 1/3 of it);
* ``*-task``: SendMessage answered with a completed task; ``*-stream``: a stream of 100
  artifact chunks, one op = one event.

**Client** (``CPU µs/op`` of this process is the figure), all against the same a2a_sync
server process: ``rpc`` (our A2AClient, JSON-RPC), ``rest`` (our A2AClient, HTTP+JSON;
target <= 1.1x ``rpc``) and ``sdk-rest`` (a2a-sdk's client, REST transport; target: ours
<= 0.7x of it), one SendMessage each.

Run from the repo top::

    .venv/bin/python -m benchmarks.rest                   # both tables
    .venv/bin/python -m benchmarks.rest --part client --reps 3 --n 300
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.harness import Variant, run_cli
from benchmarks.processes import bound_socket, report_ready, spawn_server

CHUNKS = 100


# -- the servers (run in their own process) ------------------------------------------------------


def serve_ours(port: int) -> None:
    from a2a_sync.server import A2AApplication, AgentExecutor, RequestContext, TaskUpdater
    from a2a_sync.server.serving import RunningServer
    from a2a_sync.types import AgentCapabilities, AgentCard

    class Echo(AgentExecutor):
        def execute(self, context: RequestContext, updater: TaskUpdater) -> None:
            text = context.text
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
    app = A2AApplication(card, Echo(), rest_path="/rest")
    server = RunningServer(app, "127.0.0.1", port)
    report_ready(server.port)
    server.run()


def serve_sdk(port: int) -> None:
    import uvicorn
    from a2a.helpers import new_task
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_rest_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, Part, TaskState
    from starlette.applications import Starlette

    class Echo(AgentExecutor):
        async def execute(self, context: RequestContext, queue: EventQueue) -> None:
            text = context.get_user_input()
            assert context.task_id is not None
            assert context.context_id is not None
            await queue.enqueue_event(
                new_task(
                    context.task_id,
                    context.context_id,
                    TaskState.TASK_STATE_SUBMITTED,
                    history=[context.message] if context.message else [],
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
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/rest"
    card = AgentCard(
        name="Echo",
        description="echo",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[
            AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0", url=url)
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_rest_routes(handler, path_prefix="/rest"),
        ]
    )
    report_ready(sock.getsockname()[1])
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


# -- the cheap driver of the server table --------------------------------------------------------

_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def _message(text: str) -> dict[str, Any]:
    return {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": [{"text": text}]}


class Driver:
    """One keep-alive connection speaking JSON-RPC (``rest=False``) or REST."""

    def __init__(self, port: int, *, rest: bool) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.rest = rest

    def _post(self, streaming: bool, text: str) -> http.client.HTTPResponse:
        params = {"message": _message(text)}
        if self.rest:
            path = "/rest/message:stream" if streaming else "/rest/message:send"
            body = json.dumps(params).encode()
        else:
            method = "SendStreamingMessage" if streaming else "SendMessage"
            path = "/"
            envelope = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            body = json.dumps(envelope).encode()
        try:
            self.conn.request("POST", path, body, _HEADERS)
            return self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            self.conn.close()  # an idle keep-alive connection the server closed
            self.conn.request("POST", path, body, _HEADERS)
            return self.conn.getresponse()

    def send(self, text: str) -> dict[str, Any]:
        answer: dict[str, Any] = json.loads(self._post(False, text).read())
        return answer if self.rest else answer["result"]

    def stream(self, text: str) -> int:
        response = self._post(True, text)
        events = 0
        while line := response.readline():
            if line.startswith(b"data:"):
                events += 1
        return events


def unary(driver: Driver) -> Callable[[int], int]:
    result = driver.send("hi")
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", result
    assert result["task"]["artifacts"][0]["parts"][0]["text"] == "echo: hi", result

    def run(n: int) -> int:
        for _ in range(n):
            driver.send("hi")
        return n

    return run


def streaming(driver: Driver) -> Callable[[int], int]:
    first = driver.stream(f"chunks {CHUNKS}")
    assert first == CHUNKS + 3, first  # task, working, chunks, completed

    def run(n: int) -> int:
        done = 0
        while done < n:
            done += driver.stream(f"chunks {CHUNKS}")
        return done

    return run


# -- the client table ----------------------------------------------------------------------------


def ours_client(port: int, binding: str) -> Callable[[int], int]:
    from a2a_sync.client import A2AClient
    from a2a_sync.types import Task, TaskState

    client = A2AClient.from_url(f"http://127.0.0.1:{port}", bindings=[binding])
    assert client.binding == binding
    task = client.send_message("hi")
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "echo: hi")

    def run(n: int) -> int:
        for _ in range(n):
            client.send_message("hi")
        return n

    return run


def sdk_client(port: int) -> tuple[Callable[[int], int], Callable[[], None]]:
    from a2a.client import ClientConfig, create_client
    from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

    loop = asyncio.new_event_loop()
    config = ClientConfig(streaming=False, supported_protocol_bindings=["HTTP+JSON"])
    client = loop.run_until_complete(
        create_client(f"http://127.0.0.1:{port}", client_config=config)
    )

    async def batch(n: int) -> int:
        for _ in range(n):
            message = Message(
                role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text="hi")]
            )
            async for response in client.send_message(SendMessageRequest(message=message)):
                assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
        return n

    loop.run_until_complete(batch(1))

    def close() -> None:
        loop.run_until_complete(client.close())
        loop.close()

    return (lambda n: loop.run_until_complete(batch(n))), close


# -- orchestration -------------------------------------------------------------------------------


def _spawn(which: str) -> tuple[subprocess.Popen[bytes], int]:
    """A server child on a port it bound itself (port 0) and reported."""
    return spawn_server([sys.executable, "-m", "benchmarks.rest", "--serve", which, "0"])


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)
    if process.stdout is not None:
        process.stdout.close()


def server_table(rest: list[str]) -> None:
    (ours, ours_port), (sdk, sdk_port) = _spawn("ours"), _spawn("sdk")
    try:
        variants = []
        for kind, make in (("task", unary), ("stream", streaming)):
            variants += [
                Variant(f"ours-rpc-{kind}", make(Driver(ours_port, rest=False)), ours.pid),
                Variant(
                    f"ours-rest-{kind}",
                    make(Driver(ours_port, rest=True)),
                    ours.pid,
                    baseline=f"ours-rpc-{kind}",
                ),
                Variant(
                    f"sdk-rest-{kind}",
                    make(Driver(sdk_port, rest=True)),
                    sdk.pid,
                    baseline=f"ours-rest-{kind}",
                ),
            ]
        run_cli(
            variants,
            baseline="ours-rpc-task",
            default_n=400,
            title="A2A server CPU: REST vs JSON-RPC (a2a_sync) vs a2a-sdk REST (uvicorn)",
            argv=rest,
        )
    finally:
        _stop(ours)
        _stop(sdk)


def client_table(rest: list[str]) -> None:
    server, port = _spawn("ours")
    sdk_run, sdk_close = sdk_client(port)
    try:
        run_cli(
            [
                Variant("rpc", ours_client(port, "JSONRPC")),
                Variant("rest", ours_client(port, "HTTP+JSON"), baseline="rpc"),
                Variant("sdk-rest", sdk_run, baseline="rest"),
            ],
            baseline="rpc",
            default_n=400,
            title="A2A client CPU per SendMessage: a2a_sync REST vs JSON-RPC vs a2a-sdk REST",
            argv=rest,
        )
    finally:
        sdk_close()
        _stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--serve", nargs=2)
    parser.add_argument("--part", choices=["server", "client", "both"], default="both")
    args, rest = parser.parse_known_args()
    if args.serve:
        which, port = args.serve
        (serve_ours if which == "ours" else serve_sdk)(int(port))
        return
    if args.part in ("server", "both"):
        server_table(rest)
    if args.part in ("client", "both"):
        client_table(rest)


if __name__ == "__main__":
    main()
