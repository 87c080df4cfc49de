"""A2A 1.0 requirements found by the section-by-section audit of issue #14 that no other
conformance module claimed: required-field validation (§5.7), streaming feedback (§3.1.2),
authorization errors (§3.3.2), the JSON-RPC error-code table (§5.4), extension version
fallback (§4.6.3) and revoked signing keys (§8.4.3).

Black-box over HTTP where the rule is about the wire; the a2a-sdk peer joins where the
shared fixtures allow it (``a2a_server``).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from a2a_sync import errors
from a2a_sync.a2a.error_codes import TABLE
from a2a_sync.errors import SignatureError
from a2a_sync.server import A2AApplication, serve_in_thread
from a2a_sync.server.auth import BearerTokens
from a2a_sync.signing import sign_card, verify_card
from a2a_sync.types import AgentExtension
from tests.peers.fixtures import AGENT_TOKEN
from tests.server.agents import card

from .a2a_wire import V1, data_lines, error_code, post, rpc, send, stream, user
from .agents import ConformanceAgent, own_app

requirement = pytest.mark.requirement


@requirement("a2a-1.0-§5.7-required-fields-validated")
def test_a_message_missing_a_required_field_is_invalid_params(a2a_server: str) -> None:
    """A Message without its REQUIRED role, or without its REQUIRED messageId, is refused
    with -32602 instead of being processed with a guessed value."""
    no_role = {key: value for key, value in user("x").items() if key != "role"}
    no_id = {key: value for key, value in user("x").items() if key != "messageId"}
    for message in (no_role, no_id):
        assert error_code(rpc(a2a_server, "SendMessage", {"message": message})) == -32602


@requirement("a2a-1.0-§3.1.2-immediate-feedback")
def test_a_stream_delivers_progress_while_the_task_still_works() -> None:
    """The stream's first events (the Task, then ``working``) arrive while the agent is
    still blocked; the rest follows once it is released. A server that buffered the
    stream until the end would never deliver the first event before the release (the
    read would time out)."""
    agent = ConformanceAgent()
    with serve_in_thread(own_app(agent)) as url:
        response = stream(url + "/", "SendStreamingMessage", {"message": user("slow 1")})
        try:
            events = data_lines(response)
            first = next(events)["result"]  # the agent is still blocked here
            assert "task" in first
            state = first["task"]["status"]["state"]
            assert state in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
            agent.release.set()
            rest = [event["result"] for event in events]
        finally:
            agent.release.set()
            response.close()
    assert rest[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


class _SendForbidden:
    """Bearer tokens for alice and bob; bob may not send messages."""

    def __init__(self) -> None:
        self._tokens = BearerTokens({"tok-alice": "alice", "tok-bob": "bob"})

    def __call__(self, environ: Any) -> Any:
        return self._tokens(environ)

    def refusal(self, principal: Any, operation: str, method: str) -> str | None:
        if operation == "send_message" and principal.name != "alice":
            return 'Bearer error="insufficient_scope", scope="tasks:write"'
        return None


@requirement("a2a-1.0-§3.3.2-authorization-error")
def test_an_authenticated_caller_without_permission_gets_an_authorization_error(
    agent: ConformanceAgent,
) -> None:
    """An authenticated caller the agent does not permit to send is refused with an
    authorization error (HTTP 403 naming the missing scope), not served and not treated
    as unauthenticated (401). (a2a_sync only: the peer has no per-caller permissions.)"""
    app = A2AApplication(
        attrs.evolve(card(), supported_interfaces=[]), agent, authenticate=_SendForbidden()
    )
    body = {"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message": user("x")}}
    with serve_in_thread(app) as url:
        bob = post(url + "/", body, {**V1, "Authorization": "Bearer tok-bob"})
        alice = post(url + "/", body, {**V1, "Authorization": "Bearer tok-alice"})
    assert bob.status_code == 403
    assert "insufficient_scope" in bob.headers["WWW-Authenticate"]
    assert "result" in alice.json()


#: A2A 1.0 §5.4: the JSON-RPC code of every A2A-specific error.
SPEC_JSONRPC_CODES = {
    errors.TaskNotFound: -32001,
    errors.TaskNotCancelable: -32002,
    errors.PushNotificationNotSupported: -32003,
    errors.UnsupportedOperation: -32004,
    errors.ContentTypeNotSupported: -32005,
    errors.InvalidAgentResponse: -32006,
    errors.ExtendedAgentCardNotConfigured: -32007,
    errors.ExtensionSupportRequired: -32008,
    errors.VersionNotSupported: -32009,
}


@requirement("a2a-1.0-§5.4-jsonrpc-code-per-error")
def test_every_a2a_error_has_its_jsonrpc_code(agent: ConformanceAgent) -> None:
    """Each A2A-specific error of §3.3.2 is mapped to its §5.4 JSON-RPC code, in the
    error table the server encodes with; the errors a request can provoke come back
    with those codes on the wire."""
    mapped = {row.error: row.jsonrpc for row in TABLE}
    assert {error: mapped.get(error) for error in SPEC_JSONRPC_CODES} == SPEC_JSONRPC_CODES
    with serve_in_thread(own_app(agent, streaming=True, push=False, extended=True)) as url:
        done = send(url + "/", user("hello"))["task"]
        provoked = {
            -32001: rpc(url + "/", "GetTask", {"id": "no-such-task"}),
            -32002: rpc(url + "/", "CancelTask", {"id": done["id"]}),
            -32003: rpc(url + "/", "ListTaskPushNotificationConfigs", {"taskId": done["id"]}),
            -32004: rpc(url + "/", "SubscribeToTask", {"id": done["id"]}),
            -32007: rpc(url + "/", "GetExtendedAgentCard", {}),
            -32009: rpc(url + "/", "GetTask", {"id": done["id"]}, version="9.9"),
        }
    assert {code: error_code(answer) for code, answer in provoked.items()} == {
        code: code for code in provoked
    }


@requirement("a2a-1.0-§4.6.3-no-extension-version-fallback")
def test_an_older_extension_version_does_not_satisfy_a_required_one(
    agent: ConformanceAgent,
) -> None:
    """The card requires ``.../v2``; a request naming only ``.../v1`` is refused with
    ExtensionSupportRequiredError (-32008): the agent does not fall back between
    versions. (a2a_sync only: the peer's card requires no extension.)"""
    base_card = card()
    required = attrs.evolve(
        base_card,
        supported_interfaces=[],
        capabilities=attrs.evolve(
            base_card.capabilities,
            extensions=[AgentExtension(uri="https://example.com/ext/geo/v2", required=True)],
        ),
    )
    body = {"jsonrpc": "2.0", "id": 6, "method": "SendMessage", "params": {"message": user("x")}}
    with serve_in_thread(A2AApplication(required, agent)) as url:
        older = post(url + "/", body, {**V1, "A2A-Extensions": "https://example.com/ext/geo/v1"})
        current = post(url + "/", body, {**V1, "A2A-Extensions": "https://example.com/ext/geo/v2"})
    assert error_code(older.json()) == -32008
    assert "result" in current.json()


OLD_KEY = b"revoked-signing-secret-of-32+bytes!!"
NEW_KEY = b"current-signing-secret-of-32+bytes!!"


@requirement("a2a-1.0-§8.4.3-no-revoked-keys")
def test_a_signature_by_a_revoked_key_does_not_verify() -> None:
    """verify_card uses only the keys the caller's key store hands out: a signature whose
    kid the store no longer honours (revoked/expired, the provider answers None) is not
    verified by any other means, so a card signed only by that key is refused; a card
    that also carries a signature by a current key verifies through that one."""
    unsigned = attrs.evolve(card(), supported_interfaces=[])
    old_only = sign_card(unsigned, OLD_KEY, alg="HS256", kid="old")
    rotated = sign_card(old_only, NEW_KEY, alg="HS256", kid="new")

    def store(kid: str | None, jku: str | None) -> bytes | None:
        return NEW_KEY if kid == "new" else None  # "old" is revoked

    with pytest.raises(SignatureError):
        verify_card(old_only, store, algorithms=["HS256"])
    assert verify_card(rotated, store, algorithms=["HS256"]).name == unsigned.name


def _call(url: str, method: str, params: Any, token: str | None) -> Any:
    headers = {**V1, "Authorization": f"Bearer {token}"} if token else V1
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
    return post(url, body, headers).json()


@requirement("a2a-1.0-§3.1.8-push-get-denied-without-access")
def test_reading_another_callers_push_config_fails(own_server: str) -> None:
    """A push config alice set on her task is read back by alice; another caller asking
    for the same task and config id is refused with TaskNotFoundError (-32001), the
    answer for a config that does not exist. (a2a_sync only: the peer fixture has one
    caller.)"""
    task = _call(own_server, "SendMessage", {"message": user("hello")}, AGENT_TOKEN)
    task_id = task["result"]["task"]["id"]
    created = _call(
        own_server,
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "url": "https://example.com/hook"},
        AGENT_TOKEN,
    )
    ids = {"taskId": task_id, "id": created["result"]["id"]}
    mine = _call(own_server, "GetTaskPushNotificationConfig", ids, AGENT_TOKEN)
    theirs = _call(own_server, "GetTaskPushNotificationConfig", ids, None)
    assert mine["result"]["url"] == "https://example.com/hook"
    assert error_code(theirs) == -32001
