"""Sending messages: the part of :class:`~a2a_sync.client.client.A2AClient` that builds a
``SendMessage`` from what the caller passed and sends it (unary or streamed) over the
client's binding. Tasks and push configs are in :mod:`.operations`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..a2a.methods import Operation
from ..a2a.types import PushNotificationConfig, SendResult, Task
from ._message import MessageInput, as_message, send_params
from .bindings.jsonrpc import TimeoutArg
from .operations import TaskOperations
from .stream import TaskStream

__all__ = ["MessageOperations"]


class MessageOperations(TaskOperations):
    """``send_message``, ``reply`` and ``stream_message``; the client sets the attributes
    :class:`TaskOperations` names."""

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
