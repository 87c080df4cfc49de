"""The A2A method table: one place that knows each operation's wire name per revision.

Client and server both use it; switching or adding a revision is a change here only.
Names come from the normative sources: the 1.0 JSON-RPC names equal the gRPC names of
``a2a.proto`` (``SendMessage`` ...), 0.3 uses slash names (``message/send`` ...).
"""

from __future__ import annotations

import enum
from typing import Final, Literal

__all__ = [
    "IDEMPOTENT",
    "REVISIONS",
    "STREAMING",
    "Operation",
    "Revision",
    "lookup",
    "wire_name",
]

#: The A2A protocol revisions a2a_sync speaks, newest first (the order of preference).
Revision = Literal["1.0", "0.3"]
REVISIONS: Final[tuple[Revision, ...]] = ("1.0", "0.3")


class Operation(enum.Enum):
    """An A2A operation, independent of its wire spelling."""

    # Members compare by identity: hash them so too, in C (Enum's hashes the name in Python,
    # twice per call: the method name and the idempotency set).
    __hash__ = object.__hash__

    SEND_MESSAGE = "send_message"
    SEND_STREAMING_MESSAGE = "send_streaming_message"
    GET_TASK = "get_task"
    LIST_TASKS = "list_tasks"
    CANCEL_TASK = "cancel_task"
    SUBSCRIBE_TO_TASK = "subscribe_to_task"
    CREATE_PUSH_CONFIG = "create_push_config"
    GET_PUSH_CONFIG = "get_push_config"
    LIST_PUSH_CONFIGS = "list_push_configs"
    DELETE_PUSH_CONFIG = "delete_push_config"
    GET_EXTENDED_CARD = "get_extended_card"


_NAMES: Final[dict[Operation, dict[Revision, str]]] = {
    Operation.SEND_MESSAGE: {"1.0": "SendMessage", "0.3": "message/send"},
    Operation.SEND_STREAMING_MESSAGE: {"1.0": "SendStreamingMessage", "0.3": "message/stream"},
    Operation.GET_TASK: {"1.0": "GetTask", "0.3": "tasks/get"},
    # 0.3 has no JSON-RPC list method (it is absent from the 0.3 proto and JSON schema).
    Operation.LIST_TASKS: {"1.0": "ListTasks"},
    Operation.CANCEL_TASK: {"1.0": "CancelTask", "0.3": "tasks/cancel"},
    Operation.SUBSCRIBE_TO_TASK: {"1.0": "SubscribeToTask", "0.3": "tasks/resubscribe"},
    Operation.CREATE_PUSH_CONFIG: {
        "1.0": "CreateTaskPushNotificationConfig",
        "0.3": "tasks/pushNotificationConfig/set",
    },
    Operation.GET_PUSH_CONFIG: {
        "1.0": "GetTaskPushNotificationConfig",
        "0.3": "tasks/pushNotificationConfig/get",
    },
    Operation.LIST_PUSH_CONFIGS: {
        "1.0": "ListTaskPushNotificationConfigs",
        "0.3": "tasks/pushNotificationConfig/list",
    },
    Operation.DELETE_PUSH_CONFIG: {
        "1.0": "DeleteTaskPushNotificationConfig",
        "0.3": "tasks/pushNotificationConfig/delete",
    },
    Operation.GET_EXTENDED_CARD: {
        "1.0": "GetExtendedAgentCard",
        "0.3": "agent/getAuthenticatedExtendedCard",
    },
}

_BY_WIRE_NAME: Final[dict[str, tuple[Operation, Revision]]] = {
    name: (operation, revision)
    for operation, names in _NAMES.items()
    for revision, name in names.items()
}

#: Operations that are safe to repeat after the request may have reached the agent
#: (A2A 1.0 §3.3.1: reads, and cancel, whose repeat at worst answers "not cancelable").
IDEMPOTENT: Final = frozenset(
    {
        Operation.GET_TASK,
        Operation.LIST_TASKS,
        Operation.CANCEL_TASK,
        Operation.GET_PUSH_CONFIG,
        Operation.LIST_PUSH_CONFIGS,
        Operation.DELETE_PUSH_CONFIG,
        Operation.GET_EXTENDED_CARD,
        Operation.SUBSCRIBE_TO_TASK,
    }
)

#: Operations answered with an event stream.
STREAMING: Final = frozenset({Operation.SEND_STREAMING_MESSAGE, Operation.SUBSCRIBE_TO_TASK})


def wire_name(operation: Operation, revision: Revision) -> str | None:
    """The JSON-RPC method name of ``operation`` in ``revision`` (``None``: not in it)."""
    return _NAMES[operation].get(revision)


def lookup(method: str) -> tuple[Operation, Revision] | None:
    """The operation and revision a JSON-RPC method name belongs to, if any."""
    return _BY_WIRE_NAME.get(method)
