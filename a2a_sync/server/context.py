"""What the server knows about one call (:class:`CallContext`, handed to handlers) and
about one message an agent handles (:class:`RequestContext`, handed to executors)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from ..a2a.methods import Operation
from ..a2a.types import Message, SendMessageConfiguration, Task
from ._flag import Flag
from .auth import ANONYMOUS, Principal

__all__ = ["CallContext", "RequestContext", "RequestHeaders", "message_with_ids"]


def message_with_ids(message: Message, task_id: str | None, context_id: str | None) -> Message:
    """``attrs.evolve(message, task_id=task_id, context_id=context_id)`` at half the cost
    (every message the server takes or answers directly is re-bound once; evolve looks
    the fields up on every call). The test of this module checks it copies every field."""
    return Message(
        role=message.role,
        parts=message.parts,
        message_id=message.message_id,
        context_id=context_id,
        task_id=task_id,
        reference_task_ids=message.reference_task_ids,
        extensions=message.extensions,
        metadata=message.metadata,
    )


class RequestHeaders(Mapping[str, str]):
    """A request's headers with lower-case names (``content-type``, ``a2a-version``),
    read from the WSGI environ the first time they are asked for (most calls never look
    at them). Read-only; safe to share between threads.

    Args:
        environ: The WSGI environ (copied: later changes to it are not seen).
    """

    __slots__ = ("_environ", "_headers")

    def __init__(self, environ: Mapping[str, Any]) -> None:
        self._environ = dict(environ)
        self._headers: dict[str, str] | None = None

    def _all(self) -> dict[str, str]:
        headers = self._headers
        if headers is None:
            environ = self._environ
            headers = {
                key[5:].replace("_", "-").lower(): value
                for key, value in environ.items()
                if key.startswith("HTTP_")
            }
            if environ.get("CONTENT_TYPE"):
                headers["content-type"] = environ["CONTENT_TYPE"]
            self._headers = headers  # (a racing reader builds the same dict: harmless)
        return headers

    def __getitem__(self, name: str) -> str:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return f"RequestHeaders({self._all()!r})"


@attrs.frozen(kw_only=True)
class CallContext:
    """One incoming call, as the request handler sees it.

    Immutable; safe to pass between threads.

    Attributes:
        principal: Who is calling (the anonymous principal without credentials).
        revision: The A2A revision of the call: ``"1.0"`` or ``"0.3"``.
        method: The JSON-RPC method name as sent (``"SendMessage"``, ``"message/send"``).
        operation: The operation it names.
        request_id: The JSON-RPC request id.
        extensions: Extension URIs the client asked for (``A2A-Extensions``; 0.3:
            ``X-A2A-Extensions``).
        headers: Request headers, lower-case names. Not shown in reprs (they may carry
            credentials).
        environ: The WSGI environ (for advanced handlers). Not shown in reprs.
    """

    principal: Principal = ANONYMOUS
    revision: str = "1.0"
    method: str = ""
    operation: Operation | None = None
    request_id: Any = None
    extensions: frozenset[str] = frozenset()
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    environ: Mapping[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


@attrs.frozen(kw_only=True)
class RequestContext:
    """Everything an executor knows about the message it is handling.

    Immutable (the cancellation flag aside) and safe to share between threads.

    Attributes:
        message: The user's message.
        task_id: The task this message runs in (new tasks get a fresh id).
        context_id: The conversation (the message's, the task's, or a fresh one).
        current_task: The task as it was before this message (``None`` for a new task;
            set when the message answers ``input_required``).
        configuration: The client's send options.
        metadata: The request's metadata.
        principal: Who sent it.
        requested_extensions: Extension URIs the client asked for.
        call: The call that delivered the message.
    """

    message: Message
    task_id: str
    context_id: str
    current_task: Task | None = None
    configuration: SendMessageConfiguration | None = None
    metadata: dict[str, Any] | None = None
    principal: Principal = ANONYMOUS
    requested_extensions: frozenset[str] = frozenset()
    call: CallContext = attrs.field(factory=CallContext, repr=False)
    _cancelled: Flag = attrs.field(factory=Flag, repr=False, eq=False, alias="_cancelled")

    @property
    def text(self) -> str:
        """The text parts of the user's message, joined with newlines."""
        return self.message.text

    @property
    def is_cancelled(self) -> bool:
        """True once a client asked to cancel the task."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on cancellation.

        Returns:
            True if the task was cancelled.
        """
        return self._cancelled.wait(timeout)

    def _cancel(self) -> None:
        self._cancelled.set()
