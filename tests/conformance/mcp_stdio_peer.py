"""A scripted MCP stdio server (either era) that records every line it reads.

Run: ``python mcp_stdio_peer.py RECORD PLAN``; PLAN is a JSON object:

``version``       the revision it speaks (``"2025-11-25"``: answers ``initialize``;
                  ``"2026-07-28"``: answers ``server/discover``, results carry
                  ``resultType``).
``capabilities``  the server capabilities it declares.
``greeting``      messages sent right after ``notifications/initialized`` (legacy).
``replies``       method -> list of steps, used in order (the last one repeats). A step is
                  ``{"send": [messages], "result": ..., "error": ..., "hold": bool}``:
                  the ``send`` messages go out first (``"$id"`` in them is replaced by the
                  request's id, ``"$token"`` by its progress token, ``"$last:M"`` by
                  the id of the previous request for method M); a ``send`` request
                  (one with an ``id``) holds the reply until the client answered it;
                  ``hold`` never answers. A method without a step gets -32601
                  (``ping`` gets ``{}``).
``ignore_eof``    keep running after stdin closes (for the shutdown escalation).
``ignore_term``   record SIGTERM and keep running.

Every line read is appended to RECORD unchanged; ``{"event": "eof"}`` and
``{"event": "sigterm"}`` lines are appended when those happen, so a test sees the whole
exchange in order.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import Any

MODERN = "2026-07-28"


def main() -> None:
    record, plan = sys.argv[1], json.loads(sys.argv[2])
    out = open(record, "ab")  # noqa: SIM115 - open for the life of the process

    def note(event: str) -> None:
        out.write(json.dumps({"event": event}).encode() + b"\n")
        out.flush()

    if plan.get("ignore_term"):
        signal.signal(signal.SIGTERM, lambda *_: note("sigterm"))
    steps: dict[str, list[dict[str, Any]]] = plan.get("replies", {})
    used: dict[str, int] = {}
    last: dict[str, Any] = {}
    waiting: list[tuple[set[Any], dict[str, Any]]] = []
    for line in sys.stdin.buffer:
        out.write(line)
        out.flush()
        message = json.loads(line)
        if "method" not in message:  # an answer to one of our requests
            for ids, _reply in waiting:
                ids.discard(message.get("id"))
            for _ids, held in [w for w in waiting if not w[0]]:
                send(held)
            waiting = [w for w in waiting if w[0]]
            continue
        method = message["method"]
        if method == "notifications/initialized":
            for greeting in plan.get("greeting", []):
                send(greeting)
        if "id" not in message:
            continue
        reply, asked = answer(plan, message, steps, used, last)
        last[method] = message["id"]
        if reply is None:
            continue
        if asked:
            waiting.append((asked, reply))
        else:
            send(reply)
    note("eof")
    if plan.get("ignore_eof"):
        threading.Event().wait()  # until a signal ends the process


def answer(
    plan: dict[str, Any],
    message: dict[str, Any],
    steps: dict[str, list[dict[str, Any]]],
    used: dict[str, int],
    last: dict[str, Any],
) -> tuple[dict[str, Any] | None, set[Any]]:
    """The reply to ``message`` (None: held forever) and the ids it waits for."""
    method, request_id = message["method"], message["id"]
    version = plan["version"]
    if method == "initialize":
        result = {
            "protocolVersion": version,
            "capabilities": plan.get("capabilities", {}),
            "serverInfo": {"name": "peer", "version": "0"},
        }
        return {"jsonrpc": "2.0", "id": request_id, "result": result}, set()
    if method == "server/discover" and version == MODERN and method not in steps:
        result = {
            "resultType": "complete",
            "supportedVersions": [MODERN],
            "capabilities": plan.get("capabilities", {}),
            "serverInfo": {"name": "peer", "version": "0"},
            "ttlMs": 0,
            "cacheScope": "private",
        }
        return {"jsonrpc": "2.0", "id": request_id, "result": result}, set()
    if method == "ping" and method not in steps:
        return {"jsonrpc": "2.0", "id": request_id, "result": {}}, set()
    if method not in steps:
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}, set()
    index = used.get(method, 0)
    used[method] = index + 1
    step = steps[method][min(index, len(steps[method]) - 1)]
    token = ((message.get("params") or {}).get("_meta") or {}).get("progressToken")
    asked: set[Any] = set()
    for item in step.get("send", []):
        filled = fill(item, {"$id": request_id, "$token": token, **_previous(last)})
        if "id" in filled and "method" in filled:
            asked.add(filled["id"])
        send(filled)
    if step.get("hold"):
        return None, set()
    if "error" in step:
        return {"jsonrpc": "2.0", "id": request_id, "error": step["error"]}, asked
    result = dict(step.get("result", {}))
    if version == MODERN:
        result.setdefault("resultType", "complete")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}, asked


def _previous(last: dict[str, Any]) -> dict[str, Any]:
    return {f"$last:{method}": request_id for method, request_id in last.items()}


def fill(value: Any, names: dict[str, Any]) -> Any:
    if isinstance(value, str) and value in names:
        return names[value]
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    return value


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
