"""A fake A2A agent for ``responses``: records JSON-RPC requests, answers from a script.

Only for request-shape and status-code tests; behaviour is proven against the a2a-sdk
peer (test_client_interop.py)::

    agent = FakeAgent(rsps)                       # card + JSON-RPC endpoint
    agent.results["GetTask"] = TASK_1_0          # result per method (or a callable)
    client = A2AClient.from_url(agent.base_url)
    client.get_task("t1")
    assert agent.calls[-1].method == "GetTask"
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import responses
from requests import PreparedRequest

BASE_URL = "https://agent.test"
RPC_URL = f"{BASE_URL}/rpc"
CARD_URL = f"{BASE_URL}/.well-known/agent-card.json"

TASK_1_0: dict[str, Any] = {
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "TASK_STATE_COMPLETED"},
    "artifacts": [{"artifactId": "a1", "parts": [{"text": "done"}]}],
}
TASK_0_3: dict[str, Any] = {
    "kind": "task",
    "id": "t1",
    "contextId": "c1",
    "status": {"state": "completed"},
    "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "done"}]}],
}


def card_json(*interfaces: tuple[str, str, str], **extra: Any) -> dict[str, Any]:
    """A 1.0 agent card listing ``(url, binding, version)`` interfaces in order."""
    return {
        "name": "Fake",
        "description": "a fake agent",
        "version": "1.0.0",
        "capabilities": {"streaming": True, "pushNotifications": True},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
        "supportedInterfaces": [
            {"url": url, "protocolBinding": binding, "protocolVersion": version}
            for url, binding, version in interfaces
        ],
        **extra,
    }


@attrs.frozen
class RPCCall:
    """One JSON-RPC request the fake agent received."""

    method: str
    params: Any
    id: Any
    headers: Mapping[str, str]
    body: dict[str, Any]


Result = Any | Callable[[RPCCall], Any]


class FakeAgent:
    """Serves a card and a JSON-RPC endpoint through a ``responses`` mock.

    ``results`` maps a method name to its ``result`` (or to a callable building it from
    the call); ``events`` maps a streaming method to the list of stream ``result``
    items, sent as SSE with the request's id.
    """

    def __init__(
        self,
        rsps: responses.RequestsMock,
        card: dict[str, Any] | None = None,
        *,
        rpc_url: str = RPC_URL,
    ) -> None:
        self.rsps = rsps
        self.rpc_url = rpc_url
        self.base_url = BASE_URL
        self.card = card if card is not None else card_json((rpc_url, "JSONRPC", "1.0"))
        self.calls: list[RPCCall] = []
        self.results: dict[str, Result] = {}
        self.events: dict[str, list[Any]] = {}
        rsps.add(responses.GET, CARD_URL, json=self.card, headers={"ETag": 'W/"v1"'})
        rsps.add_callback(responses.POST, rpc_url, callback=self._answer)

    def _answer(self, request: PreparedRequest) -> tuple[int, dict[str, str], str]:
        assert request.body is not None
        body = json.loads(request.body)
        call = RPCCall(body["method"], body.get("params"), body["id"], request.headers, body)
        self.calls.append(call)
        if call.method in self.events:
            data = "".join(
                "data: " + json.dumps({"jsonrpc": "2.0", "id": call.id, "result": item}) + "\n\n"
                for item in self.events[call.method]
            )
            return 200, {"Content-Type": "text/event-stream"}, data
        result = self.results.get(call.method, {})
        if callable(result):
            result = result(call)
        envelope = {"jsonrpc": "2.0", "id": call.id, "result": result}
        return 200, {"Content-Type": "application/json"}, json.dumps(envelope)
