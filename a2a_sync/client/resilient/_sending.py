"""Sending a resilient stream's message: once, and again only when that is safe.

A :class:`MessageSend` opens the message's stream on the first agent that takes it (L4),
or — for an agent whose card declares no streaming — sends it for polling. It is sent
again, identical (same ``message_id``), only after answers that say it was not processed
(429, 503) or when the caller opted into resending (L1, within the config's budget).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from ..._redact import redact_url
from ...a2a.types import Message, SendResult
from ...errors import A2ASyncError, HTTPStatusError, TransportError
from ...policies import ResilienceConfig
from ..client import A2AClient
from ..stream import TaskStream
from ._outcomes import resend_delay
from .agents import AgentSet

__all__ = ["MessageSend"]

logger = logging.getLogger(__name__)


class _Reply(Exception):
    """Carries a reply message out of an agent attempt (the agent answered without a task)."""

    def __init__(self, message: Message) -> None:
        super().__init__("reply")
        self.message = message


class MessageSend:
    """The sends of one stream's message, counted across agents and reconnects.

    Not thread-safe: used by the thread that opens and iterates the stream.

    Args:
        agent_set: The client's agents (attempts and waits).
        config: The resend budget and delays.
        message: The message, built once so every attempt carries the same id.
        resend: The caller opted into resending after ambiguous failures.
        send_kwargs: Further keyword arguments of ``stream_message``/``send_message``.
        cancelled: Ends a wait before a resend early (the stream was closed).
    """

    def __init__(
        self,
        agent_set: AgentSet,
        config: ResilienceConfig,
        message: Message,
        *,
        resend: bool,
        send_kwargs: dict[str, Any],
        cancelled: threading.Event,
    ) -> None:
        self._agent_set = agent_set
        self._config = config
        self.message = message
        self._resend = resend
        self._send_kwargs = send_kwargs
        self._cancelled = cancelled
        self._sends = 1  # attempts at sending the message

    def open(self, agents: Sequence[A2AClient]) -> tuple[TaskStream | SendResult, A2AClient | None]:
        """Send the message on the first of ``agents`` that can take it (L1 + L4).

        Returns:
            The message's stream, or — from an agent that cannot stream — the task to
            poll or the agent's reply message; and the agent (``None`` for a reply).
        """
        message = self.message

        def open_on(agent: A2AClient) -> TaskStream | SendResult:
            card = agent.card
            if card is not None and not card.capabilities.streaming:
                # CR-07: the agent cannot stream; send and poll instead.
                result = self._agent_set.send_on(
                    agent,
                    message,
                    resend=self._resend,
                    return_immediately=True,
                    **self._send_kwargs,
                )
                if isinstance(result, Message):
                    raise _Reply(result)
                return result
            return self.stream_on(agent)

        try:
            return self._agent_set.run(
                open_on, agents, send=True, message=message, resend=self._resend
            )
        except _Reply as reply:
            return reply.message, None

    def stream_on(self, agent: A2AClient) -> TaskStream:
        """Open the message stream on ``agent``; an opted-in send is retried there (L1)."""
        message = self.message
        while True:
            try:
                return agent.stream_message(message, **self._send_kwargs)
            except (TransportError, HTTPStatusError) as exc:
                delay = self.resend_delay(exc)
                if delay is None:
                    raise
            logger.debug("resending message %s to %s", message.message_id, redact_url(agent.url))
            self._agent_set.wait(delay, self._cancelled)

    def resend_delay(self, exc: A2ASyncError) -> float | None:
        """The wait before sending the message again, or ``None`` if it must not be."""
        delay = resend_delay(self._config, exc, resend=self._resend, sends=self._sends)
        if delay is not None:
            self._sends += 1
        return delay
