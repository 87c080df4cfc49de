"""Raw A2A JSON-RPC over HTTP for the conformance tests: no a2a_sync client code involved."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import requests

#: Bound on every HTTP exchange (generous for a loaded 2-core machine).
WAIT = 10.0
V1 = {"A2A-Version": "1.0"}
TERMINAL = frozenset(
    {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}
)


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> requests.Response:
    return requests.post(url, json=body, headers=headers or {}, timeout=WAIT)


def rpc(url: str, method: str, params: Any = None, *, version: str | None = "1.0") -> Any:
    """One JSON-RPC call; ``version`` is the ``A2A-Version`` header (None: no header)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        body["params"] = params
    response = post(url, body, {"A2A-Version": version} if version else {})
    assert response.status_code == 200, response.text
    return response.json()


def user(text: str, **fields: Any) -> dict[str, Any]:
    """A 1.0 user message."""
    return {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


def user03(text: str, **fields: Any) -> dict[str, Any]:
    """A 0.3 user message."""
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **fields,
    }


def send(url: str, message: dict[str, Any], **params: Any) -> dict[str, Any]:
    """SendMessage; the result (``{"task": ...}`` or ``{"message": ...}``)."""
    answer = rpc(url, "SendMessage", {"message": message, **params})
    assert "result" in answer, answer
    return dict(answer["result"])


def error_code(answer: Any) -> int | None:
    error = answer.get("error") if isinstance(answer, dict) else None
    return error.get("code") if isinstance(error, dict) else None


def data_lines(response: requests.Response) -> Iterator[Any]:
    """The parsed ``data:`` payloads of an SSE response, as they arrive."""
    for line in response.iter_lines(decode_unicode=True):
        if line.startswith("data:"):
            yield json.loads(line[5:])


def stream(
    url: str, method: str, params: Any, *, version: str | None = "1.0", request_id: Any = 9
) -> requests.Response:
    """Open a streaming call (the caller closes the response)."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    headers = {"A2A-Version": version} if version else {}
    return requests.post(url, json=body, headers=headers, stream=True, timeout=WAIT)


def kind(event: dict[str, Any]) -> str:
    """Which member of a 1.0 StreamResponse is set."""
    members = [k for k in ("task", "message", "statusUpdate", "artifactUpdate") if k in event]
    assert len(members) == 1, event
    return members[0]


def started(url: str, text: str) -> dict[str, Any]:
    """A task sent with ``returnImmediately`` (still running when it comes back)."""
    result = send(url, user(text), configuration={"returnImmediately": True})
    return dict(result["task"])
