"""A2A 0.3 HTTP+JSON bodies: the 0.3 *proto* JSON, translated to and from the 0.3 JSON-RPC
shapes the 0.3 codec speaks.

0.3's REST binding (``/v1/...``) carries the messages of its proto (``a2a.v1`` at tag
v0.3.0) in ProtoJSON, not the ``kind``-tagged JSON of its JSON-RPC binding: a Message has
``content`` instead of ``parts`` and ``ROLE_USER``, parts are ``{"text"}``,
``{"file": {"fileWithUri"|"fileWithBytes", "mimeType", "name"}}`` or ``{"data": {"data":
{...}}}``, states are ``TASK_STATE_*`` (``TASK_STATE_CANCELLED``), results and stream
events are wrapped (``{"task": ...}``, ``{"statusUpdate": ...}``), and a push config is
``{"name": "tasks/T/pushNotificationConfigs/C", "pushNotificationConfig": {...}}``.
Readers accept both ProtoJSON spellings of a field (``messageId`` and ``message_id``: the
a2a-sdk 0.3 client sends proto field names).

``to_wire``/``from_wire`` translate an operation's params (the dict handed to the route
table, path members included); ``result_to_wire``/``result_from_wire`` its answer;
``event_to_wire``/``event_from_wire`` one stream event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from .methods import Operation

__all__ = [
    "event_from_wire",
    "event_to_wire",
    "from_wire",
    "result_from_wire",
    "result_to_wire",
    "to_wire",
]

_STATES: Final = {
    "submitted": "TASK_STATE_SUBMITTED",
    "working": "TASK_STATE_WORKING",
    "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "canceled": "TASK_STATE_CANCELLED",
    "input-required": "TASK_STATE_INPUT_REQUIRED",
    "rejected": "TASK_STATE_REJECTED",
    "auth-required": "TASK_STATE_AUTH_REQUIRED",
    "unknown": "TASK_STATE_UNSPECIFIED",
}
_STATES_IN: Final = {wire: state for state, wire in _STATES.items()} | {
    "TASK_STATE_CANCELED": "canceled",
    **{str(i): s for i, s in enumerate(("unknown", "submitted", "working", "completed",
                                         "failed", "canceled", "input-required", "rejected",
                                         "auth-required"))},
}  # fmt: skip
_ROLES: Final = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
_ROLES_IN: Final = {"ROLE_USER": "user", "ROLE_AGENT": "agent", "1": "user", "2": "agent"}
_CONFIG_NAME: Final = re.compile(r"tasks/([^/]+)/pushNotificationConfigs/([^/]+)\Z")


def _snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _get(obj: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """Member ``name`` (camelCase) or its proto field name (snake_case)."""
    if name in obj:
        return obj[name]
    return obj.get(_snake(name), default)


def _put(out: dict[str, Any], name: str, value: Any) -> None:
    if value is not None and value not in ([], ""):
        out[name] = value


def _obj(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# -- parts and messages -----------------------------------------------------------------------


def _part_out(part: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    kind = part.get("kind")
    if kind == "file" or "file" in part:
        file = _obj(part.get("file"))
        wire: dict[str, Any] = {}
        if "bytes" in file:
            wire["fileWithBytes"] = file["bytes"]
        elif "uri" in file:
            wire["fileWithUri"] = file["uri"]
        _put(wire, "mimeType", file.get("mimeType"))
        _put(wire, "name", file.get("name"))
        out["file"] = wire
    elif kind == "data" or "data" in part:
        out["data"] = {"data": part.get("data")}
    else:
        out["text"] = part.get("text", "")
    _put(out, "metadata", part.get("metadata"))
    return out


def _part_in(part: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any]
    if "file" in part:
        file = _obj(part["file"])
        plain: dict[str, Any] = {}
        if _get(file, "fileWithBytes") is not None:
            plain["bytes"] = _get(file, "fileWithBytes")
        elif _get(file, "fileWithUri") is not None:
            plain["uri"] = _get(file, "fileWithUri")
        _put(plain, "mimeType", _get(file, "mimeType"))
        _put(plain, "name", file.get("name"))
        out = {"kind": "file", "file": plain}
    elif "data" in part:
        out = {"kind": "data", "data": _obj(part["data"]).get("data", {})}
    else:
        out = {"kind": "text", "text": part.get("text", "")}
    _put(out, "metadata", part.get("metadata"))
    return out


def _message_out(message: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _put(out, "messageId", message.get("messageId"))
    _put(out, "contextId", message.get("contextId"))
    _put(out, "taskId", message.get("taskId"))
    out["role"] = _ROLES.get(str(message.get("role")), "ROLE_UNSPECIFIED")
    out["content"] = [_part_out(_obj(p)) for p in _list(message.get("parts"))]
    _put(out, "metadata", message.get("metadata"))
    _put(out, "extensions", message.get("extensions"))
    return out


def _message_in(message: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "message"}
    _put(out, "messageId", _get(message, "messageId"))
    _put(out, "contextId", _get(message, "contextId"))
    _put(out, "taskId", _get(message, "taskId"))
    role = message.get("role")
    out["role"] = _ROLES_IN.get(str(role), role)
    out["parts"] = [_part_in(_obj(p)) for p in _list(message.get("content"))]
    _put(out, "metadata", message.get("metadata"))
    _put(out, "extensions", message.get("extensions"))
    return out


# -- tasks and events -------------------------------------------------------------------------


def _status_out(status: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"state": _STATES.get(str(status.get("state")), "TASK_STATE_UNSPECIFIED")}
    if isinstance(status.get("message"), Mapping):
        out["message"] = _message_out(status["message"])
    _put(out, "timestamp", status.get("timestamp"))
    return out


def _status_in(status: Mapping[str, Any]) -> dict[str, Any]:
    state = status.get("state")
    out: dict[str, Any] = {"state": _STATES_IN.get(str(state), state)}
    message = status.get("message", status.get("update"))
    if isinstance(message, Mapping):
        out["message"] = _message_in(message)
    _put(out, "timestamp", status.get("timestamp"))
    return out


def _artifact_out(artifact: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in artifact.items() if k != "parts"}
    out["parts"] = [_part_out(_obj(p)) for p in _list(artifact.get("parts"))]
    return out


def _artifact_in(artifact: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("artifactId", "name", "description", "metadata", "extensions"):
        _put(out, name, _get(artifact, name))
    out["parts"] = [_part_in(_obj(p)) for p in _list(artifact.get("parts"))]
    return out


def _task_out(task: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": task.get("id")}
    _put(out, "contextId", task.get("contextId"))
    out["status"] = _status_out(_obj(task.get("status")))
    _put(out, "artifacts", [_artifact_out(_obj(a)) for a in _list(task.get("artifacts"))])
    _put(out, "history", [_message_out(_obj(m)) for m in _list(task.get("history"))])
    _put(out, "metadata", task.get("metadata"))
    return out


def _task_in(task: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "task", "id": task.get("id")}
    _put(out, "contextId", _get(task, "contextId"))
    out["status"] = _status_in(_obj(task.get("status")))
    _put(out, "artifacts", [_artifact_in(_obj(a)) for a in _list(task.get("artifacts"))])
    _put(out, "history", [_message_in(_obj(m)) for m in _list(task.get("history"))])
    _put(out, "metadata", task.get("metadata"))
    return out


def event_to_wire(event: Mapping[str, Any]) -> dict[str, Any]:
    """A 0.3 JSON stream event (``kind``-tagged) as a 0.3 proto ``StreamResponse``."""
    kind = event.get("kind")
    if kind == "message":
        return {"message": _message_out(event)}
    if kind == "status-update":
        update: dict[str, Any] = {
            "taskId": event.get("taskId"),
            "contextId": event.get("contextId"),
        }
        update["status"] = _status_out(_obj(event.get("status")))
        _put(update, "final", event.get("final") or None)
        _put(update, "metadata", event.get("metadata"))
        return {"statusUpdate": update}
    if kind == "artifact-update":
        chunk: dict[str, Any] = {"taskId": event.get("taskId"), "contextId": event.get("contextId")}
        chunk["artifact"] = _artifact_out(_obj(event.get("artifact")))
        _put(chunk, "append", event.get("append") or None)
        _put(chunk, "lastChunk", event.get("lastChunk") or None)
        _put(chunk, "metadata", event.get("metadata"))
        return {"artifactUpdate": chunk}
    return {"task": _task_out(event)}


def event_from_wire(obj: Any) -> Any:
    """A 0.3 proto ``StreamResponse`` (or ``SendMessageResponse``) as 0.3 JSON."""
    obj = _obj(obj)
    if "task" in obj:
        return _task_in(_obj(obj["task"]))
    message = obj.get("message", obj.get("msg"))
    if message is not None:
        return _message_in(_obj(message))
    update = _get(obj, "statusUpdate")
    if update is not None:
        update = _obj(update)
        out: dict[str, Any] = {"kind": "status-update"}
        out["taskId"] = _get(update, "taskId")
        out["contextId"] = _get(update, "contextId")
        out["status"] = _status_in(_obj(update.get("status")))
        out["final"] = bool(update.get("final", False))
        _put(out, "metadata", update.get("metadata"))
        return out
    chunk = _get(obj, "artifactUpdate")
    if chunk is not None:
        chunk = _obj(chunk)
        out = {"kind": "artifact-update"}
        out["taskId"] = _get(chunk, "taskId")
        out["contextId"] = _get(chunk, "contextId")
        out["artifact"] = _artifact_in(_obj(chunk.get("artifact")))
        for name in ("append", "lastChunk"):
            if _get(chunk, name) is not None:
                out[name] = _get(chunk, name)
        _put(out, "metadata", chunk.get("metadata"))
        return out
    return obj  # not a 0.3 StreamResponse: the codec reports what is wrong with it


# -- push configs -----------------------------------------------------------------------------


def _push_out(config: Mapping[str, Any]) -> dict[str, Any]:
    """0.3 JSON TaskPushNotificationConfig → 0.3 proto TaskPushNotificationConfig."""
    inner = dict(_obj(config.get("pushNotificationConfig")))
    return {
        "name": f"tasks/{config.get('taskId', '')}/pushNotificationConfigs/{inner.get('id', '')}",
        "pushNotificationConfig": inner,
    }


def _push_in(config: Mapping[str, Any], task_id: str | None = None) -> dict[str, Any]:
    """0.3 proto TaskPushNotificationConfig → 0.3 JSON TaskPushNotificationConfig."""
    inner = dict(_obj(_get(config, "pushNotificationConfig")))
    found = _CONFIG_NAME.search(str(config.get("name", "")))
    if found is not None:
        task_id = task_id or found.group(1)
        inner.setdefault("id", found.group(2))
    return {"taskId": task_id or "", "pushNotificationConfig": inner}


# -- params and results per operation ---------------------------------------------------------


def to_wire(operation: Operation, params: Mapping[str, Any]) -> dict[str, Any]:
    """0.3 JSON-RPC params → the route's path members plus the 0.3 proto body/query."""
    if operation in (Operation.SEND_MESSAGE, Operation.SEND_STREAMING_MESSAGE):
        out: dict[str, Any] = {"message": _message_out(_obj(params.get("message")))}
        config = _obj(params.get("configuration"))
        if config:
            wire: dict[str, Any] = {}
            _put(wire, "acceptedOutputModes", config.get("acceptedOutputModes"))
            _put(wire, "pushNotification", config.get("pushNotificationConfig"))
            _put(wire, "historyLength", config.get("historyLength"))
            # proto3: an absent bool is false, i.e. non-blocking; 0.3 JSON's default blocks
            wire["blocking"] = bool(config.get("blocking", True))
            out["configuration"] = wire
        _put(out, "metadata", params.get("metadata"))
        return out
    if operation is Operation.CREATE_PUSH_CONFIG:
        task_id = str(params.get("taskId", ""))
        config = _push_out(params)
        return {
            "taskId": task_id,
            "parent": f"tasks/{task_id}",
            "configId": config["pushNotificationConfig"].get("id", ""),
            "config": config,
        }
    if operation in (Operation.GET_PUSH_CONFIG, Operation.DELETE_PUSH_CONFIG):
        return {"taskId": params.get("id"), "configId": params.get("pushNotificationConfigId")}
    if operation is Operation.LIST_PUSH_CONFIGS:
        return {"taskId": params.get("id")}
    if operation is Operation.GET_TASK:
        out = {"id": params.get("id")}
        _put(out, "historyLength", params.get("historyLength"))
        return out
    if operation in (Operation.CANCEL_TASK, Operation.SUBSCRIBE_TO_TASK):
        return {"id": params.get("id")}
    return {}


