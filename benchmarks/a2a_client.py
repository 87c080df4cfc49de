"""A2A client: a2a_sync vs the official a2a-sdk client vs a bare ``requests.Session`` loop.

Every variant talks JSON-RPC A2A 1.0 to the same server in another process, in the same
run, interleaved (``benchmarks/harness.py``); CPU µs/op is this process's CPU (all
threads: our SSE reader, the official client's event loop), so client costs compare
directly. Two servers:

* ``sdk``: the scripted a2a-sdk 1.3 agent of the test suite (tests/peers/a2a_sdk_agent.py)
  on uvicorn: the realistic peer; events arrive one by one.
* ``raw``: a near-free asyncio HTTP/1.1 server in this file (``--serve-raw``) answering
  with canned A2A 1.0 JSON: what is left is client cost.

Two workloads:

* ``unary``: ``SendMessage`` answered with a direct Message (the agent's ``reply``).
  Variants: ``ours`` (``A2AClient.send_message``), ``official``
  (``create_client(url, ClientConfig(streaming=False))`` + ``send_message``), ``requests``
  (``Session.post`` of a hand-built JSON-RPC body + ``.json()``). Targets: ours ≤ 1.15 x
  requests and ≤ 0.8 x official, in client CPU per request.
* ``stream``: ``SendStreamingMessage`` of ``chunks 100``: Task + 100 artifact chunks +
  completed status = 102 events per request, 10 requests per run; CPU per event.
  Variants: ``ours`` (``A2AClient.stream_message``), ``official`` (``streaming=True``),
  ``requests`` (``post(stream=True)`` + sseclient-py over ``iter_content(None)`` +
  ``json.loads``). Target: ours ≤ 40 µs per event.

Run from the repo top::

    .venv/bin/python -m benchmarks.a2a_client                    # both servers, both workloads
    .venv/bin/python -m benchmarks.a2a_client --server raw --workload unary --reps 7
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.harness import Result, Variant, measure, render, summarize

STREAM_CHUNKS = 100
EVENTS_PER_STREAM = STREAM_CHUNKS + 2  # Task, the chunks, the completed status
REPLY_TEXT = "hello from reply"

# -- the near-free server ------------------------------------------------------------------------


def _raw_card(base: str) -> bytes:
    return json.dumps(
        {
            "name": "raw",
            "description": "canned answers",
            "version": "1",
            "capabilities": {"streaming": True},
            "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [],
            "supportedInterfaces": [
                {"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
        }
    ).encode()


def _envelope(request_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def _stream_body(request_id: Any) -> bytes:
    ids = {"taskId": "t-raw", "contextId": "c-raw"}
    items: list[Any] = [
        {"task": {"id": "t-raw", "contextId": "c-raw", "status": {"state": "TASK_STATE_WORKING"}}}
    ]
    for index in range(STREAM_CHUNKS):
        update: dict[str, Any] = {
            **ids,
            "artifact": {"artifactId": "a-raw", "name": "chunks", "parts": [{"text": f"{index},"}]},
        }
        if index:
            update["append"] = True
        if index == STREAM_CHUNKS - 1:
            update["lastChunk"] = True
        items.append({"artifactUpdate": update})
    items.append({"statusUpdate": {**ids, "status": {"state": "TASK_STATE_COMPLETED"}}})
    out = bytearray()
    for item in items:
        event = b"data: " + _envelope(request_id, item) + b"\r\n\r\n"
        out += b"%x\r\n%s\r\n" % (len(event), event)
    return bytes(out + b"0\r\n\r\n")


class _RawHTTP(asyncio.Protocol):
    """Keep-alive HTTP/1.1 with Content-Length request bodies; canned A2A 1.0 answers."""

    def __init__(self, card: bytes) -> None:
        self.card = card
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            end = head_end + 4 + length
            if len(self.buffer) < end:
                return
            body, self.buffer = self.buffer[head_end + 4 : end], self.buffer[end:]
            self._answer(head.split(" ", 1)[0], body)

    def _answer(self, method: str, body: bytes) -> None:
        assert self.transport is not None
        if method == "GET":
            self._write(b"application/json", self.card)
            return
        request = json.loads(body)
        if request["method"] == "SendStreamingMessage":
            head = (
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Cache-Control: no-store\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            self.transport.write(head + _stream_body(request["id"]))
            return
        message = {
            "role": "ROLE_AGENT",
            "messageId": "m-raw",
            "contextId": "c-raw",
            "parts": [{"text": REPLY_TEXT}],
        }
        self._write(b"application/json", _envelope(request["id"], {"message": message}))

    def _write(self, content_type: bytes, body: bytes) -> None:
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (content_type, len(body), body)
        )


def serve_raw() -> None:
    """Run the near-free server on 127.0.0.1 (free port, printed as ``PORT <n>``)."""
    # IPPROTO_TCP so asyncio turns Nagle off on accepted connections (it checks sock.proto).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    card = _raw_card(f"http://127.0.0.1:{port}/")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _RawHTTP(card), sock=sock)
        print(f"PORT {port}", flush=True)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())


@contextlib.contextmanager
def raw_server() -> Iterator[tuple[str, int]]:
    """Start :func:`serve_raw` in a subprocess; yield ``(base_url, pid)``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.a2a_client", "--serve-raw"],
        stdout=subprocess.PIPE,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().split()
        assert line[:1] == ["PORT"], f"raw server did not start: {line!r}"
        yield f"http://127.0.0.1:{line[1]}/", proc.pid
    finally:
        proc.terminate()
        proc.wait(5)


