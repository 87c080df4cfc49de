"""The stream of :class:`~a2a_sync.client.ResilientA2AClient`: L2 (resubscribe) and L3 (poll).

A dropped stream is resumed by resubscribing to its task (``SubscribeToTask`` /
``tasks/resubscribe``), never by posting the message again. What the consumer has seen is
kept as a task snapshot (:mod:`a2a_sync.client.resilient._delivery`); whatever the agent
sends after a reconnect — the subscription's first event, a backfill of its event log, a
polled ``GetTask`` — delivers only what moves that snapshot forward, so no event is seen
twice and chunked artifacts reassemble to what ``GetTask`` returns; a resubscribed
stream's result is confirmed with one ``GetTask`` when it ends. The state machine doing
this is :class:`~a2a_sync.client.resilient._session.StreamSession`.

The stream works on the client's :class:`~a2a_sync.client.resilient.agents.AgentSet` (the
agents, who owns which task, the attempts and waits), never on the client itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ...a2a.types import Message, StreamEvent, Task
from ...errors import ProtocolError
from ...policies import ResilienceConfig
from ..chunks import progress, text_chunks
from ..client import A2AClient
from ._session import StreamSession
from .agents import AgentSet

__all__ = ["ResilientTaskStream"]


class ResilientTaskStream:
    """A task stream that survives dropped connections (see :class:`ResilientA2AClient`).

    The message is sent (or the subscription opened) when the stream is created, so
    failures to reach any agent raise there. Iterate it like a
    :class:`~a2a_sync.client.TaskStream`; events are never delivered twice, also across
    resubscribes and polls. Iterate from one thread; :meth:`close` may be called from any
    thread and ends a wait for a reconnect at once.

    Args:
        agent_set: The client's agents (attempts, task ownership, waits).
        config: Budgets and delays of the layers.
        agents: The agents to try, in order (the task's owner when it is known).
        message: The message to send, or ``None`` to subscribe to ``task_id``.
        resend: Resend the message after an ambiguous failure (same ``message_id``).
        send_kwargs: Further keyword arguments of ``stream_message``/``send_message``.
        task_id: The task to subscribe to (when ``message`` is ``None``).
    """

    def __init__(
        self,
        agent_set: AgentSet,
        config: ResilienceConfig,
        agents: Sequence[A2AClient],
        *,
        message: Message | None,
        resend: bool,
        send_kwargs: dict[str, Any],
        task_id: str | None,
    ) -> None:
        self._session = StreamSession(
            agent_set,
            config,
            agents,
            message=message,
            resend=resend,
            send_kwargs=send_kwargs,
            task_id=task_id,
        )
        self._events = self._session.events()

    # -- public ---------------------------------------------------------------------------

    @property
    def reconnects(self) -> int:
        """Resubscribes attempted after the stream dropped."""
        return self._session.reconnects

    @property
    def polled(self) -> bool:
        """True if the stream fell through to polling ``GetTask`` (L3), or the agent
        cannot stream at all."""
        return self._session.polled

    @property
    def task_id(self) -> str | None:
        """The task's id, once known."""
        return self._session.task_id

    @property
    def task(self) -> Task | None:
        """The task as delivered so far (``None`` before the first event)."""
        return self._session.task

    @property
    def message(self) -> Message | None:
        """The agent's reply when it answered with a message instead of a task."""
        return self._session.reply

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._session.closed.is_set()

    def __iter__(self) -> Iterator[StreamEvent]:
        return self._events  # a for loop steps the generator directly

    def __next__(self) -> StreamEvent:
        return next(self._events)

    def text_chunks(self) -> Iterator[str]:
        """The answer's text as it arrives (see :func:`a2a_sync.client.chunks.text_chunks`);
        the stream's outcome stays available from :meth:`get_final_result`."""
        return text_chunks(self)

    def progress(self, description: str = "streaming") -> Iterator[StreamEvent]:
        """The events, with a progress bar while they arrive (``tqdm.auto`` when
        installed; see :func:`a2a_sync.client.chunks.progress`)."""
        return progress(self, description)

    def get_final_task(self) -> Task:
        """Read to the end; return the task (raises like :meth:`TaskStream.get_final_task`)."""
        result = self.get_final_result()
        if isinstance(result, Message):
            raise ProtocolError("the agent replied with a message, not a task")
        return result

    def get_final_result(self) -> Task | Message:
        """Read to the end; return the task or the agent's reply message."""
        for _ in self:
            pass
        reply = self._session.reply
        if reply is not None:
            return reply
        task = self.task
        if task is None:
            raise ProtocolError("the stream ended without a task or message")
        return task

    def close(self) -> None:
        """Stop streaming (from any thread); no reconnect follows. Idempotent."""
        self._session.close()

    def __enter__(self) -> ResilientTaskStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ResilientTaskStream task_id={self.task_id!r} reconnects={self.reconnects}>"
