"""Taking in a message: validate it, claim its id, recognise a resend, start its run.

:class:`MessageIntake` is the part of the
:class:`~a2a_sync.server.handler.DefaultRequestHandler` that SendMessage and
SendStreamingMessage share: everything between the decoded message and the run (or the
earlier answer) the caller waits on or streams.
"""

from __future__ import annotations

from collections.abc import Callable

from ..a2a.types import Message, Role, SendMessageParams, StreamEvent
from ..errors import ExtensionSupportRequired, InvalidParams, TaskNotFound, UnsupportedOperation
from ._ids import new_id
from ._push_configs import Webhooks
from .context import CallContext, RequestContext, message_with_ids
from .runs import EventStream, Run, RunScheduler, RunStream, SnapshotStream
from .stores.base import StoredTask, TaskStore

__all__ = ["MessageIntake"]

#: What a message is answered with: ``(run, stream, None)`` for a run to wait on or stream
#: (``stream`` only when streaming), ``(None, None, stored)`` for a resent message whose
#: task exists already.
Accepted = tuple[Run | None, RunStream | None, StoredTask | None]


class MessageIntake:
    """Accepts messages for one handler. Thread-safe (its state is the store's and the
    scheduler's).

    Args:
        store: The task store.
        runs: Starts the agent's runs.
        webhooks: The push configs (checked and saved with a message's configuration).
        on_event: Called with every event a run publishes (``None``: nothing to call).
        required_extensions: Extension URIs a message must declare (the card marks them
            required: A2A 1.0 §3.3.4).
        deduplicate: Answer a resent message with its first delivery's task.
    """

    def __init__(
        self,
        store: TaskStore,
        runs: RunScheduler,
        webhooks: Webhooks,
        on_event: Callable[[StoredTask, StreamEvent], None] | None,
        *,
        required_extensions: frozenset[str],
        deduplicate: bool,
    ) -> None:
        self.store = store
        self._runs = runs
        self._webhooks = webhooks
        self._on_event = on_event
        self._required_extensions = required_extensions
        self._deduplicate = deduplicate

    def accept(
        self, params: SendMessageParams, call: CallContext, *, streaming: bool, inline: bool = False
    ) -> Accepted:
        """Validate a message, claim its id, and start (or queue) its run (on this thread
        when ``inline`` and the pool allows it: see :mod:`a2a_sync.server.inline`).

        Returns ``(run, stream, None)`` for a run to wait on or stream (``stream`` only
        when ``streaming``): a new run, or the one a repeated message started before;
        ``(None, None, stored)`` for a repeated message whose task exists already.
        """
        self._check(params, call)
        message = params.message
        config = params.configuration
        principal = call.principal.name
        current: StoredTask | None = None
        if message.task_id:
            current = self.store.get_task(message.task_id, principal=principal)
            if current is None:
                raise TaskNotFound()
            task = current.task
            if message.context_id and task.context_id and message.context_id != task.context_id:
                raise InvalidParams("contextId does not match the task's")
            task_id = task.id
            context_id = task.context_id or message.context_id or new_id()
        else:
            # A contextId belongs to the caller that sends it: the same id from two
            # callers names two conversations, and nothing tells one about the other's.
            task_id = new_id()
            context_id = message.context_id or new_id()
        if config is not None and config.push_notification_config is not None:
            room_in = current.task.id if current is not None else None
            self._webhooks.check_room(room_in, config.push_notification_config.id, principal)
        claimed = (
            self.store.claim_message(principal, message.message_id, task_id)
            if self._deduplicate
            else None
        )
        # The run holds the message's claim unless the id was claimed by another message.
        holds_claim = self._deduplicate
        if claimed is not None and self._same_message(claimed, message, principal):
            earlier = self._earlier(claimed, principal, streaming)
            if earlier is not None:
                return earlier
            task_id = claimed  # the earlier answer was a direct reply: answer again
        elif claimed is not None:
            holds_claim = False
        if current is not None and current.task.status.state.is_terminal:
            raise UnsupportedOperation(f"task is {current.task.status.state.value}")
        context = RequestContext(
            message=_bound(message, task_id, context_id),
            task_id=task_id,
            context_id=context_id,
            current_task=current.task if current is not None else None,
            configuration=config,
            metadata=params.metadata,
            principal=call.principal,
            requested_extensions=call.extensions,
            call=call,
        )
        run = Run(context, self.store, principal, self._on_event, holds_claim=holds_claim)
        if config is not None and config.push_notification_config is not None:
            self._webhooks.save(
                config.push_notification_config,
                task_id,
                principal=principal,
                revision=call.revision,
                checked=True,
            )
        stream = None
        if current is not None:  # the user's answer joins the history before the agent runs
            stored = self.store.append_event(task_id, context.message)
            run.created.set()
            if streaming:
                sub = self.store.subscribe(task_id, after_seq=stored.seq)
                stream = RunStream(run, sub, stored.task)
        elif streaming:
            stream = RunStream(run, self.store.subscribe(task_id, after_seq=0))
        self._runs.start(run, inline=inline)
        return run, stream, None

    def _check(self, params: SendMessageParams, call: CallContext) -> None:
        """Refuse a message that no run may start from (before anything is stored)."""
        missing = self._required_extensions - call.extensions
        if missing:
            raise ExtensionSupportRequired(
                f"this agent requires the extension(s) {', '.join(sorted(missing))}: "
                "declare them in the A2A-Extensions header"
            )
        message = params.message
        config = params.configuration
        if config is not None and config.history_length is not None and config.history_length < 0:
            raise InvalidParams("historyLength must not be negative")
        if message.role is not Role.user:
            raise InvalidParams("the message must come from the user (role user)")
        if not message.parts:  # A2A 1.0 §4.1.4: a Message holds one or more parts
            raise InvalidParams("message.parts must hold at least one part")
        if config is not None and config.push_notification_config is not None:
            self._webhooks.check_config(config.push_notification_config)

    def _same_message(self, claimed: str, message: Message, principal: str) -> bool:
        """Whether a message whose id was claimed for task ``claimed`` is that message
        again (a resend), not a new message reusing the id: it names the same task (or
        none) and conversation, and carries the same parts as the one in the task."""
        if message.task_id and message.task_id != claimed:
            return False
        stored = self.store.get_task(claimed, principal=principal)
        if stored is None:
            return not message.task_id  # still running, or answered by a direct reply
        task = stored.task
        if message.context_id and task.context_id and message.context_id != task.context_id:
            return False
        first = next((m for m in task.history if m.message_id == message.message_id), None)
        return first is None or first.parts == message.parts

    def _earlier(self, task_id: str, principal: str, streaming: bool) -> Accepted | None:
        """What a repeated message is answered with: the run its first delivery started
        (still running here), or its task; ``None`` when neither exists (the first
        delivery was answered with a direct reply, which is not kept)."""
        run = self._runs.active(task_id)
        stored = self.store.get_task(task_id, principal=principal)
        if run is not None and run.context.principal.name == principal:
            if not streaming:
                return run, None, None
            if stored is None:
                return run, RunStream(run, self.store.subscribe(task_id, after_seq=0)), None
            sub = self.store.subscribe(task_id, after_seq=stored.seq)
            return run, RunStream(run, sub, stored.task), None
        if stored is not None:
            return None, None, stored
        return None

    def follow(self, stored: StoredTask) -> EventStream:
        sub = self.store.subscribe(stored.task.id, after_seq=stored.seq)
        return SnapshotStream(stored.task, sub)


def _bound(message: Message, task_id: str, context_id: str) -> Message:
    """The user's message with the task and conversation it belongs to."""
    if message.task_id == task_id and message.context_id == context_id:
        return message
    return message_with_ids(message, task_id, context_id)
