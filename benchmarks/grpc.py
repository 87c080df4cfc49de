"""gRPC: a2a_sync's binding vs a2a-sdk's, client and server CPU per operation (issue 19).

Two tables from one run. Targets (issue 19): our client and our server at most 0.5x the
CPU of a2a-sdk's gRPC client and server, per SendMessage and per streamed event.

**Server** (``server µs/op`` is the figure): each server runs the same echo agent in its
own process (spawned with ``--serve``); one cheap raw grpcio client (pre-built request
bytes, no conversion) drives it.

* ``ours-*``: a2a_sync's GRPCServer (grpcio sync, thread pool) on an A2AApplication;
* ``sdk-*``: a2a-sdk 1.3 ``GrpcHandler`` on ``grpc.aio`` (baseline ``ours-*``: target
  ratio >= 2, i.e. ours <= 0.5x of it);
* ``*-task``: SendMessage answered with a completed task; ``*-stream``: a stream of 100
  artifact chunks, one op = one event.

**Client** (``CPU µs/op`` of this process): both against the same a2a_sync gRPC server
process: ``ours`` (A2AClient, binding GRPC) and ``sdk`` (a2a-sdk's client, gRPC
transport on ``grpc.aio``; baseline): one SendMessage each; ``*-event``: one event of a
100-chunk stream (``ours-event-inline``: ``threaded_streams=False``, the consuming thread
reads the call). Target: ours <= 0.5x sdk.

Run from the repo top::

    .venv/bin/python -m benchmarks.grpc                   # both tables
    .venv/bin/python -m benchmarks.grpc --part client --reps 3 --n 300
    .venv/bin/python -m benchmarks.grpc --part convert    # the conversion edge alone
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.grpc_convert import convert_table
from benchmarks.harness import Variant, run_cli, summarize
from benchmarks.processes import report_ready, spawn_server

CHUNKS = 100


# -- the servers (run in their own process) ------------------------------------------------------


def serve_ours(port: int) -> None:
    from a2a_sync.server import A2AApplication, AgentExecutor, RequestContext, TaskUpdater
    from a2a_sync.server.bindings.grpc import GRPCServer
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
    app = A2AApplication(card, Echo(), deduplicate_messages=False)
    server = GRPCServer(app, port=port).start()
    report_ready(server.port)
    try:
        threading_event().wait()
    finally:
        server.stop(1.0)
        app.close(1.0)


def threading_event() -> Any:
    import signal
    import threading

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    return stop


def serve_sdk(port: int) -> None:
    import grpc.aio
    from a2a.helpers import new_task
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        Part,
        TaskState,
        a2a_pb2_grpc,
    )

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

    async def run() -> None:
        server = grpc.aio.server()
        bound = server.add_insecure_port(f"127.0.0.1:{port}")  # port 0: the one it got
        card = AgentCard(
            name="Echo",
            description="echo",
            version="1",
            capabilities=AgentCapabilities(streaming=True),
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
            supported_interfaces=[
                AgentInterface(
                    protocol_binding="GRPC", protocol_version="1.0", url=f"127.0.0.1:{bound}"
                )
            ],
        )
        handler = DefaultRequestHandler(
            agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
        )
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        await server.start()
        report_ready(bound)
        await server.wait_for_termination()

    asyncio.run(run())


# -- the cheap driver of the server table --------------------------------------------------------

_METADATA = (("a2a-version", "1.0"),)


class Driver:
    """One channel sending pre-built SendMessage bytes (fresh message ids)."""

    def __init__(self, port: int) -> None:
        import grpc

        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.send_call = self.channel.unary_unary("/lf.a2a.v1.A2AService/SendMessage")
        self.stream_call = self.channel.unary_stream("/lf.a2a.v1.A2AService/SendStreamingMessage")

    @staticmethod
    def request(text: str) -> bytes:
        from a2a_sync.a2a.grpc.messages import message_class

        message = message_class("SendMessageRequest")()
        message.message.message_id = uuid.uuid4().hex
        message.message.role = 1
        message.message.parts.add().text = text
        return bytes(message.SerializeToString())

    def send(self, text: str) -> bytes:
        return bytes(self.send_call(self.request(text), timeout=30, metadata=_METADATA))

    def stream(self, text: str) -> int:
        return sum(1 for _ in self.stream_call(self.request(text), timeout=60, metadata=_METADATA))


def unary(driver: Driver) -> Callable[[int], int]:
    assert b"echo: hi" in driver.send("hi")

    def run(n: int) -> int:
        for _ in range(n):
            driver.send("hi")
        return n

    return run


def streaming(driver: Driver) -> Callable[[int], int]:
    first = driver.stream(f"chunks {CHUNKS}")
    assert first >= CHUNKS + 2, first

    def run(n: int) -> int:
        done = 0
        while done < n:
            done += driver.stream(f"chunks {CHUNKS}")
        return done

    return run


# -- the client table ----------------------------------------------------------------------------


def ours_client(
    port: int, *, threaded: bool = True
) -> tuple[Callable[[int], int], Callable[[int], int], Any]:
    from a2a_sync.client import A2AClient
    from a2a_sync.types import Task, TaskState

    client = A2AClient(f"127.0.0.1:{port}", binding="GRPC", timeout=30, threaded_streams=threaded)
    task = client.send_message("hi")
    assert isinstance(task, Task)
    assert (task.state, task.text) == (TaskState.completed, "echo: hi")

    def send(n: int) -> int:
        for _ in range(n):
            client.send_message("hi")
        return n

    def events(n: int) -> int:
        done = 0
        while done < n:
            with client.stream_message(f"chunks {CHUNKS}") as stream:
                done += sum(1 for _ in stream)
        return done

    return send, events, client


def raw_client(port: int) -> tuple[Callable[[int], int], Callable[[int], int], Any]:
    """The floor: a bare grpcio channel sending one pre-built protobuf request (no
    conversion, no a2a_sync): what any client on grpcio's sync API pays at least. The
    answers are parsed (``FromString``), as every client must."""
    import grpc

    from a2a_sync.a2a.grpc.messages import message_class

    # The channel options of a2a_sync's client that change CPU (streams read on the
    # calling thread), so the floor is the same grpcio configuration.
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("SingleThreadedUnaryStream", 1)])
    response, event = message_class("SendMessageResponse"), message_class("StreamResponse")
    send_call = channel.unary_unary(
        "/lf.a2a.v1.A2AService/SendMessage",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=response.FromString,
    )
    stream_call = channel.unary_stream(
        "/lf.a2a.v1.A2AService/SendStreamingMessage",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=event.FromString,
    )

    def request(text: str) -> Any:
        message = message_class("SendMessageRequest")()
        message.message.message_id = uuid.uuid4().hex
        message.message.role = 1
        message.message.parts.add().text = text
        return message

    hi, chunks = request("hi"), request(f"chunks {CHUNKS}")  # the server does not dedupe
    assert send_call(hi, timeout=30, metadata=_METADATA).task.status.state == 3

    def send(n: int) -> int:
        for _ in range(n):
            send_call(hi, timeout=30, metadata=_METADATA)
        return n

    def events(n: int) -> int:
        done = 0
        while done < n:
            done += sum(1 for _ in stream_call(chunks, timeout=60, metadata=_METADATA))
        return done

    return send, events, channel


def sdk_client(port: int) -> tuple[Callable[[int], int], Callable[[int], int], Any]:
    import grpc.aio
    from a2a.client import ClientConfig, create_client
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        Message,
        Part,
        Role,
        SendMessageRequest,
    )

    card = AgentCard(
        name="Echo",
        description="echo",
        version="1",
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=[
            AgentInterface(protocol_binding="GRPC", protocol_version="1.0", url=f"127.0.0.1:{port}")
        ],
    )
    loop = asyncio.new_event_loop()

    def make(streaming: bool) -> Any:
        config = ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=["GRPC"],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        return loop.run_until_complete(create_client(card, client_config=config))

    unary_client, stream_client = make(False), make(True)

    async def batch(client: Any, text: str, n: int) -> int:
        done = 0
        while done < n:
            message = Message(
                role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)]
            )
            count = 0
            async for _ in client.send_message(SendMessageRequest(message=message)):
                count += 1
            done += 1 if text == "hi" else count
        return done

    assert loop.run_until_complete(batch(unary_client, "hi", 1)) == 1

    def close() -> None:
        loop.run_until_complete(unary_client.close())
        loop.run_until_complete(stream_client.close())
        loop.close()

    return (
        lambda n: loop.run_until_complete(batch(unary_client, "hi", n)),
        lambda n: loop.run_until_complete(batch(stream_client, f"chunks {CHUNKS}", n)),
        close,
    )


# -- orchestration -------------------------------------------------------------------------------


def _spawn(which: str) -> tuple[subprocess.Popen[bytes], int]:
    """A server child on a port it bound itself (port 0) and reported."""
    return spawn_server([sys.executable, "-m", "benchmarks.grpc", "--serve", which, "0"])


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    if process.stdout is not None:
        process.stdout.close()


def server_table(rest: list[str]) -> None:
    (ours, ours_port), (sdk, sdk_port) = _spawn("ours"), _spawn("sdk")
    try:
        variants = []
        for kind, make in (("task", unary), ("stream", streaming)):
            variants += [
                Variant(f"ours-{kind}", make(Driver(ours_port)), ours.pid),
                Variant(f"sdk-{kind}", make(Driver(sdk_port)), sdk.pid, baseline=f"ours-{kind}"),
            ]
        run_cli(
            variants,
            baseline="ours-task",
            default_n=400,
            title="A2A gRPC server CPU: a2a_sync (grpcio sync) vs a2a-sdk (grpc.aio)",
            argv=rest,
        )
    finally:
        _stop(ours)
        _stop(sdk)


def client_table(rest: list[str]) -> None:
    server, port = _spawn("ours")
    ours_send, ours_events, ours = ours_client(port)
    _, inline_events, inline = ours_client(port, threaded=False)
    raw_send, raw_events, raw = raw_client(port)
    sdk_send, sdk_events, sdk_close = sdk_client(port)
    try:
        results = run_cli(
            [
                Variant("sdk-send", sdk_send),
                Variant("raw-send", raw_send, baseline="sdk-send"),
                Variant("ours-send", ours_send, baseline="sdk-send"),
                Variant("sdk-event", sdk_events, baseline="sdk-send"),
                Variant("raw-event", raw_events, baseline="sdk-event"),
                Variant("ours-event", ours_events, baseline="sdk-event"),
                Variant("ours-event-inline", inline_events, baseline="sdk-event"),
            ],
            baseline="sdk-send",
            default_n=400,
            title="A2A gRPC client CPU: a2a_sync (grpcio sync) vs a2a-sdk (grpc.aio)",
            argv=rest,
        )
        if "--json" not in rest:
            print(floor_report(results))
    finally:
        ours.close()
        inline.close()
        raw.close()
        sdk_close()
        _stop(server)


def floor_report(results: list[Any]) -> str:
    """What grpcio's sync API alone costs against a2a-sdk (the floor of any client on it),
    and how far above that floor a2a_sync's client is (medians of paired ratios)."""
    x = {str(s["name"]): s["x_cpu"] for s in summarize(results)}
    lines = ["floor (raw grpcio sync client, same server) vs a2a-sdk; target 0.5x:"]
    for kind, ours in (("send", ("ours-send",)), ("event", ("ours-event", "ours-event-inline"))):
        floor = x.get(f"raw-{kind}")
        if floor is None:
            continue
        verdict = "reachable" if floor <= 0.5 else "NOT reachable on grpcio's sync API"
        mine = ", ".join(f"{name} {x[name]:.2f}x" for name in ours if x.get(name) is not None)
        lines.append(f"  per {kind}: floor {floor:.2f}x ({verdict}); {mine}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--serve", nargs=2)
    parser.add_argument("--part", choices=["server", "client", "both", "convert"], default="both")
    args, rest = parser.parse_known_args()
    if args.serve:
        which, port = args.serve
        (serve_ours if which == "ours" else serve_sdk)(int(port))
        return
    if args.part == "convert":
        convert_table(rest)
    if args.part in ("server", "both"):
        server_table(rest)
    if args.part in ("client", "both"):
        client_table(rest)


if __name__ == "__main__":
    main()
