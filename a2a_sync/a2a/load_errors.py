"""Why a wire value did not load: the :class:`~a2a_sync.errors.ProtocolError` a codec raises,
with one detail per problem at its JSON path in wire (camelCase) member names, e.g.
``"unknown task state 'DONE' @ $.status.state"``.

Loading is fast-path first; only when the fast converter fails does :func:`load_failure`
re-run the value through the detailed converter to collect every problem (cattrs is
imported here on that failure path only).
"""

from __future__ import annotations

from types import UnionType
from typing import Any

from ..errors import ProtocolError
from .converters import Converters
from .primitives import WireError
from .types import ListPushConfigsResult
from .wire_names import wire_name

__all__ = ["load_failure"]


def load_failure(
    revision: str, converters: Converters, obj: Any, cls: Any, exc: BaseException, path: str
) -> ProtocolError:
    """The ProtocolError for ``obj`` that failed to load as ``cls`` (raising ``exc``),
    chained (``__cause__``) to cattrs' detailed error when there is one."""
    what = f"invalid A2A {revision} {getattr(cls, '__name__', 'value')}"
    if isinstance(exc, RecursionError):
        return ProtocolError(what, details=[f"nested too deeply @ {path}"])
    if obj.__class__ is not dict and not (cls is ListPushConfigsResult and isinstance(obj, list)):
        return ProtocolError(what, details=[f"expected a JSON object @ {path}"])
    try:
        converters.detailed().structure(obj, cls)
    except converters.structure_errors as detailed_exc:
        error = ProtocolError(what, details=_details(revision, detailed_exc, path))
        error.__cause__ = detailed_exc
        return error
    return ProtocolError(what, details=[f"{_describe(exc, None)} @ {path}"])


def _describe(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, WireError):
        return str(exc)
    from cattrs.v import format_exception  # noqa: PLC0415 - only on the failure path

    args = [a for a in getattr(type_, "__args__", ()) if a is not type(None)]
    if type(type_) is UnionType and len(args) == 1:  # "expected str", not "str | None"
        type_ = args[0]
    return format_exception(exc, type_)


def _details(revision: str, exc: BaseException, path: str) -> list[str]:
    """cattrs' ``transform_error``, but the path uses wire (camelCase) member names."""
    from cattrs.errors import (  # noqa: PLC0415 - only on the failure path
        ClassValidationError,
        IterableValidationError,
    )

    found: list[str] = []
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        with_notes, without = exc.group_exceptions()
        for sub_exc, note in with_notes:
            if isinstance(exc, ClassValidationError):
                sub_path = f"{path}.{wire_name(revision, exc.cl, note.name)}"  # type: ignore[union-attr]
            else:
                sub_path = f"{path}[{note.index!r}]"
            if isinstance(sub_exc, (ClassValidationError, IterableValidationError)):
                found += _details(revision, sub_exc, sub_path)
            else:
                found.append(f"{_describe(sub_exc, note.type)} @ {sub_path}")
        found += [f"{_describe(sub_exc, None)} @ {path}" for sub_exc in without]
    else:
        found.append(f"{_describe(exc, None)} @ {path}")
    return found
