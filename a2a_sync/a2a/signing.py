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

Algorithms: ``HS256/384/512`` use the standard library; ``RS*``, ``PS*``, ``ES256/384/512``
and ``EdDSA`` (Ed25519/Ed448) need the ``cryptography`` package (extra
``a2a-sync[signing]``). Keys are ``cryptography`` key objects or PEM text/bytes (HMAC:
the secret as bytes or str, at least as long as the hash output).

All functions are pure and thread-safe.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import math
from collections.abc import Callable, Iterable, Mapping
from json.encoder import encode_basestring
from types import SimpleNamespace
from typing import Any, Final, TypeVar

import attrs

from ..errors import ConfigurationError, ProtocolError, SignatureError
from .types import AgentCard, AgentCardSignature

__all__ = [
    "HMAC_ALGORITHMS",
    "PUBLIC_KEY_ALGORITHMS",
    "KeyProvider",
    "canonicalize",
    "parse_json",
    "signing_payload",
    "sign_card",
    "verify_card",
]

CardT = TypeVar("CardT", AgentCard, dict[str, Any])

#: ``key_provider(kid, jku)`` returns the verification key, or ``None`` when unknown.
KeyProvider = Callable[[str | None, str | None], Any]

#: HMAC algorithms (standard library).
HMAC_ALGORITHMS: Final = {"HS256": "sha256", "HS384": "sha384", "HS512": "sha512"}
#: Public-key algorithms (need ``cryptography``): name -> (family, hash).
PUBLIC_KEY_ALGORITHMS: Final = {
    "RS256": ("RSA", "SHA256"),
    "RS384": ("RSA", "SHA384"),
    "RS512": ("RSA", "SHA512"),
    "PS256": ("PSS", "SHA256"),
    "PS384": ("PSS", "SHA384"),
    "PS512": ("PSS", "SHA512"),
    "ES256": ("EC", "SHA256"),
    "ES384": ("EC", "SHA384"),
    "ES512": ("EC", "SHA512"),
    "EdDSA": ("OKP", ""),
}
_EC_CURVES: Final = {"ES256": "secp256r1", "ES384": "secp384r1", "ES512": "secp521r1"}
#: Deepest object/array nesting canonicalized: far beyond any real card, far below the stack.
MAX_DEPTH: Final = 128
_MAX_SAFE_INTEGER: Final = 2**53


# --- RFC 8785 ----------------------------------------------------------------------------------


def canonicalize(value: Any) -> bytes:
    """Serialize a JSON value per RFC 8785 (JCS), as UTF-8 bytes.

    Keys are sorted by UTF-16 code units, strings keep non-ASCII text literal (only ``"``,
    ``\\`` and control characters are escaped), numbers use ECMAScript formatting (``1.0``
    -> ``1``, ``1e21`` -> ``1e+21``, ``1e-7`` -> ``1e-7``).

    Raises:
        ConfigurationError: The value has no canonical form: NaN/Infinity, an integer
            beyond IEEE 754 double precision, a non-string key, a lone surrogate, or
            nesting deeper than :data:`MAX_DEPTH`.
    """
    out: list[str] = []
    _write(value, out, 0)
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigurationError("JSON text contains a lone surrogate") from None


def _write(value: Any, out: list[str], depth: int) -> None:
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(_format_int(value))
    elif isinstance(value, float):
        out.append(format_number(value))
    elif isinstance(value, (list, tuple)):
        _check_depth(depth)
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, depth + 1)
        out.append("]")
    elif isinstance(value, Mapping):
        _check_depth(depth)
        out.append("{")
        for index, key in enumerate(_sorted_keys(value)):
            if index:
                out.append(",")
            out.append(encode_basestring(key))
            out.append(":")
            _write(value[key], out, depth + 1)
        out.append("}")
    else:
        raise ConfigurationError(f"{type(value).__name__} is not a JSON value")


