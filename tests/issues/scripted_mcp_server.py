"""A scripted MCP stdio server for the issue 14/21 regression tests (no SDK imported).

Flags:
``--discover-supported JSON``: answer ``server/discover`` at a version not in the JSON list
with ``-32022`` naming the list, at a listed modern version with a discover result.
``--dual-era``: the discover result lists ``2025-11-25`` too.
``--no-discover-reply``: ignore ``server/discover`` (the probe times out).
``--initialize-garbage``: answer ``initialize`` with ``{}`` (no protocolVersion).
``--initialize-unknown``: answer ``initialize`` with ``-32601``.
``--counter-offer V``: answer ``initialize`` with protocol version ``V``.
``--silent``: never answer anything, ignore stdin EOF and SIGTERM.
``--stdout-noise N``: write N non-JSON lines to stdout at start.
``--probe-burst N``: answer ``server/discover`` like mcp 1.x: N stderr lines about it,
then ``-32602``.
``--stderr-line BYTES``: write one stderr line of BYTES bytes of U+2500 at start.
``--exit-after-stderr``: exit 3 right after the start-up stderr output.

Tool ``progress``: returns whether the request carried ``_meta.progressToken``; with one,
sends 8 progress notifications 0.3 s apart first (2.4 s in all).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any

INFO = {"name": "scripted", "version": "1"}
MODERN = "2026-07-28"


def write(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def reply(request_id: Any, result: dict[str, Any]) -> None:
    write({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id: Any, code: int, message: str, data: Any = None) -> None:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    write({"jsonrpc": "2.0", "id": request_id, "error": err})


def main() -> None:  # noqa: PLR0912, PLR0915 - a scripted peer: one branch per scripted fault
    parser = argparse.ArgumentParser()
    parser.add_argument("--discover-supported")
    parser.add_argument("--dual-era", action="store_true")
    parser.add_argument("--no-discover-reply", action="store_true")
    parser.add_argument("--initialize-garbage", action="store_true")
    parser.add_argument("--initialize-unknown", action="store_true")
    parser.add_argument("--counter-offer")
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--stdout-noise", type=int, default=0)
    parser.add_argument("--probe-burst", type=int, default=0)
    parser.add_argument("--stderr-line", type=int, default=0)
    parser.add_argument("--exit-after-stderr", action="store_true")
    args = parser.parse_args()
    for i in range(args.stdout_noise):
        sys.stdout.write(f"Starting server... step {i}\n")
    sys.stdout.flush()
    if args.stderr_line:
        sys.stderr.buffer.write("─".encode() * (args.stderr_line // 3) + b"\n")
        sys.stderr.flush()
    if args.exit_after_stderr:
        sys.exit(3)
    if args.silent:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(60)
    supported = json.loads(args.discover_supported) if args.discover_supported else None
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params") or {}
        meta = params.get("_meta") or {}
        if method == "server/discover":
            if args.no_discover_reply:
                continue
            if args.probe_burst:
                sys.stderr.write("Failed to validate request: validation errors\n")
                for i in range(args.probe_burst - 1):
                    sys.stderr.write(f"  error {i}: input_value='server/discover'\n")
                sys.stderr.flush()
                error(request_id, -32602, "Invalid request parameters", "")
                continue
            asked = meta.get("io.modelcontextprotocol/protocolVersion")
            if supported is None or asked not in supported:
                error(
                    request_id,
                    -32022,
                    "Unsupported protocol version",
                    {"supported": supported or [], "requested": asked},
                )
                continue
            versions = [*supported, "2025-11-25"] if args.dual_era else supported
            reply(
                request_id,
                {
                    "resultType": "complete",
                    "supportedVersions": versions,
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
                },
            )
        elif method == "initialize":
            if args.initialize_garbage:
                reply(request_id, {})
            elif args.initialize_unknown:
                error(request_id, -32601, "Method not found")
            else:
                reply(
                    request_id,
                    {
                        "protocolVersion": args.counter_offer or params.get("protocolVersion"),
                        "capabilities": {"tools": {}},
                        "serverInfo": INFO,
                    },
                )
        elif method == "tools/call":
            token = meta.get("progressToken")
            if token is not None:
                for step in range(8):
                    time.sleep(0.3)
                    write(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": step + 1, "total": 8},
                        }
                    )
            text = "token" if token is not None else "no token"
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
            if "io.modelcontextprotocol/protocolVersion" in meta:
                result["resultType"] = "complete"
            reply(request_id, result)
        elif method == "tools/list":
            reply(request_id, {"tools": []})
        elif request_id is not None and method is not None:
            error(request_id, -32601, "Method not found")


if __name__ == "__main__":
    main()
