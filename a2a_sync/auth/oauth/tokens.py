"""Tokens and where they are kept.

:class:`Token` never shows its secrets in ``repr``. A :class:`TokenStore` keeps one
:class:`Grant` (the token and, for dynamically registered clients, the registration) per
:class:`GrantKey` (issuer + resource + client). :class:`MemoryTokenStore` is the default;
:class:`FileTokenStore` keeps one 0600 JSON file per key in a 0700 directory, so scripts
do not log in on every run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import attrs

__all__ = [
    "ClientInfo",
    "FileTokenStore",
    "Grant",
    "GrantKey",
    "MemoryTokenStore",
    "Token",
    "TokenStore",
]

logger = logging.getLogger(__name__)


@attrs.frozen
class Token:
    """An access token (and maybe a refresh token). Secrets are hidden from ``repr``."""

    access_token: str = attrs.field(repr=False)
    token_type: str = "Bearer"  # noqa: S105 - the token type name
    expires_at: float | None = None
    refresh_token: str | None = attrs.field(default=None, repr=False)
    scope: tuple[str, ...] = ()

    def expired(self, leeway: float = 30.0, now: float | None = None) -> bool:
        """Whether the token expires within ``leeway`` seconds (``False`` when the server
        gave no lifetime)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) + leeway >= self.expires_at


@attrs.frozen
class ClientInfo:
    """A client registration at one authorization server."""

    client_id: str
    client_secret: str | None = attrs.field(default=None, repr=False)
    auth_method: str = "none"
    issuer: str = ""


@attrs.frozen
class GrantKey:
    """What a stored grant belongs to: the authorization server, the resource and the
    client (a configured client id, a metadata-document URL, or ``dcr:<client name>``)."""

    issuer: str
    resource: str
    client: str

    def filename(self) -> str:
        raw = json.dumps([self.issuer, self.resource, self.client]).encode()
        return hashlib.sha256(raw).hexdigest()[:32] + ".json"


@attrs.frozen
class Grant:
    """What a store keeps for a key."""

    token: Token | None = None
    client: ClientInfo | None = None


@runtime_checkable
class TokenStore(Protocol):
    """Keeps grants between calls (and, for a persistent store, between runs).

    Called from any thread, under the owning :class:`~a2a_sync.auth.oauth.OAuth`'s lock.
    """

    def load(self, key: GrantKey) -> Grant | None: ...

    def save(self, key: GrantKey, grant: Grant) -> None: ...

    def delete(self, key: GrantKey) -> None: ...


class MemoryTokenStore:
    """Grants in memory, for the lifetime of the process. Thread-safe."""

    def __init__(self) -> None:
        self._grants: dict[GrantKey, Grant] = {}
        self._lock = threading.Lock()

    def load(self, key: GrantKey) -> Grant | None:
        with self._lock:
            return self._grants.get(key)

    def save(self, key: GrantKey, grant: Grant) -> None:
        with self._lock:
            self._grants[key] = grant

    def delete(self, key: GrantKey) -> None:
        with self._lock:
            self._grants.pop(key, None)

    def __repr__(self) -> str:
        return f"<MemoryTokenStore {len(self._grants)} grants>"


def default_directory() -> Path:
    """``$XDG_STATE_HOME/a2a-sync/oauth`` (``~/.local/state/a2a-sync/oauth``)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "a2a-sync" / "oauth"


class FileTokenStore:
    """One JSON file per grant, readable by the owner only (0600, in a 0700 directory).

    Files written with looser permissions by someone else are ignored (and logged), never
    read. Writes are atomic (a temporary file, then ``os.replace``).
    """

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()

    def path(self, key: GrantKey) -> Path:
        return self.directory / key.filename()

    def load(self, key: GrantKey) -> Grant | None:
        path = self.path(key)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        with os.fdopen(fd, "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            if mode & (stat.S_IRWXG | stat.S_IRWXO):
                logger.warning("ignoring token file %s: others may read it (chmod 600)", path)
                return None
            try:
                data = json.loads(file.read())
                return _grant_from(data)
            except (ValueError, TypeError, KeyError):
                logger.warning("ignoring token file %s: not a grant a2a_sync wrote", path)
                return None

    def save(self, key: GrantKey, grant: Grant) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.path(key)
        temporary = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                os.fchmod(file.fileno(), 0o600)
                json.dump(_grant_to(key, grant), file)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def delete(self, key: GrantKey) -> None:
        self.path(key).unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.directory)!r}>"


def _grant_to(key: GrantKey, grant: Grant) -> dict[str, Any]:
    return {
        "key": attrs.asdict(key),
        "token": attrs.asdict(grant.token) if grant.token is not None else None,
        "client": attrs.asdict(grant.client) if grant.client is not None else None,
    }


def _grant_from(data: dict[str, Any]) -> Grant:
    token = data.get("token")
    client = data.get("client")
    return Grant(
        token=Token(**{**token, "scope": tuple(token.get("scope") or ())}) if token else None,
        client=ClientInfo(**client) if client else None,
    )
