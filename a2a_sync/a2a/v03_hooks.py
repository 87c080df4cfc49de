"""The 0.3 converter's own shapes: ``kind`` tags, ``final`` on status updates, ``blocking``
instead of ``returnImmediately``, 0.3 authentication info and nested push configs.

A link of the codec chain (primitives -> part, card and 0.3 hooks -> converters -> codec ->
card codec): :func:`a2a_sync.a2a.converters.build_converter` calls
:func:`configure_v03_hooks` while it builds the 0.3 converter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..errors import ConfigurationError
from .primitives import WireError
from .types import (
    AuthenticationInfo,
    ListPushConfigsResult,
    Message,
    PushNotificationConfig,
    SendMessageConfiguration,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from .wire_names import V03_IN

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = ["configure_v03_hooks"]

_FINAL_STATES: Final = frozenset(s for s in TaskState if s.is_terminal or s.is_interrupted)


@attrs.frozen
class _PushConfigV03:
    """0.3 TaskPushNotificationConfig wire shape (only used inside the 0.3 converter)."""

    task_id: str
    push_notification_config: PushNotificationConfig


def configure_v03_hooks(conv: Converter, structure_fn: Any, unstructure_fn: Any) -> None:
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
        **V03_IN[SendMessageConfiguration],
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
