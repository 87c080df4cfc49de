"""The edge between ``a2a.v1`` (A2A 0.3) protobuf messages and the 0.3 JSON-RPC shapes.

0.3's HTTP+JSON binding is gRPC transcoding of this proto, so the ProtoJSON of these
messages is exactly what :mod:`a2a_sync.a2a.rest_v03` already translates to and from the
0.3 JSON-RPC params and results the 0.3 codec speaks (a Message's ``content``, parts
``{"text"}``/``{"file": {"fileWithUri"|"fileWithBytes", "mimeType", "name"}}``/
``{"data": {"data"}}``, ``ROLE_*``, ``TASK_STATE_*``, wrapped results and stream events,
push configs named ``tasks/T/pushNotificationConfigs/C``). What the REST binding carries
in the path, gRPC carries in the request's resource name (``name: "tasks/T"``,
``parent: "tasks/T"``): :func:`params_from_message` and :func:`request_of` translate
those; everything else is the REST translation unchanged.

Errors (0.3 defines no ErrorInfo for gRPC): the status code of the one error table, and
a status message ``"<ErrorName>: <message>"`` (``TaskNotFoundError: ...``), the form
a2a-sdk's 0.3 gRPC client and server use; the 1.0 ``google.rpc.Status`` with ErrorInfo
rides along in ``grpc-status-details-bin`` and is read first when present.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from google.protobuf.message import Message

from ... import errors as _e
from .. import rest_v03
from ..error_codes import error_from_status, row_for
from ..grpc.convert import error_from_grpc, from_message, to_message
from ..grpc.messages import Method
from ..methods import Operation
from .card import card_from_wire, card_to_wire

__all__ = [
    "error_from_grpc_v03",
    "event_from_message",
    "event_to_message",
    "params_from_message",
    "request_of",
    "result_from_message",
    "result_to_message",
    "status_message",
]

_TASK: Final = re.compile(r"tasks/([^/]+)\Z")
_CONFIG: Final = re.compile(r"tasks/([^/]+)/pushNotificationConfigs/([^/]+)\Z")
#: Without a known error name, a status code stands for these (as for 1.0).
_HTTP_OF_CODE: Final = {"INVALID_ARGUMENT": 400, "NOT_FOUND": 404, "INTERNAL": 500}


def _task_id(method: Method, field: str, value: Any) -> str:
    found = _TASK.match(str(value or ""))
    if found is None:
        raise _e.InvalidParams(
            f"{method.name}: {field} must be 'tasks/{{task_id}}', got {value!r}",
            data={"errors": [f"{field}: not a task resource name"]},
        )
    return found.group(1)


def _config_ids(method: Method, value: Any) -> tuple[str, str]:
    found = _CONFIG.match(str(value or ""))
    if found is None:
        raise _e.InvalidParams(
            f"{method.name}: name must be 'tasks/{{task_id}}/pushNotificationConfigs/"
            f"{{config_id}}', got {value!r}",
            data={"errors": ["name: not a push notification config resource name"]},
        )
    return found.group(1), found.group(2)


def params_from_message(method: Method, message: Message) -> dict[str, Any]:
    """The 0.3 JSON-RPC params of a request message (what the 0.3 codec loads).

    Raises:
        InvalidParams: a resource name (``name``/``parent``) is malformed.
    """
    body = from_message(message)
    operation = method.operation
    wire: dict[str, Any]
    if operation in (Operation.SEND_MESSAGE, Operation.SEND_STREAMING_MESSAGE):
        wire = body
    elif operation is Operation.GET_TASK:
        wire = {"id": _task_id(method, "name", body.get("name"))}
        if body.get("historyLength"):
            wire["historyLength"] = body["historyLength"]
    elif operation in (Operation.CANCEL_TASK, Operation.SUBSCRIBE_TO_TASK):
        wire = {"id": _task_id(method, "name", body.get("name"))}
    elif operation in (Operation.GET_PUSH_CONFIG, Operation.DELETE_PUSH_CONFIG):
        task_id, config_id = _config_ids(method, body.get("name"))
        wire = {"taskId": task_id, "configId": config_id}
    elif operation is Operation.LIST_PUSH_CONFIGS:
        wire = {"taskId": _task_id(method, "parent", body.get("parent"))}
    elif operation is Operation.GET_EXTENDED_CARD:
        return {}
    else:  # CREATE_PUSH_CONFIG
        wire = {
            "taskId": _task_id(method, "parent", body.get("parent")),
            "configId": body.get("configId", ""),
            "config": body.get("config", {}),
        }
    return rest_v03.from_wire(operation, wire)


def request_of(method: Method, params: Mapping[str, Any]) -> Message:
    """The request message for 0.3 JSON-RPC ``params`` (as the 0.3 codec dumps them)."""
    operation = method.operation
    wire = rest_v03.to_wire(operation, params)
    body: dict[str, Any]
    if operation in (Operation.SEND_MESSAGE, Operation.SEND_STREAMING_MESSAGE):
        body = wire
    elif operation is Operation.GET_TASK:
        body = {"name": f"tasks/{wire.get('id')}"}
        if wire.get("historyLength") is not None:
            body["historyLength"] = wire["historyLength"]
    elif operation in (Operation.CANCEL_TASK, Operation.SUBSCRIBE_TO_TASK):
        body = {"name": f"tasks/{wire.get('id')}"}
    elif operation in (Operation.GET_PUSH_CONFIG, Operation.DELETE_PUSH_CONFIG):
        body = {
            "name": f"tasks/{wire.get('taskId')}/pushNotificationConfigs/{wire.get('configId')}"
        }
    elif operation is Operation.LIST_PUSH_CONFIGS:
        body = {"parent": f"tasks/{wire.get('taskId')}"}
    elif operation is Operation.GET_EXTENDED_CARD:
        body = {}
    else:  # CREATE_PUSH_CONFIG
        body = {"parent": wire["parent"], "configId": wire["configId"], "config": wire["config"]}
    return to_message(method.request, body, method.name)


def result_to_message(method: Method, result: Any) -> Message:
    """The response message for a 0.3 JSON-RPC result (as the 0.3 codec dumps it)."""
    if method.operation is Operation.GET_EXTENDED_CARD:
        card = card_to_wire(result, method.response.DESCRIPTOR)
        return to_message(method.response, card, method.name)
    return to_message(
        method.response, rest_v03.result_to_wire(method.operation, result), method.name
    )


def result_from_message(method: Method, message: Message) -> Any:
    """The 0.3 JSON-RPC result of a response message."""
    if method.operation is Operation.GET_EXTENDED_CARD:
        return card_from_wire(from_message(message))
    return rest_v03.result_from_wire(method.operation, from_message(message))


def event_to_message(method: Method, event: Mapping[str, Any]) -> Message:
    """The ``StreamResponse`` of one 0.3 JSON stream event."""
    return to_message(method.response, rest_v03.event_to_wire(event), method.name)


def event_from_message(message: Message) -> Any:
    """The 0.3 JSON stream event of one ``StreamResponse``."""
    return rest_v03.event_from_wire(from_message(message))


def status_message(exc: _e.RPCError) -> str:
    """The 0.3 status message of ``exc``: ``"<ErrorName>: <message>"``."""
    row = row_for(exc)
    return f"{row.name if row is not None else 'InternalError'}: {exc.message}"


def error_from_grpc_v03(code: str, message: str, details: bytes | None) -> _e.RPCError | None:
    """The typed A2A error a failed 0.3 call stands for, or ``None`` when it carries none.

    The error name before ``": "`` in the status message decides (the 0.3 form, which
    a2a-sdk's servers and a2a_sync's send); otherwise the ErrorInfo of
    ``grpc-status-details-bin`` or the code, as for 1.0.
    """
    name, sep, text = message.partition(": ")
    if sep and name.endswith("Error"):
        typed = error_from_status({"type": name, "detail": text}, 0)
        if typed is not None:
            return typed
    return error_from_grpc(code, message, details)
