"""Where a ``GRPC`` interface points: its URL read as a gRPC target (no grpc import).

A2A 1.0 cards give a gRPC interface's URL as ``host:port`` (the proto's
``AgentInterface.url`` comment); schemes are accepted too. TLS is decided here:
``grpcs://`` and ``https://`` use it, ``grpc://`` and ``http://`` do not, and a bare
``host:port`` uses it unless the host is loopback (A2A 1.0 §10.1 requires TLS in
production; credentials never travel in plaintext except to loopback).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import urlsplit

import attrs

from ..._net.secure import is_loopback
from ..._redact import redact_url
from ...errors import ConfigurationError

__all__ = ["GRPCTarget", "parse_grpc_url"]

_SECURE: Final = {"grpcs": True, "https": True, "grpc": False, "http": False}


@attrs.frozen
class GRPCTarget:
    """A gRPC endpoint: host, port and whether the channel uses TLS."""

    host: str
    port: int
    secure: bool

    @property
    def target(self) -> str:
        """What ``grpc.*_channel`` dials (``host:port``, IPv6 in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def origin(self) -> str:
        """The origin credentials are bound to (``https://host:port`` with TLS)."""
        return f"{'https' if self.secure else 'http'}://{self.target}"

    @property
    def loopback(self) -> bool:
        """True for localhost and loopback addresses."""
        return is_loopback(self.host)


def parse_grpc_url(url: str) -> GRPCTarget:
    """Read a GRPC interface URL (``host:port``, or with a ``grpc(s)``/``http(s)`` scheme).

    Raises:
        ConfigurationError: No host or port can be read from ``url``.
    """
    text = url.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else None
    parts = urlsplit(text if scheme is not None else f"//{text}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if scheme is not None and scheme not in _SECURE:
        port = None
    if not parts.hostname or port is None or parts.path.strip("/"):
        raise ConfigurationError(
            f"not a gRPC address: {redact_url(url)!r}; give host:port (or grpcs://host:port)"
        )
    host = parts.hostname.lower()
    if scheme is not None:
        return GRPCTarget(host, port, _SECURE[scheme])
    plain = GRPCTarget(host, port, False)
    return plain if plain.loopback else GRPCTarget(host, port, True)
