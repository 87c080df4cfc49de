"""A minimal MCP stdio server (2025-11-25 handshake) that records the raw bytes it reads.

Run: ``python raw_mcp_server.py RECORD VERSION [REQUESTS]``. Every line read from stdin
is appended to RECORD unchanged (so a test sees exactly what the client wrote).
``initialize`` is answered with VERSION (an unsupported one for the version-mismatch
test; ``silent`` never answers it, for the handshake-timeout test). It logs a line to
stderr at start. After ``notifications/initialized`` it sends the client a ``ping``, a
request for an unknown method and the REQUESTS given (a JSON object: id -> {"method",
"params"}), and holds back its answers to later requests until the client answered all
of them, so the record is complete once the client's next call returns.
"""

from __future__ import annotations

import json
import sys
from typing import Any


def main() -> None:
    record, version = sys.argv[1], sys.argv[2]
    extra: dict[str, Any] = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    requests = {
        "srv-ping": {"method": "ping"},
        "srv-unknown": {"method": "no/such-method"},
        **extra,
    }
    sys.stderr.write("raw server: starting (a log line on stderr)\n")
    sys.stderr.flush()
    answered: set[Any] = set()
    held: list[dict[str, Any]] = []
    for line in sys.stdin.buffer:
        with open(record, "ab") as out:
            out.write(line)
        message = json.loads(line)
        if "method" not in message:  # the client's answer to one of our requests
            answered.add(message.get("id"))
        elif message["method"] == "notifications/initialized":
            for request_id, request in requests.items():
                send({"jsonrpc": "2.0", "id": request_id, **request})
        elif message["method"] == "initialize":
            if version != "silent":
                send(answer(message, version))
        elif "id" in message:
            held.append(answer(message, version))
        if held and answered >= set(requests):
            for reply in held:
                send(reply)
            held.clear()


def answer(message: dict[str, Any], version: str) -> dict[str, Any]:
    method = message["method"]
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": [{"name": "say", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": message["params"]["arguments"]["text"]}]}
    else:
        error = {"code": -32601, "message": "Method not found"}
        return {"jsonrpc": "2.0", "id": message["id"], "error": error}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
