"""Where credentials may travel: HTTPS anywhere, plain HTTP only to loopback.

The one rule every place a2a_sync attaches a credential follows (the A2A client's
bindings, MCP's HTTP transports, OAuth, the push sender's registrations): a bearer token,
an API key, a password or a cookie goes over TLS, or over plain HTTP to ``localhost``,
127.0.0.0/8 or ``::1`` (tests, sidecars on the same machine), nowhere else. A trusted
internal network can opt in explicitly (``allow_insecure_credentials=True``); each
plain-HTTP origin used that way is logged once, as a warning.

Pure and thread-safe.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import threading
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

from .._redact import redact_url
from ..errors import ConfigurationError

__all__ = [
    "CREDENTIAL_HEADERS",
    "carries_credentials",
    "check_credentials_destination",
    "credentials_allowed",
    "is_loopback",
]

logger = logging.getLogger("a2a_sync.credentials")

#: Header names that carry a credential when a caller sets them by hand (``headers=``).
CREDENTIAL_HEADERS: Final = frozenset({"authorization", "cookie", "x-api-key"})

_LOOPBACK_NAMES: Final = frozenset({"localhost"})

_warned: set[str] = set()
_warned_lock = threading.Lock()


def is_loopback(host: str | None) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1`` (brackets allowed)."""
    if not host:
        return False
    host = host.strip("[]").lower()
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=256)
def credentials_allowed(url: str) -> bool:
    """Whether a credential may be sent to ``url``: HTTPS, or plain HTTP to loopback.
    Asked per request by some callers, so cached."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    scheme = parts.scheme.lower()
    return scheme == "https" or (scheme == "http" and is_loopback(host))


def carries_credentials(headers: Iterable[str] | None) -> bool:
    """True when a header name in ``headers`` is one of :data:`CREDENTIAL_HEADERS`."""
    return any(name.lower() in CREDENTIAL_HEADERS for name in headers or ())


def check_credentials_destination(
    url: str, *, what: str, allow_insecure: bool, option: str = "allow_insecure_credentials"
) -> None:
    """Refuse to send a credential to ``url`` unless :func:`credentials_allowed` (or the
    caller opted in, which is logged once per origin as a warning).

    Args:
        url: Where the credential would go.
        what: The operation, for the message (``"A2A client"``, ``"MCP endpoint"``).
        allow_insecure: The caller's explicit opt-in for plain HTTP.
        option: The name of that opt-in, for the message.

    Raises:
        ConfigurationError: Plain HTTP to a host that is not loopback, without opt-in.
    """
    if credentials_allowed(url):
        return
    shown = redact_url(url)
    if not allow_insecure:
        raise ConfigurationError(
            f"{what}: refusing to send credentials to {shown!r} in plaintext, without TLS "
            "(only loopback hosts may be reached so); use an https:// (or grpcs://) URL, or "
            f"pass {option}=True if the network to that host is trusted"
        )
    parts = urlsplit(url)
    origin = f"{parts.scheme.lower()}://{parts.netloc.rsplit('@', 1)[-1].lower()}"
    with _warned_lock:
        if origin in _warned:
            return
        _warned.add(origin)
    logger.warning(
        "%s: sending credentials to %s over plain HTTP (%s=True); anyone on the network "
        "path can read them",
        what,
        origin,
        option,
    )
