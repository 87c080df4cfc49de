"""GRPC interface URLs: host:port, TLS unless loopback, no credentials in plaintext."""

from __future__ import annotations

import pytest

from a2a_sync.client.bindings.grpc_target import GRPCTarget, parse_grpc_url
from a2a_sync.errors import ConfigurationError


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("127.0.0.1:50051", GRPCTarget("127.0.0.1", 50051, False)),
        ("localhost:1", GRPCTarget("localhost", 1, False)),
        ("[::1]:7", GRPCTarget("::1", 7, False)),
        ("agent.example:443", GRPCTarget("agent.example", 443, True)),
        ("grpc://agent.example:80", GRPCTarget("agent.example", 80, False)),
        ("grpcs://127.0.0.1:9", GRPCTarget("127.0.0.1", 9, True)),
        ("https://agent.example:8443", GRPCTarget("agent.example", 8443, True)),
        ("http://127.0.0.1:5/", GRPCTarget("127.0.0.1", 5, False)),
    ],
)
def test_urls_and_their_tls(url: str, expected: GRPCTarget) -> None:
    assert parse_grpc_url(url) == expected


def test_target_and_origin() -> None:
    target = parse_grpc_url("[::1]:7")
    assert (target.target, target.origin) == ("[::1]:7", "http://[::1]:7")
    assert parse_grpc_url("a.example:1").origin == "https://a.example:1"


@pytest.mark.parametrize(
    "url", ["", "agent.example", "agent.example:x", "ftp://a:1", "a.example:1/path", ":5"]
)
def test_not_an_address(url: str) -> None:
    with pytest.raises(ConfigurationError, match="host:port"):
        parse_grpc_url(url)


def test_credentials_never_go_over_plaintext_to_another_host() -> None:
    from tests.support.grpc import import_grpc

    import_grpc()
    from a2a_sync.client import A2AClient, BearerToken

    with pytest.raises(ConfigurationError, match="plaintext") as caught:
        A2AClient(
            "grpc://agent.example:50051",
            binding="GRPC",
            credentials=BearerToken("secret-token"),
        )
    assert "secret-token" not in str(caught.value)
    assert "grpcs://" in str(caught.value)