def from_wire(operation: Operation, wire: Mapping[str, Any]) -> dict[str, Any]:
    """The route's path members plus a 0.3 proto body/query → 0.3 JSON-RPC params."""
    if operation in (Operation.SEND_MESSAGE, Operation.SEND_STREAMING_MESSAGE):
        message = wire.get("message", wire.get("request"))
        out: dict[str, Any] = {"message": _message_in(_obj(message))}
        if "configuration" in wire:
            config = _obj(wire["configuration"])
            plain: dict[str, Any] = {}
            _put(plain, "acceptedOutputModes", _get(config, "acceptedOutputModes"))
            _put(plain, "pushNotificationConfig", _get(config, "pushNotification"))
            _put(plain, "historyLength", _get(config, "historyLength") or None)
            # proto3: a configuration without "blocking" has blocking false (as a2a-sdk reads it)
            plain["blocking"] = bool(config.get("blocking", False))
            out["configuration"] = plain
        _put(out, "metadata", wire.get("metadata"))
        return out
    if operation is Operation.CREATE_PUSH_CONFIG:
        task_id = str(wire.get("taskId", ""))
        body = _obj(wire.get("config")) if "config" in wire else wire
        config = _push_in(body, task_id)
        config_id = _get(wire, "configId")
        if config_id and not config["pushNotificationConfig"].get("id"):
            config["pushNotificationConfig"]["id"] = config_id
        return config
    if operation in (Operation.GET_PUSH_CONFIG, Operation.DELETE_PUSH_CONFIG):
        return {"id": wire.get("taskId"), "pushNotificationConfigId": wire.get("configId")}
    if operation is Operation.LIST_PUSH_CONFIGS:
        return {"id": wire.get("taskId")}
    if operation is Operation.GET_TASK:
        out = {"id": wire.get("id")}
        _put(out, "historyLength", wire.get("historyLength"))
        return out
    if operation in (Operation.CANCEL_TASK, Operation.SUBSCRIBE_TO_TASK):
        out = {"id": wire.get("id")}
        _put(out, "metadata", wire.get("metadata"))
        return out
    return {}