def _check_depth(depth: int) -> None:
    if depth >= MAX_DEPTH:
        raise ConfigurationError(f"JSON nested deeper than {MAX_DEPTH} levels")


def _sorted_keys(obj: Mapping[Any, Any]) -> list[str]:
    if any(key.__class__ is not str for key in obj):
        raise ConfigurationError("JSON object keys must be strings")
    try:
        return sorted(obj, key=lambda key: key.encode("utf-16-be"))
    except UnicodeEncodeError:
        raise ConfigurationError("JSON object key contains a lone surrogate") from None


def _format_int(value: int) -> str:
    if -_MAX_SAFE_INTEGER <= value <= _MAX_SAFE_INTEGER:
        return str(value)
    as_float = float(value)
    if as_float != value:
        raise ConfigurationError("integer is not exactly representable as a JSON number")
    return format_number(as_float)


def format_number(value: float) -> str:
    """Format a float like ECMAScript's ``Number.prototype.toString`` (RFC 8785 §3.2.2.3).

    Raises:
        ConfigurationError: ``value`` is NaN or infinite.
    """
    if not math.isfinite(value):
        raise ConfigurationError("NaN and Infinity are not JSON numbers")
    if value == 0:
        return "0"  # also -0
    if value < 0:
        return "-" + format_number(-value)
    # repr() gives the shortest round-tripping digits; re-layout them per ECMA-262.
    mantissa, _, exponent = repr(value).partition("e")
    integral, _, fraction = mantissa.partition(".")
    digits = integral + fraction
    point = len(integral) + int(exponent or 0)  # value = 0.DIGITS x 10^point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    exp = n - 1
    sign = "+" if exp >= 0 else "-"
    head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{sign}{abs(exp)}"


