"""RFC 8785 canonical JSON and detached-JWS agent card signatures (A2A 1.0 §8.4).

The peer-marked tests cross-check with a2a-sdk 1.3's signer and verifier (PyJWT): each
side verifies what the other signed, non-ASCII text included.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import struct
import sys
from typing import Any

import attrs
import pytest

from a2a_sync.a2a.card_codec import dump_card, load_card
from a2a_sync.a2a.jcs import format_number
from a2a_sync.a2a.signing import (
    canonicalize,
    card_verifier,
    parse_json,
    sign_card,
    signing_payload,
    verify_card,
)
from a2a_sync.errors import ConfigurationError, ProtocolError, SignatureError
from a2a_sync.types import (
    AgentCapabilities,
    AgentCard,
    AgentCardSignature,
    AgentExtension,
    AgentInterface,
    AgentSkill,
)

SECRET = b"0123456789abcdef0123456789abcdef"  # 32 bytes: the HS256 minimum
OTHER_SECRET = b"fedcba9876543210fedcba9876543210"
ALGORITHMS = ["HS256", "ES256", "EdDSA", "RS256", "PS256"]
CARD = AgentCard(
    name="Échø agent ✓",
    description="Ünïcode 😀 and ASCII",
    version="1.0",
    supported_interfaces=[
        AgentInterface(url="https://agent.example/a2a", protocol_version="1.0"),
        AgentInterface(url="https://agent.example/a2a", protocol_version="0.3"),
    ],
    capabilities=AgentCapabilities(
        streaming=True,
        extensions=[AgentExtension(uri="urn:x", params={"n": 1, "f": 0.5, "big": 1e21})],
    ),
    default_input_modes=["text/plain"],
    default_output_modes=["text/plain"],
    skills=[AgentSkill(id="s", name="S", description="d", tags=["t"])],
)


@pytest.fixture(scope="module")
def keys() -> dict[str, tuple[Any, Any]]:
    """(signing key, verification key) per algorithm; public-key ones need `cryptography`."""
    pytest.importorskip("cryptography")
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    ec_key = ec.generate_private_key(ec.SECP256R1())
    ed_key = ed25519.Ed25519PrivateKey.generate()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        "HS256": (SECRET, SECRET),
        "ES256": (ec_key, ec_key.public_key()),
        "EdDSA": (ed_key, ed_key.public_key()),
        "RS256": (rsa_key, rsa_key.public_key()),
        "PS256": (rsa_key, rsa_key.public_key()),
    }


def _secret_for_k1(kid: str | None, jku: str | None) -> Any:
    return SECRET if kid == "k1" else None


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode_test(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# --- RFC 8785 ------------------------------------------------------------------------------

# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
NUMBER_VECTORS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "text"), NUMBER_VECTORS)
def test_numbers_are_formatted_like_ecmascript(bits: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))

    assert format_number(value) == text


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), 2**53 + 1])
def test_values_without_a_json_number_form_are_refused(value: float) -> None:
    with pytest.raises(ConfigurationError):
        canonicalize([value])


def test_integral_floats_and_large_exact_integers_use_number_formatting() -> None:
    assert canonicalize([1.0, -0.0, 1e21, 2**60, 2**53]) == (
        b"[1,0,1e+21,1152921504606847000,9007199254740992]"
    )


def test_rfc_8785_section_3_2_2_example() -> None:
    source = r"""{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"""

    assert (
        canonicalize(parse_json(source))
        == (
            '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
            '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
        ).encode()
    )


def test_keys_sort_by_utf16_code_units_rfc_8785_section_3_2_3() -> None:
    source = {
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew Letter Dalet With Dagesh",
        "1": "One",
        "\U0001f600": "Emoji: Grinning Face",
        "\u0080": "Control",
        "\u00f6": "Latin Small Letter O With Diaeresis",
    }

    order = list(json.loads(canonicalize(source)))

    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_text_stays_literal_utf8_and_only_controls_quotes_and_backslashes_are_escaped() -> None:
    assert canonicalize({"k": 'é/😀\x7f\x1f"\\'}) == '{"k":"é/😀\x7f\\u001f\\"\\\\"}'.encode()


@pytest.mark.parametrize("value", [{"\ud800": 1}, ["\udc00"], {1: "x"}, {"x": {1, 2}}])
def test_values_with_no_canonical_form_are_configuration_errors(value: Any) -> None:
    with pytest.raises(ConfigurationError):
        canonicalize(value)


def test_nesting_beyond_the_depth_limit_is_refused() -> None:
    deep: Any = []
    for _ in range(200):
        deep = [deep]

    with pytest.raises(ConfigurationError):
        canonicalize(deep)


@pytest.mark.parametrize("text", ['{"a": 1, "a": 2}', '{"a": NaN}', "[Infinity]", '{"a":'])
def test_strict_parsing_refuses_duplicate_keys_and_non_json_numbers(text: str) -> None:
    with pytest.raises(ProtocolError):
        parse_json(text)


# --- signing payload ---------------------------------------------------------------------------


def test_payload_is_the_canonical_1_0_card_without_signatures_or_empty_values() -> None:
    signed = attrs.evolve(CARD, signatures=[AgentCardSignature(protected="p", signature="s")])

    payload = signing_payload(signed)

    assert payload == signing_payload(CARD)
    assert b"signatures" not in payload
    assert b"url" in payload
    assert b"protocolVersion" in payload
    assert "Échø".encode() in payload
    assert json.loads(payload) == json.loads(canonicalize(dump_card(CARD, "1.0")))


# --- sign / verify -----------------------------------------------------------------------------


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_signed_model_verifies_with_the_verification_key(
    keys: dict[str, tuple[Any, Any]], alg: str
) -> None:
    private, public = keys[alg]

    signed = sign_card(CARD, private, alg=alg, kid="k1")

    assert len(signed.signatures) == 1
    provider = lambda kid, jku: public if kid == "k1" else None  # noqa: E731
    assert verify_card(signed, provider, algorithms=[alg]) == signed


def test_signing_served_json_keeps_its_other_members_and_verifies_from_bytes() -> None:
    served = dump_card(CARD)  # includes the merged 0.3 fields

    signed = sign_card(served, SECRET, alg="HS256", kid="k1", jku="https://keys.example/jwks")
    header = json.loads(base64.urlsafe_b64decode(signed["signatures"][0]["protected"] + "=="))

    assert {k: v for k, v in signed.items() if k != "signatures"} == served
    assert header == {
        "alg": "HS256",
        "kid": "k1",
        "typ": "JOSE",
        "jku": "https://keys.example/jwks",
    }
    raw = json.dumps(signed, ensure_ascii=False).encode()
    assert verify_card(raw, _secret_for_k1, algorithms=["HS256"]) == load_card(signed)


def test_key_provider_receives_kid_and_jku() -> None:
    seen = []

    def provider(kid: str | None, jku: str | None) -> Any:
        seen.append((kid, jku))
        return SECRET

    signed = sign_card(CARD, SECRET, alg="HS256", kid="k9", jku="https://keys.example/jwks")
    verify_card(signed, provider, algorithms=["HS256"])

    assert seen == [("k9", "https://keys.example/jwks")]


def _pem_pair(keys: dict[str, tuple[Any, Any]]) -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization

    private, public = keys["ES256"]
    private_pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_pem, public_pem


def test_pem_keys_are_accepted(keys: dict[str, tuple[Any, Any]]) -> None:
    private_pem, public_pem = _pem_pair(keys)

    signed = sign_card(CARD, private_pem, alg="ES256", kid="k1")

    assert verify_card(signed, lambda kid, jku: public_pem, algorithms=["ES256"]) == signed


def test_a_key_of_the_wrong_type_for_the_algorithm_does_not_verify(
    keys: dict[str, tuple[Any, Any]],
) -> None:
    signed = sign_card(CARD, keys["ES256"][0], alg="ES256", kid="k1")

    with pytest.raises(SignatureError) as caught:
        verify_card(signed, lambda kid, jku: keys["RS256"][1], algorithms=["ES256"])
    assert caught.value.details == ["signature 0: key type does not match ES256"]


def test_any_change_to_the_card_breaks_the_signature() -> None:
    signed = sign_card(dump_card(CARD), SECRET, alg="HS256", kid="k1")

    for tampered in (
        {**signed, "description": "evil"},
        {**signed, "skills": []},
        {**signed, "capabilities": {"streaming": False}},
    ):
        with pytest.raises(SignatureError):
            verify_card(tampered, _secret_for_k1, algorithms=["HS256"])


def test_an_algorithm_outside_the_allowlist_is_not_accepted() -> None:
    signed = sign_card(CARD, SECRET, alg="HS256", kid="k1")

    with pytest.raises(SignatureError) as caught:
        verify_card(signed, _secret_for_k1, algorithms=["HS512"])
    assert caught.value.details == ["signature 0: algorithm 'HS256' is not allowed"]


@pytest.mark.parametrize("algorithms", [[], ["none"], "HS256", ["HS256", "HS1"]])
def test_the_allowlist_must_name_real_algorithms(algorithms: Any) -> None:
    signed = sign_card(CARD, SECRET, alg="HS256", kid="k1")

    with pytest.raises(ConfigurationError):
        verify_card(signed, _secret_for_k1, algorithms=algorithms)


def test_an_unsigned_alg_none_signature_never_verifies() -> None:
    header = _b64url(json.dumps({"alg": "none", "kid": "k1"}).encode())
    forged = attrs.evolve(CARD, signatures=[AgentCardSignature(protected=header, signature="")])

    with pytest.raises(SignatureError):
        verify_card(forged, _secret_for_k1, algorithms=["HS256", "HS512"])


def _public_key_encodings(keys: dict[str, tuple[Any, Any]]) -> dict[str, bytes]:
    from cryptography.hazmat.primitives import serialization

    public = keys["ES256"][1]
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    pem = public.public_bytes(serialization.Encoding.PEM, spki)
    return {
        "pem": pem,
        "pem-after-comment": b"# the agent's verification key\n" + pem,
        "pem-after-blank-lines": b"\n\n  \n" + pem,
        "der": public.public_bytes(serialization.Encoding.DER, spki),
        "openssh": public.public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        ),
        "rsa-der": keys["RS256"][1].public_bytes(serialization.Encoding.DER, spki),
    }


@pytest.mark.parametrize(
    "encoding",
    ["pem", "pem-after-comment", "pem-after-blank-lines", "der", "openssh", "rsa-der"],
)
def test_a_public_key_used_as_an_hmac_secret_is_refused(
    keys: dict[str, tuple[Any, Any]], encoding: str
) -> None:
    # Issue 20 item 5: the old prefix test let a comment line or DER bytes through.
    public_bytes = _public_key_encodings(keys)[encoding]
    protected = _b64url(json.dumps({"alg": "HS256", "kid": "k1"}).encode())
    signing_input = f"{protected}.{_b64url(signing_payload(CARD))}".encode()
    forged_sig = _b64url(hmac.new(public_bytes, signing_input, hashlib.sha256).digest())
    forged = attrs.evolve(
        CARD, signatures=[AgentCardSignature(protected=protected, signature=forged_sig)]
    )

    with pytest.raises(SignatureError) as caught:
        verify_card(
            forged,
            lambda kid, jku: public_bytes,
            algorithms=["HS256", "ES256"],
            allow_mixed_key_types=True,
        )
    assert caught.value.details == [
        "signature 0: HS256 needs a shared secret, not a public/private key"
    ]
    with pytest.raises(ConfigurationError):  # nor can one sign with it
        sign_card(CARD, public_bytes, alg="HS256", kid="k1")


def test_hmac_and_public_key_algorithms_are_not_mixed_unless_asked() -> None:
    signed = sign_card(CARD, SECRET, alg="HS256", kid="k1")

    with pytest.raises(ConfigurationError) as caught:
        verify_card(signed, _secret_for_k1, algorithms=["HS256", "ES256"])
    assert "allow_mixed_key_types" in str(caught.value)
    with pytest.raises(ConfigurationError):
        card_verifier(_secret_for_k1, algorithms=["RS256", "HS512"])
    mixed = verify_card(
        signed, _secret_for_k1, algorithms=["HS256", "ES256"], allow_mixed_key_types=True
    )
    assert mixed == signed


def test_private_keys_in_der_and_pem_sign_and_their_public_halves_verify(
    keys: dict[str, tuple[Any, Any]],
) -> None:
    from cryptography.hazmat.primitives import serialization

    private = keys["ES256"][0]
    der_private = private.private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    der_public = _public_key_encodings(keys)["der"]

    signed = sign_card(CARD, der_private, alg="ES256", kid="k1")

    assert verify_card(signed, lambda kid, jku: der_public, algorithms=["ES256"]) == signed


def _ecdsa_s(card: AgentCard) -> tuple[bytes, int]:
    raw = _b64url_decode_test(card.signatures[-1].signature)
    return raw, int.from_bytes(raw[32:], "big")


P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


def test_es256_signatures_are_written_low_s_and_high_s_is_documented_as_accepted(
    keys: dict[str, tuple[Any, Any]],
) -> None:
    # "Also noted" in issue 20: ECDSA malleability. Signing normalises s (a random s is in
    # the high half about every second time); verification accepts the other half, as
    # RFC 7518 and PyJWT do (docs/security.md): the card content cannot change.
    private, public = keys["ES256"]
    for _ in range(16):  # 16 signatures: all low-s (old code: ~50% high each)
        signed = sign_card(CARD, private, alg="ES256", kid="k1")
        raw, s = _ecdsa_s(signed)
        assert s <= P256_ORDER // 2
    high = raw[:32] + (P256_ORDER - s).to_bytes(32, "big")
    twin = attrs.evolve(
        signed,
        signatures=[attrs.evolve(signed.signatures[0], signature=_b64url(high))],
    )
    assert verify_card(twin, lambda kid, jku: public, algorithms=["ES256"]).name == CARD.name


def test_kid_and_jku_come_from_the_protected_header_only() -> None:
    # "Also noted" in issue 20: an unprotected header must not steer the key lookup.
    seen: list[tuple[str | None, str | None]] = []

    def provider(kid: str | None, jku: str | None) -> bytes | None:
        seen.append((kid, jku))
        return SECRET if kid == "k1" else None

    protected = _b64url(json.dumps({"alg": "HS256"}).encode())
    signing_input = f"{protected}.{_b64url(signing_payload(CARD))}".encode()
    sig = _b64url(hmac.new(SECRET, signing_input, hashlib.sha256).digest())
    card = attrs.evolve(
        CARD,
        signatures=[
            AgentCardSignature(
                protected=protected,
                signature=sig,
                header={"kid": "k1", "jku": "https://evil.example/jwks.json"},
            )
        ],
    )

    with pytest.raises(SignatureError):
        verify_card(card, provider, algorithms=["HS256"])
    assert seen == [(None, None)]


def test_one_valid_signature_among_several_is_enough() -> None:
    bad = sign_card(CARD, OTHER_SECRET, alg="HS256", kid="k1")
    both = sign_card(bad, SECRET, alg="HS256", kid="k1")

    with pytest.raises(SignatureError):
        verify_card(bad, _secret_for_k1, algorithms=["HS256"])
    assert verify_card(both, _secret_for_k1, algorithms=["HS256"]) == both


def test_unsigned_cards_and_unknown_kids_fail_verification() -> None:
    signed = sign_card(CARD, SECRET, alg="HS256", kid="other")

    with pytest.raises(SignatureError):
        verify_card(CARD, _secret_for_k1, algorithms=["HS256"])
    with pytest.raises(SignatureError) as caught:
        verify_card(signed, _secret_for_k1, algorithms=["HS256"])
    assert caught.value.details == ["signature 0: no key for this kid"]


def test_a_critical_header_we_do_not_understand_invalidates_the_signature() -> None:
    protected = _b64url(json.dumps({"alg": "HS256", "kid": "k1", "crit": ["b64"]}).encode())
    signing_input = f"{protected}.{_b64url(signing_payload(CARD))}".encode()
    sig = _b64url(hmac.new(SECRET, signing_input, hashlib.sha256).digest())
    card = attrs.evolve(CARD, signatures=[AgentCardSignature(protected=protected, signature=sig)])

    with pytest.raises(SignatureError):
        verify_card(card, _secret_for_k1, algorithms=["HS256"])


def test_raw_card_json_with_duplicate_keys_is_refused() -> None:
    signed = json.dumps(dump_card(sign_card(CARD, SECRET, alg="HS256", kid="k1")))
    duplicated = signed[:-1] + ', "name": "Other"}'

    with pytest.raises(SignatureError):
        verify_card(duplicated, _secret_for_k1, algorithms=["HS256"])


def test_a_signature_over_the_served_json_itself_is_accepted() -> None:
    served = {**dump_card(CARD), "x-vendor": {"tier": "gold"}}  # a member a2a_sync ignores
    protected = _b64url(json.dumps({"alg": "HS256", "kid": "k1"}).encode())
    payload = canonicalize(served)
    sig = hmac.new(SECRET, f"{protected}.{_b64url(payload)}".encode(), hashlib.sha256).digest()
    served["signatures"] = [{"protected": protected, "signature": _b64url(sig)}]

    assert verify_card(served, _secret_for_k1, algorithms=["HS256"]).name == CARD.name


def test_short_hmac_secrets_are_refused() -> None:
    with pytest.raises(ConfigurationError):
        sign_card(CARD, b"short", alg="HS256", kid="k1")


def test_public_key_algorithms_without_cryptography_are_a_configuration_error(
    keys: dict[str, tuple[Any, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Emulates an install without the optional 'signing' extra.
    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives", None)
    monkeypatch.setitem(sys.modules, "cryptography.exceptions", None)

    with pytest.raises(ConfigurationError) as caught:
        sign_card(CARD, keys["ES256"][0], alg="ES256", kid="k1")
    assert "a2a-sync[signing]" in str(caught.value)  # the message is the feature: how to fix
    assert sign_card(CARD, SECRET, alg="HS256", kid="k1").signatures


# --- peers: a2a-sdk's signer and verifier ------------------------------------------------------


@pytest.mark.peer
@pytest.mark.parametrize("alg", ["HS256", "ES256", "EdDSA", "RS256"])
def test_cards_signed_by_a2a_sdk_verify_here_and_ours_verify_there(
    keys: dict[str, tuple[Any, Any]], alg: str
) -> None:
    from a2a.client.card_resolver import parse_agent_card
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.types import a2a_pb2
    from a2a.utils.signing import create_agent_card_signer, create_signature_verifier
    from google.protobuf.json_format import ParseDict

    private, public = keys[alg]
    proto = ParseDict(dump_card(CARD, "1.0"), a2a_pb2.AgentCard())
    signer = create_agent_card_signer(
        private, {"alg": alg, "kid": "k1", "typ": "JOSE", "jku": None}
    )
    served_by_them = json.dumps(agent_card_to_dict(signer(proto)), ensure_ascii=False)

    ours = sign_card(dump_card(CARD), private, alg=alg, kid="k1")
    their_verifier = create_signature_verifier(lambda kid, jku: public, [alg])

    assert verify_card(served_by_them, lambda kid, jku: public, algorithms=[alg]).name == CARD.name
    their_verifier(parse_agent_card(json.loads(json.dumps(ours))))  # raises if invalid


@pytest.mark.parametrize(
    "header",
    [
        b'{"alg": ["HS256"], "kid": "k1"}',
        b'{"alg": "HS512", "alg": "HS256", "kid": "k1"}',
        b'["HS256"]',
        b"not json",
    ],
    ids=["alg-list", "duplicate-alg", "not-object", "not-json"],
)
def test_malformed_protected_headers_are_rejected_not_crashed_on(header: bytes) -> None:
    protected = _b64url(header)
    signing_input = f"{protected}.{_b64url(signing_payload(CARD))}".encode()
    sig = _b64url(hmac.new(SECRET, signing_input, hashlib.sha256).digest())
    card = attrs.evolve(CARD, signatures=[AgentCardSignature(protected=protected, signature=sig)])

    with pytest.raises(SignatureError):
        verify_card(card, _secret_for_k1, algorithms=["HS256"])
