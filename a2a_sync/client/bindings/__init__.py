"""The A2A client's protocol bindings: one module per binding, behind one narrow protocol.

:class:`~a2a_sync.client.A2AClient` builds the params of an operation with the
revision's codec and hands them to its :class:`Binding`, which puts them on the wire and
gives back the decoded result (what the codec loads). Two bindings exist:

* ``"JSONRPC"`` — :class:`~a2a_sync.client.bindings.jsonrpc.JSONRPCTransport`;
* ``"HTTP+JSON"`` — :class:`~a2a_sync.client.bindings.rest.RESTTransport` (A2A 1.0 REST).

Both raise the same :mod:`a2a_sync.errors` types for the same A2A error (the table in
:mod:`a2a_sync.a2a.error_codes`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final, Protocol

from ..._net.sse import SSEStream
from ...a2a.methods import Operation, Revision
from ...a2a.types import AgentCard
from ...policies import RetryPolicy
from .jsonrpc import JSONRPCTransport, TimeoutArg
from .rest import RESTTransport

__all__ = ["BINDINGS", "HTTP_JSON", "JSONRPC", "Binding", "binding_class"]

JSONRPC: Final = "JSONRPC"
HTTP_JSON: Final = "HTTP+JSON"


class Binding(Protocol):
    """What the client needs from a binding: unary calls and event streams."""

    @property
    def url(self) -> str:
        """The endpoint."""

    @property
    def revision(self) -> Revision:
        """The A2A revision spoken."""

    def with_defaults(
        self, *, timeout: TimeoutArg = None, retry: RetryPolicy | None = None
    ) -> Binding:
        """A copy with other per-call defaults (``None`` keeps this one's)."""

    def call(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg,
        idempotent: bool = False,
        card: AgentCard | None = None,
    ) -> Any:
        """Run a unary operation and return its decoded result (the codec's input)."""

    def open_stream(
        self,
        operation: Operation,
        params: dict[str, Any],
        *,
        timeout: TimeoutArg = None,
        reconnect: Any = None,
        card: AgentCard | None = None,
    ) -> tuple[SSEStream, int | str]:
        """Open a streaming operation: the event stream and a request id."""

    def unwrap_event(self, payload: Any, request_ids: Collection[int | str]) -> Any:
        """One stream event's decoded result (raising the typed error it carries)."""


#: The binding classes by their card name (``protocolBinding``).
BINDINGS: Final[dict[str, type[JSONRPCTransport] | type[RESTTransport]]] = {
    JSONRPC: JSONRPCTransport,
    HTTP_JSON: RESTTransport,
}


def binding_class(name: str) -> type[JSONRPCTransport] | type[RESTTransport] | None:
    """The class of the binding a card calls ``name`` (case-insensitive), if supported."""
    return BINDINGS.get(name.strip().upper())
