"""URL rules of OAuth for MCP: the canonical resource URI (RFC 8707), which endpoints we
may talk to (HTTPS, or plain HTTP to loopback only), and origins tokens are bound to."""

from __future__ import annotations

import functools
from urllib.parse import urlsplit, urlunsplit

from ..._net.secure import credentials_allowed, is_loopback
from ...errors import AuthorizationError

__all__ = [
    "canonical_resource",
    "check_endpoint",
    "is_loopback",
    "origin",
    "token_destination",
    "within",
]


def origin(url: str) -> str:
    """``scheme://host:port`` with the default port made explicit (``""`` if not http(s))."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return ""
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return ""
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def check_endpoint(url: object, what: str, step: str) -> str:
    """``url`` if it is an absolute HTTPS URL (or plain HTTP to loopback) without a
    fragment or credentials; else :class:`AuthorizationError` naming ``what``."""
    if not isinstance(url, str) or not url:
        raise AuthorizationError(f"{what} is missing or not a string", step=step)
    parts = urlsplit(url)
    if parts.username is not None or parts.fragment or not parts.hostname:
        raise AuthorizationError(
            f"{what} {_shown(url)} is not an absolute URL without credentials or #fragment",
            step=step,
        )
    if credentials_allowed(url):  # the one rule of a2a_sync (a2a_sync._net.secure)
        return url
    raise AuthorizationError(
        f"{what} {_shown(url)} is not HTTPS; OAuth traffic goes over HTTPS only (plain HTTP "
        "is allowed to loopback addresses for local testing)",
        step=step,
    )


def canonical_resource(url: str) -> str:
    """The RFC 8707 resource indicator of a server URL: lower-case scheme and host, no
    default port, no query or fragment, the path kept (no lone trailing ``/``)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != (443 if scheme == "https" else 80):
        host = f"{host}:{port}"
    path = parts.path if parts.path != "/" else ""
    return urlunsplit((scheme, host, path, "", ""))


def within(resource: str, url: str) -> bool:
    """Whether protected-resource metadata naming ``resource`` may describe ``url``: the
    same origin, and ``resource``'s path equal to or a parent segment of ``url``'s."""
    if origin(resource) != origin(url) or not origin(url):
        return False
    parent = urlsplit(canonical_resource(resource)).path.rstrip("/")
    child = urlsplit(canonical_resource(url)).path
    return child == parent or child.startswith(parent + "/")


def _shown(url: str) -> str:
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    return repr(urlunsplit((parts.scheme, netloc, parts.path, "", "")))


@functools.lru_cache(maxsize=256)
def token_destination(url: str) -> tuple[str, bool]:
    """A request URL's origin and whether a token may be sent there (HTTPS, or HTTP to
    loopback). Asked per request, so cached: transports send to a handful of URLs."""
    return origin(url), _secure(url)


def _secure(url: str) -> bool:
    try:
        check_endpoint(url, "the resource", "resource")
    except AuthorizationError:
        return False
    return True
