"""TLS of the gRPC binding's channel, from the same settings the HTTP bindings use.

``verify`` and ``cert`` mean what they mean for requests (and so for
:class:`~a2a_sync._net.http.HTTPTransport` and ``ClientOptions``): ``verify=True`` trusts
grpcio's default roots (or the bundle in ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE``, which
the HTTP transport already resolved), ``verify="ca.pem"`` trusts the CA certificates in
that PEM bundle only, and ``cert`` is a client certificate for mutual TLS: one PEM file
holding the certificate chain and its private key, or a ``(cert, key)`` pair of files.
grpcio cannot turn certificate verification off, so ``verify=False`` is refused with a
hint instead of silently verifying. Needs the ``grpc`` extra.
"""

from __future__ import annotations

import re
from typing import Final

import grpc

from ...errors import ConfigurationError

__all__ = ["channel_credentials"]

_PEM_BLOCK: Final = re.compile(
    rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----\r?\n?", re.DOTALL
)


def channel_credentials(
    verify: bool | str, cert: str | tuple[str, str] | None, *, target: str
) -> grpc.ChannelCredentials:
    """The channel credentials for a ``grpcs`` target.

    Raises:
        ConfigurationError: ``verify=False``, or a file cannot be read or holds no PEM
            certificate / key.
    """
    if verify is False:
        raise ConfigurationError(
            f"gRPC to {target}: grpcio cannot skip certificate verification (verify=False); "
            "pass verify='/path/to/ca.pem' with the CA that signed the agent's certificate"
        )
    roots = _read(verify, "CA bundle (verify=)") if isinstance(verify, str) else None
    if roots is not None and b"-----BEGIN CERTIFICATE-----" not in roots:
        raise ConfigurationError(f"the CA bundle {verify!r} holds no PEM certificate")
    chain = key = None
    if cert is not None:
        chain, key = _client_pair(cert)
    return grpc.ssl_channel_credentials(
        root_certificates=roots, private_key=key, certificate_chain=chain
    )


def _client_pair(cert: str | tuple[str, str]) -> tuple[bytes, bytes]:
    if isinstance(cert, tuple):
        cert_path, key_path = cert
        chain, key = _read(cert_path, "client certificate"), _read(key_path, "client key")
    else:
        blocks = [m.group(0) for m in _PEM_BLOCK.finditer(_read(cert, "client certificate"))]
        chain = b"".join(b for b in blocks if b"CERTIFICATE-----" in b.split(b"\n", 1)[0])
        key = b"".join(b for b in blocks if b"PRIVATE KEY-----" in b.split(b"\n", 1)[0])
        cert_path = key_path = cert
    if b"-----BEGIN CERTIFICATE-----" not in chain:
        raise ConfigurationError(f"the client certificate {cert_path!r} holds no PEM certificate")
    if b"PRIVATE KEY-----" not in key:
        raise ConfigurationError(
            f"no PEM private key in {key_path!r}; give cert=(cert_path, key_path) or one file "
            "holding both"
        )
    return chain, key


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the {what} {path!r}: {exc.strerror}") from exc
