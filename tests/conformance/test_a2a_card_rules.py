"""A2A 1.0 card and version rules beyond the basics of :mod:`.test_a2a_server_rules`: the
versions a card declares (§3.6, §3.6.2), every binding declared (§5.2), version
negotiation per request (§3.6.2) and the extended card's access control (§13.3).

Tests run against a2a_sync's server and (``peer``) the official a2a-sdk 1.3.0 server,
unless their docstring says why they cannot.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest
import requests

from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from tests.server.agents import card

from .a2a_wire import V1, WAIT, error_code, post, rpc, user
from .agents import ConformanceAgent

requirement = pytest.mark.requirement
CARD = ".well-known/agent-card.json"


def interfaces(base: str) -> list[dict[str, Any]]:
    return list(requests.get(base + CARD, timeout=WAIT).json()["supportedInterfaces"])


@requirement("a2a-1.0-§3.6.2-protocol-versions-declared")
@requirement("a2a-1.0-§3.6.2-each-0x-version-listed")
def test_the_card_declares_each_version_it_serves(a2a_server: str) -> None:
    """The card names 1.0 and, because 0.3 is served too, 0.3 explicitly, each on an
    interface (the proto's ``AgentInterface.protocolVersion``), and both are served."""
    versions = {i["protocolVersion"] for i in interfaces(a2a_server)}
    assert {"1.0", "0.3"} <= versions
    assert "result" in rpc(a2a_server, "ListTasks", {})
    assert error_code(rpc(a2a_server, "tasks/get", {"id": "none"}, version=None)) == -32001


@requirement("a2a-1.0-§3.6-no-patch-version-in-card")
def test_card_versions_carry_no_patch_number(a2a_server: str) -> None:
    """Every version the card states is ``Major.Minor`` (no patch number)."""
    body = requests.get(a2a_server + CARD, timeout=WAIT).json()
    stated = [i["protocolVersion"] for i in body["supportedInterfaces"]]
    stated += [body["protocolVersion"]] if "protocolVersion" in body else []
    assert stated
    assert all(re.fullmatch(r"\d+\.\d+", v) for v in stated), stated


@requirement("a2a-1.0-§3.6.2-unsupported-minor-refused")
def test_a_minor_version_the_agent_lacks_is_refused(own_server: str) -> None:
    """A2A-Version 1.1 is refused with VersionNotSupported (-32009) by an agent that
    serves 1.0 (it may not serve 1.0 semantics under a 1.1 request), and so is 0.2 for a
    0.3 method; 1.0 and 0.3 (patch numbers ignored) are served. (a2a_sync only: a2a-sdk
    1.3.0 serves any 1.x as 1.0.)"""
    get = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "none"}}
    get03 = {"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"id": "none"}}
    assert error_code(post(own_server, get, {"A2A-Version": "1.1"}).json()) == -32009
    assert error_code(post(own_server, get03, {"A2A-Version": "0.2"}).json()) == -32009
    assert error_code(post(own_server, get, {"A2A-Version": "1.0.2"}).json()) == -32001
    assert error_code(post(own_server, get03, {"A2A-Version": "0.3.0"}).json()) == -32001


@requirement("a2a-1.0-§5.2-every-binding-declared")
def test_the_card_declares_every_binding_served(agent: ConformanceAgent) -> None:
    """With the HTTP+JSON binding switched on, the card lists it (1.0 and 0.3) beside
    JSON-RPC, each at the URL that serves it. (a2a_sync only: it derives the interfaces
    from what it serves.)"""
    app = A2AApplication(attrs.evolve(card(), supported_interfaces=[]), agent, rest_path="/rest")
    with serve_in_thread(app) as url:
        declared = {
            (i["protocolBinding"], i["protocolVersion"], i["url"]) for i in interfaces(url + "/")
        }
        assert declared == {
            ("JSONRPC", "1.0", url + "/"),
            ("JSONRPC", "0.3", url + "/"),
            ("HTTP+JSON", "1.0", url + "/rest"),
            ("HTTP+JSON", "0.3", url + "/rest"),
        }
        message = {"message": user("hello")}
        rest = requests.post(url + "/rest/message:send", json=message, headers=V1, timeout=WAIT)
        assert rest.status_code == 200


@requirement("a2a-1.0-§13.3-extended-card-requires-authentication")
def test_the_extended_card_needs_authentication_on_each_binding(
    own_server: str, agent: ConformanceAgent
) -> None:
    """Anonymous callers get no extended card, over JSON-RPC or HTTP+JSON, though every
    other method is open to them. (a2a_sync only: the HTTP+JSON case needs its REST
    binding; the JSON-RPC case runs on both servers in test_a2a_server_rules.)"""
    body = {"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard", "params": {}}
    anonymous = post(own_server, body, V1)
    assert anonymous.status_code == 401
    public = attrs.evolve(card(extended=True), supported_interfaces=[])
    app = A2AApplication(
        public,
        agent,
        authenticate=BearerTokens({"tok-13-3": "alice"}),
        allow_anonymous=True,
        extended_card=attrs.evolve(public, name="extended"),
        rest_path="/rest",
    )
    with serve_in_thread(app) as url:
        refused = requests.get(url + "/rest/extendedAgentCard", headers=V1, timeout=WAIT)
        assert refused.status_code == 401
        served = requests.get(
            url + "/rest/extendedAgentCard",
            headers={**V1, "Authorization": "Bearer tok-13-3"},
            timeout=WAIT,
        )
        assert served.json()["name"] == "extended"
        assert requests.get(url + "/rest/tasks", headers=V1, timeout=WAIT).status_code == 200


class _CardPermission:
    """Bearer tokens for alice and bob; only alice may read the extended card."""

    def __init__(self) -> None:
        self._tokens = BearerTokens({"tok-alice": "alice", "tok-bob": "bob"})

    def __call__(self, environ: Any) -> Any:
        return self._tokens(environ)

    def refusal(self, principal: Any, operation: str, method: str) -> str | None:
        if operation == "get_extended_card" and principal.name != "alice":
            return 'Bearer error="insufficient_scope", scope="card:extended"'
        return None


@requirement("a2a-1.0-§13.3-extended-card-permission-checked")
def test_the_extended_card_is_served_only_with_permission(agent: ConformanceAgent) -> None:
    """An authenticated caller the agent does not permit to read the extended card is
    refused (403 with the missing scope) over JSON-RPC and HTTP+JSON; a permitted one is
    served; other calls stay open to both. (a2a_sync only: the peer has no per-caller
    permissions.)"""
    public = attrs.evolve(card(extended=True), supported_interfaces=[])
    app = A2AApplication(
        public,
        agent,
        authenticate=_CardPermission(),
        extended_card=attrs.evolve(public, name="extended"),
        rest_path="/rest",
    )
    body = {"jsonrpc": "2.0", "id": 3, "method": "GetExtendedAgentCard", "params": {}}
    with serve_in_thread(app) as url:
        for token, allowed in (("tok-bob", False), ("tok-alice", True)):
            headers = {**V1, "Authorization": f"Bearer {token}"}
            answers = [
                post(url + "/", body, headers),
                requests.get(url + "/rest/extendedAgentCard", headers=headers, timeout=WAIT),
            ]
            for answer in answers:
                if allowed:
                    assert answer.status_code == 200
                else:
                    assert answer.status_code == 403
                    assert "insufficient_scope" in answer.headers["WWW-Authenticate"]
            listing = {"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {}}
            assert "result" in post(url + "/", listing, headers).json()
