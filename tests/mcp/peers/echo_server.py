"""A framework-free MCP stdio server for benchmarks and fault cases (no SDK imported).

Speaks the legacy handshake (and with ``--modern`` also the 2026-07-28 envelope). Tools:

* ``echo`` {text}: returns the text (and ``structuredContent`` {"text": ...}).
* ``sleep`` {seconds}: answers after a delay.  ``hang``: never answers.
* ``die`` {code}: writes to stderr and exits with ``code`` at once (pending calls unanswered).
* ``progress`` {steps, delay}: sends progress notifications, then answers.
* ``garbage``: writes a non-JSON line to stdout, then answers.
* ``huge`` {size}: writes one line of ``size`` bytes without a newline (and stalls).
* ``sample``: asks the client for ``sampling/createMessage`` and returns its text.
* ``spawn``: starts a grandchild (same process group) that sleeps, returns its pid.
* ``env``: returns its environment, cwd, pid and process group id.
* ``flood`` {count}: writes ``count`` 1 KiB log notifications, then answers.

Start-up flags: ``--exit-code N`` (exit at once), ``--ignore-eof``, ``--ignore-sigterm``,
``--stderr-flood BYTES``, ``--grandchild-holds-stdout`` (with ``die``: the pipe stays open),
``--no-discover-reply`` (ignore unknown methods: the era probe times out),
``--pin-era`` (like python-sdk servers: the first message fixes the era; answers discover
with -32601 but then refuses initialize), ``--crlf`` (CRLF line ends),
``--pid-file PATH`` (write our pid there).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

out = sys.stdout.buffer
args: argparse.Namespace
NL = b"\n"


def write(obj: dict[str, Any]) -> None:
    out.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + NL)
    out.flush()


def reply(request_id: Any, result: Any) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id: Any, code: int, message: str, data: Any = None) -> None:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    write({"jsonrpc": "2.0", "id": request_id, "error": err})


TOOLS = [
    {
        "name": "echo",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "outputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {"name": "sleep", "inputSchema": {"type": "object"}},
    {"name": "hang", "inputSchema": {"type": "object"}},
    {"name": "die", "inputSchema": {"type": "object"}},
    {"name": "progress", "inputSchema": {"type": "object"}},
    {"name": "garbage", "inputSchema": {"type": "object"}},
    {"name": "huge", "inputSchema": {"type": "object"}},
    {"name": "sample", "inputSchema": {"type": "object"}},
    {"name": "spawn", "inputSchema": {"type": "object"}},
    {"name": "env", "inputSchema": {"type": "object"}},
    {"name": "flood", "inputSchema": {"type": "object"}},
    {
        "name": "bad_output",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "required": ["n"],
            "properties": {"n": {"type": "integer"}},
        },
    },
]

CAPS = {"tools": {"listChanged": False}}
INFO = {"name": "echo-server", "version": "1.0"}


def text_result(text: str, structured: Any = None) -> dict[str, Any]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def call_tool(request_id: Any, params: dict[str, Any], pending_samples: dict[Any, Any]) -> None:  # noqa: PLR0912 - the peer's tool table
    name = params.get("name")
    arguments = params.get("arguments") or {}
    if name == "echo":
        text = arguments.get("text", "")
        reply(request_id, text_result(text, {"text": text}))
    elif name == "sleep":
        time.sleep(float(arguments.get("seconds", 0.1)))
        reply(request_id, text_result("slept"))
    elif name == "hang":
        return
    elif name == "die":
        sys.stderr.write("fatal: asked to die\n")
        sys.stderr.flush()
        os._exit(int(arguments.get("code", 3)))
    elif name == "progress":
        token = (params.get("_meta") or {}).get("progressToken")
        steps = int(arguments.get("steps", 3))
        for n in range(1, steps + 1):
            if token is not None:
                write(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": n, "total": steps},
                    }
                )
            time.sleep(float(arguments.get("delay", 0.0)))
        reply(request_id, text_result("done"))
    elif name == "garbage":
        out.write(b"this is not json\n")
        out.write(b"[1, 2, 3]\n")
        out.flush()
        reply(request_id, text_result("after garbage"))
    elif name == "huge":
        out.write(b"x" * int(arguments.get("size", 1 << 20)))
        out.flush()
    elif name == "sample":
        sample_id = f"s-{request_id}"
        pending_samples[sample_id] = request_id
        write(
            {
                "jsonrpc": "2.0",
                "id": sample_id,
                "method": "sampling/createMessage",
                "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                    "maxTokens": 5,
                },
            }
        )
    elif name == "spawn":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        reply(request_id, text_result(str(child.pid), {"pid": child.pid}))
    elif name == "env":
        info = {
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "pgid": os.getpgid(0),
            "pid": os.getpid(),
        }
        reply(request_id, text_result(json.dumps(info), info))
    elif name == "flood":
        for n in range(int(arguments.get("count", 1000))):
            write(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "x" * 1024, "logger": str(n)},
                }
            )
        reply(request_id, text_result("flooded"))
    elif name == "bad_output":
        reply(request_id, text_result("{}", {"n": "not a number"}))
    else:
        reply(
            request_id,
            {"content": [{"type": "text", "text": f"Unknown tool: {name}"}], "isError": True},
        )


def main() -> None:  # noqa: PLR0912, PLR0915 - a scripted peer: its options and method switch
    global args, NL
    parser = argparse.ArgumentParser()
    parser.add_argument("--modern", action="store_true")
    parser.add_argument("--exit-code", type=int)
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--stderr-flood", type=int, default=0)
    parser.add_argument("--grandchild-holds-stdout", action="store_true")
    parser.add_argument("--no-discover-reply", action="store_true")
    parser.add_argument("--pin-era", action="store_true")
    parser.add_argument("--crlf", action="store_true")
    parser.add_argument("--pid-file")
    args = parser.parse_args()
    if args.crlf:
        NL = b"\r\n"
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))
    if args.exit_code is not None:
        sys.stderr.write("cannot start: bad configuration\n")
        sys.exit(args.exit_code)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.grandchild_holds_stdout:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    if args.stderr_flood:
        sys.stderr.write("e" * args.stderr_flood + "\n")
        sys.stderr.flush()
    era: str | None = None
    pending_samples: dict[Any, Any] = {}
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            break
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        if method is None:  # a response from the client (sampling answer)
            origin = pending_samples.pop(request_id, None)
            if origin is not None:
                text = message.get("result", {}).get("content", {}).get("text", "?")
                reply(origin, text_result(text))
            continue
        if args.pin_era and era is None:
            era = "legacy" if method == "initialize" else "modern"
        if method == "initialize":
            if args.pin_era and era == "modern":
                error(
                    request_id,
                    -32022,
                    "the initialize handshake is not accepted",
                    {"supported": ["2026-07-28"], "requested": "2025-11-25"},
                )
                continue
            version = params.get("protocolVersion")
            reply(
                request_id,
                {
                    "protocolVersion": version if version else "2025-11-25",
                    "capabilities": CAPS,
                    "serverInfo": INFO,
                },
            )
        elif method == "server/discover" and args.modern:
            reply(
                request_id,
                {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": CAPS,
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
                },
            )
        elif method == "tools/list":
            result: dict[str, Any] = {"tools": TOOLS}
            if args.modern and "_meta" in params:
                result.update(resultType="complete", ttlMs=60000, cacheScope="private")
            reply(request_id, result)
        elif method == "tools/call":
            call_tool(request_id, params, pending_samples)
        elif method == "ping":
            reply(request_id, {})
        elif method.startswith("notifications/") or args.no_discover_reply:
            continue
        else:
            error(request_id, -32601, "Method not found")
    if args.ignore_eof:
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
