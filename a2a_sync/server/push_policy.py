"""What the server accepts and keeps of push-notification configs: limits and secrets.

:class:`PushSettings` is one frozen value given to the application or handler
(``push=PushSettings(...)``):

* **Limits** (A2A 1.0 §13.4: "implement appropriate limits on ... request complexity"):
  configs per task (10), configs per caller across all their tasks (100), and webhook
  calls per task event (10). A config over a limit is refused with ``-32602 Invalid
  params`` naming the limit and the fix (delete a config): the request is well formed
  but asks for more than this server accepts, which A2A files under validation errors
  (§3.3.2); none of the A2A-specific errors (§3.3.2 table) means "quota", and
  ``UnsupportedOperation`` would tell the client the operation itself is unavailable.
  Replacing a config (same id) never counts as a new one.
* **Secrets** (A2A 1.0 §13.2: "securely store push notification configurations and
  credentials"; §13.4: credentials "MUST be treated as secrets"): the ``token`` and
  ``authentication.credentials`` a client registers are used only to call its webhook.
  They are never echoed back: Create, Get and List answer the config without them (the
  scheme stays). With ``encryption_keys`` they are also encrypted at rest (Fernet from
  the ``cryptography`` package, extra ``a2a-sync[signing]``): the store only ever sees
  ``a2a-sync:fernet:<token>`` strings. The first key encrypts, every key decrypts (key
  rotation); values stored before a key was set stay readable as they are.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Final

import attrs

from ..a2a.types import PushNotificationConfig
from ..errors import ConfigurationError, install_hint

__all__ = [
    "DEFAULT_MAX_CONFIGS_PER_CALLER",
    "DEFAULT_MAX_CONFIGS_PER_TASK",
    "DEFAULT_MAX_DELIVERIES_PER_EVENT",
    "PushSettings",
    "SecretBox",
    "SecretUnavailable",
    "redacted",
]

#: Push configs one task may have.
DEFAULT_MAX_CONFIGS_PER_TASK: Final = 10
#: Push configs one caller (principal) may have over all their tasks.
DEFAULT_MAX_CONFIGS_PER_CALLER: Final = 100
#: Webhook calls one task event may cause (configs beyond it are skipped, logged).
DEFAULT_MAX_DELIVERIES_PER_EVENT: Final = 10

#: Prefix of an encrypted secret as stored.
SEALED_PREFIX: Final = "a2a-sync:fernet:"
_OPENED_CACHE: Final = 1024


def _keys(value: str | bytes | Sequence[str | bytes] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)):
        value = [value]
    return tuple(k.decode("ascii") if isinstance(k, bytes) else k for k in value)


def _at_least_one(instance: Any, attribute: Any, value: int) -> None:
    if value < 1:
        raise ConfigurationError(f"PushSettings.{attribute.name} must be at least 1")


@attrs.frozen(kw_only=True)
class PushSettings:
    """Limits and secret handling of push-notification configs.

    Attributes:
        max_configs_per_task: Configs one task may have.
        max_configs_per_caller: Configs one principal may have over all their tasks
            (enforced by the built-in stores; a custom store reports counts through
            ``TaskStore.count_push_configs``).
        max_deliveries_per_event: Webhook calls one task event may cause.
        encryption_keys: Fernet keys (``Fernet.generate_key()``) to encrypt tokens and
            credentials at rest; the first encrypts, all decrypt. Empty: stored as given.
            Never shown in reprs.
        allow_insecure_credentials: Accept a config whose ``token`` or
            ``authentication.credentials`` would be sent to a plain ``http://`` webhook
            on a host that is not loopback (trusted internal networks only; logged once
            per origin). Off: such a config is refused with ``-32602 Invalid params``.
    """

    max_configs_per_task: int = attrs.field(
        default=DEFAULT_MAX_CONFIGS_PER_TASK, validator=_at_least_one
    )
    max_configs_per_caller: int = attrs.field(
        default=DEFAULT_MAX_CONFIGS_PER_CALLER, validator=_at_least_one
    )
    max_deliveries_per_event: int = attrs.field(
        default=DEFAULT_MAX_DELIVERIES_PER_EVENT, validator=_at_least_one
    )
    encryption_keys: tuple[str, ...] = attrs.field(default=(), converter=_keys, repr=False)
    allow_insecure_credentials: bool = False


class SecretUnavailable(Exception):
    """A stored secret cannot be decrypted (no key, or not one of the keys)."""


def redacted(config: PushNotificationConfig) -> PushNotificationConfig:
    """``config`` as answered to clients: without ``token`` and credentials."""
    auth = config.authentication
    if config.token is None and (auth is None or auth.credentials is None):
        return config
    return attrs.evolve(
        config,
        token=None,
        authentication=None if auth is None else attrs.evolve(auth, credentials=None),
    )


class SecretBox:
    """Encrypts the secrets of push configs for the store and decrypts them to deliver.

    Thread-safe. Decrypted values are kept in a small cache (a task's configs are read
    for every event).

    Args:
        keys: Fernet keys; the first encrypts. Empty: :meth:`seal` changes nothing and
            :meth:`open` refuses encrypted values.

    Raises:
        ConfigurationError: A key is not a Fernet key, or ``cryptography`` is missing.
    """

    def __init__(self, keys: Sequence[str]) -> None:
        self._fernet: Any = None
        self._invalid: type[Exception] = ValueError
        if keys:
            try:
                from cryptography.fernet import (  # noqa: PLC0415 - optional dependency
                    Fernet,
                    InvalidToken,
                    MultiFernet,
                )
            except ImportError as exc:
                raise ConfigurationError(
                    "PushSettings.encryption_keys needs the 'cryptography' package"
                    f" ({install_hint('signing')})"
                ) from exc
            try:
                self._fernet = MultiFernet([Fernet(key) for key in keys])
            except (ValueError, TypeError) as exc:
                raise ConfigurationError(
                    "PushSettings.encryption_keys: each key must be a Fernet key"
                    " (cryptography.fernet.Fernet.generate_key())"
                ) from exc
            self._invalid = InvalidToken
        self._lock = threading.Lock()
        self._opened: OrderedDict[str, str] = OrderedDict()

    @property
    def encrypting(self) -> bool:
        """True when secrets are encrypted at rest."""
        return self._fernet is not None

    def seal(self, config: PushNotificationConfig) -> PushNotificationConfig:
        """``config`` with its token and credentials encrypted (as is without keys)."""
        if self._fernet is None:
            return config
        auth = config.authentication
        return attrs.evolve(
            config,
            token=self._seal(config.token),
            authentication=None
            if auth is None
            else attrs.evolve(auth, credentials=self._seal(auth.credentials)),
        )

    def open(self, config: PushNotificationConfig) -> PushNotificationConfig:
        """``config`` with its secrets decrypted (plain values stay as they are).

        Raises:
            SecretUnavailable: An encrypted value no configured key opens.
        """
        auth = config.authentication
        token = self._open(config.token)
        credentials = None if auth is None else self._open(auth.credentials)
        if token == config.token and (auth is None or credentials == auth.credentials):
            return config
        return attrs.evolve(
            config,
            token=token,
            authentication=None if auth is None else attrs.evolve(auth, credentials=credentials),
        )

    def _seal(self, value: str | None) -> str | None:
        if not value:
            return value
        sealed: bytes = self._fernet.encrypt(value.encode("utf-8"))
        return SEALED_PREFIX + sealed.decode("ascii")

    def _open(self, value: str | None) -> str | None:
        if not value or not value.startswith(SEALED_PREFIX):
            return value
        with self._lock:
            found = self._opened.get(value)
            if found is not None:
                self._opened.move_to_end(value)
                return found
        if self._fernet is None:
            raise SecretUnavailable("an encrypted push secret needs PushSettings.encryption_keys")
        try:
            plain: bytes = self._fernet.decrypt(value[len(SEALED_PREFIX) :].encode("ascii"))
        except self._invalid as exc:
            raise SecretUnavailable("no configured encryption key opens a push secret") from exc
        opened = plain.decode("utf-8")
        with self._lock:
            self._opened[value] = opened
            if len(self._opened) > _OPENED_CACHE:
                self._opened.popitem(last=False)
        return opened
