"""MCP client: a2a_sync vs the official ``mcp`` client (and a minimal raw client on stdio).

Every variant makes sequential ``tools/call`` round trips over stdio, against
(a) the framework-free echo server (``tests/mcp/peers/echo_server.py``), which isolates
client cost, and (b) the official ``MCPServer`` (``tests/mcp/peers/mcpserver_peer.py``).
Variants run interleaved in one process (``benchmarks/harness.py``); CPU µs/op is this
process's CPU (all threads: our reader, the official client's event loop thread).

* ``raw``: 30 lines, one thread: write a line, read the next line (the pipe+JSON floor).
* ``ours``: ``MCPClient.call_tool`` (id routing; the waiting caller reads its own answer
  from the pipe, see docs/decisions.md §17; typed result, output validated against the
  tool's ``outputSchema``).
* ``ours-reader``: the same with leading switched off: the reader thread reads every
  answer and hands it to the caller (the design before §17), for comparison.
* ``official``: ``mcp.ClientSession`` over ``stdio_client`` (asyncio on a loop thread).

Then connection start: spawn + negotiate + first call, median of ``--starts`` runs.

``--target http`` instead runs the official ``MCPServer`` over Streamable HTTP (one
uvicorn process on 127.0.0.1) and compares ``MCPConnection.http`` with the official
``mcp.Client(url)`` and the floor, ``raw``: the same POST (same headers and body) sent by
bare ``http.client`` on one kept-alive connection, its JSON or event-stream answer parsed
by hand; one table per era: legacy (session, answers as event streams) and modern
2026-07-28 (stateless, JSON answers); ``ours-worker`` is ours with every request run by
a worker thread (the design before docs/decisions.md §17), for comparison. CPU µs/op is
this process's CPU per call.

Run from the repo top::

    .venv/bin/python -m benchmarks.mcp_client                   # both stdio servers
    .venv/bin/python -m benchmarks.mcp_client --target echo --reps 7 --n 5000
    .venv/bin/python -m benchmarks.mcp_client --target http     # Streamable HTTP
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from a2a_sync.mcp import MCPConnection
from a2a_sync.mcp.eras import ERA_CACHE
from benchmarks.harness import Variant, run_cli

PEERS = Path(__file__).parents[1] / "tests" / "mcp" / "peers"
ECHO = [sys.executable, str(PEERS / "echo_server.py")]
SDK = [sys.executable, str(PEERS / "mcpserver_peer.py")]
# tool name, arguments, expected text: the same call for every client
CALLS = {
    "echo": ("echo", {"text": "hello"}, "hello"),
    "mcpserver": ("echo", {"text": "hello"}, "hello"),
}


class RawClient:
    """The reference: no threads, no models, 'the next line is my answer'."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        assert self.proc.stdout is not None
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("id") == self.next_id:
                return message["result"]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(5)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


class OfficialClient:
    """The official async client, driven from this thread through a loop thread."""

    def __init__(self, argv: list[str]) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.session: Any = None
        self.runner = asyncio.run_coroutine_threadsafe(self._main(argv), self.loop)
        if not self.ready.wait(30):
            raise RuntimeError(f"official client did not start: {self.runner}")

    async def _main(self, argv: list[str]) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(command=argv[0], args=argv[1:])
        self.stop = asyncio.Event()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            self.session = session
            self.ready.set()
            await self.stop.wait()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(300)

    def close(self) -> None:
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.runner.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class OfficialHTTPClient(OfficialClient):
    """The official ``mcp.Client`` over Streamable HTTP, on a loop thread."""

    def __init__(self, url: str, mode: str) -> None:
        self.mode = mode
        super().__init__([url])

    async def _main(self, argv: list[str]) -> None:
        from mcp import Client

        self.stop = asyncio.Event()
        async with Client(argv[0], mode=self.mode) as client:  # type: ignore[arg-type]
            self.session = client
            self.ready.set()
            await self.stop.wait()


