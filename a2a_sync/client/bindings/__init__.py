"""The A2A client's protocol bindings: one module per binding, behind one narrow protocol.

:class:`~a2a_sync.client.A2AClient` builds the params of an operation with the
revision's codec and hands them to its :class:`Binding`, which puts them on the wire and
gives back the decoded result (what the codec loads). Two bindings exist:

* ``"JSONRPC"`` — :class:`~a2a_sync.client.bindings.jsonrpc.JSONRPCTransport`;
* ``"HTTP+JSON"`` — :class:`~a2a_sync.client.bindings.rest.RESTTransport` (A2A 1.0 REST);
* ``"GRPC"`` — :class:`~a2a_sync.client.bindings.grpc.GRPCTransport` (A2A 1.0 gRPC;
  0.3's: :class:`~a2a_sync.client.bindings.grpc_v03.GRPCV03Transport`; the
  ``grpc`` extra, imported only when chosen).

Both raise the same :mod:`a2a_sync.errors` types for the same A2A error (the table in
:mod:`a2a_sync.a2a.error_codes`).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final, Protocol

from ..._net.sse import SSEStream
from ...a2a.methods import Operation, Revision
from ...a2a.types import AgentCard
from ...errors import ConfigurationError, install_hint
from ...policies import RetryPolicy
from .jsonrpc import JSONRPCTransport, TimeoutArg
from .rest import RESTTransport

__all__ = ["BINDINGS", "GRPC", "HTTP_JSON", "JSONRPC", "Binding", "binding_class"]

JSONRPC: Final = "JSONRPC"
HTTP_JSON: Final = "HTTP+JSON"
GRPC: Final = "GRPC"


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


def binding_class(name: str) -> Any:
    """The class of the binding a card calls ``name`` (case-insensitive), if supported.

    Raises:
        ConfigurationError: ``GRPC`` without the ``grpc`` extra installed.
    """
    key = name.strip().upper()
    if key == GRPC:
        return _grpc_class()
    return BINDINGS.get(key)


def _grpc_class() -> Any:
    """The gRPC binding, imported on first use: ``import a2a_sync`` stays free of grpc."""
    try:
        from .grpc_v03 import grpc_binding  # noqa: PLC0415 - optional extra, loaded on demand
    except ImportError as exc:
        raise ConfigurationError(
            f"the GRPC binding needs the grpc extra: {install_hint('grpc')}"
            f" ({exc.name or exc} is missing)"
        ) from exc
    return grpc_binding  # GRPCTransport (1.0) or GRPCV03Transport (0.3) by revision
