"""A small JSON Schema validator for tool ``outputSchema`` checks (no dependency).

Supported keywords: ``type`` (one or a list), ``enum``, ``const``, ``properties``,
``required``, ``additionalProperties`` (boolean or schema), ``items`` (one schema),
``prefixItems``, ``minItems``/``maxItems``, ``minimum``/``maximum``/``exclusiveMinimum``/
``exclusiveMaximum``, ``minLength``/``maxLength``, ``anyOf``/``oneOf``/``allOf``/``not``,
and local ``$ref`` (``#/$defs/...``, ``#/definitions/...``, ``#``). Other keywords
(``pattern``, ``format``, ``dependentSchemas``...) are ignored: the validator may accept an
instance a full implementation would reject, never the reverse. This covers the schemas
the official SDKs generate from pydantic models and TypeScript zod schemas.
"""

from __future__ import annotations

import datetime
import operator
import uuid
from collections.abc import Callable
from typing import Any, Final

__all__ = ["decode", "is_wrapped_result", "validate"]

#: Nesting depth beyond which validation stops descending (self-referencing schemas).
_MAX_DEPTH: Final = 64
#: Findings reported at most.
_MAX_ERRORS: Final = 10

_NUMBER_KEYS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_COMBINATOR_KEYS: Final = frozenset({"allOf", "anyOf", "oneOf", "not"})


def _any_value(value: Any) -> bool:
    return True


