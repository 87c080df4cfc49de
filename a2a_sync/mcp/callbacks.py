"""The user callbacks of an MCP connection and how they answer the server."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..errors import MethodNotFound
from . import _codec
from . import types as t

__all__ = ["Handlers"]


@attrs.frozen
class Handlers:
    """The user callbacks of a connection. Each is optional.

    Callbacks run on the session's dispatcher thread (``a2a-sync-mcp-dispatch``), in the
    order messages arrived, except ``input_required`` answers, which run on the thread
    that made the call. A callback may raise an :class:`~a2a_sync.errors.RPCError` to
    answer the server with that error; any other exception is logged and answered with
    ``-32603``.

    Attributes:
        sampling: ``(CreateMessageRequest) -> CreateMessageResult``; declares ``sampling``.
        elicitation: ``(ElicitRequest) -> ElicitResult``; declares ``elicitation``
            (form and url).
        roots: ``() -> Sequence[Root]``; declares ``roots`` (with ``listChanged``).
        logging: ``(LoggingMessage) -> None`` for ``notifications/message``.
        list_changed: ``(kind) -> None`` with kind ``"tools"``, ``"prompts"`` or
            ``"resources"``.
        resource_updated: ``(uri) -> None`` for ``notifications/resources/updated``.
        notification: ``(method, params) -> None`` for every notification (raw).
    """

    sampling: Callable[[t.CreateMessageRequest], t.CreateMessageResult] | None = None
    elicitation: Callable[[t.ElicitRequest], t.ElicitResult] | None = None
    roots: Callable[[], Sequence[t.Root]] | None = None
    logging: Callable[[t.LoggingMessage], None] | None = None
    list_changed: Callable[[str], None] | None = None
    resource_updated: Callable[[str], None] | None = None
    notification: Callable[[str, dict[str, Any]], None] | None = None

    def capabilities(self) -> t.ClientCapabilities:
        """The client capabilities these callbacks declare."""
        return t.ClientCapabilities(
            sampling={} if self.sampling else None,
            elicitation={"form": {}, "url": {}} if self.elicitation else None,
            roots={"listChanged": True} if self.roots else None,
        )

    def answer(self, method: str, params: Any) -> Any:
        """Answer a server→client request (legacy) or an input request (MRTR).

        Raises:
            RPCError: No callback for ``method``, invalid params, or the callback's own.
        """
        params = params if isinstance(params, dict) else {}
        if method == "ping":
            return {}
        if method == "sampling/createMessage" and self.sampling is not None:
            request = _codec.structure(params, t.CreateMessageRequest, what="sampling request")
            return _codec.unstructure(self.sampling(request), t.CreateMessageResult)
        if method == "elicitation/create" and self.elicitation is not None:
            elicit = _codec.structure(params, t.ElicitRequest, what="elicitation request")
            return _codec.unstructure(self.elicitation(elicit), t.ElicitResult)
        if method == "roots/list" and self.roots is not None:
            return {"roots": [_codec.unstructure(r, t.Root) for r in self.roots()]}
        raise MethodNotFound(f"client does not support {method}")
