"""The push-config half of :class:`~a2a_sync.server.handler.DefaultRequestHandler`.

Internal. :class:`Webhooks` checks, stores and answers push configs under the limits and
the secrets policy of :class:`~a2a_sync.server.push_policy.PushSettings`, and turns each
stored event into notifications for a :class:`PushNotifier`. The handler checks that the
caller owns the task first.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Protocol

import attrs

from .._net.secure import check_credentials_destination
from .._redact import redact_url
from ..a2a.types import ListPushConfigsResult, PushNotificationConfig, StreamEvent
from ..errors import ConfigurationError, InvalidParams, PushNotificationNotSupported, TaskNotFound
from .push_policy import PushSettings, SecretBox, SecretUnavailable, redacted
from .stores.base import StoredPushConfig, StoredTask, TaskStore

__all__ = ["PushNotifier", "Webhooks"]

logger = logging.getLogger("a2a_sync.server.handler")


class PushNotifier(Protocol):
    """Delivers push notifications (see :class:`~a2a_sync.server.push.PushSender`)."""

    def notify(
        self, stored: StoredTask, event: StreamEvent, configs: list[StoredPushConfig]
    ) -> None:
        """Queue ``event`` of ``stored.task`` for every webhook in ``configs``; never blocks."""

    def check_url(self, url: str) -> None:
        """Refuse a webhook URL at registration (raise InvalidParams)."""


class Webhooks:
    """Push configs of one handler. Thread-safe.

    Args:
        store: Where configs live.
        notifier: Delivers notifications (``None``: configs are kept, nothing is sent).
        enabled: The card declares push notifications.
        settings: Limits and secrets policy.

    Raises:
        ConfigurationError: ``settings.encryption_keys`` unusable.
    """

    def __init__(
        self,
        store: TaskStore,
        notifier: PushNotifier | None,
        *,
        enabled: bool,
        settings: PushSettings,
    ) -> None:
        self._store = store
        self._notifier = notifier
        self._enabled = enabled
        self.settings = settings
        self._secrets = SecretBox(settings.encryption_keys)
        self._lock = threading.Lock()  # a limit check and its write, together

    def require(self) -> None:
        """Raises PushNotificationNotSupported when the card does not declare push."""
        if not self._enabled:
            raise PushNotificationNotSupported()

    def check_url(self, url: str) -> None:
        """Refuse a webhook URL at registration (InvalidParams)."""
        self.require()
        if self._notifier is not None:
            self._notifier.check_url(url)
        elif not url.startswith(("http://", "https://")):
            raise InvalidParams("push notification URL must be http or https")

    def check_config(self, config: PushNotificationConfig) -> None:
        """Refuse a config at registration (InvalidParams): its URL (:meth:`check_url`),
        and a token or credentials that would travel in plaintext to a host that is not
        loopback (unless ``settings.allow_insecure_credentials``)."""
        self.check_url(config.url)
        try:
            self._check_secrets_destination(config)
        except ConfigurationError as exc:
            raise InvalidParams(
                f"push notification URL {redact_url(config.url)!r} is plain http:// and the "
                "config carries a token or credentials, which this agent sends over TLS only"
                " (or to loopback): register an https:// webhook"
            ) from exc

    def _check_secrets_destination(self, config: PushNotificationConfig) -> None:
        """ConfigurationError when the config's token or credentials would travel in
        plaintext to a host that is not loopback (and that is not allowed)."""
        auth = config.authentication
        if config.token is None and (auth is None or auth.credentials is None):
            return
        check_credentials_destination(
            config.url,
            what="push notification config",
            allow_insecure=self.settings.allow_insecure_credentials,
        )

    def check_room(self, task_id: str | None, config_id: str | None, principal: str) -> None:
        """Refuse a new config over the per-task or per-caller limit (a config replacing
        one with the same id is not new). ``task_id=None``: a task not created yet.

        Raises:
            InvalidParams: A limit is reached (A2A files quotas under validation errors).
        """
        limits = self.settings
        existing = self._store.list_push_configs(task_id) if task_id else []
        if config_id and any(c.config.id == config_id for c in existing):
            return
        if len(existing) >= limits.max_configs_per_task:
            raise InvalidParams(
                f"this task has {limits.max_configs_per_task} push notification configs,"
                " the most this agent allows: delete one first"
            )
        if self._store.count_push_configs(principal) >= limits.max_configs_per_caller:
            raise InvalidParams(
                f"you have {limits.max_configs_per_caller} push notification configs,"
                " the most this agent allows per caller: delete some first"
            )

    def save(
        self,
        config: PushNotificationConfig,
        task_id: str,
        *,
        principal: str,
        revision: str,
        checked: bool = False,
    ) -> PushNotificationConfig:
        """Store a config (secrets sealed) and answer it without its secrets.

        ``checked``: :meth:`check_room` ran already (a config sent with a message is
        checked before the message is claimed).
        """
        stored = attrs.evolve(config, task_id=task_id, id=config.id or str(uuid.uuid4()))
        sealed = self._secrets.seal(stored)
        with self._lock:
            if not checked:
                self.check_room(task_id, config.id, principal)
            self._store.set_push_config(sealed, revision=revision)
        return redacted(stored)

    def get(self, task_id: str, config_id: str | None) -> PushNotificationConfig:
        """One config without its secrets (0.3 may omit the id: the first one).

        Raises:
            TaskNotFound: No such config.
        """
        if config_id:
            found = self._store.get_push_config(task_id, config_id)
        else:
            configs = self._store.list_push_configs(task_id)
            found = configs[0] if configs else None
        if found is None:
            raise TaskNotFound("push notification config not found")
        return redacted(found.config)

    def list(self, task_id: str) -> ListPushConfigsResult:
        """A task's configs without their secrets."""
        return ListPushConfigsResult(
            configs=[redacted(c.config) for c in self._store.list_push_configs(task_id)]
        )

    def on_event(self, stored: StoredTask, event: StreamEvent) -> None:
        """Notify the task's webhooks of ``event`` (at most ``max_deliveries_per_event``)."""
        if self._notifier is None:
            return
        configs = self._store.list_push_configs(stored.task.id)
        if not configs:
            return
        most = self.settings.max_deliveries_per_event
        if len(configs) > most:
            logger.warning(
                "task %s has %d push configs; notifying the first %d (max_deliveries_per_event)",
                stored.task.id,
                len(configs),
                most,
            )
            configs = configs[:most]
        opened = []
        for item in configs:
            try:
                # Checked again at delivery: a config stored before this rule (or while
                # allow_insecure_credentials was on) must not leak its secrets now.
                self._check_secrets_destination(item.config)
                opened.append(attrs.evolve(item, config=self._secrets.open(item.config)))
            except ConfigurationError:
                logger.warning(
                    "push config %s of task %s skipped: its token or credentials would go "
                    "in plaintext to %s; re-register it with an https:// webhook",
                    item.config.id,
                    stored.task.id,
                    redact_url(item.config.url),
                )
            except SecretUnavailable as exc:
                logger.warning(
                    "push config %s of task %s skipped: %s", item.config.id, stored.task.id, exc
                )
        if opened:
            self._notifier.notify(stored, event, opened)
