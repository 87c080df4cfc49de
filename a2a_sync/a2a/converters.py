"""cattrs converters for the two A2A wire revisions.

:func:`build_converter` makes one converter for A2A 1.0 (ProtoJSON) or 0.3 (``kind``-tagged
JSON-RPC objects), and :func:`build_converters` the pair a :class:`~a2a_sync.a2a.codec.Codec`
uses (a fast one, and a detailed one built on the first failure to name the paths). Every
attrs model goes through a hook factory that renames fields to camelCase and omits empty
defaults on output (:mod:`.wire_names`); what differs between revisions is registered as
per-class hooks: enum spellings here, parts in :mod:`.part_hooks`, card security shapes in
:mod:`.card_hooks`, the 0.3 tags and nesting in :mod:`.v03_hooks`. cattrs is imported inside
the builders only, so importing this module is cheap.

Hooks raise :class:`~a2a_sync.a2a.primitives.WireError` (a ``ValueError``) with a precise
reason; the codec turns it into a ``ProtocolError`` detail at the failing JSON path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

import attrs

from .card_hooks import configure_card_hooks
from .part_hooks import dump_part_v03, dump_part_v1, load_part_v03, load_part_v1
from .primitives import (
    enum_loader,
    format_timestamp,
    identity,
    load_bool,
    load_int,
    load_object,
    load_optional_object,
    load_optional_str,
    load_str,
    parse_timestamp,
)
from .types import Part, Role, TaskState
from .v03_hooks import configure_v03_hooks
from .wire_names import V03_IN, V03_OUT, V1_IN, V1_OUT, camel, omittable

if TYPE_CHECKING:
    from cattrs import Converter

__all__ = ["Converters", "build_converter", "build_converters"]

#: What a structuring hook raises on bad input (cattrs' own errors are added once imported).
_PLAIN_ERRORS: Final = (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError)

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


# --- converter construction ----------------------------------------------------------------


@attrs.frozen
class Converters:
    """One revision's converters and the caches a codec fills as it meets new classes."""

    fast: Converter
    #: Builds (once) the converter with cattrs' detailed validation, for error paths.
    detailed: Callable[[], Converter]
    #: What structuring raises on bad input: the plain errors and cattrs' own.
    structure_errors: tuple[type[BaseException], ...]
    loaders: dict[Any, Callable[[Any, Any], Any]]
    dumpers: dict[Any, Callable[[Any], Any]]


def build_converters(revision: str) -> Converters:
    """The fast converter of ``revision`` now, the detailed one on first need."""
    from cattrs.errors import (  # noqa: PLC0415 - cattrs is imported on first use
        BaseValidationError,
        ForbiddenExtraKeysError,
        StructureHandlerNotFoundError,
    )

    detailed: list[Converter] = []

    def get_detailed() -> Converter:
        # Built on the first failure only; a benign race may build it twice.
        if not detailed:
            detailed.append(build_converter(revision, detailed=True))
        return detailed[0]

    errors = (
        *_PLAIN_ERRORS,
        BaseValidationError,
        ForbiddenExtraKeysError,
        StructureHandlerNotFoundError,
    )
    return Converters(build_converter(revision, detailed=False), get_detailed, errors, {}, {})


def _is_model_list(type_: Any) -> bool:
    """``list[Model]`` for a model class (parts, messages, artifacts, card entries)."""
    args: tuple[Any, ...] = getattr(type_, "__args__", ())
    return getattr(type_, "__origin__", None) is list and len(args) == 1 and attrs.has(args[0])


def _list_dumper(conv: Converter, type_: Any) -> Callable[[list[Any]], list[Any]]:
    """What cattrs writes for ``list[Model]`` (a list of each item's dump), as a list
    comprehension instead of cattrs' generator passed to ``list``."""
    dump_item = conv.get_unstructure_hook(type_.__args__[0])

    def dump_list(items: list[Any]) -> list[Any]:
        return [dump_item(item) for item in items]

    return dump_list


def build_converter(revision: str, *, detailed: bool) -> Converter:
    """Build the converter for one revision; ``detailed`` collects errors with paths."""
    import cattrs  # noqa: PLC0415 - cattrs is imported on first use, not at import time
    import cattrs.fns  # noqa: PLC0415
    from cattrs.gen import (  # noqa: PLC0415
        make_dict_structure_fn,
        make_dict_unstructure_fn,
        override,
    )

    v1 = revision == "1.0"
    conv = cattrs.Converter(detailed_validation=detailed)
    overrides_in = V1_IN if v1 else V03_IN
    overrides_out = V1_OUT if v1 else V03_OUT

    def structure_fn(cls: type, extra: Mapping[str, Mapping[str, Any]] | None = None) -> Any:
        extra = overrides_in.get(cls, {}) if extra is None else extra
        kw: dict[str, Any] = {
            a.name: override(**{"rename": camel(a.name), **extra.get(a.name, {})})
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
                    "rename": camel(a.name),
                    "omit_if_default": omittable(a),
                    **extra.get(a.name, {}),
                }
            )
            for a in attrs.fields(cls)
        }
        return make_dict_unstructure_fn(cls, conv, **kw)

    conv.register_structure_hook_factory(attrs.has, structure_fn)
    conv.register_unstructure_hook_factory(attrs.has, unstructure_fn)
    conv.register_unstructure_hook_factory(_is_model_list, lambda t: _list_dumper(conv, t))

    conv.register_structure_hook(str, load_str)
    conv.register_structure_hook(bool, load_bool)
    conv.register_structure_hook(int, load_int)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any], load_object)
    # The optional fields of every model: one call instead of cattrs' Optional dispatch.
    conv.register_structure_hook_func(lambda t: t == str | None, load_optional_str)
    conv.register_structure_hook_func(lambda t: t == dict[str, Any] | None, load_optional_object)
    conv.register_unstructure_hook_func(lambda t: t == dict[str, Any], identity)
    # Optional strings and objects are written as they are; cattrs' own identity lets its
    # generated dumpers inline them (no call per field).
    conv.register_unstructure_hook_func(
        lambda t: t == str | None or t == dict[str, Any] | None, cattrs.fns.identity
    )
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
    conv.register_structure_hook(Part, load_part_v1 if v1 else load_part_v03)
    conv.register_unstructure_hook(Part, dump_part_v1 if v1 else dump_part_v03)

    if v1:
        configure_card_hooks(conv, structure_fn, unstructure_fn)
    else:
        configure_v03_hooks(conv, structure_fn, unstructure_fn)
    return conv