class RawHTTPClient:
    """The HTTP floor: ``http.client`` POSTs of the request ``conn`` would send (headers,
    ``_meta`` envelope and session id copied once from it), answers parsed by hand."""

    def __init__(self, url: str, conn: MCPConnection, name: str, arguments: Any) -> None:
        host, _, rest = url.removeprefix("http://").partition("/")
        self.path = "/" + rest
        hostname, _, port = host.partition(":")
        self.http = http.client.HTTPConnection(hostname, int(port))
        session = conn.session
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if session._base_meta is not None:
            params["_meta"] = dict(session._base_meta)
        self.params = params
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **session._outgoing("request", "tools/call", 0, params, False).headers,
        }
        session_id = getattr(conn.transport, "_session", None)
        if session_id is not None and session_id.id is not None:
            self.headers["Mcp-Session-Id"] = session_id.id
        self.next_id = 0

    def call(self) -> Any:
        self.next_id += 1
        body = json.dumps(
            {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call", "params": self.params}
        )
        try:
            self.http.request("POST", self.path, body, self.headers)
            response = self.http.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # uvicorn drops a connection idle for 5 s (while another variant ran)
            self.http.close()
            self.http.request("POST", self.path, body, self.headers)
            response = self.http.getresponse()
        data = response.read()
        if response.getheader("Content-Type", "").startswith("text/event-stream"):
            for line in data.split(b"\n"):
                if line.startswith(b"data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    if message.get("id") == self.next_id:
                        return message["result"]
            raise AssertionError("no answer in the event stream")
        return json.loads(data)["result"]

    def close(self) -> None:
        self.http.close()


def http_variants(url: str, era: str, server_pid: int) -> tuple[list[Variant], Callable[[], None]]:
    """ours vs official vs raw http.client over Streamable HTTP in one era."""
    name, arguments, expected = CALLS["mcpserver"]
    conn = MCPConnection.http(url, era=era)
    ours = conn.client()
    conn_worker = MCPConnection.http(url, era=era)
    ours_worker = conn_worker.client()
    send = conn_worker.session._send

    def send_by_worker(message: dict[str, Any], context: Any = None) -> None:
        if context is not None:
            context.inline = False  # the design before §17: a worker POSTs, reads, wakes us
        send(message, context)

    conn_worker.session._send = send_by_worker
    raw = RawHTTPClient(url, conn, name, arguments)
    official = OfficialHTTPClient(url, "legacy" if era == "legacy" else "2026-07-28")

    def run_raw(n: int) -> int:
        for _ in range(n):
            result = raw.call()
        assert result["content"][0]["text"] == expected
        return n

    def run_ours(n: int) -> int:
        for _ in range(n):
            result = ours.call_tool(name, arguments)
        assert result.text == expected
        return n

    def run_ours_worker(n: int) -> int:
        for _ in range(n):
            result = ours_worker.call_tool(name, arguments)
        assert result.text == expected
        return n

    async def official_calls(n: int) -> Any:
        for _ in range(n):
            result = await official.session.call_tool(name, arguments)
        return result

    def run_official(n: int) -> int:
        result = official.run(official_calls(n))
        assert result.content[0].text == expected
        return n

    variants = [
        Variant("raw", run_raw, server_pid=server_pid),
        Variant("ours", run_ours, server_pid=server_pid),
        Variant("ours-worker", run_ours_worker, server_pid=server_pid),
        Variant("official", run_official, server_pid=server_pid),
    ]

    def cleanup() -> None:
        raw.close()
        conn.close()
        conn_worker.close()
        official.close()

    return variants, cleanup


def run_http(rest: list[str]) -> None:
    proc = subprocess.Popen(
        [*SDK, "http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().split()[1]  # "PORT <n>", printed once bound
        url = f"http://127.0.0.1:{port}/mcp"
        for era in ("legacy", "modern"):
            variants, cleanup = http_variants(url, era, proc.pid)
            try:
                run_cli(
                    variants,
                    baseline="raw",
                    default_n=300,
                    title=f"MCP Streamable HTTP tools/call against MCPServer, {era} era",
                    argv=rest,
                )
            finally:
                cleanup()
            print()
    finally:
        proc.terminate()
        proc.wait(10)
        assert proc.stdout is not None
        proc.stdout.close()


def variants_for(target: str) -> tuple[list[Variant], Callable[[], None]]:
    argv = ECHO if target == "echo" else SDK
    name, arguments, expected = CALLS[target]
    raw = RawClient(argv)
    conn = MCPConnection.stdio(argv, era="legacy", stderr=None)
    ours = conn.client()
    conn_reader = MCPConnection.stdio(argv, era="legacy", stderr=None)
    conn_reader.session._calls.lead = None  # callers wait; the reader thread reads
    ours_reader = conn_reader.client()
    official = OfficialClient(argv)

    def run_raw(n: int) -> int:
        params = {"name": name, "arguments": arguments}
        for _ in range(n):
            result = raw.request("tools/call", params)
        assert result["content"][0]["text"] == expected
        return n

    def run_ours(n: int) -> int:
        for _ in range(n):
            result = ours.call_tool(name, arguments)
        assert result.text == expected
        return n

    def run_ours_reader(n: int) -> int:
        for _ in range(n):
            result = ours_reader.call_tool(name, arguments)
        assert result.text == expected
        return n

    async def official_calls(n: int) -> Any:
        session = official.session
        for _ in range(n):
            result = await session.call_tool(name, arguments)
        return result

    def run_official(n: int) -> int:
        result = official.run(official_calls(n))
        assert result.content[0].text == expected
        return n

    variants = [
        Variant("raw", run_raw, server_pid=raw.proc.pid),
        Variant("ours", run_ours, server_pid=conn.transport.pid),  # type: ignore[attr-defined]
        Variant("ours-reader", run_ours_reader, server_pid=conn_reader.transport.pid),  # type: ignore[attr-defined]
        Variant("official", run_official, baseline="raw"),
    ]

    def cleanup() -> None:
        raw.close()
        conn.close()
        conn_reader.close()
        official.close()

    return variants, cleanup


def time_starts(argv: list[str], runs: int) -> dict[str, float]:
    """Median ms from spawn to the first answered tools/call, per client."""

    def raw_start() -> None:
        client = RawClient(argv)
        client.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
        client.close()

    def ours_start(era: str) -> Callable[[], None]:
        def start() -> None:
            with MCPConnection.stdio(argv, era=era, stderr=None) as conn:
                conn.client().call_tool("echo", {"text": "x"})

        return start

    def ours_auto_first() -> None:
        ERA_CACHE.clear()  # pay the discover probe every time
        ours_start("auto")()

    def official_start() -> None:
        client = OfficialClient(argv)
        client.run(client.session.call_tool("echo", {"text": "x"}))
        client.close()

    contenders = {
        "raw": raw_start,
        "ours (legacy pinned)": ours_start("legacy"),
        "ours (auto, era cached)": ours_start("auto"),
        "ours (auto, probe)": ours_auto_first,
        "official": official_start,
    }
    samples: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(runs):
        for label, start in contenders.items():
            t0 = time.perf_counter()
            start()
            samples[label].append((time.perf_counter() - t0) * 1000)
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--target", choices=["echo", "mcpserver", "both", "http"], default="both")
    parser.add_argument("--starts", type=int, default=7, help="connection starts to time")
    args, rest = parser.parse_known_args()
    if args.target == "http":
        run_http(rest)
        return
    targets = ["echo", "mcpserver"] if args.target == "both" else [args.target]
    for target in targets:
        variants, cleanup = variants_for(target)
        try:
            run_cli(
                variants,
                baseline="raw",
                default_n=3000 if target == "echo" else 300,
                title=f"MCP stdio tools/call against the {target} server",
                argv=rest,
            )
        finally:
            cleanup()
        print()
    print(f"connection start, spawn to first answered call (median of {args.starts}, ms)")
    for label, ms in time_starts(ECHO, args.starts).items():
        print(f"  echo server       {label:<26} {ms:7.1f}")


if __name__ == "__main__":
    main()
