"""How model attributes are named on the wire: camelCase, the per-revision renames and
omissions (cattrs ``override`` keyword arguments), and which defaults are left out of output.

A link of the codec chain (primitives -> part, card and 0.3 hooks -> converters -> codec ->
card codec): the converters build their hooks from these tables, and the codec names the
JSON path of a bad member with :func:`wire_name`.
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from .types import (
    AgentCapabilities,
    GetTaskParams,
    ListPushConfigsParams,
    ListTasksResult,
    PushConfigParams,
    SendMessageConfiguration,
    SendMessageParams,
    TaskIdParams,
    TaskStatusUpdateEvent,
)

__all__ = [
    "V03_IN",
    "V03_OUT",
    "V1_IN",
    "V1_OUT",
    "Overrides",
    "camel",
    "omittable",
    "wire_name",
]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def omittable(attribute: attrs.Attribute[Any]) -> bool:
    """Omit a field from output when it holds its default and that default is "empty"."""
    default: Any = attribute.default
    if default is attrs.NOTHING:
        return False
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        default = default.factory()
    return default is None or default is False or default in ("", 0, [], {})


#: Per revision: field overrides (cattrs ``override`` kwargs) for structuring and unstructuring.
Overrides = dict[type, dict[str, dict[str, Any]]]

_COMMON_OUT: Final[Overrides] = {
    # A 1.0 card never carries stateTransitionHistory (read from 0.3 cards, dropped here).
    AgentCapabilities: {"state_transition_history": {"omit": True}},
}
V1_IN: Final[Overrides] = {
    TaskStatusUpdateEvent: {"final": {"omit": True}},
    SendMessageConfiguration: {
        "push_notification_config": {"rename": "taskPushNotificationConfig"}
    },
    PushConfigParams: {"config_id": {"rename": "id"}},
}
V1_OUT: Final[Overrides] = {
    **_COMMON_OUT,
    **V1_IN,
    GetTaskParams: {"metadata": {"omit": True}},  # GetTaskRequest has no metadata in 1.0
    # A2A 1.0 §3.1.4: every ListTasks answer carries nextPageToken, "" on the last page.
    ListTasksResult: {"next_page_token": {"omit_if_default": False}},
}
V03_IN: Final[Overrides] = {
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
V03_OUT: Final[Overrides] = {
    **_COMMON_OUT,
    **V03_IN,
    TaskStatusUpdateEvent: {"final": {"omit": True}},  # recomputed by the hook below
}


def wire_name(revision: str, cls: type, attribute: str) -> str:
    """The JSON member an attribute of ``cls`` is read from in ``revision`` (for error paths)."""
    overrides = (V1_IN if revision == "1.0" else V03_IN).get(cls, {})
    return str(overrides.get(attribute, {}).get("rename", camel(attribute)))