def result_to_wire(operation: Operation, result: Any) -> Any:
    """A 0.3 JSON-RPC result → the 0.3 proto response body."""
    if operation is Operation.SEND_MESSAGE:
        obj = _obj(result)
        if obj.get("kind") == "message":
            return {"message": _message_out(obj)}
        return {"task": _task_out(obj)}
    if operation in (Operation.GET_TASK, Operation.CANCEL_TASK):
        return _task_out(_obj(result))
    if operation in (Operation.CREATE_PUSH_CONFIG, Operation.GET_PUSH_CONFIG):
        return _push_out(_obj(result))
    if operation is Operation.LIST_PUSH_CONFIGS:
        return {"configs": [_push_out(_obj(c)) for c in _list(result)]}
    if operation is Operation.DELETE_PUSH_CONFIG:
        return {}
    return result


def result_from_wire(operation: Operation, body: Any) -> Any:
    """The 0.3 proto response body → the 0.3 JSON-RPC result."""
    if operation is Operation.SEND_MESSAGE:
        return event_from_wire(body)
    if operation in (Operation.GET_TASK, Operation.CANCEL_TASK):
        return _task_in(_obj(body))
    if operation in (Operation.CREATE_PUSH_CONFIG, Operation.GET_PUSH_CONFIG):
        return _push_in(_obj(body))
    if operation is Operation.LIST_PUSH_CONFIGS:
        return [_push_in(_obj(c)) for c in _list(_obj(body).get("configs"))]
    if operation is Operation.DELETE_PUSH_CONFIG:
        return None
    return body