def parse_json(text: str | bytes) -> Any:
    """Parse JSON strictly: duplicate object keys and NaN/Infinity are errors.

    Raises:
        ProtocolError: The text is not strict JSON.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"invalid JSON: {exc}") from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise ValueError("duplicate object key")
    return obj


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


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


def _payload_of(card_json: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in card_json.items() if k != "signatures"}
    try:
        return canonicalize(_drop_empty(body) or {})
    except RecursionError:
        raise ConfigurationError(f"JSON nested deeper than {MAX_DEPTH} levels") from None


def signing_payload(card: AgentCard) -> bytes:
    """The canonical bytes a signature over ``card`` covers (1.0 form, see module docstring).

    Raises:
        ConfigurationError: The card holds a value with no canonical JSON form.
    """
    from .card_codec import dump_card  # noqa: PLC0415 - keeps `import a2a_sync.signing` light

    return _payload_of(dump_card(card, "1.0"))


# --- JWS -----------------------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    if text.__class__ is not str or "=" in text:
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _crypto(alg: str) -> Any:
    """The ``cryptography`` pieces used here (an optional dependency, imported on use)."""
    try:
        from cryptography.exceptions import InvalidSignature  # noqa: PLC0415 - optional
        from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
        from cryptography.hazmat.primitives.asymmetric import (  # noqa: PLC0415
            ec,
            ed448,
            ed25519,
            padding,
            rsa,
            utils,
        )
    except ImportError:
        raise ConfigurationError(
            f"{alg} signatures need the 'cryptography' package (pip install 'a2a-sync[signing]')"
        ) from None
    return SimpleNamespace(
        InvalidSignature=InvalidSignature,
        hashes=hashes,
        serialization=serialization,
        ec=ec,
        ed448=ed448,
        ed25519=ed25519,
        padding=padding,
        rsa=rsa,
        utils=utils,
    )


def _hmac_key(alg: str, key: Any) -> bytes:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes):
        raise _KeyMismatch(f"{alg} needs a secret as bytes or str")
    if key.lstrip().startswith((b"-----BEGIN", b"ssh-", b"ecdsa-")):
        # A public key used as an HMAC secret is the classic algorithm-confusion attack.
        raise _KeyMismatch(f"{alg} needs a shared secret, not a PEM/SSH key")
    if len(key) < hashlib.new(HMAC_ALGORITHMS[alg]).digest_size:
        raise ConfigurationError(f"{alg} secret is shorter than the hash output (RFC 7518 §3.2)")
    return key


def _asymmetric_key(alg: str, key: Any, *, private: bool) -> Any:
    """Normalize and type-check a key for a public-key algorithm."""
    c = _crypto(alg)
    if isinstance(key, str):
        key = key.encode("utf-8")
    if isinstance(key, bytes):
        try:
            key = (
                c.serialization.load_pem_private_key(key, password=None)
                if private or b"PRIVATE KEY" in key
                else c.serialization.load_pem_public_key(key)
            )
        except (ValueError, TypeError) as exc:
            raise ConfigurationError(f"{alg} key is not a usable PEM key") from exc
    family = PUBLIC_KEY_ALGORITHMS[alg][0]
    if family in ("RSA", "PSS"):
        kinds: tuple[type, ...] = (c.rsa.RSAPrivateKey, c.rsa.RSAPublicKey)
    elif family == "EC":
        kinds = (c.ec.EllipticCurvePrivateKey, c.ec.EllipticCurvePublicKey)
    else:
        kinds = (
            c.ed25519.Ed25519PrivateKey,
            c.ed25519.Ed25519PublicKey,
            c.ed448.Ed448PrivateKey,
            c.ed448.Ed448PublicKey,
        )
    if not isinstance(key, kinds):
        raise _KeyMismatch(f"key type does not match {alg}")
    return _check_key_use(alg, key, private=private)


def _check_key_use(alg: str, key: Any, *, private: bool) -> Any:
    if PUBLIC_KEY_ALGORITHMS[alg][0] == "EC" and key.curve.name != _EC_CURVES[alg]:
        raise _KeyMismatch(f"{alg} needs a {_EC_CURVES[alg]} key")
    has_private = hasattr(key, "private_bytes")
    if private and not has_private:
        raise ConfigurationError(f"signing with {alg} needs a private key")
    return key.public_key() if not private and has_private else key


class _KeyMismatch(ConfigurationError):
    """The key does not fit the algorithm (possible algorithm confusion)."""


def _sign(alg: str, key: Any, data: bytes) -> bytes:
    if alg in HMAC_ALGORITHMS:
        return hmac.new(_hmac_key(alg, key), data, HMAC_ALGORITHMS[alg]).digest()
    if alg not in PUBLIC_KEY_ALGORITHMS:
        raise ConfigurationError(f"unsupported JWS algorithm {alg!r}")
    key = _asymmetric_key(alg, key, private=True)
    c = _crypto(alg)
    family, hash_name = PUBLIC_KEY_ALGORITHMS[alg]
    if family == "OKP":
        return key.sign(data)  # type: ignore[no-any-return]
    digest = getattr(c.hashes, hash_name)()
    if family == "RSA":
        return key.sign(data, c.padding.PKCS1v15(), digest)  # type: ignore[no-any-return]
    if family == "PSS":
        pss = c.padding.PSS(mgf=c.padding.MGF1(digest), salt_length=digest.digest_size)
        return key.sign(data, pss, digest)  # type: ignore[no-any-return]
    r: int
    s: int
    r, s = c.utils.decode_dss_signature(key.sign(data, c.ec.ECDSA(digest)))
    size = (key.curve.key_size + 7) // 8
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def _verify(alg: str, key: Any, data: bytes, signature: bytes) -> bool:
    if alg in HMAC_ALGORITHMS:
        expected = hmac.new(_hmac_key(alg, key), data, HMAC_ALGORITHMS[alg]).digest()
        return hmac.compare_digest(expected, signature)
    key = _asymmetric_key(alg, key, private=False)
    c = _crypto(alg)
    family, hash_name = PUBLIC_KEY_ALGORITHMS[alg]
    try:
        if family == "OKP":
            key.verify(signature, data)
            return True
        digest = getattr(c.hashes, hash_name)()
        if family == "RSA":
            key.verify(signature, data, c.padding.PKCS1v15(), digest)
        elif family == "PSS":
            pss = c.padding.PSS(mgf=c.padding.MGF1(digest), salt_length=digest.digest_size)
            key.verify(signature, data, pss, digest)
        else:
            size = (key.curve.key_size + 7) // 8
            if len(signature) != 2 * size:
                return False
            r = int.from_bytes(signature[:size], "big")
            s = int.from_bytes(signature[size:], "big")
            key.verify(c.utils.encode_dss_signature(r, s), data, c.ec.ECDSA(digest))
    except c.InvalidSignature:
        return False
    return True


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
        protected=protected, signature=_b64url(_sign(alg, key, signing_input)), header=header
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
) -> AgentCard:
    """Check that at least one of the card's signatures verifies.

    Args:
        card: The card: raw JSON text/bytes (parsed strictly: duplicate keys are refused),
            decoded JSON, or an :class:`AgentCard`.
        key_provider: ``key_provider(kid, jku)`` returns the verification key for a
            signature's key id and JWK Set URL, or ``None`` if it has none. Fetching a
            ``jku`` URL, and trusting it, is the provider's decision.
        algorithms: Algorithms to accept (e.g. ``["ES256"]``), never inferred from the
            signature; ``"none"`` is not a JWS algorithm here.

    Returns:
        The card as an :class:`AgentCard`.

    Raises:
        SignatureError: The card is unsigned, or no signature verifies (the message lists
            why each was rejected), or raw JSON is malformed.
        ProtocolError: The JSON is not a valid agent card.
        ConfigurationError: ``algorithms`` is empty or unknown, ``cryptography`` is missing,
            or the provider returned an unusable key (e.g. a too-short HMAC secret).
    """
    from .card_codec import load_card  # noqa: PLC0415 - keeps the import light

    allowed = _check_algorithms(algorithms)
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
        payloads = [signing_payload(model)]
        if raw is not None and isinstance(raw, Mapping):
            as_served = _payload_of(raw)
            if as_served != payloads[0]:
                payloads.append(as_served)
    except ConfigurationError as exc:
        raise SignatureError("agent card has no canonical JSON form") from exc
    encoded = [_b64url(p) for p in payloads]
    reasons = []
    for index, signature in enumerate(model.signatures):
        reason = _check_signature(signature, encoded, key_provider, allowed)
        if reason is None:
            return model
        reasons.append(f"signature {index}: {reason}")
    raise SignatureError("no valid agent card signature", details=reasons)


def _check_signature(
    signature: AgentCardSignature,
    encoded_payloads: list[str],
    key_provider: KeyProvider,
    allowed: frozenset[str],
) -> str | None:
    """Return ``None`` if the signature verifies, else why not (never secret material)."""
    try:
        header = parse_json(_b64url_decode(signature.protected))  # duplicate names refused
        sig_bytes = _b64url_decode(signature.signature)
    except (ProtocolError, ValueError, binascii.Error):
        return "malformed protected header or signature"
    if not isinstance(header, dict):
        return "protected header is not a JSON object"
    alg = header.get("alg")
    if not isinstance(alg, str) or alg not in allowed:
        return f"algorithm {str(alg)[:20]!r} is not allowed"
    if "crit" in header:
        return "unsupported critical header parameters"
    unprotected = signature.header or {}
    kid = header.get("kid", unprotected.get("kid"))
    jku = header.get("jku", unprotected.get("jku"))
    key = key_provider(kid if isinstance(kid, str) else None, jku if isinstance(jku, str) else None)
    if key is None:
        return "no key for this kid"
    for payload in encoded_payloads:
        data = f"{signature.protected}.{payload}".encode("ascii")
        try:
            if _verify(alg, key, data, sig_bytes):
                return None
        except _KeyMismatch as exc:
            return str(exc)
    return "signature does not match"
