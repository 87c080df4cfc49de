"""The ``a2a.v1`` (A2A 0.3) message classes and the A2AService method table.

Built like 1.0's (:mod:`a2a_sync.a2a.grpc.messages`) in a private descriptor pool of
their own: a2a-sdk registers its 0.3 copy of ``a2a.v1`` in protobuf's default pool, and
both may live in one process. The rpcs are wired on grpcio's generic API.

0.3's rpc names differ from 1.0's JSON-RPC-derived ones: ``TaskSubscription``,
``ListTaskPushNotificationConfig``, and ``GetAgentCard``, which stands for the extended
card (``agent/getAuthenticatedExtendedCard``), as a2a-sdk's 0.3 server and client use it.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import message_factory

from ..grpc.messages import Method, private_pool
from ..methods import STREAMING, Operation
from ._descriptor import SERIALIZED

__all__ = ["METHODS", "POOL", "SERVICE", "message_class", "method_for"]

#: The full name of the service; rpc paths are ``/a2a.v1.A2AService/<Rpc>``.
SERVICE: Final = "a2a.v1.A2AService"
#: The pool holding ``a2a.v1`` and its imports (not protobuf's default pool).
POOL: Final = private_pool(SERIALIZED)

#: The 0.3 rpcs and the operations they stand for.
_RPCS: Final = {
    "SendMessage": Operation.SEND_MESSAGE,
    "SendStreamingMessage": Operation.SEND_STREAMING_MESSAGE,
    "GetTask": Operation.GET_TASK,
    "CancelTask": Operation.CANCEL_TASK,
    "TaskSubscription": Operation.SUBSCRIBE_TO_TASK,
    "CreateTaskPushNotificationConfig": Operation.CREATE_PUSH_CONFIG,
    "GetTaskPushNotificationConfig": Operation.GET_PUSH_CONFIG,
    "ListTaskPushNotificationConfig": Operation.LIST_PUSH_CONFIGS,
    "DeleteTaskPushNotificationConfig": Operation.DELETE_PUSH_CONFIG,
    # a2a-sdk's 0.3 server answers GetAgentCard with the extended card, and its 0.3
    # client calls it for the extended card: the authenticated card of 0.3 JSON-RPC.
    "GetAgentCard": Operation.GET_EXTENDED_CARD,
}


def message_class(name: str) -> Any:
    """The class of message ``name`` (``"Task"`` or a full name ``"a2a.v1.Task"``)."""
    full = name if "." in name else f"a2a.v1.{name}"
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full))


def _methods() -> dict[Operation, Method]:
    out: dict[Operation, Method] = {}
    for method in POOL.FindServiceByName(SERVICE).methods:
        operation = _RPCS.get(method.name)
        if operation is None:
            continue
        out[operation] = Method(
            operation,
            method.name,
            message_factory.GetMessageClass(method.input_type),
            message_factory.GetMessageClass(method.output_type),
            operation in STREAMING,
            SERVICE,
        )
    return out


#: Every rpc served, by operation.
METHODS: Final = _methods()


def method_for(operation: Operation) -> Method | None:
    """The rpc of ``operation`` (``None``: 0.3 has none, as for ListTasks)."""
    return METHODS.get(operation)