_TYPE_CHECKS: Final[dict[str, Callable[[Any], bool]]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def validate(instance: Any, schema: Any) -> list[str]:
    """Return human-readable findings (``"expected integer @ $.n"``); empty when valid."""
    validator = _Validator(schema, [])
    validator.check(instance, schema, "$", 0)
    return validator.errors[:_MAX_ERRORS]


def _resolve(ref: str, root: Any) -> Any:
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return True  # remote refs are not fetched: accept
    node = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return True
        node = node[part]
    return node


class _Validator:
    __slots__ = ("errors", "root")

    def __init__(self, root: Any, errors: list[str]) -> None:
        self.root = root
        self.errors = errors

    def check(self, value: Any, schema: Any, path: str, depth: int) -> None:  # noqa: PLR0912 - one branch per JSON Schema keyword
        errors = self.errors
        if len(errors) >= _MAX_ERRORS or depth > _MAX_DEPTH:
            return
        if schema is True or schema is None:
            return
        if schema is False:
            errors.append(f"no value allowed @ {path}")
            return
        if not isinstance(schema, dict):
            return
        if "$ref" in schema and isinstance(schema["$ref"], str):
            self.check(value, _resolve(schema["$ref"], self.root), path, depth + 1)
        expected = schema.get("type")
        if expected is not None:
            if type(expected) is str:
                ok = _TYPE_CHECKS.get(expected, _any_value)(value)
            else:
                ok = any(_TYPE_CHECKS.get(n, _any_value)(value) for n in expected)
            if not ok:
                names = expected if isinstance(expected, list) else [expected]
                errors.append(f"expected {' or '.join(map(str, names))} @ {path}")
                return
        if "enum" in schema:
            options = schema["enum"]
            if isinstance(options, list) and not any(_equal(value, o) for o in options):
                errors.append(f"value not in enum @ {path}")
        if "const" in schema and not _equal(value, schema["const"]):
            errors.append(f"value is not the constant @ {path}")
        kind = type(value)
        if kind is dict:
            self._object(value, schema, path, depth)
        elif kind is list:
            self._array(value, schema, path, depth)
        elif kind is str:
            if "minLength" in schema or "maxLength" in schema:
                _check_length(value, schema, path, errors)
        elif (kind is int or kind is float) and not _NUMBER_KEYS.isdisjoint(schema):
            _check_number(value, schema, path, errors)
        if not _COMBINATOR_KEYS.isdisjoint(schema):
            self._combinators(value, schema, path, depth)

    def _findings(self, value: Any, schema: Any, path: str, depth: int) -> list[str]:
        sub = _Validator(self.root, [])
        sub.check(value, schema, path, depth + 1)
        return sub.errors

    def _combinators(self, value: Any, schema: dict[str, Any], path: str, depth: int) -> None:
        for key in ("allOf", "anyOf", "oneOf"):
            subs = schema.get(key)
            if not isinstance(subs, list):
                continue
            results = [self._findings(value, sub, path, depth) for sub in subs]
            passing = sum(1 for r in results if not r)
            if key == "allOf" and passing != len(results):
                self.errors.extend(e for r in results for e in r)
            elif key == "anyOf" and passing == 0:
                self.errors.append(f"matches none of anyOf @ {path}")
            elif key == "oneOf" and passing != 1:
                self.errors.append(f"matches {passing} of oneOf (needs exactly 1) @ {path}")
        if "not" in schema and not self._findings(value, schema["not"], path, depth):
            self.errors.append(f"matches a forbidden schema @ {path}")

    def _object(self, value: dict[str, Any], schema: dict[str, Any], path: str, depth: int) -> None:
        required = schema.get("required")
        if isinstance(required, list):
            for name in required:
                if name not in value:
                    self.errors.append(f"required property missing @ {path}.{name}")
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties", True)
        if extra is True and not props:
            return
        for name, item in value.items():
            if name in props:
                self.check(item, props[name], f"{path}.{name}", depth + 1)
            elif extra is False:
                self.errors.append(f"unexpected property @ {path}.{name}")
            elif isinstance(extra, dict):
                self.check(item, extra, f"{path}.{name}", depth + 1)

    def _array(self, value: list[Any], schema: dict[str, Any], path: str, depth: int) -> None:
        prefix = schema.get("prefixItems")
        start = 0
        if isinstance(prefix, list):
            for i, (item, sub) in enumerate(zip(value, prefix, strict=False)):
                self.check(item, sub, f"{path}[{i}]", depth + 1)
            start = len(prefix)
        items = schema.get("items")
        if isinstance(items, (dict, bool)):
            for i in range(start, len(value)):
                self.check(value[i], items, f"{path}[{i}]", depth + 1)
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            self.errors.append(f"fewer than {schema['minItems']} items @ {path}")
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            self.errors.append(f"more than {schema['maxItems']} items @ {path}")


def _check_length(value: str, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if isinstance(schema.get("minLength"), int) and len(value) < schema["minLength"]:
        errors.append(f"string shorter than {schema['minLength']} @ {path}")
    if isinstance(schema.get("maxLength"), int) and len(value) > schema["maxLength"]:
        errors.append(f"string longer than {schema['maxLength']} @ {path}")


def _check_number(value: float, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    bounds: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
        ("minimum", operator.ge, "below minimum"),
        ("maximum", operator.le, "above maximum"),
        ("exclusiveMinimum", operator.gt, "not above exclusiveMinimum"),
        ("exclusiveMaximum", operator.lt, "not below exclusiveMaximum"),
    )
    for key, ok, message in bounds:
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool) and not ok(value, bound):
            errors.append(f"{message} {bound} @ {path}")


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``True`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


# --- schema-derived Python values (``call_tool_data``) ----------------------------------------

_FORMATS: Final[dict[str, Callable[[str], Any]]] = {
    "date-time": lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")),
    "date": datetime.date.fromisoformat,
    "time": datetime.time.fromisoformat,
    "uuid": uuid.UUID,
}


def is_wrapped_result(schema: Any) -> bool:
    """True for the ``{"result": x}`` wrapper SDKs put around a tool's non-object output:
    fastmcp marks it ``x-fastmcp-wrap-result``, python-sdk titles it ``<tool>Output`` with
    ``result`` as the one required property."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    props = schema.get("properties")
    if not isinstance(props, dict) or list(props) != ["result"]:
        return False
    if schema.get("x-fastmcp-wrap-result") is True:
        return True
    title = schema.get("title")
    return (
        schema.get("required") == ["result"]
        and isinstance(title, str)
        and (title.endswith("Output"))
    )


def decode(instance: Any, schema: Any) -> Any:
    """``instance`` as plain Python values, guided by ``schema``: the ``{"result": x}``
    wrapper removed, strings of ``format`` date-time / date / time / uuid parsed,
    ``prefixItems`` arrays as tuples, ``$ref``/``anyOf``/``oneOf`` followed (the first
    branch the value is valid against). A value that does not fit is returned as it is.
    """
    if is_wrapped_result(schema) and isinstance(instance, dict) and "result" in instance:
        return _Decoder(schema).decode(instance["result"], schema["properties"]["result"], 0)
    return _Decoder(schema).decode(instance, schema, 0)


class _Decoder:
    __slots__ = ("root",)

    def __init__(self, root: Any) -> None:
        self.root = root

    def decode(self, value: Any, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return value
        if isinstance(schema.get("$ref"), str):
            return self.decode(value, _resolve(schema["$ref"], self.root), depth + 1)
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                for branch in branches:
                    if not self._invalid(value, branch):
                        return self.decode(value, branch, depth + 1)
        if isinstance(value, dict):
            props = schema.get("properties")
            props = props if isinstance(props, dict) else {}
            extra = schema.get("additionalProperties")
            return {
                k: self.decode(
                    v, props.get(k, extra if isinstance(extra, dict) else None), depth + 1
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            return self._array(value, schema, depth)
        if isinstance(value, str):
            parse = _FORMATS.get(schema.get("format"))  # type: ignore[arg-type]
            if parse is not None:
                try:
                    return parse(value)
                except ValueError:
                    return value
        return value

    def _array(self, value: list[Any], schema: dict[str, Any], depth: int) -> Any:
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(prefix, list):
            head = [self.decode(v, s, depth + 1) for v, s in zip(value, prefix, strict=False)]
            tail = [self.decode(v, items, depth + 1) for v in value[len(prefix) :]]
            return tuple(head + tail)
        return [self.decode(v, items, depth + 1) for v in value]

    def _invalid(self, value: Any, schema: Any) -> bool:
        validator = _Validator(self.root, [])
        validator.check(value, schema, "$", 0)
        return bool(validator.errors)