@contextlib.contextmanager
def sdk_server() -> Iterator[tuple[str, int]]:
    """Start the scripted a2a-sdk agent; yield ``(base_url, pid)``."""
    from tests.peers.fixtures import start_agent

    with start_agent() as agent:
        yield agent.url, agent.pid


# -- the clients ---------------------------------------------------------------------------------


def ours_variants(
    url: str, *, threaded_streams: bool = True
) -> tuple[Callable[[int], int], Callable[[int], int], Callable[[], None]]:
    from a2a_sync.client import A2AClient

    client = A2AClient.from_url(url, timeout=30, threaded_streams=threaded_streams)

    def unary(n: int) -> int:
        for _ in range(n):
            result = client.send_message("reply")
            assert result.text == REPLY_TEXT
        return n

    def stream(n: int) -> int:
        events = 0
        for _ in range(n):
            with client.stream_message(f"chunks {STREAM_CHUNKS}") as task_stream:
                for _event in task_stream:
                    events += 1
        return events

    return unary, stream, client.close


def requests_variants(
    url: str,
) -> tuple[Callable[[int], int], Callable[[int], int], Callable[[], None]]:
    import requests
    import sseclient

    session = requests.Session()
    headers = {"Content-Type": "application/json", "A2A-Version": "1.0"}
    ids = iter(range(1, 1 << 62))

    def body(method: str, text: str) -> bytes:
        params = {
            "message": {
                "role": "ROLE_USER",
                "messageId": str(uuid.uuid4()),
                "parts": [{"text": text}],
            }
        }
        request = {"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params}
        return json.dumps(request).encode()

    def unary(n: int) -> int:
        for _ in range(n):
            response = session.post(url, data=body("SendMessage", "reply"), headers=headers)
            result = response.json()["result"]
            assert result["message"]["parts"][0]["text"] == REPLY_TEXT
        return n

    stream_headers = {**headers, "Accept": "text/event-stream"}

    def stream(n: int) -> int:
        events = 0
        for _ in range(n):
            data = body("SendStreamingMessage", f"chunks {STREAM_CHUNKS}")
            with session.post(url, data=data, headers=stream_headers, stream=True) as response:
                for event in sseclient.SSEClient(response.iter_content(None)).events():
                    json.loads(event.data)
                    events += 1
        return events

    return unary, stream, session.close


def official_variants(
    url: str,
) -> tuple[Callable[[int], int], Callable[[int], int], Callable[[], None]]:
    from a2a.client import ClientConfig, create_client
    from a2a.types import Message, Part, Role, SendMessageRequest

    loop = asyncio.new_event_loop()
    unary_client = loop.run_until_complete(
        create_client(url, client_config=ClientConfig(streaming=False))
    )
    stream_client = loop.run_until_complete(
        create_client(url, client_config=ClientConfig(streaming=True))
    )

    def request(text: str) -> Any:
        message = Message(
            role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)]
        )
        return SendMessageRequest(message=message)

    async def unary_async(n: int) -> int:
        for _ in range(n):
            async for response in unary_client.send_message(request("reply")):
                assert response.message.parts[0].text == REPLY_TEXT
        return n

    async def stream_async(n: int) -> int:
        events = 0
        for _ in range(n):
            async for _response in stream_client.send_message(request(f"chunks {STREAM_CHUNKS}")):
                events += 1
        return events

    def close() -> None:
        loop.run_until_complete(unary_client.close())
        loop.run_until_complete(stream_client.close())
        loop.close()

    return (
        lambda n: loop.run_until_complete(unary_async(n)),
        lambda n: loop.run_until_complete(stream_async(n)),
        close,
    )


