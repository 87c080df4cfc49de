"""Which ``Host`` names an application answers to (DNS-rebinding protection).

The check lives in the WSGI application, so it holds under every server (waitress,
gunicorn, mounted in Flask or Django). Default: the loopback names plus the host of every
URL the card advertises; ``"*"`` turns the check off. See ``docs/decisions.md``.

Internal to :mod:`a2a_sync.server`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from ..a2a.types import AgentCard
from ._wire import LOOPBACK_HOSTS, host_allowed

__all__ = ["HOST_REFUSED", "allowed_hosts_for", "host_permitted"]

#: Body of the 421 answer: names the setting that fixes it, never echoes the header.
HOST_REFUSED: Final = (
    "unknown host: this agent answers only to the names in its allowed_hosts "
    "(A2AApplication(allowed_hosts=[...]); the default is loopback plus the card's URLs)"
)


def allowed_hosts_for(card: AgentCard, allowed_hosts: Sequence[str] | None) -> frozenset[str]:
    """The host names to accept: ``allowed_hosts`` as given (lower case), or by default
    :data:`LOOPBACK_HOSTS` plus the host of each of the card's interface URLs."""
    if allowed_hosts is not None:
        if isinstance(allowed_hosts, str):
            allowed_hosts = [allowed_hosts]
        return frozenset(h.strip().lower().strip("[]") for h in allowed_hosts)
    names = set(LOOPBACK_HOSTS)
    for interface in card.supported_interfaces:
        name = urlsplit(interface.url).hostname
        if name:
            names.add(name.lower())
    return frozenset(names)


def host_permitted(environ: Mapping[str, Any], allowed: frozenset[str]) -> bool:
    """Whether a request may be answered. A request without ``Host`` (HTTP/1.0) passes:
    browsers always send one, and rebinding needs a browser."""
    host = environ.get("HTTP_HOST")
    if host is None:
        return True
    return host_allowed(host, allowed)
