"""Tool-call argument checks: fast validation for tool schemas, with jsonschema as the reference.

Every tool call is validated against its JSON schema before it runs. `jsonschema` takes tens of
microseconds per call, which is most of the cost of a cheap read tool, so the common subset that tool
schemas actually use (type, properties, required, additionalProperties, enum, const, items, length,
range and pattern bounds) is compiled here into plain closures that only answer valid/invalid.
Schemas that use anything else fall back to jsonschema; an invalid call is always re-checked with
jsonschema so the error message is the reference one. A test compares both on generated inputs.

The same holds for checking a schema itself: `plainly_valid_schema` decides the plain subset of the
draft 2020-12 metaschema by hand and leaves anything else to jsonschema's `check_schema`.
`ToolSchema` puts both together with the method's signature: the one check a call passes before it
runs. Nothing here imports pydantic (a worker imports it).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
import jsonschema.exceptions

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


# ---------------------------------------------------------------- one tool's check


@dataclass
class ToolSchema:
    """One declared tool: its JSON schema (checks built on first use) and method signature."""

    name: str
    parameters: dict[str, Any]
    fast: Callable[[Any], bool] | None = None
    validator: Any = None
    schema_error: str | None = None
    built: bool = False
    accepted: frozenset[str] | None = None
    required: frozenset[str] = frozenset()
    var_keyword: bool = False

    def check(self, args: dict[str, Any]) -> str | None:
        if not self.built:
            self.build()
        if self.fast is not None:
            valid = self.fast(args)
        else:
            valid = self.validator is None or self.validator.is_valid(args)
        if not valid and self.validator is not None:
            return schema_message(self.validator, args)
        if self.accepted is not None and not self.var_keyword and not self.admits_extra:
            extra = [k for k in args if k not in self.accepted]
            if extra:
                return f"unexpected argument `{sorted(extra)[0]}` (the tool accepts: {', '.join(sorted(self.accepted)) or 'nothing'})"
        for name in self.required:
            if name not in args:
                return f"missing required argument `{sorted(self.required - set(args))[0]}`"
        return None

    @property
    def admits_extra(self) -> bool:
        """The schema lets a caller send properties it does not name (JSON Schema's default): such
        arguments are accepted and not passed on, as a service whose schema is open ignores them."""
        return all(
            self.parameters.get(k, True) is not False
            for k in ("additionalProperties", "unevaluatedProperties")
        )

    def arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        """What the method is called with: `args` without the extra ones an open schema admitted."""
        if self.accepted is None or self.var_keyword or all(k in self.accepted for k in args):
            return args
        return {k: v for k, v in args.items() if k in self.accepted}

    def build(self) -> None:
        self.built = True
        try:
            if plainly_valid_schema(self.parameters):
                # Checking a schema against the metaschema costs ~1.5 ms per tool in jsonschema;
                # the plain subset tool schemas use is checked exactly, and faster, by hand.
                cls: Any = jsonschema.Draft202012Validator
            else:
                cls = jsonschema.validators.validator_for(
                    self.parameters, default=jsonschema.Draft202012Validator
                )
                cls.check_schema(self.parameters)
            self.validator = cls(self.parameters)
        except jsonschema.exceptions.SchemaError as exc:
            # A broken schema is the environment's defect (check_env reports it); calls are then
            # checked against the method signature only.
            self.schema_error = f"invalid JSON schema: {exc.message}"
            return
        self.fast = compile_schema(self.parameters)

    def bind_signature(self, method: Callable[..., Any]) -> None:
        try:
            signature = inspect.signature(method)
        except (TypeError, ValueError):
            return
        accepted, required = set(), set()
        for param in signature.parameters.values():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                self.var_keyword = True
            elif param.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
                accepted.add(param.name)
                if param.default is inspect.Parameter.empty:
                    required.add(param.name)
        self.accepted = frozenset(accepted)
        self.required = frozenset(required)


# Draft 2020-12 metaschema rules for the keywords tool schemas use. `plainly_valid_schema` answers
# True only for schemas made of these keywords (plus keywords the metaschema does not define, which
# it leaves unconstrained); anything else goes to jsonschema's own `check_schema`.
_SCHEMA_STRING_KEYS = frozenset(
    {"title", "description", "$comment", "format", "contentEncoding", "contentMediaType"}
)
_SCHEMA_BOOL_KEYS = frozenset({"deprecated", "readOnly", "writeOnly", "uniqueItems"})
_SCHEMA_NUMBER_KEYS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_SCHEMA_COUNT_KEYS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)
_SCHEMA_ANY_KEYS = frozenset({"default", "const"})
_SCHEMA_ARRAY_KEYS = frozenset({"enum", "examples"})
_SCHEMA_SUB_KEYS = frozenset({"items", "additionalProperties"})
_SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
# Every keyword the 2020-12 metaschema (all vocabularies) gives a rule; one of these that is not
# handled above sends the schema to jsonschema. A test keeps this list complete.
METASCHEMA_KEYWORDS = frozenset(
    {
        "$id", "$schema", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
        "$comment", "$defs", "$recursiveAnchor", "$recursiveRef", "prefixItems", "items", "contains",
        "additionalProperties", "properties", "patternProperties", "dependentSchemas", "propertyNames",
        "if", "then", "else", "allOf", "anyOf", "oneOf", "not", "unevaluatedItems",
        "unevaluatedProperties", "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum",
        "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
        "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
        "dependentRequired", "title", "description", "default", "deprecated", "readOnly", "writeOnly",
        "examples", "format", "contentEncoding", "contentMediaType", "contentSchema", "definitions",
        "dependencies",
    }
)  # fmt: skip


def _unique_strings(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value) and len(set(value)) == len(value)


def plainly_valid_schema(schema: Any, _depth: int = 0) -> bool:
    """True when `schema` certainly passes the draft 2020-12 metaschema and declares no `$schema`.

    False means "not decided here" (jsonschema decides), never "invalid"."""
    if type(schema) is bool:
        return _depth > 0
    if type(schema) is not dict or _depth > 32:
        return False
    for key, value in schema.items():
        if type(key) is not str:
            return False
        if key in _SCHEMA_STRING_KEYS:
            if type(value) is not str:
                return False
        elif key in _SCHEMA_BOOL_KEYS:
            if type(value) is not bool:
                return False
        elif key in _SCHEMA_NUMBER_KEYS:
            if type(value) not in (int, float):
                return False
        elif key in _SCHEMA_COUNT_KEYS:
            if type(value) is not int or value < 0:
                return False
        elif key in _SCHEMA_ANY_KEYS:
            continue
        elif key in _SCHEMA_ARRAY_KEYS:
            if type(value) is not list:
                return False
        elif key in _SCHEMA_SUB_KEYS:
            if not plainly_valid_schema(value, _depth + 1):
                return False
        elif key == "properties":
            if type(value) is not dict or not all(
                plainly_valid_schema(sub, _depth + 1) for sub in value.values()
            ):
                return False
        elif key == "required":
            if not _unique_strings(value):
                return False
        elif key == "type":
            if type(value) is str:
                if value not in _SIMPLE_TYPES:
                    return False
            elif not (_unique_strings(value) and value and all(v in _SIMPLE_TYPES for v in value)):
                return False
        elif key in METASCHEMA_KEYWORDS or key.startswith("$"):
            return False
    return True


def schema_message(validator: Any, args: dict[str, Any]) -> str:
    error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    if error is None:
        return "arguments do not match the tool's schema"
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required" and not path:
        missing = [r for r in error.validator_value if r not in args]
        if missing:
            return f"missing required argument `{missing[0]}`"
    if error.validator == "additionalProperties" and not path:
        known = set(validator.schema.get("properties", {}))
        extra = sorted(k for k in args if k not in known)
        if extra:
            return f"unexpected argument `{extra[0]}` (the tool accepts: {', '.join(sorted(known)) or 'nothing'})"
    if path:
        return f"argument `{'.'.join(path)}`: {error.message}"
    return error.message
