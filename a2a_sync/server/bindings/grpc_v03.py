"""The A2A 0.3 gRPC service (``a2a.v1.A2AService``) of the gRPC binding.

:class:`~a2a_sync.server.bindings.grpc.GRPCServer` serves it beside 1.0's
``lf.a2a.v1.A2AService`` on the same server and port: the same handler, stores,
authenticator, limits, stream cap and shutdown, through the same rpc handlers
(:class:`~a2a_sync.server.bindings.grpc_service.A2AServiceHandlers`) with 0.3's method
table, codec and conversions (:mod:`a2a_sync.a2a.grpc_v03.convert`). Metadata
``a2a-version`` may be absent or 0.3 (anything else: FAILED_PRECONDITION,
``VersionNotSupportedError``); extensions come from ``a2a-extensions`` or 0.3's
``x-a2a-extensions``. Errors are the table's status codes with the 0.3 status message
``"<ErrorName>: <message>"`` (what a2a-sdk's 0.3 gRPC client reads) and the 1.0
ErrorInfo in ``grpc-status-details-bin``.

Needs the ``grpc`` extra; imported only when used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ...a2a.codec import Codec, codec_for
from ...a2a.grpc.messages import Method
from ...a2a.grpc_v03.convert import (
    event_to_message,
    params_from_message,
    result_to_message,
    status_message,
)
from ...a2a.grpc_v03.messages import METHODS, SERVICE
from ...a2a.methods import Operation, Revision
from ...errors import RPCError
from .grpc_service import A2AServiceHandlers

__all__ = ["A2AServiceV03Handlers"]

_CODEC: Final = codec_for("0.3")


class A2AServiceV03Handlers(A2AServiceHandlers):
    """The rpc handlers of one application for A2A 0.3's ``a2a.v1.A2AService``."""

    service: str = SERVICE
    revision: Revision = "0.3"
    codec: Codec = _CODEC
    methods: Mapping[Operation, Method] = METHODS

    def _params(self, method: Method, message: Any) -> Any:
        return params_from_message(method, message)

    def _result(self, method: Method, answer: Any) -> Any:
        return result_to_message(method, answer)

    def _event(self, method: Method, event: Any) -> Any:
        return event_to_message(method, event)

    def _error(self, exc: RPCError) -> Any:
        return attrs.evolve(super()._error(exc), details=status_message(exc))
