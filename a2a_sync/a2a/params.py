"""Push-notification configs and the operations' request and result parameters
(part of :mod:`a2a_sync.a2a.types`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs

from .content import Message, TaskState
from .task import Task

# --- push notifications and request parameters -------------------------------------------------


@attrs.frozen(kw_only=True)
class AuthenticationInfo:
    """How the agent authenticates its webhook calls: ``Authorization: {scheme} {credentials}``.

    Attributes:
        scheme: HTTP auth scheme, e.g. ``"Bearer"`` (0.3's ``schemes`` list: the first).
        credentials: The credentials. Never shown in reprs.
    """

    scheme: str
    credentials: str | None = attrs.field(default=None, repr=False)


@attrs.frozen(kw_only=True)
class PushNotificationConfig:
    """Where and how an agent posts task updates (a webhook), optionally bound to a task.

    Attributes:
        url: The webhook URL.
        id: Config id (several configs per task are allowed).
        task_id: The task it belongs to (set when read back from an agent).
        token: Opaque token the agent echoes so the receiver can authenticate the
            call. Never shown in reprs.
        authentication: Credentials the agent sends with each call.
        tenant: 1.0 multi-tenancy selector.
    """

    url: str
    id: str | None = None
    task_id: str | None = None
    token: str | None = attrs.field(default=None, repr=False)
    authentication: AuthenticationInfo | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class SendMessageConfiguration:
    """Options for sending a message.

    Attributes:
        accepted_output_modes: MIME types the client accepts in the answer.
        history_length: Most recent messages to include in the returned task
            (``None``: agent default; ``0``: none).
        push_notification_config: Webhook to register for this task.
        return_immediately: Return at once instead of waiting for a terminal or
            interrupted state (0.3: ``blocking: false``).
    """

    accepted_output_modes: list[str] = attrs.field(factory=list)
    history_length: int | None = None
    push_notification_config: PushNotificationConfig | None = None
    return_immediately: bool = False


@attrs.frozen(kw_only=True)
class SendMessageParams:
    """Parameters of SendMessage / SendStreamingMessage (0.3: message/send, message/stream)."""

    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class GetTaskParams:
    """Parameters of GetTask (0.3: tasks/get)."""

    id: str
    history_length: int | None = None
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class TaskIdParams:
    """Parameters of CancelTask and SubscribeToTask (0.3: tasks/cancel, tasks/resubscribe)."""

    id: str
    metadata: dict[str, Any] | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListTasksParams:
    """Parameters of ListTasks (1.0 only).

    Attributes:
        context_id: Only tasks of this conversation.
        status: Only tasks in this state.
        page_size: Tasks per page (agent default and cap apply).
        page_token: ``next_page_token`` of the previous page.
        history_length: Messages of history per task.
        status_timestamp_after: Only tasks whose status changed after this instant.
        include_artifacts: Include artifacts in the listed tasks.
        tenant: 1.0 multi-tenancy selector.
    """

    context_id: str | None = None
    status: TaskState | None = None
    page_size: int | None = None
    page_token: str | None = None
    history_length: int | None = None
    status_timestamp_after: datetime | None = None
    include_artifacts: bool | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListTasksResult:
    """One page of ListTasks; ``next_page_token`` is ``""`` on the last page."""

    tasks: list[Task] = attrs.field(factory=list)
    next_page_token: str = ""
    page_size: int = 0
    total_size: int = 0


@attrs.frozen(kw_only=True)
class PushConfigParams:
    """Names one push config of a task (get / delete). 0.3 get may omit ``config_id``."""

    task_id: str
    config_id: str | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListPushConfigsParams:
    """Parameters of ListTaskPushNotificationConfigs (0.3 ignores paging)."""

    task_id: str
    page_size: int | None = None
    page_token: str | None = None
    tenant: str | None = None


@attrs.frozen(kw_only=True)
class ListPushConfigsResult:
    """The push configs of a task; 0.3 has no paging (``next_page_token`` stays ``""``)."""

    configs: list[PushNotificationConfig] = attrs.field(factory=list)
    next_page_token: str = ""
