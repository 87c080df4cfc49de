"""Agent card signatures: RFC 8785 (JCS) canonical JSON and detached JWS (A2A 1.0 §8.4).

A signature covers the card minus ``signatures``, with empty values dropped, canonicalized
with JCS. Each signature is a detached JWS: ``protected`` is base64url of the header JSON
(``alg``, ``kid``, ``typ: "JOSE"``, optional ``jku``) and ``signature`` is base64url of the
signature over ``protected + "." + base64url(payload)``::

    signed = sign_card(card, private_key, alg="ES256", kid="key-2026")
    card = verify_card(card_json_bytes, {"key-2026": public_key}.get, algorithms=["ES256"])

The signed payload is the card as a2a_sync (and a2a-sdk) understands it: the card is read
into :class:`~a2a_sync.types.AgentCard` and written back in 1.0 form, so the 0.3 fields a
dual-version card carries, and fields this package does not know, are not covered. This
is what a2a-sdk 1.3 signs and checks (``MessageToDict`` of its proto card, empty values
dropped, its own RFC 8785 implementation), so signatures verify in both directions,
including non-ASCII cards. When verifying raw JSON, a signature over the received
document itself (minus ``signatures``, empty values dropped) is accepted too, for signers
that canonicalize the JSON they serve.

:func:`verify_card` returns the card rebuilt from the JSON the valid signature covers, so
what the caller uses is exactly what was signed; members a signature cannot cover (empty
values, and in the 1.0 form the 0.3 fields and unknown members) are not in it.
Key selection uses the protected header only. Key rules: see :mod:`a2a_sync.a2a.jws_keys`.

Algorithms: ``HS256/384/512`` use the standard library; ``RS*``, ``PS*``, ``ES256/384/512``
and ``EdDSA`` (Ed25519/Ed448) need the ``cryptography`` package (extra
``a2a-sync[signing]``). Keys are ``cryptography`` key objects or PEM/DER/OpenSSH
text/bytes (HMAC: the secret as bytes or str, at least as long as the hash output; key
material is never accepted as a secret).

All functions are pure and thread-safe.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

import attrs

from ..errors import ConfigurationError, ProtocolError, SignatureError
from . import jws_keys as _jws_keys
from .jcs import MAX_DEPTH, canonicalize, parse_json
from .jws_keys import HMAC_ALGORITHMS, PUBLIC_KEY_ALGORITHMS
from .types import AgentCard, AgentCardSignature

__all__ = [
    "HMAC_ALGORITHMS",
    "PUBLIC_KEY_ALGORITHMS",
    "KeyProvider",
    "canonicalize",
    "card_verifier",
    "parse_json",
    "signing_payload",
    "sign_card",
    "verify_card",
]

CardT = TypeVar("CardT", AgentCard, dict[str, Any])

#: ``key_provider(kid, jku)`` returns the verification key, or ``None`` when unknown.
KeyProvider = Callable[[str | None, str | None], Any]

# --- payload -------------------------------------------------------------------------------------


def _drop_empty(value: Any) -> Any:
    """Remove ``None``, ``""``, empty lists and empty objects, recursively (a2a-sdk's rule)."""
    if isinstance(value, Mapping):
        cleaned = {k: c for k, v in value.items() if (c := _drop_empty(v)) is not None}
        return cleaned or None
    if isinstance(value, list):
        items = [c for v in value if (c := _drop_empty(v)) is not None]
        return items or None
    if value is None or value == "":
        return None
    return value


def _signed_form(card_json: Mapping[str, Any]) -> dict[str, Any]:
    """What a signature covers: the card JSON minus ``signatures``, empty values dropped."""
    body = {k: v for k, v in card_json.items() if k != "signatures"}
    try:
        form: dict[str, Any] = _drop_empty(body) or {}
    except RecursionError:
        raise ConfigurationError(f"JSON nested deeper than {MAX_DEPTH} levels") from None
    return form


def signing_payload(card: AgentCard) -> bytes:
    """The canonical bytes a signature over ``card`` covers (1.0 form, see module docstring).

    Raises:
        ConfigurationError: The card holds a value with no canonical JSON form.
    """
    from .card_codec import dump_card  # noqa: PLC0415 - keeps `import a2a_sync.signing` light

    return canonicalize(_signed_form(dump_card(card, "1.0")))


# --- JWS -----------------------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    if text.__class__ is not str or "=" in text:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _check_algorithms(algorithms: Iterable[str]) -> frozenset[str]:
    allowed = frozenset(algorithms)
    if isinstance(algorithms, str) or not allowed:
        raise ConfigurationError("algorithms must be a non-empty list such as ['ES256']")
    unknown = allowed - HMAC_ALGORITHMS.keys() - PUBLIC_KEY_ALGORITHMS.keys()
    if unknown:
        raise ConfigurationError(f"unsupported JWS algorithms: {sorted(unknown)}")
    return allowed


# --- public API --------------------------------------------------------------------------------


def sign_card(
    card: CardT,
    key: Any,
    *,
    alg: str,
    kid: str,
    jku: str | None = None,
    header: dict[str, Any] | None = None,
) -> CardT:
    """Add a detached JWS signature to an agent card.

    Args:
        card: An :class:`AgentCard`, or card JSON (a dict, e.g. what the server serves).
        key: The signing key: HMAC secret (bytes/str) or a private key (``cryptography``
            object or PEM).
        alg: JWS algorithm, e.g. ``"ES256"``, ``"EdDSA"``, ``"RS256"``, ``"HS256"``.
        kid: Key id put in the protected header (verifiers look the key up by it).
        jku: Optional JWK Set URL put in the protected header.
        header: Optional unprotected header values.

    Returns:
        A new card of the same kind with the signature appended to ``signatures`` (a dict
        keeps all its other members unchanged).

    Raises:
        ConfigurationError: Unknown algorithm, unusable key, ``cryptography`` missing for
            a public-key algorithm, or a card value with no canonical JSON form.
        ProtocolError: ``card`` is JSON that is not a valid agent card.
    """
    from .card_codec import load_card  # noqa: PLC0415 - keeps the import light
    from .codec import V1_0  # noqa: PLC0415

    model = card if isinstance(card, AgentCard) else load_card(card)
    protected_header: dict[str, Any] = {"alg": alg, "kid": kid, "typ": "JOSE"}
    if jku is not None:
        protected_header["jku"] = jku
    protected = _b64url(canonicalize(protected_header))
    signing_input = f"{protected}.{_b64url(signing_payload(model))}".encode("ascii")
    signature = AgentCardSignature(
        protected=protected,
        signature=_b64url(_jws_keys.sign(alg, key, signing_input)),
        header=header,
    )
    if isinstance(card, AgentCard):
        return attrs.evolve(card, signatures=[*card.signatures, signature])
    signed = dict(card)
    signed["signatures"] = [*card.get("signatures", []), V1_0.dump(signature)]
    return signed


def verify_card(
    card: AgentCard | Mapping[str, Any] | str | bytes,
    key_provider: KeyProvider,
    *,
    algorithms: Iterable[str],
    allow_mixed_key_types: bool = False,
) -> AgentCard:
    """Check that at least one of the card's signatures verifies, and return the card
    *as signed*.

    The returned card is built from exactly the JSON the valid signature covers (the
    signed payload, empty values dropped), never from the document as served: a member
    the signature does not cover (an added ``{"url": ""}`` interface, an empty
    ``securityRequirements`` hiding a 0.3 card's ``security``) cannot reach the caller.
    Use the returned card, not your own parse of the JSON.

    Args:
        card: The card: raw JSON text/bytes (parsed strictly: duplicate keys are refused),
            decoded JSON, or an :class:`AgentCard`.
        key_provider: ``key_provider(kid, jku)`` returns the verification key for a
            signature's key id and JWK Set URL, or ``None`` if it has none. Both come
            from the signature's *protected* header only (unprotected ``kid``/``jku``
            are ignored). Fetching a ``jku`` URL, and trusting it, is the provider's
            decision.
        algorithms: Algorithms to accept (e.g. ``["ES256"]``), never inferred from the
            signature; ``"none"`` is not a JWS algorithm here.
        allow_mixed_key_types: Allow HMAC and public-key algorithms together. Only for a
            provider that returns each kid's own key type (a public key handed out for
            an ``HS256`` signature is refused anyway).

    Returns:
        The signed card as an :class:`AgentCard` (with its ``signatures``).

    Raises:
        SignatureError: The card is unsigned, or no signature verifies (the message lists
            why each was rejected), or raw JSON is malformed.
        ProtocolError: The JSON (or the signed content) is not a valid agent card.
        ConfigurationError: ``algorithms`` is empty, unknown or mixes HMAC with public-key
            algorithms, ``cryptography`` is missing, or the provider returned an unusable
            key (e.g. a too-short HMAC secret).
    """
    from .card_codec import load_card  # noqa: PLC0415 - keeps the import light

    allowed = _check_algorithms(algorithms)
    _jws_keys.check_key_mix(allowed, allow_mixed_key_types=allow_mixed_key_types)
    raw: Mapping[str, Any] | None = None
    if isinstance(card, (str, bytes)):
        try:
            raw = parse_json(card)
        except ProtocolError as exc:
            raise SignatureError("agent card is not strict JSON", details=exc.details) from exc
    elif not isinstance(card, AgentCard):
        raw = card
    model = card if isinstance(card, AgentCard) else load_card(raw)
    if not model.signatures:
        raise SignatureError("agent card is not signed")
    try:
        from .card_codec import dump_card  # noqa: PLC0415 - keeps the import light

        signed_forms = [_signed_form(dump_card(model, "1.0"))]
        if raw is not None and isinstance(raw, Mapping):
            as_served = _signed_form(raw)
            if as_served != signed_forms[0]:
                signed_forms.append(as_served)
        encoded = [_b64url(canonicalize(form)) for form in signed_forms]
    except (ConfigurationError, RecursionError) as exc:
        raise SignatureError("agent card has no canonical JSON form") from exc
    reasons = []
    for index, signature in enumerate(model.signatures):
        reason, which = _check_signature(signature, encoded, key_provider, allowed)
        if reason is None:
            # Use what was verified: the card is rebuilt from the signed JSON itself.
            verified = load_card(signed_forms[which])
            return attrs.evolve(verified, signatures=model.signatures)
        reasons.append(f"signature {index}: {reason}")
    raise SignatureError("no valid agent card signature", details=reasons)


def card_verifier(
    key_provider: KeyProvider,
    *,
    algorithms: Iterable[str],
    allow_mixed_key_types: bool = False,
) -> Callable[[Mapping[str, Any]], AgentCard]:
    """A ``verify_card=`` callable for :meth:`A2AClient.from_url
    <a2a_sync.client.A2AClient.from_url>`: it verifies each fetched card and returns the
    card as signed (see :func:`verify_card`)::

        client = A2AClient.from_url(url, verify_card=card_verifier(keys.get, algorithms=["ES256"]))

    Raises:
        ConfigurationError: ``algorithms`` is empty, unknown or mixes key types.
    """
    allowed = _check_algorithms(algorithms)
    _jws_keys.check_key_mix(allowed, allow_mixed_key_types=allow_mixed_key_types)

    def verifier(raw: Mapping[str, Any]) -> AgentCard:
        return verify_card(
            raw,
            key_provider,
            algorithms=allowed,
            allow_mixed_key_types=allow_mixed_key_types,
        )

    return verifier


def _check_signature(
    signature: AgentCardSignature,
    encoded_payloads: list[str],
    key_provider: KeyProvider,
    allowed: frozenset[str],
) -> tuple[str | None, int]:
    """``(None, index of the payload it covers)`` if the signature verifies, else
    ``(why not, -1)`` (never secret material)."""
    try:
        header = parse_json(_b64url_decode(signature.protected))  # duplicate names refused
        sig_bytes = _b64url_decode(signature.signature)
    except (ProtocolError, ValueError, binascii.Error):
        return "malformed protected header or signature", -1
    if not isinstance(header, dict):
        return "protected header is not a JSON object", -1
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in allowed:
        return f"algorithm {str(alg)[:20]!r} is not allowed", -1
    if "crit" in header:
        return "unsupported critical header parameters", -1
    # Only integrity-protected values pick the key: the unprotected header is anyone's.
    kid = header.get("kid")
    jku = header.get("jku")
    key = key_provider(kid if isinstance(kid, str) else None, jku if isinstance(jku, str) else None)
    if key is None:
        return "no key for this kid", -1
    for index, payload in enumerate(encoded_payloads):
        data = f"{signature.protected}.{payload}".encode("ascii")
        try:
            if _jws_keys.verify(alg, key, data, sig_bytes):
                return None, index
        except _jws_keys.KeyMismatch as exc:
            return str(exc), -1
    return "signature does not match", -1
