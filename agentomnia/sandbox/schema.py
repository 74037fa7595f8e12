"""Fast argument validation for tool schemas, with jsonschema as the reference.

Every tool call is validated against its JSON schema before it runs. `jsonschema` takes tens of
microseconds per call, which is most of the cost of a cheap read tool, so the common subset that tool
schemas actually use (type, properties, required, additionalProperties, enum, const, items, length,
range and pattern bounds) is compiled here into plain closures that only answer valid/invalid.
Schemas that use anything else fall back to jsonschema; an invalid call is always re-checked with
jsonschema so the error message is the reference one. A test compares both on generated inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# Keywords that carry no assertion (jsonschema ignores unknown keywords, and so do we).
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$comment",
        "format",
        "deprecated",
        "readOnly",
        "writeOnly",
        "nullable",
    }
)
_SUPPORTED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minProperties",
        "maxProperties",
    }
)
# Assertion keywords this module does not implement: their presence means "use jsonschema".
_UNSUPPORTED = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "$schema",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "patternProperties",
        "propertyNames",
        "prefixItems",
        "contains",
        "minContains",
        "maxContains",
        "uniqueItems",
        "multipleOf",
        "unevaluatedProperties",
        "unevaluatedItems",
        "additionalItems",
    }
)


class _Unsupported(Exception):
    """A schema construct the fast validator does not handle; the full validator takes over."""


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


_TYPES: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int or (type(v) is float and v.is_integer()),
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "null": lambda v: v is None,
}


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: booleans are not numbers; containers compare deeply."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and a == b


def compile_schema(schema: Any) -> Check | None:
    """A fast validity check for `schema`, or None when it needs the full jsonschema implementation."""
    try:
        return _compile(schema)
    except _Unsupported:
        return None


def _compile(schema: Any) -> Check:
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, dict):
        raise _Unsupported
    for keyword in schema:
        if keyword in _UNSUPPORTED or (
            keyword not in _SUPPORTED and keyword not in _ANNOTATIONS and keyword.startswith("$")
        ):
            raise _Unsupported
    checks: list[Check] = []
    kind = schema.get("type")
    if kind is not None:
        names = [kind] if isinstance(kind, str) else list(kind)
        if not all(isinstance(n, str) and n in _TYPES for n in names):
            raise _Unsupported
        tests = [_TYPES[n] for n in names]
        if len(tests) == 1:
            checks.append(tests[0])
        else:
            checks.append(lambda v: any(t(v) for t in tests))
    if "enum" in schema:
        options = list(schema["enum"])
        checks.append(lambda v: any(json_equal(v, o) for o in options))
    if "const" in schema:
        constant = schema["const"]
        checks.append(lambda v: json_equal(v, constant))
    checks.extend(_object_checks(schema))
    checks.extend(_array_checks(schema))
    checks.extend(_number_checks(schema))
    checks.extend(_string_checks(schema))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _object_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unsupported
    compiled = {name: _compile(sub) for name, sub in properties.items()}
    required = list(schema.get("required", []))
    additional = schema.get("additionalProperties", True)
    extra: Check | None = None if additional is True else _compile(additional)
    low, high = schema.get("minProperties"), schema.get("maxProperties")
    if compiled or required or extra is not None or low is not None or high is not None:

        def check_object(v: Any) -> bool:
            if type(v) is not dict:
                return True
            for name in required:
                if name not in v:
                    return False
            for name, value in v.items():
                test = compiled.get(name)
                if test is not None:
                    if not test(value):
                        return False
                elif extra is not None and not extra(value):
                    return False
            if low is not None and len(v) < low:
                return False
            return not (high is not None and len(v) > high)

        checks.append(check_object)
    return checks


def _array_checks(schema: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    items = schema.get("items")
    if isinstance(items, list):
        raise _Unsupported
    item_check = _compile(items) if items is not None else None
    low, high = schema.get("minItems"), schema.get("maxItems")
    if item_check is not None or low is not None or high is not None:

        def check_array(v: Any) -> bool:
            if type(v) is not list:
                return True
            if low is not None and len(v) < low:
                return False
            if high is not None and len(v) > high:
                return False
            return item_check is None or all(item_check(x) for x in v)

        checks.append(check_array)
    return checks


def _number_checks(schema: dict[str, Any]) -> list[Check]:
    bounds = [
        (schema.get("minimum"), lambda v, b: v >= b),
        (schema.get("maximum"), lambda v, b: v <= b),
        (schema.get("exclusiveMinimum"), lambda v, b: v > b),
        (schema.get("exclusiveMaximum"), lambda v, b: v < b),
    ]
    active = [(bound, test) for bound, test in bounds if bound is not None]
    if not active:
        return []
    if not all(_is_number(bound) for bound, _ in active):
        raise _Unsupported  # draft-4 boolean exclusive bounds and the like

    def check_number(v: Any) -> bool:
        if not _is_number(v):
            return True
        return all(test(v, bound) for bound, test in active)

    return [check_number]


def _string_checks(schema: dict[str, Any]) -> list[Check]:
    low, high, pattern = schema.get("minLength"), schema.get("maxLength"), schema.get("pattern")
    if low is None and high is None and pattern is None:
        return []
    try:
        regex = re.compile(pattern) if pattern is not None else None
    except re.error:
        raise _Unsupported from None

    def check_string(v: Any) -> bool:
        if type(v) is not str:
            return True
        if low is not None and len(v) < low:
            return False
        if high is not None and len(v) > high:
            return False
        return regex is None or regex.search(v) is not None

    return [check_string]
