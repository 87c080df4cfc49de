"""gRPC to one A2A 0.3 endpoint (``a2a.v1.A2AService``): the client's gRPC binding for
agents whose 0.3 card selects ``GRPC`` (``preferredTransport`` or an
``additionalInterfaces`` entry). Needs the ``grpc`` extra.

:class:`GRPCV03Transport` is :class:`~.grpc.GRPCTransport` (one channel, deadlines,
retries, credentials as metadata, stream reader, error types) with 0.3's method table
and conversions (:mod:`a2a_sync.a2a.grpc_v03.convert`): requests are built from the 0.3
JSON-RPC params the 0.3 codec made, answers and stream events come back as 0.3 JSON-RPC
results, exactly what the 0.3 JSON-RPC binding returns. A2A errors are typed by the
error name that starts a 0.3 status message (``TaskNotFoundError: ...``, as a2a-sdk's
and a2a_sync's 0.3 servers send it), else as for 1.0. 0.3 has no tenant and no
ListTasks (MethodNotFound, as over 0.3 JSON-RPC).

:func:`grpc_binding` is what :func:`~a2a_sync.client.bindings.binding_class` returns for
``GRPC``: it builds the transport of the requested revision.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, ClassVar

import attrs
import grpc

from ...a2a.grpc.messages import Method
from ...a2a.grpc_v03.convert import (
    error_from_grpc_v03,
    request_of,
    result_from_message,
)
from ...a2a.grpc_v03.messages import method_for
from ...a2a.methods import Operation
from ...a2a.rest_v03 import event_from_wire
from ...errors import A2ASyncError, MethodNotFound
from .grpc import GRPCTransport
from .grpc_retry import status_name

__all__ = ["GRPCV03Transport", "grpc_binding"]


def grpc_binding(**kwargs: Any) -> GRPCTransport:
    """The gRPC transport of ``kwargs["revision"]`` (1.0 or 0.3), built from ``kwargs``."""
    cls = GRPCV03Transport if kwargs.get("revision") == "0.3" else GRPCTransport
    return cls(**kwargs)


@attrs.frozen(kw_only=True, eq=False)
class GRPCV03Transport(GRPCTransport):
    """Calls of one A2A client to its 0.3 gRPC endpoint (``a2a.v1.A2AService``)."""

    SPEAKS: ClassVar[str] = "0.3"

    def _method(self, operation: Operation) -> Method:
        method = method_for(operation)
        if method is None:
            raise MethodNotFound(
                f"{operation.value} is not available over A2A 0.3 gRPC at "
                f"{self.target.target}; use the agent's 0.3 JSON-RPC interface for it"
            )
        return method

    def _request(self, method: Method, params: dict[str, Any]) -> Any:
        return request_of(method, params)

    def _result(self, operation: Operation, method: Method, answer: Any) -> Any:
        return result_from_message(method, answer)  # the 0.3 JSON-RPC result

    def unwrap_event(self, payload: Any, request_ids: Collection[int | str]) -> Any:
        """A ``StreamResponse``'s ProtoJSON dict as the 0.3 JSON event."""
        return event_from_wire(payload)

    def _error(
        self,
        exc: grpc.RpcError,
        method: Method,
        deadline: float | None,
        *,
        streaming: bool = False,
    ) -> A2ASyncError:
        details_text = getattr(exc, "details", None)
        message = details_text() if callable(details_text) else ""
        name = (message or "").partition(": ")[0]
        if name.endswith("Error"):
            typed = error_from_grpc_v03(status_name(exc), message or "", None)
            if typed is not None:
                return typed
        return super()._error(exc, method, deadline, streaming=streaming)
