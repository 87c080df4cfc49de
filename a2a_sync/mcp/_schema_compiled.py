"""Compiled ``outputSchema`` checks: the schema walked once per tool, not once per call.

:func:`findings` answers exactly what :func:`._schema.validate` answers. A schema is
compiled (once, cached by identity) into a tree of closures that only say *valid or
not*, no paths, no messages; only when that says "not valid" does the interpreting
validator run again to produce the findings. The compiled form handles the keywords
the official SDKs emit for plain models (``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``prefixItems``, ``enum``, ``const``, lengths,
bounds); a node with ``$ref`` or a combinator (``anyOf``...) is checked by the
interpreter, from that node. A compiled check may only be stricter than the
interpreter (then the interpreter's empty findings win), never more lenient.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

from ._schema import _COMBINATOR_KEYS, _MAX_DEPTH, _TYPE_CHECKS, _any_value, _equal, _Validator
from ._schema import validate as _interpret

__all__ = ["findings", "valid"]

Check = Callable[[Any], bool]

#: Schemas compiled at most (least recently compiled dropped first); a connection holds
#: one per tool with an ``outputSchema``.
_MAX_CACHED: Final = 256

_lock = threading.Lock()
#: ``id(schema)`` -> (the schema, kept alive so the id is not reused; its check).
_cache: dict[int, tuple[Any, Check]] = {}


def findings(instance: Any, schema: Any) -> list[str]:
    """:func:`._schema.validate`, answered from the compiled schema when valid."""
    if valid(instance, schema):
        return []
    return _interpret(instance, schema)


def valid(instance: Any, schema: Any) -> bool:
    """True when ``instance`` matches ``schema`` (compiled once per schema)."""
    entry = _cache.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, _Compiler(schema).node(schema, 0))
        with _lock:
            if len(_cache) >= _MAX_CACHED:
                del _cache[next(iter(_cache))]
            _cache[id(schema)] = entry
    return entry[1](instance)


#: A "type" whose check is ``isinstance(v, cls)``, by name.
_EXACT: Final[dict[str, type]] = {"object": dict, "array": list, "string": str}


def _accept(value: Any) -> bool:
    return True


def _reject(value: Any) -> bool:
    return False


_BOUNDS: Final[tuple[tuple[str, Callable[[Any, Any], bool]], ...]] = (
    ("minimum", lambda v, b: v >= b),
    ("maximum", lambda v, b: v <= b),
    ("exclusiveMinimum", lambda v, b: v > b),
    ("exclusiveMaximum", lambda v, b: v < b),
)


def _all(parts: list[Check]) -> Check:
    """One check passing when every part passes (nested ``and``, no generator per call)."""
    if not parts:
        return _accept
    first = parts[0]
    if len(parts) == 1:
        return first
    rest = _all(parts[1:])
    return lambda v: first(v) and rest(v)


class _Compiler:
    __slots__ = ("root",)

    def __init__(self, root: Any) -> None:
        self.root = root

    def node(self, schema: Any, depth: int) -> Check:
        if schema is False:
            return _reject
        if not isinstance(schema, dict):
            return _accept  # True, None and anything else: the interpreter accepts
        if depth > _MAX_DEPTH // 2 or "$ref" in schema or not _COMBINATOR_KEYS.isdisjoint(schema):
            return self._interpreted(schema)
        parts: list[Check] = []
        expected = schema.get("type")
        if expected is not None:
            if type(expected) is str:
                parts.append(_TYPE_CHECKS.get(expected, _any_value))
            elif isinstance(expected, list) and all(isinstance(n, str) for n in expected):
                checks = [_TYPE_CHECKS.get(n, _any_value) for n in expected]
                parts.append(lambda v: any(c(v) for c in checks))
            else:
                return self._interpreted(schema)
        options = schema.get("enum")
        if "enum" in schema and isinstance(options, list):
            parts.append(lambda v: any(_equal(v, o) for o in options))
        if "const" in schema:
            const = schema["const"]
            parts.append(lambda v: _equal(v, const))
        by_kind = self._by_kind(schema, depth)
        if by_kind is None:
            return self._interpreted(schema)
        if len(by_kind) == 1:
            ((kind, only),) = by_kind.items()
            if len(parts) == 1 and type(expected) is str and _EXACT.get(expected) is kind:
                # "type" of that same kind and nothing else: one frame, same answer as
                # isinstance(v, kind) and (type(v) is not kind or only(v)).
                return lambda v: only(v) if type(v) is kind else isinstance(v, kind)
            parts.append(lambda v: type(v) is not kind or only(v))
        elif by_kind:
            parts.append(lambda v: (c := by_kind.get(type(v))) is None or c(v))
        return _all(parts)

    def _interpreted(self, schema: Any) -> Check:
        root = self.root

        def check(value: Any) -> bool:
            validator = _Validator(root, [])
            validator.check(value, schema, "$", 0)
            return not validator.errors

        return check

    def _by_kind(self, schema: dict[str, Any], depth: int) -> dict[type, Check] | None:
        """Checks by the value's exact type (as the interpreter dispatches); None: leave
        this node to the interpreter."""
        checks: dict[type, Check] = {}
        obj = self._object(schema, depth)
        if obj is None:
            return None
        if obj is not _accept:
            checks[dict] = obj
        arr = self._array(schema, depth)
        if arr is not _accept:
            checks[list] = arr
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if isinstance(lo, int) or isinstance(hi, int):
            lo_n = lo if isinstance(lo, int) else None
            hi_n = hi if isinstance(hi, int) else None
            checks[str] = lambda v: (
                (lo_n is None or len(v) >= lo_n) and (hi_n is None or len(v) <= hi_n)
            )
        bounds = [
            (ok, b)
            for key, ok in _BOUNDS
            if isinstance(b := schema.get(key), (int, float)) and not isinstance(b, bool)
        ]
        if bounds:
            checks[int] = checks[float] = lambda v: all(ok(v, b) for ok, b in bounds)
        return checks

    def _object(self, schema: dict[str, Any], depth: int) -> Check | None:
        required = schema.get("required")
        names: tuple[Any, ...] = ()
        if isinstance(required, list):
            if not all(isinstance(n, str) for n in required):
                return None
            names = tuple(required)
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties", True)
        if extra is True and not props:
            if not names:
                return _accept
            return lambda v: all(n in v for n in names)
        compiled = {name: self.node(sub, depth + 1) for name, sub in props.items()}
        other: Check | None = None
        if extra is False:
            other = _reject
        elif isinstance(extra, dict):
            other = self.node(extra, depth + 1)

        def check(value: dict[str, Any]) -> bool:
            for n in names:
                if n not in value:
                    return False
            for name, item in value.items():
                c = compiled.get(name, other)
                if c is not None and not c(item):
                    return False
            return True

        return check

    def _array(self, schema: dict[str, Any], depth: int) -> Check:
        prefix = schema.get("prefixItems")
        heads = [self.node(sub, depth + 1) for sub in prefix] if isinstance(prefix, list) else None
        start = len(heads) if heads is not None else 0
        items = schema.get("items")
        rest = self.node(items, depth + 1) if isinstance(items, (dict, bool)) else None
        lo, hi = schema.get("minItems"), schema.get("maxItems")
        lo_n = lo if isinstance(lo, int) else None
        hi_n = hi if isinstance(hi, int) else None
        if heads is None and rest is None and lo_n is None and hi_n is None:
            return _accept

        def check(value: list[Any]) -> bool:
            if (lo_n is not None and len(value) < lo_n) or (hi_n is not None and len(value) > hi_n):
                return False
            if heads is not None and not all(
                c(item) for c, item in zip(heads, value, strict=False)
            ):
                return False
            return rest is None or all(rest(value[i]) for i in range(start, len(value)))

        return check
