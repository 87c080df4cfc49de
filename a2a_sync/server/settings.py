"""``AppSettings``: everything an :class:`~a2a_sync.server.app.A2AApplication` can be told,
as one frozen value.

The application's keywords (``task_store=``, ``authenticate=``, ``max_streams=``...) are
applied onto an :class:`AppSettings` with :meth:`AppSettings.evolve`, so a deployment can
keep its settings in one value and derive variants::

    base = AppSettings(allowed_hosts=["agent.example"], max_streams=64)
    app = A2AApplication(card, Echo(), settings=base, rest_path="/rest")

An unknown keyword is a :class:`~a2a_sync.errors.ConfigurationError` naming the closest
setting.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from ..a2a.types import AgentCard
from ..errors import ConfigurationError
from .auth import Authenticator
from .card import CardChooser, CardHeaders, CardSigner
from .executor import AgentExecutor, ExecuteFunction
from .handler import (
    DEFAULT_BLOCKING_TIMEOUT,
    DefaultRequestHandler,
    ExtendedCard,
    PushNotifier,
)
from .pool import DEFAULT_WORKERS
from .push_policy import PushSettings
from .stores.base import TaskStore

__all__ = [
    "DEFAULT_CARD_MAX_AGE",
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_STREAMS",
    "AppSettings",
    "handler_for",
    "resolve_settings",
]

#: Largest request body. A2A requests are small except messages carrying inline files;
#: 16 MiB fits those and keeps one request from taking much memory.
DEFAULT_MAX_BODY_BYTES: Final = 16 * 1024 * 1024
#: Streams open at once. Each pins one server thread: ``serve`` runs this many plus
#: DEFAULT_UNARY_THREADS, so unary calls always find a thread.
DEFAULT_MAX_STREAMS: Final = 32
#: Silence on a stream before a ``: keep-alive`` comment. WHATWG suggests ~15 s against
#: proxies that drop idle connections; it is also how a gone client is noticed (on write).
DEFAULT_HEARTBEAT_INTERVAL: Final = 15.0
#: How long clients may cache the card (``Cache-Control: max-age``).
DEFAULT_CARD_MAX_AGE: Final = 300


@attrs.frozen(kw_only=True)
class AppSettings:
    """The settings of an A2A application. Immutable; derive variants with :meth:`evolve`.

    Attributes:
        task_store: Where tasks live (in memory by default).
        push_sender: Delivers push notifications (a
            :class:`~a2a_sync.server.push.PushSender` is made when the card declares
            push notifications).
        extended_card: The card for authenticated callers (or a function of the call).
        authenticate: ``authenticate(environ) -> Principal | None``.
        allow_anonymous: Accept callers the authenticator did not identify (default: only
            when there is no authenticator). A request carrying an ``Authorization``
            header the authenticator refused is rejected (401) all the same.
        allowed_hosts: Host names accepted in ``Host``; others get 421 (DNS-rebinding
            protection under any WSGI server). Default: ``LOOPBACK_HOSTS`` plus the
            hosts of the card's interface URLs. ``["*"]`` accepts any.
        allowed_origins: Origins accepted in ``Origin`` besides the request's own.
        rpc_path: Path of the JSON-RPC endpoint.
        rest_path: Serve the HTTP+JSON (REST) binding too, its routes below this path
            (``"/rest"``; ``""`` mounts them at the root). ``None`` (default): JSON-RPC only.
        max_body_bytes: Largest request body.
        max_streams: Streams open at once.
        heartbeat_interval: Silence on a stream before a keep-alive comment.
        card_max_age: ``Cache-Control: max-age`` of the card, in seconds.
        sign_card: Signs the card before it is served.
        workers: Most agent runs at once.
        blocking_timeout: Longest a blocking SendMessage waits.
        push: Push-config limits and secret handling
            (:class:`~a2a_sync.server.push_policy.PushSettings`; with ``executor``).
        deduplicate_messages: Answer a resent message (same caller, ``messageId``, task,
            conversation and parts) with its first delivery's task instead of running
            the agent again (default on; with ``executor`` only).
        public_url: The app's base URL as clients reach it, for the card's interface URLs
            (default: the URL each request came to; with ``allowed_hosts`` set, a
            ``Host`` outside that list never reaches the card).
        card_headers: Extra response headers of the card: a list, or a function of the
            WSGI environ returning one.
        card_for_request: Chooses the card (revision) served for a request: a function
            of the WSGI environ returning an ``AgentCard`` (default: the app's card).
    """

    task_store: TaskStore | None = None
    push_sender: PushNotifier | None = None
    extended_card: ExtendedCard | None = None
    authenticate: Authenticator | None = None
    allow_anonymous: bool | None = None
    allowed_hosts: Sequence[str] | None = None
    allowed_origins: Sequence[str] = ()
    rpc_path: str = "/"
    rest_path: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_streams: int = DEFAULT_MAX_STREAMS
    heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL
    card_max_age: int = DEFAULT_CARD_MAX_AGE
    sign_card: CardSigner | None = None
    workers: int = DEFAULT_WORKERS
    blocking_timeout: float = DEFAULT_BLOCKING_TIMEOUT
    push: PushSettings | None = None
    deduplicate_messages: bool = True
    public_url: str | None = None
    card_headers: CardHeaders = ()
    card_for_request: CardChooser | None = None

    def evolve(self, **changes: Any) -> AppSettings:
        """A copy with ``changes`` (names of this class's attributes).

        Raises:
            ConfigurationError: A name is no setting (the message names it and the
                closest setting).
        """
        for name in changes:
            if name not in SETTING_NAMES:
                raise ConfigurationError(_unknown(name))
        return attrs.evolve(self, **changes) if changes else self


#: The names :class:`AppSettings` (and so ``A2AApplication(...)``) accepts.
SETTING_NAMES: Final = frozenset(a.name for a in attrs.fields(AppSettings))


def _unknown(name: str) -> str:
    close = difflib.get_close_matches(name, sorted(SETTING_NAMES | {"settings"}), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"unknown A2AApplication setting {name!r}{hint}; the settings are: "
        f"{', '.join(sorted(SETTING_NAMES))}"
    )


def resolve_settings(settings: AppSettings | None, overrides: Mapping[str, Any]) -> AppSettings:
    """``settings`` (default: all defaults) with the keyword ``overrides`` applied."""
    return (settings or AppSettings()).evolve(**overrides)


def handler_for(
    card: AgentCard,
    executor: AgentExecutor | ExecuteFunction | None,
    handler: Any,
    settings: AppSettings,
) -> tuple[Any, Any]:
    """The application's handler and the push sender it made for it (closed with the
    app; ``None`` when it made none): ``handler`` itself, or a
    :class:`~a2a_sync.server.handler.DefaultRequestHandler` of ``executor`` configured
    by ``settings`` (a :class:`~a2a_sync.server.push.PushSender` is made when the card
    declares push notifications and ``settings`` has no sender).

    Raises:
        ConfigurationError: Push settings with a handler of one's own, or unusable push
            settings.
    """
    if handler is not None:
        if settings.push is not None:
            raise ConfigurationError(
                "push settings configure the default handler: pass them to"
                " DefaultRequestHandler(push=...) instead"
            )
        return handler, None
    assert executor is not None
    push_sender = settings.push_sender
    owned: Any = None
    if push_sender is None and card.capabilities.push_notifications:
        from .push import PushSender  # noqa: PLC0415 - only apps that push need it

        push_sender = owned = PushSender()
    try:
        handler = DefaultRequestHandler(
            card,
            executor,
            task_store=settings.task_store,
            push_sender=push_sender,
            extended_card=settings.extended_card,
            workers=settings.workers,
            blocking_timeout=settings.blocking_timeout,
            push=settings.push,
            deduplicate_messages=settings.deduplicate_messages,
        )
    except ConfigurationError:
        if owned is not None:
            owned.close(0.0)  # its threads must not outlive the error
        raise
    return handler, owned
