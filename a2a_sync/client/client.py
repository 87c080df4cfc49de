"""The blocking A2A client for one agent."""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from .._net.http import HTTPTransport
from .._redact import redact_url
from ..a2a.codec import codec_for
from ..a2a.methods import REVISIONS, Operation, Revision
from ..a2a.types import (
    AgentCard,
    ListPushConfigsResult,
    ListTasksResult,
    PushNotificationConfig,
    SendResult,
    Task,
    TaskState,
)
from ..errors import ConfigurationError, ProtocolError, TaskNotFound, UnsupportedOperation
from ..policies import RetryPolicy, Timeout
from ._message import MessageInput, as_message, send_params
from .auth import OriginBoundCredentials, origin_of
from .bindings import GRPC, JSONRPC, Binding, binding_class
from .bindings.grpc_target import parse_grpc_url
from .bindings.jsonrpc import TimeoutArg, static_headers
from .card import (
    CardFetch,
    CardVerifier,
    fetch_card,
    not_http_url,
    select_interface,
    verify_with,
)
from .options import ClientOptions, resolve_options
from .stream import TaskStream

__all__ = ["A2AClient"]

logger = logging.getLogger(__name__)


class A2AClient:
    """A blocking client for one A2A agent, speaking A2A 1.0 or 0.3 as the card allows.

    Create it from the agent's URL (the card is fetched and the interface chosen), from
    a card you already have, or from an explicit endpoint and revision::

        client = A2AClient.from_url("http://127.0.0.1:8000")
        task = client.send_message("What is the capital of France?")
        print(task.text)

    **Threads:** one client may be shared by any number of threads. It holds a
    connection pool (:class:`~a2a_sync._net.http.HTTPTransport`), its configuration never
    changes after construction, and each call keeps its state on its own stack.
    :meth:`close` (from any thread) cancels calls in flight.

    **Timeouts:** every call has connect, read (idle) and total limits; pass
    ``timeout=`` per call to override the client's default.

    Args:
        url: The endpoint (JSON-RPC URL, or the HTTP+JSON base URL).
        revision: ``"1.0"`` or ``"0.3"``.
        binding: ``"JSONRPC"`` (default), ``"HTTP+JSON"`` (A2A 1.0 REST) or ``"GRPC"``
            (A2A 1.0 gRPC, the ``grpc`` extra; ``url`` is ``host:port``).
        card: The agent's card, if known (used for credentials and capabilities).
        tenant: The tenant sent with every request (A2A 1.0), if the interface has one.
        options: How the client talks to the agent (:class:`ClientOptions`): credentials
            and the origins they may go to, extensions, headers, timeouts, retries,
            streams, a shared transport, TLS. Default: all defaults.
        **overrides: Any :class:`ClientOptions` attribute by name (``credentials=``,
            ``auth=``, ``timeout=``, ``headers=``, ``retry=``...), applied onto ``options``.
    """

    def __init__(
        self,
        url: str,
        *,
        revision: Revision = "1.0",
        binding: str = JSONRPC,
        card: AgentCard | None = None,
        tenant: str | None = None,
        options: ClientOptions | None = None,
        _card_fetch: CardFetch | None = None,
        _card_verifier: CardVerifier | None = None,
        **overrides: Any,
    ) -> None:
        if revision not in REVISIONS:
            raise ConfigurationError(f"unknown A2A revision {revision!r}; use one of {REVISIONS}")
        binding_cls = binding_class(binding)
        if binding_cls is None:
            raise ConfigurationError(
                f"unknown A2A binding {binding!r}; use 'JSONRPC', 'HTTP+JSON' or 'GRPC'"
            )
        opts = resolve_options(options, overrides)
        self.options = opts
        self.binding = binding.strip().upper()
        credentials, auth = opts.credentials, opts.auth
        if auth is not None:
            if credentials is not None:
                raise ConfigurationError("give the credential once: credentials= or auth=")
            credentials = auth
        self.url = url
        self.revision: Revision = revision
        self.tenant = tenant
        self._endpoint_origin = (
            parse_grpc_url(url).origin if self.binding == GRPC else origin_of(url)
        )
        self._card_fetch = _card_fetch
        #: Every later fetch of this agent's card (refresh, extended card) verifies too.
        self._card_verifier = _card_verifier
        self._card = card if card is not None else (_card_fetch.card if _card_fetch else None)
        self.extended_card: AgentCard | None = None
        self._codec = codec_for(revision)
        origins = (
            frozenset(origin_of(o) for o in opts.trusted_origins)
            if opts.trusted_origins is not None
            else frozenset({origin_of(_card_fetch.url) if _card_fetch else self._endpoint_origin})
        )
        self._credentials = (
            OriginBoundCredentials(credentials, origins) if credentials is not None else None
        )
        if self._credentials is not None and self._endpoint_origin not in origins:
            raise ConfigurationError(
                f"the agent's endpoint {redact_url(url)!r} is on another origin than its card "
                f"({', '.join(sorted(origins))}); credentials are not sent there. Pass "
                f"trusted_origins=[{self._endpoint_origin!r}] if that host is really yours."
            )
        if self._credentials is not None:
            self._credentials.use_card(url, self._card)  # OAuth: the card's scopes, AS
        fixed_headers = static_headers(revision, opts.extensions, opts.headers)
        # Everything that can refuse the arguments ran above: only now open a pool, so a
        # refused client leaves no connection pool behind.
        transport = opts.transport
        self._owns_transport = transport is None
        if transport is None:
            transport = HTTPTransport(timeout=opts.timeout, retry=opts.retry, verify=opts.verify)
        self._transport = transport
        default_timeout = (
            transport.timeout if opts.timeout is None else Timeout.coerce(opts.timeout)
        )
        self._rpc: Binding
        self._rpc = binding_cls(
            url=url,
            revision=revision,
            http=transport,
            timeout=default_timeout,
            retry=opts.retry if opts.retry is not None and not self._owns_transport else None,
            headers=fixed_headers,
            credentials=self._credentials,
            tenant=tenant,
            stream_idle_timeout=opts.stream_idle_timeout,
            threaded_streams=opts.threaded_streams,
        )

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        revisions: Sequence[Revision] = REVISIONS,
        bindings: Sequence[str] | None = None,
        verify_card: CardVerifier | None = None,
        card_headers: Mapping[str, str] | None = None,
        **kwargs: Any,
    ) -> A2AClient:
        """Fetch the agent's card from ``url`` and connect to its preferred interface.

        ``url`` is the agent's base URL (the card is at ``/.well-known/agent-card.json``
        below it, with a fallback to ``agent.json``) or the card's own URL. The card's
        first interface this client speaks is used (A2A 1.0 §8.3.2), or, with
        ``bindings`` given, the first of the caller's preferred bindings the card offers.

        Args:
            url: Base URL or card URL.
            revisions: Revisions to accept.
            bindings: Bindings to accept, most preferred first (``"JSONRPC"``,
                ``"HTTP+JSON"``, ``"GRPC"``), e.g. ``bindings=["GRPC", "JSONRPC"]``; default:
                every binding this client speaks, in the card's order.
            verify_card: Called with the raw card before it is used; it returns the
                card as verified (which is what the client uses) or raises
                :class:`~a2a_sync.errors.SignatureError` to reject it, e.g.
                :func:`a2a_sync.signing.card_verifier`. It verifies every later fetch
                too: :meth:`refresh_card` and :meth:`get_extended_card`.
            card_headers: Extra headers for the card request.
            **kwargs: Passed to :class:`A2AClient` (credentials, timeout, ...).

        Raises:
            HTTPStatusError, TransportError: The card could not be fetched.
            ProtocolError: The card is invalid.
            ConfigurationError: ``url`` is not an http(s) URL string, or no usable
                interface.
        """
        if not isinstance(url, str):
            raise not_http_url(url)
        opts = resolve_options(kwargs.pop("options", None), kwargs)
        transport = opts.transport
        owns = transport is None
        if transport is None:
            transport = HTTPTransport(timeout=opts.timeout, retry=opts.retry, verify=opts.verify)
        try:
            fetched = fetch_card(
                transport,
                url,
                headers=card_headers,
                verifier=verify_card,
                timeout=opts.timeout,
            )
            interface, revision = select_interface(
                fetched.card, card_url=fetched.url, revisions=revisions, bindings=bindings
            )
            client = cls(
                interface.url,
                revision=revision,
                binding=interface.protocol_binding,
                tenant=interface.tenant,
                options=opts.evolve(transport=transport),
                _card_fetch=fetched,
                _card_verifier=verify_card,
            )
        except BaseException:
            if owns:
                transport.close()
            raise
        client._owns_transport = owns
        return client

    @classmethod
    def from_card(
        cls,
        card: AgentCard,
        *,
        card_url: str | None = None,
        bindings: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> A2AClient:
        """Connect to the preferred interface of a card you already have (see
        :meth:`from_url`)."""
        interface, revision = select_interface(card, card_url=card_url, bindings=bindings)
        if card_url is not None and "trusted_origins" not in kwargs:
            kwargs["trusted_origins"] = [card_url]
        return cls(
            interface.url,
            revision=revision,
            binding=interface.protocol_binding,
            card=card,
            tenant=interface.tenant,
            **kwargs,
        )

    def with_options(
        self, *, timeout: TimeoutArg = None, retry: RetryPolicy | None = None
    ) -> A2AClient:
        """A client for the same agent with other per-call defaults.

        The copy shares this client's connection pool and credentials (it is cheap) and
        leaves this client unchanged; closing the copy does not close the pool::

            patient = client.with_options(timeout=600)
        """
        clone = copy.copy(self)
        clone._owns_transport = False
        clone._rpc = self._rpc.with_defaults(timeout=timeout, retry=retry)
        return clone

    # -- card -----------------------------------------------------------------------------------

    @property
    def card(self) -> AgentCard | None:
        """The agent's card, if the client was built from one."""
        return self._card

    def refresh_card(self, *, timeout: TimeoutArg = None) -> AgentCard:
        """Revalidate the card with ``If-None-Match`` and return the current one.

        A client created with ``verify_card`` verifies the new card the same way (a 304
        keeps the card verified before).

        Raises:
            SignatureError: The new card does not verify; the client keeps the old one.
        """
        if self._card_fetch is None:
            raise ConfigurationError("this client was not created from an agent card URL")
        fetched = fetch_card(
            self._transport,
            self._card_fetch.url,
            previous=self._card_fetch,
            verifier=self._card_verifier,
            timeout=timeout,
        )
        self._card_fetch = fetched
        self._card = fetched.card
        return fetched.card

    def get_extended_card(self, *, timeout: TimeoutArg = None) -> AgentCard:
        """Fetch the authenticated extended card (``GetExtendedAgentCard``).

        The extended card is kept on :attr:`extended_card` for this client only. A client
        created with ``verify_card`` verifies it like the public card.

        Raises:
            SignatureError: The extended card does not verify.
        """
        result = self._call(Operation.GET_EXTENDED_CARD, {}, timeout=timeout)
        if self._card_verifier is not None and not isinstance(result, dict):
            raise ProtocolError("the extended agent card is not a JSON object")
        card = verify_with(self._card_verifier, result, what="the extended agent card")
        self.extended_card = card
        return card

    # -- messages ---------------------------------------------------------------------------------

    def send_message(
        self,
        message: MessageInput,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        return_immediately: bool = False,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        push_notification_config: PushNotificationConfig | None = None,
        metadata: Mapping[str, Any] | None = None,
        idempotent: bool = False,
        timeout: TimeoutArg = None,
    ) -> SendResult:
        """Send a message and return the agent's answer: a :class:`Task` or a
        :class:`Message`.

        By default the call blocks until the task reaches a terminal or interrupted
        state; ``return_immediately=True`` returns the task as soon as it exists.

        Args:
            message: Text, a part, a list of them, or a complete :class:`Message`.
            task_id: Continue this task (answer an input-required question).
            context_id: Continue this conversation.
            return_immediately: Do not wait for the task to settle.
            history_length: How much history the returned task carries.
            accepted_output_modes: MIME types the caller accepts.
            push_notification_config: Webhook for updates of the task.
            metadata: Free-form request metadata.
            idempotent: Allow resending after an ambiguous failure. Safe only because
                the same message (same ``message_id``) is resent and agents deduplicate
                by it; leave it off for agents that do not.
            timeout: Limits for this call.

        Raises:
            RPCError: The agent refused (typed by code, e.g. TaskNotFound).
            TransportError, HTTPStatusError, ProtocolError: See :mod:`a2a_sync.errors`.
        """
        msg = as_message(message, task_id=task_id, context_id=context_id)
        params = send_params(
            self._codec,
            msg,
            return_immediately=return_immediately,
            history_length=history_length,
            accepted_output_modes=accepted_output_modes,
            push_notification_config=push_notification_config,
            metadata=metadata,
        )
        result = self._call(Operation.SEND_MESSAGE, params, timeout=timeout, idempotent=idempotent)
        return self._codec.load_send_result(result)

    def reply(self, task: Task | str, message: MessageInput, **kwargs: Any) -> SendResult:
        """Answer a task that asks for input: send ``message`` within ``task``."""
        if isinstance(task, Task):
            kwargs.setdefault("context_id", task.context_id)
            task = task.id
        return self.send_message(message, task_id=task, **kwargs)

    def stream_message(
        self,
        message: MessageInput,
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        history_length: int | None = None,
        accepted_output_modes: Sequence[str] | None = None,
        push_notification_config: PushNotificationConfig | None = None,
        metadata: Mapping[str, Any] | None = None,
        timeout: TimeoutArg = None,
    ) -> TaskStream:
        """Send a message and stream the task's events (``SendStreamingMessage``).

        Returns a :class:`TaskStream`; use it as a context manager. The request is
        never re-sent: a dropped stream raises
        :class:`~a2a_sync.errors.StreamInterrupted` carrying the task id (the resilient
        client resubscribes instead).
        """
        msg = as_message(message, task_id=task_id, context_id=context_id)
        params = send_params(
            self._codec,
            msg,
            return_immediately=False,
            history_length=history_length,
            accepted_output_modes=accepted_output_modes,
            push_notification_config=push_notification_config,
            metadata=metadata,
        )
        return self.open_stream(Operation.SEND_STREAMING_MESSAGE, params, timeout=timeout)

    # -- tasks ------------------------------------------------------------------------------------

    def get_task(
        self, task_id: str, *, history_length: int | None = None, timeout: TimeoutArg = None
    ) -> Task:
        """Fetch a task by id (``GetTask``). ``history_length=0`` omits the history."""
        params = self._codec.get_task_params(task_id, history_length=history_length)
        result = self._call(Operation.GET_TASK, params, timeout=timeout, task_id=task_id)
        return self._codec.load_task(result)

    def list_tasks(
        self,
        *,
        context_id: str | None = None,
        status: TaskState | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        history_length: int | None = None,
        status_timestamp_after: datetime | None = None,
        include_artifacts: bool | None = None,
        timeout: TimeoutArg = None,
    ) -> ListTasksResult:
        """List tasks, newest status first (``ListTasks``; A2A 1.0 only).

        Raises:
            UnsupportedOperation: The agent speaks A2A 0.3, which has no list method.
        """
        if self.revision == "0.3":
            raise UnsupportedOperation("ListTasks is not part of A2A 0.3")
        params = self._codec.list_tasks_params(
            context_id=context_id,
            status=status,
            page_size=page_size,
            page_token=page_token,
            history_length=history_length,
            status_timestamp_after=status_timestamp_after,
            include_artifacts=include_artifacts,
        )
        result = self._call(Operation.LIST_TASKS, params, timeout=timeout)
        return self._codec.load_list_tasks_result(result)

    def iter_tasks(self, **filters: Any) -> Iterator[Task]:
        """Iterate over every task matching ``filters`` (see :meth:`list_tasks`),
        fetching pages as needed."""
        token: str | None = filters.pop("page_token", None)
        while True:
            page = self.list_tasks(page_token=token, **filters)
            yield from page.tasks
            token = page.next_page_token
            if not token:
                return

    def cancel_task(
        self, task_id: str, *, metadata: Mapping[str, Any] | None = None, timeout: TimeoutArg = None
    ) -> Task:
        """Ask the agent to cancel a task (``CancelTask``); returns the task.

        Raises:
            TaskNotCancelable: The task already settled.
            TaskNotFound: No such task.
        """
        params = self._codec.cancel_task_params(
            task_id, metadata=dict(metadata) if metadata else None
        )
        result = self._call(Operation.CANCEL_TASK, params, timeout=timeout, task_id=task_id)
        return self._codec.load_task(result)

    def subscribe(self, task_id: str, *, timeout: TimeoutArg = None) -> TaskStream:
        """Re-attach to a running task's event stream (``SubscribeToTask`` /
        ``tasks/resubscribe``). The first event is the task's current state.

        Raises:
            UnsupportedOperation: The task already settled, or the agent cannot stream.
        """
        params = self._codec.subscribe_params(task_id)
        try:
            return self.open_stream(Operation.SUBSCRIBE_TO_TASK, params, timeout=timeout)
        except TaskNotFound as error:
            raise self._task_not_found(error, Operation.SUBSCRIBE_TO_TASK, task_id) from error

    # -- push notifications ---------------------------------------------------------------------

    def create_push_config(
        self, task_id: str, config: PushNotificationConfig, *, timeout: TimeoutArg = None
    ) -> PushNotificationConfig:
        """Register a webhook for a task's updates; returns it as the agent stored it."""
        params = self._codec.dump_push_config(attrs.evolve(config, task_id=task_id))
        result = self._call(Operation.CREATE_PUSH_CONFIG, params, timeout=timeout)
        return self._codec.load_push_config(result)

    def get_push_config(
        self, task_id: str, config_id: str, *, timeout: TimeoutArg = None
    ) -> PushNotificationConfig:
        """Fetch one webhook registration of a task."""
        params = self._codec.push_config_id_params(task_id, config_id)
        result = self._call(Operation.GET_PUSH_CONFIG, params, timeout=timeout)
        return self._codec.load_push_config(result)

    def list_push_configs(
        self,
        task_id: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        timeout: TimeoutArg = None,
    ) -> ListPushConfigsResult:
        """List a task's webhook registrations (one page; 0.3 has no paging)."""
        params = self._codec.list_push_configs_params(
            task_id, page_size=page_size, page_token=page_token
        )
        result = self._call(Operation.LIST_PUSH_CONFIGS, params, timeout=timeout)
        return self._codec.load_push_config_list(result)

    def delete_push_config(
        self, task_id: str, config_id: str, *, timeout: TimeoutArg = None
    ) -> None:
        """Remove a webhook registration."""
        params = self._codec.push_config_id_params(task_id, config_id)
        self._call(Operation.DELETE_PUSH_CONFIG, params, timeout=timeout)

    # -- lifecycle --------------------------------------------------------------------------------

    def close(self) -> None:
        """Cancel calls in flight and release connections (unless the transport was
        passed in). Safe from any thread; idempotent."""
        if self._owns_transport:
            self._transport.close()
            close_binding = getattr(self._rpc, "close", None)  # the gRPC channel
            if close_binding is not None:
                close_binding()

    def __enter__(self) -> A2AClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<A2AClient {redact_url(self.url)} A2A {self.revision} {self.binding}>"

    # -- calls over the binding --------------------------------------------------------

    def _call(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg,
        idempotent: bool = False,
        task_id: str | None = None,
    ) -> Any:
        try:
            return self._rpc.call(
                operation, params, timeout=timeout, idempotent=idempotent, card=self._card
            )
        except TaskNotFound as error:
            if task_id is None:
                raise
            raise self._task_not_found(error, operation, task_id) from error

    def _task_not_found(
        self, error: TaskNotFound, operation: Operation, task_id: str
    ) -> TaskNotFound:
        """``error`` with the task id, the agent and the fix in its text (``message``
        stays what the agent said)."""
        named = TaskNotFound(error.message, code=error.code, data=error.data)
        named.args = (
            f"{error}: {operation.value} found no task {task_id!r} at "
            f"{redact_url(self.url)}; check the id (a task is visible only to the caller "
            "that created it), or list tasks with list_tasks()",
        )
        return named

    def open_stream(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = None,
        reconnect: Any = None,
    ) -> TaskStream:
        """Open a streaming operation (advanced; used by the resilient client)."""
        sse, request_id = self._rpc.open_stream(
            operation, params, timeout=timeout, reconnect=reconnect, card=self._card
        )
        return TaskStream(
            sse,
            request_id=request_id,
            load_event=self._codec.load_stream_event,
            revision=self.revision,
            fetch_task=self.get_task,
            unwrap=self._rpc.unwrap_event,
        )
