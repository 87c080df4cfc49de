"""JWS keys and primitives for agent card signatures (see :mod:`a2a_sync.signing`).

Key type follows from the key *object*: text or bytes handed over as a key are parsed with
``cryptography``'s loaders (PEM, DER, OpenSSH), and anything that parses as a public or
private key is never used as an HMAC secret, whatever comment lines or encoding come
first. A verifier also refuses to mix HMAC and public-key algorithms for one key provider
unless told to (``allow_mixed_key_types``): with a provider that returns public keys,
allowing ``HS256`` next to ``ES256`` is the algorithm-confusion setup.

ECDSA signatures are written with a low ``s`` (``s <= n/2``); verification accepts both
halves, as RFC 7518 and every mainstream JOSE library do, so an ECDSA signature is
malleable: a third party can turn a valid signature into another valid one over the
*same* card. It never lets the card's content change; do not use signature bytes as an
identifier.

All functions are pure and thread-safe.
"""

from __future__ import annotations

import hashlib
import hmac
from types import SimpleNamespace
from typing import Any, Final

from ..errors import ConfigurationError, install_hint

__all__ = [
    "HMAC_ALGORITHMS",
    "PUBLIC_KEY_ALGORITHMS",
    "KeyMismatch",
    "check_key_mix",
    "sign",
    "verify",
]

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
#: Group orders of the ECDSA curves (SEC 2), for low-s signing.
_EC_ORDERS: Final = {
    "secp256r1": 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551,
    "secp384r1": int(
        "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFC7634D81F4372DDF"
        "581A0DB248B0A77AECEC196ACCC52973",
        16,
    ),
    "secp521r1": int(
        "01FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"
        "FA51868783BF2F966B7FCC0148F709A5D03BB5C9B8899C47AEBB6FB71E91386409",
        16,
    ),
}
#: OpenSSH public key prefixes, refused as HMAC secrets even without ``cryptography``.
_SSH_PREFIXES: Final = (b"ssh-", b"ecdsa-sha2-", b"sk-ssh-", b"sk-ecdsa-")


class KeyMismatch(ConfigurationError):
    """The key does not fit the algorithm (possible algorithm confusion)."""


def check_key_mix(allowed: frozenset[str], *, allow_mixed_key_types: bool) -> None:
    """Refuse HMAC and public-key algorithms together for one key source.

    Raises:
        ConfigurationError: Both kinds are allowed and mixing was not asked for.
    """
    symmetric = allowed & HMAC_ALGORITHMS.keys()
    asymmetric = allowed & PUBLIC_KEY_ALGORITHMS.keys()
    if symmetric and asymmetric and not allow_mixed_key_types:
        raise ConfigurationError(
            f"algorithms mix HMAC ({', '.join(sorted(symmetric))}) and public-key "
            f"({', '.join(sorted(asymmetric))}) signatures for one key provider: a provider "
            "returning public keys would let a forger use one as an HMAC secret. Verify "
            "with one kind, or pass allow_mixed_key_types=True if the provider returns "
            "each kid's own key type"
        )


def _crypto(alg: str) -> Any:
    """The ``cryptography`` pieces used here (an optional dependency, imported on use)."""
    try:
        from cryptography.exceptions import (  # noqa: PLC0415 - optional
            InvalidSignature,
            UnsupportedAlgorithm,
        )
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
            f"{alg} signatures need the 'cryptography' package ({install_hint('signing')})"
        ) from None
    return SimpleNamespace(
        InvalidSignature=InvalidSignature,
        UnsupportedAlgorithm=UnsupportedAlgorithm,
        hashes=hashes,
        serialization=serialization,
        ec=ec,
        ed448=ed448,
        ed25519=ed25519,
        padding=padding,
        rsa=rsa,
        utils=utils,
    )


def _parse_key(data: bytes) -> Any:
    """``data`` as a ``cryptography`` key object, or ``None`` if no loader takes it."""
    try:
        c = _crypto("")
    except ConfigurationError:
        return None
    s = c.serialization
    loaders = (
        lambda d: s.load_pem_private_key(d, password=None),
        s.load_pem_public_key,
        lambda d: s.load_der_private_key(d, password=None),
        s.load_der_public_key,
        s.load_ssh_public_key,
        lambda d: s.load_ssh_private_key(d, password=None),
    )
    for load in loaders:
        try:
            return load(data)
        except (ValueError, TypeError, c.UnsupportedAlgorithm):
            continue
    return None


def _hmac_key(alg: str, key: Any) -> bytes:
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes):
        raise KeyMismatch(f"{alg} needs a secret as bytes or str")
    # A public key used as an HMAC secret is the classic algorithm-confusion attack: decide
    # by parsing (a comment line before the PEM, DER, OpenSSH all count), not by a prefix.
    if (
        b"-----BEGIN" in key
        or key.lstrip().startswith(_SSH_PREFIXES)
        or _parse_key(key) is not None
    ):
        raise KeyMismatch(f"{alg} needs a shared secret, not a public/private key")
    if len(key) < hashlib.new(HMAC_ALGORITHMS[alg]).digest_size:
        raise ConfigurationError(f"{alg} secret is shorter than the hash output (RFC 7518 §3.2)")
    return key


def _asymmetric_key(alg: str, key: Any, *, private: bool) -> Any:
    """Normalize and type-check a key for a public-key algorithm."""
    c = _crypto(alg)
    if isinstance(key, str):
        key = key.encode("utf-8")
    if isinstance(key, bytes):
        key = _parse_key(key)
        if key is None:
            raise ConfigurationError(f"{alg} key is not a usable PEM, DER or OpenSSH key")
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
        raise KeyMismatch(f"key type does not match {alg}")
    return _check_key_use(alg, key, private=private)


def _check_key_use(alg: str, key: Any, *, private: bool) -> Any:
    if PUBLIC_KEY_ALGORITHMS[alg][0] == "EC" and key.curve.name != _EC_CURVES[alg]:
        raise KeyMismatch(f"{alg} needs a {_EC_CURVES[alg]} key")
    has_private = hasattr(key, "private_bytes")
    if private and not has_private:
        raise ConfigurationError(f"signing with {alg} needs a private key")
    return key.public_key() if not private and has_private else key


def sign(alg: str, key: Any, data: bytes) -> bytes:
    """The JWS signature of ``data`` (ECDSA: ``r || s`` with low ``s``).

    Raises:
        ConfigurationError: Unknown algorithm or a key that does not fit it.
    """
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
    order = _EC_ORDERS[key.curve.name]
    s = min(s, order - s)  # low-s: the canonical one of the two valid signatures
    size = (key.curve.key_size + 7) // 8
    return r.to_bytes(size, "big") + s.to_bytes(size, "big")


def verify(alg: str, key: Any, data: bytes, signature: bytes) -> bool:
    """True if ``signature`` is a valid ``alg`` signature of ``data`` under ``key``.

    Raises:
        KeyMismatch: The key does not fit the algorithm.
        ConfigurationError: The key is unusable (too short, unparsable).
    """
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
