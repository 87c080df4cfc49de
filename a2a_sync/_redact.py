"""URL secrets out of messages and logs: the one redaction helper of a2a_sync.

A URL can carry credentials in two places: the userinfo (``http://user:PASSWORD@host/``)
and the query (``?key=SECRET``, ``?sig=...``). Everything a2a_sync writes into an
exception message, an exception's ``url``, a ``repr`` or a log line shows a URL through
:func:`redact_url`: userinfo becomes ``***`` and each query value ``***`` (names stay,
they help debugging); the fragment is dropped. :func:`scrub` removes the same secrets
from free text that may quote the URL (a urllib3 message names the request target).

Pure and thread-safe.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import SplitResult, parse_qsl, quote, urlsplit, urlunsplit

__all__ = ["MASK", "has_secrets", "redact_url", "scrub"]

#: What a secret is replaced with.
MASK: Final = "***"
#: Shorter query values are masked in structured places only, not searched for in text
#: (replacing "1" or "en" everywhere would garble a message and hide nothing).
_MIN_SECRET_IN_TEXT: Final = 4


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return parts if parts.scheme and parts.netloc else None


def has_secrets(url: str | None) -> bool:
    """True if ``url`` carries userinfo or a query (what :func:`redact_url` hides)."""
    parts = _split(url) if url else None
    return parts is not None and ("@" in parts.netloc or bool(parts.query or parts.fragment))


def _redacted_query(query: str) -> str:
    pairs = parse_qsl(query, keep_blank_values=True)
    if not pairs:
        return MASK
    return "&".join(f"{quote(name, safe='')}={MASK}" for name, _ in pairs)


def redact_url(url: str) -> str:
    """``url`` fit for a message or a log line: no userinfo, no query values, no fragment.

    Text that is not an absolute URL (a stdio command, a relative path) is returned as is.
    """
    parts = _split(url)
    if parts is None or not has_secrets(url):
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = _redacted_query(parts.query) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def scrub(text: str, url: str | None) -> str:
    """``text`` with every secret of ``url`` masked: the URL itself, its request target
    (``/path?query``, as urllib3 quotes it), its userinfo and its query values."""
    if not url or not has_secrets(url):
        return text
    parts = _split(url)
    assert parts is not None  # has_secrets() parsed it
    shown = redact_url(url)
    replacements = [(url, shown)]
    if parts.query:
        redacted_query = _redacted_query(parts.query)
        replacements.append((f"?{parts.query}", f"?{redacted_query}"))
        replacements.append((parts.query, redacted_query))
        raw_values = [piece.partition("=")[2] for piece in parts.query.split("&")]
        decoded = [value for _, value in parse_qsl(parts.query, keep_blank_values=True)]
        replacements += [
            (value, MASK)
            for value in sorted({*raw_values, *decoded}, key=len, reverse=True)
            if len(value) >= _MIN_SECRET_IN_TEXT
        ]
    if parts.fragment:
        replacements.append((f"#{parts.fragment}", ""))
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        replacements.append((f"{userinfo}@", f"{MASK}@"))
        replacements += [
            (secret, MASK)
            for secret in (parts.password, userinfo)
            if secret and len(secret) >= _MIN_SECRET_IN_TEXT
        ]
    for secret, mask in replacements:
        if secret:
            text = text.replace(secret, mask)
    return text
