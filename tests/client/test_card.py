"""Agent-card discovery: the well-known path and its legacy fallback, interface
selection, ETag revalidation, signature verification and bad cards."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
import responses

from a2a_sync import signing
from a2a_sync.a2a.card_codec import load_card
from a2a_sync.client import A2AClient
from a2a_sync.client.card import card_url_for, select_interface
from a2a_sync.errors import (
    ConfigurationError,
    HTTPStatusError,
    ProtocolError,
    RedirectRefused,
    SignatureError,
)
from a2a_sync.types import AgentCard

from .fakes import RPC_URL, TASK_0_3, FakeAgent, card_json

SECRET = b"k" * 32  # HS256 needs a key at least as long as its hash


@pytest.fixture
def rsps() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        yield mock


def serve_card(rsps: responses.RequestsMock, card: Any, **kwargs: Any) -> None:
    rsps.add(responses.GET, "http://a.test/.well-known/agent-card.json", json=card, **kwargs)


def hs256_verifier(raw: Mapping[str, Any]) -> AgentCard:
    keys = {"key-1": SECRET}
    return signing.verify_card(raw, lambda kid, jku: keys.get(kid or ""), algorithms=["HS256"])


# -- discovery -------------------------------------------------------------------------------


def test_from_url_fetches_the_well_known_card(rsps: responses.RequestsMock) -> None:
    agent = FakeAgent(rsps)
    with A2AClient.from_url(agent.base_url + "/") as client:
        assert client.url == RPC_URL
        assert client.revision == "1.0"
    card_request = rsps.calls[0].request
    assert card_request.method == "GET"
    assert card_request.url == agent.base_url + "/.well-known/agent-card.json"
    assert card_request.headers["Accept"] == "application/json"
    assert "A2A-Version" not in card_request.headers


def test_from_url_accepts_the_card_url_itself(rsps: responses.RequestsMock) -> None:
    card_url = "http://agent.test/cards/mine.json"
    rsps.add(responses.GET, card_url, json=card_json(("http://agent.test/rpc", "JSONRPC", "1.0")))
    with A2AClient.from_url(card_url) as client:
        assert client.url == "http://agent.test/rpc"
    assert rsps.calls[0].request.url == card_url


def test_a_relative_interface_url_is_refused_not_resolved(rsps: responses.RequestsMock) -> None:
    # A2A 1.0: the interface URL is absolute; "" or "/rpc" must not turn into the address
    # the card happened to be fetched from (issue 20).
    card_url = "http://agent.test/cards/mine.json"
    rsps.add(responses.GET, card_url, json=card_json(("/rpc", "JSONRPC", "1.0")))
    with pytest.raises(ProtocolError, match="absolute"):
        A2AClient.from_url(card_url)
    assert [c.request.url for c in rsps.calls] == [card_url]


def test_from_url_falls_back_to_the_legacy_card_path(rsps: responses.RequestsMock) -> None:
    rsps.add(responses.GET, "http://old.test/.well-known/agent-card.json", status=404)
    legacy = {
        "name": "Old",
        "description": "0.3 card",
        "version": "1",
        "url": "http://old.test/rpc",
        "protocolVersion": "0.3.0",
        "capabilities": {},
        "defaultInputModes": [],
        "defaultOutputModes": [],
        "skills": [],
    }
    rsps.add(responses.GET, "http://old.test/.well-known/agent.json", json=legacy)
    with A2AClient.from_url("http://old.test") as client:
        assert client.revision == "0.3"
        assert client.url == "http://old.test/rpc"
    assert [c.request.url for c in rsps.calls] == [
        "http://old.test/.well-known/agent-card.json",
        "http://old.test/.well-known/agent.json",
    ]


@pytest.mark.parametrize(
    ("interfaces", "revisions", "expected"),
    [
        # A2A 1.0 §8.3.2: the card's first supported entry wins, also between revisions
        ([("http://a.test/v03", "JSONRPC", "0.3"), ("http://a.test/v1", "JSONRPC", "1.0")],
         ("1.0", "0.3"), ("http://a.test/v03", "0.3")),
        # unknown bindings are skipped; HTTP+JSON is spoken in 1.0 and 0.3
        ([("http://a.test/soap", "SOAP", "1.0"), ("http://a.test/rest", "HTTP+JSON", "1.0"),
          ("http://a.test/v03", "JSONRPC", "0.3")], ("1.0", "0.3"), ("http://a.test/rest", "1.0")),
        ([("http://a.test/soap", "SOAP", "1.0"), ("http://a.test/rest", "HTTP+JSON", "0.3"),
          ("http://a.test/v03", "JSONRPC", "0.3")], ("1.0", "0.3"), ("http://a.test/rest", "0.3")),
        # the card's order decides among interfaces of one revision; patch versions match
        ([("http://a.test/one", "JSONRPC", "1.0.1"), ("http://a.test/two", "JSONRPC", "1.0")],
         ("1.0", "0.3"), ("http://a.test/one", "1.0")),
        # the caller may restrict or reorder revisions
        ([("http://a.test/v1", "JSONRPC", "1.0"), ("http://a.test/v03", "JSONRPC", "0.3")],
         ("0.3",), ("http://a.test/v03", "0.3")),
    ],
)  # fmt: skip
def test_interface_selection(
    rsps: responses.RequestsMock,
    interfaces: list[tuple[str, str, str]],
    revisions: tuple[str, ...],
    expected: tuple[str, str],
) -> None:
    rsps.add(
        responses.GET, "http://a.test/.well-known/agent-card.json", json=card_json(*interfaces)
    )
    with A2AClient.from_url("http://a.test", revisions=revisions) as client:  # type: ignore[arg-type]
        assert (client.url, client.revision) == expected


def test_refresh_card_revalidates_with_the_etag(rsps: responses.RequestsMock) -> None:
    agent = FakeAgent(rsps)
    with A2AClient.from_url(agent.base_url) as client:
        first = client.card
        rsps.replace(responses.GET, agent.base_url + "/.well-known/agent-card.json", status=304)
        assert client.refresh_card() is first
        changed = card_json((RPC_URL, "JSONRPC", "1.0"), name="Renamed")
        rsps.replace(
            responses.GET,
            agent.base_url + "/.well-known/agent-card.json",
            json=changed,
            headers={"ETag": 'W/"v2"'},
        )
        assert client.refresh_card().name == "Renamed"
        assert client.card is not None
        assert client.card.name == "Renamed"
    revalidations = [c.request for c in rsps.calls[1:]]
    assert [r.headers.get("If-None-Match") for r in revalidations] == ['W/"v1"', 'W/"v1"']


def test_from_card_uses_the_card_without_fetching(rsps: responses.RequestsMock) -> None:
    card = load_card(card_json(("http://a.test/v03", "JSONRPC", "0.3")))
    rsps.add(
        responses.POST, "http://a.test/v03", json={"jsonrpc": "2.0", "id": 1, "result": TASK_0_3}
    )
    with A2AClient.from_card(card) as client:
        assert (client.url, client.revision, client.card) == ("http://a.test/v03", "0.3", card)
        client.get_task("t1")
    assert [c.request.method for c in rsps.calls] == ["POST"]
    assert json.loads(rsps.calls[0].request.body or b"")["method"] == "tasks/get"


def test_card_url_for_what_users_type() -> None:
    assert card_url_for("http://a.test") == "http://a.test/.well-known/agent-card.json"
    assert card_url_for("http://a.test/agents/x/") == (
        "http://a.test/agents/x/.well-known/agent-card.json"
    )
    assert card_url_for("https://a.test/card.json") == "https://a.test/card.json"
    for bad in ("ftp://a.test", "a.test", "file:///etc/passwd"):
        with pytest.raises(ConfigurationError):
            card_url_for(bad)


def test_card_without_a_usable_interface_is_a_configuration_error(
    rsps: responses.RequestsMock,
) -> None:
    serve_card(rsps, card_json(("http://a.test/rest", "HTTP+JSON", "2.0"), ("x", "SOAP", "1.0")))
    with pytest.raises(ConfigurationError):
        A2AClient.from_url("http://a.test")
    with pytest.raises(ConfigurationError):
        select_interface(
            load_card(card_json(("http://a.test/rest", "HTTP+JSON", "1.0"))), bindings=["JSONRPC"]
        )
    card = load_card(card_json(("http://a.test/v2", "JSONRPC", "2.0")))
    with pytest.raises(ConfigurationError):
        select_interface(card)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"status": 500, "body": "oops"}, HTTPStatusError),
        ({"status": 404, "body": "none"}, HTTPStatusError),
        ({"body": "<html><body>Login</body></html>", "content_type": "text/html"}, ProtocolError),
        ({"body": "[1, 2]", "content_type": "application/json"}, ProtocolError),
        ({"body": '{"name": "x", "trunc', "content_type": "application/json"}, ProtocolError),
        ({"json": {"name": 7, "supportedInterfaces": "no"}}, ProtocolError),
    ],
    ids=["500", "404", "html", "array", "truncated", "schema"],
)
def test_bad_card_answers_are_typed_errors(
    rsps: responses.RequestsMock, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    rsps.add(responses.GET, "http://a.test/.well-known/agent-card.json", **kwargs)
    rsps.add(responses.GET, "http://a.test/.well-known/agent.json", status=404)
    with pytest.raises(error):
        A2AClient.from_url("http://a.test")


def test_card_redirect_is_not_followed(rsps: responses.RequestsMock) -> None:
    rsps.add(
        responses.GET,
        "http://a.test/.well-known/agent-card.json",
        status=302,
        headers={"Location": "http://evil.test/card.json"},
    )
    with pytest.raises(RedirectRefused) as info:
        A2AClient.from_url("http://a.test")
    assert info.value.location == "http://evil.test/card.json"
    assert len(rsps.calls) == 1


def test_signed_card_verifies(rsps: responses.RequestsMock) -> None:
    card = card_json(("http://a.test/rpc", "JSONRPC", "1.0"))
    serve_card(rsps, signing.sign_card(card, SECRET, alg="HS256", kid="key-1"))
    with A2AClient.from_url("http://a.test", verify_card=hs256_verifier) as client:
        assert client.card is not None
        assert len(client.card.signatures) == 1


@pytest.mark.parametrize("tamper", ["field", "unsigned", "wrong-key"])
def test_card_failing_verification_raises_signature_error(
    rsps: responses.RequestsMock, tamper: str
) -> None:
    card = card_json(("http://a.test/rpc", "JSONRPC", "1.0"))
    signed = signing.sign_card(card, SECRET, alg="HS256", kid="key-1")
    if tamper == "field":
        # e.g. a proxy pointing the agent somewhere else
        signed["supportedInterfaces"][0]["url"] = "http://evil.test/rpc"
    elif tamper == "unsigned":
        signed = card
    else:
        signed = signing.sign_card(card, b"x" * 32, alg="HS256", kid="key-1")
    serve_card(rsps, signed)
    with pytest.raises(SignatureError):
        A2AClient.from_url("http://a.test", verify_card=hs256_verifier)
    assert [c.request.method for c in rsps.calls] == ["GET"]  # nothing sent to the agent


def test_unverified_cards_are_accepted_without_a_verifier(rsps: responses.RequestsMock) -> None:
    card = card_json(("http://a.test/rpc", "JSONRPC", "1.0"))
    serve_card(rsps, signing.sign_card(card, SECRET, alg="HS256", kid="key-1"))
    with A2AClient.from_url("http://a.test") as client:
        assert client.url == "http://a.test/rpc"


def test_refresh_needs_a_card_url() -> None:
    with A2AClient(RPC_URL) as client, pytest.raises(ConfigurationError):
        client.refresh_card()