# -- running -------------------------------------------------------------------------------------

CLIENTS = {
    "ours": ours_variants,
    "ours-inline": lambda url: ours_variants(url, threaded_streams=False),
    "official": official_variants,
    "requests": requests_variants,
}
#: (compared, against, target ratio of CPU per operation) for the unary workload.
UNARY_TARGETS = [("ours", "requests", 1.15), ("ours", "official", 0.8)]
#: Target CPU µs per event for our streaming client.
STREAM_TARGET_US = 40.0


def paired_cpu_ratio(results: list[Result], name: str, base: str) -> float:
    """Median over repetitions of CPU-per-op(name) / CPU-per-op(base)."""
    by_name = {r.name: r for r in results}
    base_by_rep = {s.rep: s for s in by_name[base].samples}
    ratios = [
        (s.cpu / s.ops) / (base_by_rep[s.rep].cpu / base_by_rep[s.rep].ops)
        for s in by_name[name].samples
    ]
    return statistics.median(ratios)


def run_workload(
    server: str, url: str, pid: int, workload: str, *, n: int, reps: int
) -> tuple[list[Result], list[str]]:
    closers = []
    variants = []
    for name, build in CLIENTS.items():
        if workload == "unary" and name == "ours-inline":
            continue  # the stream reader mode does not touch unary calls
        unary, stream, close = build(url)
        closers.append(close)
        run = unary if workload == "unary" else stream
        variants.append(Variant(name, run, server_pid=pid))
    try:
        results = measure(variants, n=n, reps=reps, baseline="requests")
    finally:
        for close in closers:
            close()
    verdicts = []
    if workload == "unary":
        for name, base, target in UNARY_TARGETS:
            ratio = paired_cpu_ratio(results, name, base)
            ok = "met" if ratio <= target else "MISSED"
            verdicts.append(f"{server}: {name}/{base} CPU {ratio:.2f} (target <= {target}) {ok}")
    else:
        # The µs target is the pure client cost, measured against the near-free server
        # (performance-baseline.md: against a slow server every client pays extra
        # wake-ups); against the a2a-sdk server the comparison is with the other clients.
        for summary in summarize(results):
            if not str(summary["name"]).startswith("ours"):
                continue
            cpu = float(summary["cpu_us_per_op"] or 0)
            if server == "raw":
                ok = "met" if cpu <= STREAM_TARGET_US else "MISSED"
                verdict = f"(target <= {STREAM_TARGET_US}) {ok}"
            else:
                ratio = paired_cpu_ratio(results, str(summary["name"]), "official")
                verdict = f"= {ratio:.2f} x the official client"
            verdicts.append(f"{server}: {summary['name']} {cpu:.1f} µs/event {verdict}")
    return results, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--serve-raw", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--server", choices=["raw", "sdk", "both"], default="both")
    parser.add_argument("--workload", choices=["unary", "stream", "both"], default="both")
    parser.add_argument("--reps", type=int, default=5, help="repetitions")
    parser.add_argument("--n", type=int, default=200, help="unary requests per run")
    parser.add_argument("--streams", type=int, default=10, help="stream requests per run")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = parser.parse_args()
    if args.serve_raw:
        serve_raw()
        return
    servers = ["raw", "sdk"] if args.server == "both" else [args.server]
    workloads = ["unary", "stream"] if args.workload == "both" else [args.workload]
    out: list[dict[str, Any]] = []
    for server in servers:
        with raw_server() if server == "raw" else sdk_server() as (url, pid):
            for workload in workloads:
                n = args.n if workload == "unary" else args.streams
                results, verdicts = run_workload(server, url, pid, workload, n=n, reps=args.reps)
                unit = "request" if workload == "unary" else "event"
                title = (
                    f"A2A {workload} against the {server} server: ops = {unit}s "
                    f"(n={n} {'requests' if workload == 'unary' else 'streams'}/run, "
                    f"reps={args.reps}; medians, ratios paired per rep; base = requests)"
                )
                if args.json:
                    out.append(
                        {
                            "server": server,
                            "workload": workload,
                            "summaries": summarize(results),
                            "verdicts": verdicts,
                        }
                    )
                else:
                    print(render(results, title))
                    print("\n".join(verdicts))
                    print()
    if args.json:
        meta = {"python": platform.python_version(), "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
        json.dump({"meta": meta, "runs": out}, sys.stdout, indent=2)
        print()


if __name__ == "__main__":
    main()
