"""What callers may pass as a message, and the ``SendMessage`` params built from it.

Shared by :class:`~a2a_sync.client.A2AClient` and
:class:`~a2a_sync.client.ResilientA2AClient`, which builds the message once so every
attempt on every agent carries the same ``message_id``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from ..a2a.codec import Codec
from ..a2a.types import (
    Message,
    Part,
    PushNotificationConfig,
    Role,
    SendMessageConfiguration,
)

__all__ = ["MessageInput", "as_message", "send_params"]

MessageInput = str | Part | Message | Sequence[str | Part]


def as_message(message: MessageInput, *, task_id: str | None, context_id: str | None) -> Message:
    """``message`` as a :class:`Message` within ``task_id``/``context_id`` (when given)."""
    if isinstance(message, Message):
        if task_id is None and context_id is None:
            return message
        return attrs.evolve(
            message,
            task_id=task_id if task_id is not None else message.task_id,
            context_id=context_id if context_id is not None else message.context_id,
        )
    if isinstance(message, str):
        # The common call (text): Message.user's result without its generic steps.
        return Message(
            role=Role.user,
            parts=[Part(text=message)],
            message_id=str(uuid.uuid4()),
            context_id=context_id,
            task_id=task_id,
        )
    content: Sequence[str | Part] = (message,) if isinstance(message, (str, Part)) else message
    return Message.user(*content, task_id=task_id, context_id=context_id)


def send_params(
    codec: Codec,
    message: Message,
    *,
    return_immediately: bool,
    history_length: int | None,
    accepted_output_modes: Sequence[str] | None,
    push_notification_config: PushNotificationConfig | None,
    metadata: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The wire params of ``SendMessage``/``SendStreamingMessage`` (a configuration only
    when an option is set)."""
    configuration = None
    if (
        return_immediately
        or history_length is not None
        or accepted_output_modes
        or push_notification_config is not None
    ):
        configuration = SendMessageConfiguration(
            accepted_output_modes=list(accepted_output_modes or ()),
            history_length=history_length,
            push_notification_config=push_notification_config,
            return_immediately=return_immediately,
        )
    return codec.dump_send_params(
        message, configuration, metadata=dict(metadata) if metadata else None
    )
