"""cattrs converters for the two A2A wire revisions, and the hooks they use.

:func:`build_converter` makes one converter for A2A 1.0 (ProtoJSON) or 0.3 (``kind``-tagged
JSON-RPC objects); :mod:`a2a_sync.a2a.codec` builds each once, on first use, and wraps them
in the public :class:`~a2a_sync.a2a.codec.Codec` API. Every attrs model goes through a hook
factory that renames fields to camelCase and omits empty defaults on output; what
differs between revisions (enum spellings, parts, ``kind`` tags, ``final``, ``blocking``,
push-config nesting, card security shapes) is registered here as per-class hooks or
per-field overrides. cattrs is imported inside :func:`build_converter` only, so importing
this module is cheap.

Hooks raise :class:`WireError` (a ``ValueError``) with a precise reason; the codec turns it
into a ``ProtocolError`` detail at the failing JSON path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..errors import ConfigurationError
from .card_hooks import configure_card_hooks
from .primitives import (
    WireError,
    b64decode,
    b64encode,
    enum_loader,
    format_timestamp,
    identity,
    load_bool,
    load_int,
    load_object,
    load_str,
    parse_timestamp,
)
from .types import (
    AgentCapabilities,
    AuthenticationInfo,
    GetTaskParams,
    ListPushConfigsParams,
    ListPushConfigsResult,
    ListTasksResult,
    Message,
    Part,
    PushConfigParams,
    PushNotificationConfig,
    Role,
    SendMessageConfiguration,
    SendMessageParams,
    Task,
    TaskArtifactUpdateEvent,
    TaskIdParams,
    TaskState,
    TaskStatusUpdateEvent,
)

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = ["WireError", "build_converter", "format_timestamp", "parse_timestamp", "wire_name"]

# --- enum spellings ------------------------------------------------------------------------------

_STATE_V1: Final = {
    TaskState.unknown: "TASK_STATE_UNSPECIFIED",
    TaskState.submitted: "TASK_STATE_SUBMITTED",
    TaskState.working: "TASK_STATE_WORKING",
    TaskState.completed: "TASK_STATE_COMPLETED",
    TaskState.failed: "TASK_STATE_FAILED",
    TaskState.canceled: "TASK_STATE_CANCELED",
    TaskState.input_required: "TASK_STATE_INPUT_REQUIRED",
    TaskState.rejected: "TASK_STATE_REJECTED",
    TaskState.auth_required: "TASK_STATE_AUTH_REQUIRED",
}
_STATE_V03: Final = {s: s.value.replace("_", "-") for s in TaskState}
# ProtoJSON parsers accept enum numbers too; the proto numbers follow _STATE_V1's order.
_STATE_FROM_V1: Final[dict[Any, TaskState]] = {
    **{wire: state for state, wire in _STATE_V1.items()},
    **{number: state for number, state in enumerate(_STATE_V1)},
    "TASK_STATE_CANCELLED": TaskState.canceled,  # the 0.3 proto's spelling
}
_STATE_FROM_V03: Final[dict[Any, TaskState]] = {
    **{wire: state for state, wire in _STATE_V03.items()},
    **{k: v for k, v in _STATE_FROM_V1.items() if isinstance(k, str)},
}
_ROLE_V1: Final = {Role.user: "ROLE_USER", Role.agent: "ROLE_AGENT"}
_ROLE_V03: Final = {Role.user: "user", Role.agent: "agent"}
_ROLE_FROM_V1: Final[dict[Any, Role]] = {
    **{wire: role for role, wire in _ROLE_V1.items()},
    1: Role.user,
    2: Role.agent,
}
_ROLE_FROM_V03: Final[dict[Any, Role]] = {
    **{wire: role for role, wire in _ROLE_V03.items()},
    **{wire: role for role, wire in _ROLE_V1.items()},
}


def _opt_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or value.__class__ is str:
        return value
    raise WireError(f"part {key} must be a string")


def _opt_metadata(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    value = obj.get("metadata")
    if value is None or value.__class__ is dict:
        return value
    raise WireError("part metadata must be an object")


# --- parts -------------------------------------------------------------------------------------

_PART_MEMBERS_V1: Final = ("text", "raw", "url", "data")


def _load_part_v1(obj: Any, _: Any) -> Part:
    if obj.__class__ is not dict:
        raise WireError("a part must be a JSON object")
    text = obj.get("text")
    if text.__class__ is str and len(obj) == 1:  # the common case, kept cheap
        return Part(text=text)
    present = [key for key in _PART_MEMBERS_V1 if obj.get(key) is not None]
    if len(present) != 1:
        raise WireError("a part needs exactly one of text, raw, url or data")
    member = present[0]
    value = obj[member]
    if member == "raw":
        value = b64decode(value)
    elif member != "data" and value.__class__ is not str:
        raise WireError(f"part {member} must be a string")
    return Part(
        **{member: value},
        media_type=_opt_str(obj, "mediaType"),
        filename=_opt_str(obj, "filename"),
        metadata=_opt_metadata(obj),
    )


def _dump_part_v1(part: Part) -> dict[str, Any]:
    if part.text is not None:
        out: dict[str, Any] = {"text": part.text}
    elif part.raw is not None:
        out = {"raw": b64encode(part.raw)}
    elif part.url is not None:
        out = {"url": part.url}
    else:
        out = {"data": part.data}
    if part.media_type is not None:
        out["mediaType"] = part.media_type
    if part.filename is not None:
        out["filename"] = part.filename
    if part.metadata is not None:
        out["metadata"] = part.metadata
    return out


# a2a-sdk's 0.3 adapter wraps a non-object data value as {"value": v} and flags it here.
_DATA_PART_COMPAT: Final = "data_part_compat"


def _load_part_v03(obj: Any, _: Any) -> Part:
    if obj.__class__ is not dict:
        raise WireError("a part must be a JSON object")
    kind = obj.get("kind")
    if kind is None:  # tolerate untagged parts: infer the kind from the members
        kind = next((k for k in ("text", "file", "data") if k in obj), None)
    metadata = _opt_metadata(obj)
    if kind == "text":
        text = obj.get("text")
        if text.__class__ is not str:
            raise WireError("text part needs a string text")
        return Part(text=text, metadata=metadata)
    if kind == "file":
        file = obj.get("file")
        if file.__class__ is not dict:
            raise WireError("file part needs a file object")
        media_type, filename = _opt_str(file, "mimeType"), _opt_str(file, "name")
        if file.get("bytes") is not None:
            raw = b64decode(file["bytes"])
            return Part(raw=raw, media_type=media_type, filename=filename, metadata=metadata)
        uri = file.get("uri")
        if uri.__class__ is not str:
            raise WireError("file part needs bytes or a uri")
        return Part(url=uri, media_type=media_type, filename=filename, metadata=metadata)
    if kind == "data":
        data = obj.get("data")
        if data is None:
            raise WireError("data part needs data")
        if metadata is not None and metadata.get(_DATA_PART_COMPAT) and data.__class__ is dict:
            metadata = {k: v for k, v in metadata.items() if k != _DATA_PART_COMPAT} or None
            data = data.get("value")
        return Part(data=data, metadata=metadata)
    raise WireError(f"unknown part kind {str(kind)[:40]!r}")


def _dump_part_v03(part: Part) -> dict[str, Any]:
    metadata = part.metadata
    if part.text is not None:
        out: dict[str, Any] = {"kind": "text", "text": part.text}
    elif part.data is not None:
        data = part.data
        if data.__class__ is not dict:
            data = {"value": data}
            metadata = {**(metadata or {}), _DATA_PART_COMPAT: True}
        out = {"kind": "data", "data": data}
    else:
        file: dict[str, Any] = (
            {"bytes": b64encode(part.raw)} if part.raw is not None else {"uri": part.url}
        )
        if part.media_type is not None:
            file["mimeType"] = part.media_type
        if part.filename is not None:
            file["name"] = part.filename
        out = {"kind": "file", "file": file}
    if metadata is not None:
        out["metadata"] = metadata
    return out


# --- converter construction ----------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _omittable(attribute: attrs.Attribute[Any]) -> bool:
    """Omit a field from output when it holds its default and that default is "empty"."""
    default: Any = attribute.default
    if default is attrs.NOTHING:
        return False
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return default is None or default is False or default in ("", 0, [], {})


#: Per revision: field overrides (cattrs ``override`` kwargs) for structuring and unstructuring.
_Overrides = dict[type, dict[str, dict[str, Any]]]

_COMMON_OUT: Final[_Overrides] = {
    # A 1.0 card never carries stateTransitionHistory (read from 0.3 cards, dropped here).
    AgentCapabilities: {"state_transition_history": {"omit": True}},
}
_V1_IN: Final[_Overrides] = {
    TaskStatusUpdateEvent: {"final": {"omit": True}},
    SendMessageConfiguration: {
        "push_notification_config": {"rename": "taskPushNotificationConfig"}
    },
    PushConfigParams: {"config_id": {"rename": "id"}},
}
_V1_OUT: Final[_Overrides] = {
    **_COMMON_OUT,
    **_V1_IN,
    GetTaskParams: {"metadata": {"omit": True}},  # GetTaskRequest has no metadata in 1.0
    # A2A 1.0 §3.1.4: every ListTasks answer carries nextPageToken, "" on the last page.
    ListTasksResult: {"next_page_token": {"omit_if_default": False}},
}
_V03_IN: Final[_Overrides] = {
    SendMessageConfiguration: {
        "push_notification_config": {"rename": "pushNotificationConfig"},
        "return_immediately": {"omit": True},
    },
    PushConfigParams: {
        "task_id": {"rename": "id"},
        "config_id": {"rename": "pushNotificationConfigId"},
        "tenant": {"omit": True},
    },
    ListPushConfigsParams: {
        "task_id": {"rename": "id"},
        "page_size": {"omit": True},
        "page_token": {"omit": True},
        "tenant": {"omit": True},
    },
    SendMessageParams: {"tenant": {"omit": True}},
    GetTaskParams: {"tenant": {"omit": True}},
    TaskIdParams: {"tenant": {"omit": True}},
}
_V03_OUT: Final[_Overrides] = {
    **_COMMON_OUT,
    **_V03_IN,
    TaskStatusUpdateEvent: {"final": {"omit": True}},  # recomputed by the hook below
}


def wire_name(revision: str, cls: type, attribute: str) -> str:
    """The JSON member an attribute of ``cls`` is read from in ``revision`` (for error paths)."""
    overrides = (_V1_IN if revision == "1.0" else _V03_IN).get(cls, {})
    return str(overrides.get(attribute, {}).get("rename", _camel(attribute)))


_FINAL_STATES: Final = frozenset(s for s in TaskState if s.is_terminal or s.is_interrupted)


@attrs.frozen
class _PushConfigV03:
    """0.3 TaskPushNotificationConfig wire shape (only used inside the 0.3 converter)."""

    task_id: str
    push_notification_config: PushNotificationConfig


def build_converter(revision: str, *, detailed: bool) -> Converter:
    """Build the converter for one revision; ``detailed`` collects errors with paths."""
    import cattrs  # noqa: PLC0415 - cattrs is imported on first use, not at import time
    from cattrs.gen import (  # noqa: PLC0415
        make_dict_structure_fn,
        make_dict_unstructure_fn,
        override,
    )

    v1 = revision == "1.0"
    conv = cattrs.Converter(detailed_validation=detailed)
    overrides_in = _V1_IN if v1 else _V03_IN
    overrides_out = _V1_OUT if v1 else _V03_OUT

    def structure_fn(cls: type, extra: Mapping[str, Mapping[str, Any]] | None = None) -> Any:
        extra = overrides_in.get(cls, {}) if extra is None else extra
        kw: dict[str, Any] = {
            a.name: override(**{"rename": _camel(a.name), **extra.get(a.name, {})})
            for a in attrs.fields(cls)
        }
        return make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=False, _cattrs_detailed_validation=detailed, **kw
        )

    def unstructure_fn(cls: type, extra: Mapping[str, Mapping[str, Any]] | None = None) -> Any:
        extra = overrides_out.get(cls, {}) if extra is None else extra
        kw: dict[str, Any] = {
            a.name: override(
                **{
                    "rename": _camel(a.name),
                    "omit_if_default": _omittable(a),
                    **extra.get(a.name, {}),
                }
            )
            for a in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **kw)

    conv.register_structure_hook_factory(attrs.has, structure_fn)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_fn)

    conv.register_structure_hook(str, load_str)
    conv.register_structure_hook(bool, load_bool)
    conv.register_structure_hook(int, load_int)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], load_object)
    conv.register_unstructure_hook_func(lambda t: t == dict[str, Any], identity)
    conv.register_structure_hook(datetime, lambda v, _: parse_timestamp(v))
    conv.register_unstructure_hook(datetime, format_timestamp)

    state_out, role_out = (_STATE_V1, _ROLE_V1) if v1 else (_STATE_V03, _ROLE_V03)
    conv.register_structure_hook(
        TaskState, enum_loader(_STATE_FROM_V1 if v1 else _STATE_FROM_V03, "task state")
    )
    conv.register_unstructure_hook(TaskState, state_out.__getitem__)
    role_in = _ROLE_FROM_V1 if v1 else _ROLE_FROM_V03
    conv.register_structure_hook(Role, enum_loader(role_in, "role"))
    conv.register_unstructure_hook(Role, role_out.__getitem__)
    conv.register_structure_hook(Part, _load_part_v1 if v1 else _load_part_v03)
    conv.register_unstructure_hook(Part, _dump_part_v1 if v1 else _dump_part_v03)

    if v1:
        configure_card_hooks(conv, structure_fn, unstructure_fn)
    else:
        _configure_v03(conv, structure_fn, unstructure_fn)
    return conv


def _configure_v03(conv: Converter, structure_fn: Any, unstructure_fn: Any) -> None:
    """0.3-only shapes: ``kind`` tags, ``final``, ``blocking``, nested push configs.

    Order matters: a generated hook captures the hooks of nested types when it is
    generated, so each type's hook is registered before the hooks that contain it.
    """
    tags = {Message: "message", Task: "task", TaskArtifactUpdateEvent: "artifact-update"}
    for cls, kind in tags.items():
        conv.register_unstructure_hook(cls, _tagged(unstructure_fn(cls), kind))

    dump_update = unstructure_fn(TaskStatusUpdateEvent)

    def dump_status_update(event: TaskStatusUpdateEvent) -> dict[str, Any]:
        out: dict[str, Any] = dump_update(event)
        out["final"] = event.final or event.status.state in _FINAL_STATES
        out["kind"] = "status-update"
        return out

    conv.register_unstructure_hook(TaskStatusUpdateEvent, dump_status_update)

    # 0.3 authentication: {"schemes": [...], "credentials": ...}; the first scheme is used.
    def load_auth(obj: Any, _: Any) -> AuthenticationInfo:
        schemes = obj.get("schemes") if obj.__class__ is dict else None
        if not isinstance(schemes, list) or not schemes or schemes[0].__class__ is not str:
            raise WireError("authentication needs a non-empty list of schemes")
        credentials = obj.get("credentials")
        if credentials is not None and credentials.__class__ is not str:
            raise WireError("authentication credentials must be a string")
        return AuthenticationInfo(scheme=schemes[0], credentials=credentials)

    def dump_auth(auth: AuthenticationInfo) -> dict[str, Any]:
        out: dict[str, Any] = {"schemes": [auth.scheme]}
        if auth.credentials is not None:
            out["credentials"] = auth.credentials
        return out

    conv.register_structure_hook(AuthenticationInfo, load_auth)
    conv.register_unstructure_hook(AuthenticationInfo, dump_auth)

    # The inline PushNotificationConfig (no taskId) appears inside send configurations and
    # inside the TaskPushNotificationConfig wrapper, which is what standalone configs use.
    inline_omit = {"task_id": {"omit": True}, "tenant": {"omit": True}}
    load_inline = structure_fn(PushNotificationConfig, inline_omit)
    dump_inline = unstructure_fn(PushNotificationConfig, inline_omit)
    inline = {"struct_hook": load_inline, "unstruct_hook": dump_inline}
    load_wrapper = structure_fn(_PushConfigV03, {"push_notification_config": inline})
    dump_wrapper = unstructure_fn(_PushConfigV03, {"push_notification_config": inline})

    def load_push_config(obj: Any, _: Any) -> PushNotificationConfig:
        wrapper: _PushConfigV03 = load_wrapper(obj, _PushConfigV03)
        return attrs.evolve(wrapper.push_notification_config, task_id=wrapper.task_id)

    def dump_push_config(config: PushNotificationConfig) -> dict[str, Any]:
        if config.task_id is None:
            raise ConfigurationError("a 0.3 push notification config needs a task_id")
        return dump_wrapper(_PushConfigV03(config.task_id, config))  # type: ignore[no-any-return]

    conv.register_structure_hook(PushNotificationConfig, load_push_config)
    conv.register_unstructure_hook(PushNotificationConfig, dump_push_config)

    send_overrides = {
        **_V03_IN[SendMessageConfiguration],
        "push_notification_config": {"rename": "pushNotificationConfig", **inline},
    }
    load_send_config = structure_fn(SendMessageConfiguration, send_overrides)
    dump_send_config = unstructure_fn(SendMessageConfiguration, send_overrides)

    def load_configuration(obj: Any, _: Any) -> SendMessageConfiguration:
        config = load_send_config(obj, SendMessageConfiguration)
        if obj.get("blocking") is False:
            config = attrs.evolve(config, return_immediately=True)
        return config  # type: ignore[no-any-return]

    def dump_configuration(config: SendMessageConfiguration) -> dict[str, Any]:
        out: dict[str, Any] = dump_send_config(config)
        out["blocking"] = not config.return_immediately
        return out

    conv.register_structure_hook(SendMessageConfiguration, load_configuration)
    conv.register_unstructure_hook(SendMessageConfiguration, dump_configuration)

    def load_config_list(obj: Any, _: Any) -> ListPushConfigsResult:
        items = obj.get("configs", []) if obj.__class__ is dict else obj
        if not isinstance(items, list):
            raise WireError("expected an array of push notification configs")
        return ListPushConfigsResult(configs=conv.structure(items, list[PushNotificationConfig]))

    conv.register_structure_hook(ListPushConfigsResult, load_config_list)
    conv.register_unstructure_hook(
        ListPushConfigsResult, lambda result: [dump_push_config(c) for c in result.configs]
    )


def _tagged(dump: Callable[[Any], dict[str, Any]], kind: str) -> Callable[[Any], dict[str, Any]]:
    def dump_tagged(value: Any) -> dict[str, Any]:
        out = dump(value)
        out["kind"] = kind
        return out

    return dump_tagged
