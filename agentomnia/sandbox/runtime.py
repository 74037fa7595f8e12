"""Executing prepared code: environment sessions, check functions and task programs.

This is the code that runs *inside* a worker process (and, for the no-isolation reference, inside
the caller's process). It receives code that already passed the static policy, runs it in a
`guards.Namespace`, and enforces the tool-call contract:

- the tool must be declared in tools.json and be a method of the class (`unknown_tool`);
- arguments are checked against the tool's JSON schema and the method's signature before the call
  (`invalid_arguments`, naming the argument);
- a call that raises, times out, exhausts memory or recursion, returns something outside the
  ToolResult protocol, returns something that is not JSON, or returns too much becomes a failure
  with a precise code, and the state *and* the ambient (generator, clock) are restored to what they
  were before the call: writes are all-or-nothing from the caller's view;
- tools declared read-only skip the pre-call state copy (the conformance checker verifies the
  declaration), which is what makes read-heavy rollouts cheap.

The state is `vars(instance)`; its canonical JSON (sorted keys, no whitespace, sets sorted, dates
as ISO strings) is hashed with SHA-256. Nothing here imports pydantic or touches the network, so a
worker starts quickly and holds nothing worth stealing.
"""

from __future__ import annotations

import copy
import decimal
import hashlib
import inspect
import json
import marshal
import pickle
import time
import types
from base64 import b64decode
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date as _date
from datetime import datetime as _datetime
from datetime import time as _time
from datetime import timedelta
from enum import Enum
from typing import Any
from uuid import UUID

import jsonschema
import jsonschema.exceptions

from agentomnia.sandbox import errors, rules, views
from agentomnia.sandbox.guards import Namespace, Output, SandboxViolation
from agentomnia.sandbox.schema import compile_schema


class CallTimeout(BaseException):
    """Raised inside running code when its wall-clock budget is spent.

    A BaseException, so the `except Exception` that generated tools are full of cannot swallow it.
    """


class Deadlines:
    """Nested wall-clock budgets. `arm(seconds)` schedules (or cancels, with None) the one alarm."""

    def __init__(self, arm: Callable[[float | None], None] | None = None) -> None:
        self._arm = arm
        self._stack: list[float] = []

    def push(self, seconds: float | None) -> None:
        if self._arm is None or seconds is None:
            return
        now = time.monotonic()
        deadline = now + seconds
        if self._stack:
            deadline = min(deadline, self._stack[-1])
        self._stack.append(deadline)
        self._arm(max(deadline - now, 1e-4))

    def pop(self, seconds: float | None) -> None:
        if self._arm is None or seconds is None:
            return
        if self._stack:
            self._stack.pop()
        if self._stack:
            self._arm(max(self._stack[-1] - time.monotonic(), 1e-4))
        else:
            self._arm(None)

    def clear(self) -> None:
        """Forget every budget (a request boundary: nothing may outlive the request that set it)."""
        self._stack.clear()
        if self._arm is not None:
            self._arm(None)

    @contextmanager
    def budget(self, seconds: float | None) -> Iterator[None]:
        self.push(seconds)
        try:
            yield
        finally:
            self.pop(seconds)


@dataclass(frozen=True)
class Limits:
    """Per-call limits applied by the runtime (process limits live in `containment`)."""

    call_timeout_s: float | None = 5.0
    max_result_bytes: int = 1_000_000
    max_program_calls: int = 2_000


class running:
    """Make a namespace current (its ambient, class registry, a fresh decimal context) under a budget.

    A plain class rather than a generator-based context manager: it wraps every tool call.
    """

    __slots__ = ("deadlines", "namespace", "saved", "seconds")

    def __init__(self, deadlines: Deadlines, namespace: Namespace, seconds: float | None) -> None:
        self.deadlines = deadlines
        self.namespace = namespace
        self.seconds = seconds
        self.saved: tuple[views.Ambient, Callable[[type], None]] | None = None

    def __enter__(self) -> None:
        current = views.CURRENT
        self.saved = (current.ambient, current.register)
        current.ambient, current.register = self.namespace.ambient, self.namespace.register
        decimal.setcontext(views.fresh_decimal_context())
        self.deadlines.push(self.seconds)

    def __exit__(self, *exc: object) -> None:
        self.deadlines.pop(self.seconds)
        assert self.saved is not None
        views.CURRENT.ambient, views.CURRENT.register = self.saved


# ---------------------------------------------------------------- canonical state


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_leaf)


def _leaf(value: Any) -> Any:
    """JSON form of a non-JSON value found in a state (json.dumps `default` hook)."""
    if isinstance(value, set | frozenset):
        return sorted(value, key=_sort_key)
    if isinstance(value, _datetime | _date | _time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, list | tuple):
        return list(value)
    if hasattr(type(value), "__iter__") and type(value).__module__ == "collections":
        return list(value)  # deque and friends
    if type(value).__module__ == rules.ENV_MODULE_NAME:
        # An object of a class the environment defined: its attributes are its state.
        found = _instance_state(value)
        if found is not None:
            return {"__type__": type(value).__name__, **found}
    # Functions, generators, stdlib objects: no faithful JSON form (check_env flags these).
    return f"<{type(value).__name__}>"


def _instance_state(value: Any) -> dict[str, Any] | None:
    try:
        found = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None
    if not isinstance(found, dict):
        return None
    return {str(k): v for k, v in found.items()}


def _normalize(value: Any) -> Any:
    """Slow path for states json cannot sort: every key becomes a string first."""
    if isinstance(value, dict):
        return {_key(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalize(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    converted = _leaf(value)
    if isinstance(converted, str) and converted.startswith("<"):
        return converted
    return _normalize(converted)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return json.dumps(key)
    return _sort_key(_normalize(key))


def public_state(instance_dict: dict[str, Any]) -> dict[str, Any]:
    """The state as OmniaBench defines it: the attributes, minus double-underscore ones."""
    return {k: v for k, v in instance_dict.items() if not rules.is_dunder(k)}


def canonical_state(state: dict[str, Any]) -> str:
    """Canonical JSON of a state: identical to `records.canonical_json` for JSON-valued states."""
    try:
        return json.dumps(state, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_leaf)
    except TypeError:
        return json.dumps(_normalize(state), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_digest(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------- compiled environments


def load_code(payload: str) -> types.CodeType:
    code = marshal.loads(b64decode(payload))
    if not isinstance(code, types.CodeType):
        raise ValueError("payload is not a code object")
    return code


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
            return _schema_message(self.validator, args)
        if self.accepted is not None and not self.var_keyword:
            extra = [k for k in args if k not in self.accepted]
            if extra:
                return f"unexpected argument `{sorted(extra)[0]}` (the tool accepts: {', '.join(sorted(self.accepted)) or 'nothing'})"
        for name in self.required:
            if name not in args:
                return f"missing required argument `{sorted(self.required - set(args))[0]}`"
        return None

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


def _schema_message(validator: Any, args: dict[str, Any]) -> str:
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


def _tool_parameters(tool: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    function = tool.get("function", tool)
    return str(function.get("name", "")), dict(
        function.get("parameters") or {"type": "object", "properties": {}}
    )


@dataclass
class CompiledEnv:
    """A bundle's code and tool table as a worker keeps it warm."""

    key: str
    code: types.CodeType
    class_name: str
    tools: dict[str, ToolSchema]
    read_tools: frozenset[str]
    init_mode: str = "constructor"
    returns: str = "tool_result"
    clock_start: _datetime = views.DEFAULT_CLOCK_START
    signatures_bound: bool = False

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> CompiledEnv:
        tools: dict[str, ToolSchema] = {}
        for tool in payload["tools"]:
            name, parameters = _tool_parameters(tool)
            tools[name] = ToolSchema(name=name, parameters=parameters)
        clock = payload.get("clock_start")
        return cls(
            key=payload["key"],
            code=load_code(payload["code"]),
            class_name=payload["class_name"],
            tools=tools,
            read_tools=frozenset(payload.get("read_tools", ())),
            init_mode=payload.get("init_mode", "constructor"),
            returns=payload.get("returns", "tool_result"),
            clock_start=_datetime.fromisoformat(clock) if clock else views.DEFAULT_CLOCK_START,
        )


class StateNotCopyable(Exception):
    """The state holds objects that can be neither pickled nor deep-copied (generators, locks...)."""


class EnvironmentLoadError(Exception):
    """The environment's module or constructor failed; the message says where and why."""


_CODE_FILENAMES = ("<env:", "<check:", "<program:")


def describe_exception(exc: BaseException) -> str:
    """`Type: message (line N)` with the line inside the generated code when it is known."""
    try:
        text = str(exc)
    except Exception:  # a hostile __str__ must not take the worker down
        text = "<unprintable>"
    text = text if len(text) <= 2000 else text[:2000] + "..."
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(_CODE_FILENAMES):
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f" (line {line})" if line is not None else ""
    return f"{type(exc).__name__}: {text}{where}"


def failure(code: str, message: str) -> str:
    return json.dumps(
        {"ok": False, "data": None, "error": {"code": code, "message": message}},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _classify(exc: BaseException) -> str:
    if isinstance(exc, CallTimeout):
        return errors.TIMEOUT
    if isinstance(exc, MemoryError):
        return errors.MEMORY_LIMIT
    if isinstance(exc, RecursionError):
        return errors.RECURSION_LIMIT
    if isinstance(exc, SandboxViolation):
        return errors.POLICY_VIOLATION
    return errors.TOOL_RAISED


_PROTOCOL_KEYS = frozenset({"ok", "data", "error"})


# How a state copy was taken: marshal is the fastest and exact for plain data (it refuses any
# subclass), pickle handles dates and decimals, deep copies handle the code's own classes.
_MARSHAL, _PICKLE, _COPY = 0, 1, 2
Captured = tuple[int, Any]
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_ENCODE_ANY = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


@dataclass
class _Snapshot:
    state: Captured
    ambient: tuple[object, int]


@dataclass
class EnvSession:
    """One live environment: its namespace, instance and ambient, with the call contract enforced."""

    env: CompiledEnv
    config_blob: bytes
    seed: int
    limits: Limits
    deadlines: Deadlines
    ambient: views.Ambient = field(init=False)
    output: Output = field(init=False)
    namespace: Namespace = field(init=False)
    instance: Any = field(init=False)
    snapshots: list[_Snapshot] = field(default_factory=list)
    _hash: str | None = None
    _capture_mode: int = _MARSHAL
    _clean: Captured | None = None  # a copy of the current state, valid until a write succeeds
    _methods: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.ambient = views.Ambient(self.seed, self.env.clock_start)
        self.output = Output()
        self._build()

    # building
    def _build(self) -> None:
        self.namespace = Namespace(self.ambient, self.output)
        self._hash = None
        self._capture_mode = _MARSHAL
        self._clean = None
        try:
            with running(self.deadlines, self.namespace, self.limits.call_timeout_s):
                with self.namespace.module_visible():
                    exec(self.env.code, self.namespace.globals)
                cls = self.namespace.globals.get(self.env.class_name)
                if not isinstance(cls, type) or cls not in self.namespace.registry:
                    raise EnvironmentLoadError(
                        f"the code defines no class `{self.env.class_name}`; set the bundle's class_name to the "
                        "environment class"
                    )
                self.instance = self._construct(cls, pickle.loads(self.config_blob))
        except EnvironmentLoadError:
            raise
        except BaseException as exc:
            raise EnvironmentLoadError(
                f"building `{self.env.class_name}` failed with {describe_exception(exc)}"
            ) from None
        if _instance_dict_of(self.instance) is None:
            raise EnvironmentLoadError(
                f"`{self.env.class_name}` instances have no __dict__ (uses __slots__?); the state must live "
                "in instance attributes"
            )
        methods = set()
        for name, tool in self.env.tools.items():
            attr = getattr(cls, name, None)
            if not name.startswith("_") and callable(attr):
                methods.add(name)
                if not self.env.signatures_bound:
                    tool.bind_signature(getattr(self.instance, name))
        self.env.signatures_bound = True
        self._methods = frozenset(methods)

    def _construct(self, cls: type, config: Any) -> Any:
        if self.env.init_mode != "attributes":
            return cls(config)
        # OmniaBench's loader: construct with the config (or without arguments), then set each key.
        try:
            instance = cls(config) if config else cls({})
        except TypeError:
            instance = cls()
        for key, value in (config or {}).items():
            if not isinstance(key, str) or rules.is_dunder(key):
                raise EnvironmentLoadError(f"init_config key {key!r} cannot become an attribute")
            setattr(instance, key, value)
        return instance

    def discard(self) -> None:
        """Let go of the state and namespace (on close): plain data is freed at once by reference
        counting instead of waiting for a cycle collection."""
        attributes = _instance_dict_of(self.instance)
        if attributes is not None:
            attributes.clear()
        self.snapshots.clear()
        self._clean = None
        self.namespace.globals.clear()

    def reset(self, config_blob: bytes | None = None, seed: int | None = None) -> None:
        if config_blob is not None:
            self.config_blob = config_blob
        if seed is not None:
            self.seed = seed
        self.ambient.reseed(self.seed)
        self._build()

    # state
    def state_dict(self) -> dict[str, Any]:
        return public_state(self.instance.__dict__)

    def state_json(self) -> str:
        return canonical_state(self.state_dict())

    def state_hash(self, *, fresh: bool = False) -> str:
        """The state's digest; cached until a write succeeds unless `fresh` (read-only tools are
        trusted not to write, which check_env verifies with fresh hashes)."""
        if self._hash is None or fresh:
            self._hash = state_digest(self.state_json())
        return self._hash

    def _capture(self) -> Captured:
        attributes = self.instance.__dict__
        if self._capture_mode == _MARSHAL:
            try:
                return _MARSHAL, marshal.dumps(attributes)
            except ValueError:
                self._capture_mode = _PICKLE
        if self._capture_mode == _PICKLE:
            try:
                return _PICKLE, pickle.dumps(attributes, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:
                # Instances of classes the code defined cannot be pickled (their module is not
                # importable); deep copies are slower but exact.
                self._capture_mode = _COPY
        try:
            return _COPY, copy.deepcopy(attributes)
        except Exception as exc:
            raise StateNotCopyable(
                f"the state cannot be copied for rollback ({describe_exception(exc)}); keep plain data "
                "(dicts, lists, numbers, strings, dates) in the environment's attributes"
            ) from None

    def _apply(self, captured: Captured) -> None:
        mode, blob = captured
        if mode == _MARSHAL:
            fresh = marshal.loads(blob)
        elif mode == _PICKLE:
            fresh = pickle.loads(blob)
        else:
            fresh = copy.deepcopy(blob)
        attributes = self.instance.__dict__
        attributes.clear()
        attributes.update(fresh)
        self._hash = None
        self._clean = captured

    def _changed_since(self, captured: Captured) -> bool:
        """Whether the state differs from `captured` (cheaper than restoring it blindly)."""
        mode, blob = captured
        try:
            if mode == _MARSHAL:
                return marshal.dumps(self.instance.__dict__) != blob
            if mode == _PICKLE:
                return pickle.dumps(self.instance.__dict__, protocol=pickle.HIGHEST_PROTOCOL) != blob
        except Exception:
            return True
        return True

    def _current_copy(self) -> Captured:
        if self._clean is None:
            self._clean = self._capture()
        return self._clean

    def snapshot(self) -> int:
        self.snapshots.append(_Snapshot(self._current_copy(), self.ambient.save()))
        return len(self.snapshots) - 1

    def restore(self, index: int) -> None:
        if not 0 <= index < len(self.snapshots):
            raise IndexError(f"no snapshot {index} in this session (it holds {len(self.snapshots)})")
        snap = self.snapshots[index]
        self._apply(snap.state)
        self.ambient.load(snap.ambient)

    # calls
    def call(self, name: str, args: Any) -> tuple[str, bool]:
        """Run one tool call; returns the ToolResult as JSON text and whether it succeeded."""
        tool = self.env.tools.get(name) if isinstance(name, str) else None
        if tool is None or name not in self._methods:
            known = ", ".join(sorted(self._methods)) or "none"
            why = (
                "is declared in tools.json but the class has no such public method"
                if tool
                else "does not exist"
            )
            return failure(errors.UNKNOWN_TOOL, f"tool `{name}` {why} (available: {known})"), False
        if not isinstance(args, dict) or not all(isinstance(k, str) for k in args):
            return failure(errors.INVALID_ARGUMENTS, "arguments must be an object with string keys"), False
        problem = tool.check(args)
        if problem is not None:
            return failure(errors.INVALID_ARGUMENTS, f"tool `{name}`: {problem}"), False
        # Writes are all-or-nothing: the state is copied before a write (once per successful write:
        # reads and failed writes leave the last copy valid) and put back if the call fails.
        writes = name not in self.env.read_tools
        captured: Captured | None = None
        ambient = self.ambient
        ambient.begin_call()
        try:
            with running(self.deadlines, self.namespace, self.limits.call_timeout_s):
                if writes:
                    captured = self._current_copy()
                raw = getattr(self.instance, name)(**args)
                text, ok = self._encode(name, raw)
        except BaseException as exc:
            code = _classify(exc)
            text, ok = failure(code, _failure_message(name, code, exc, self.limits)), False
        ambient.end_call(keep=ok)
        if not ok:
            if captured is not None and self._changed_since(captured):
                self._apply(captured)
        elif writes:
            self._clean = None
            self._hash = None
        return text, ok

    def _encode(self, name: str, raw: Any) -> tuple[str, bool]:
        if self.env.returns == "any" and not _is_protocol(raw):
            result = {"ok": True, "data": raw, "error": None}
            text = _ENCODE_ANY(result)
        else:
            problem = _protocol_problem(raw)
            if problem is not None:
                return failure(
                    errors.BAD_RETURN,
                    f'tool `{name}` returned {problem}; return {{"ok": bool, "data": ..., '
                    '"error": {"code": str, "message": str} | None}',
                ), False
            result = {"ok": raw["ok"], "data": raw.get("data"), "error": raw.get("error")}
            try:
                text = _ENCODE(result)
            except (TypeError, ValueError) as exc:
                return failure(
                    errors.BAD_RETURN, f"tool `{name}` returned data that is not JSON: {exc}"
                ), False
        if len(text) > self.limits.max_result_bytes:
            return failure(
                errors.RESULT_TOO_LARGE,
                f"tool `{name}` returned {len(text)} characters; the limit is {self.limits.max_result_bytes} "
                "(paginate or summarise)",
            ), False
        return text, bool(result["ok"])

    def describe(self) -> dict[str, Any]:
        """Public methods with their signatures, for the conformance checker."""
        methods: dict[str, Any] = {}
        cls = type(self.instance)
        for name in dir(cls):
            if name.startswith("_") or not callable(getattr(cls, name, None)):
                continue
            tool = ToolSchema(name=name, parameters={})
            tool.bind_signature(getattr(self.instance, name))
            methods[name] = {
                "accepted": sorted(tool.accepted or ()),
                "required": sorted(tool.required),
                "var_keyword": tool.var_keyword,
            }
        schema_errors = {}
        for name, tool in self.env.tools.items():
            if not tool.built:
                tool.build()
            if tool.schema_error:
                schema_errors[name] = tool.schema_error
        return {"methods": methods, "schema_errors": schema_errors}


def _instance_dict_of(instance: Any) -> dict[str, Any] | None:
    try:
        found = object.__getattribute__(instance, "__dict__")
    except AttributeError:
        return None
    return found if isinstance(found, dict) else None


def _is_protocol(raw: Any) -> bool:
    return type(raw) is dict and "ok" in raw and type(raw["ok"]) is bool and set(raw) <= _PROTOCOL_KEYS


def _protocol_problem(raw: Any) -> str | None:
    if type(raw) is not dict:
        return f"a {type(raw).__name__}, not a ToolResult dict"
    if "ok" not in raw or type(raw["ok"]) is not bool:
        return "a dict without a boolean `ok`"
    extra = set(raw) - _PROTOCOL_KEYS
    if extra:
        return f"unexpected keys {sorted(map(str, extra))}"
    error = raw.get("error")
    if raw["ok"]:
        return None if error is None else "ok=True together with an error"
    if (
        type(error) is not dict
        or set(error) != {"code", "message"}
        or not isinstance(error["code"], str)
        or not isinstance(error["message"], str)
    ):
        return "ok=False without an error {code, message}"
    return None


def _failure_message(name: str, code: str, exc: BaseException, limits: Limits) -> str:
    if code == errors.TIMEOUT:
        return f"tool `{name}` ran past its {limits.call_timeout_s} s budget and was stopped; the state was rolled back"
    if code == errors.MEMORY_LIMIT:
        return (
            f"tool `{name}` ran out of memory (the worker's address-space limit); the state was rolled back"
        )
    if code == errors.RECURSION_LIMIT:
        return f"tool `{name}` recursed too deeply; the state was rolled back"
    if code == errors.POLICY_VIOLATION:
        return f"tool `{name}` was stopped by the sandbox: {exc}"
    return f"tool `{name}` raised {describe_exception(exc)}; the state was rolled back"


# ---------------------------------------------------------------- checks and programs


def _fresh_namespace(extra: dict[str, Any], seed: int = 0) -> Namespace:
    return Namespace(views.Ambient(seed), Output(), extra_globals=extra)


def run_check(
    code: types.CodeType,
    initial_state_json: str,
    final_state_json: str,
    deadlines: Deadlines,
    timeout_s: float | None,
) -> dict[str, Any]:
    """OmniaBench's check contract: the code defines `check_func(final_state) -> bool`, `initial_state` in scope."""
    namespace = _fresh_namespace({"initial_state": json.loads(initial_state_json)})
    try:
        with running(deadlines, namespace, timeout_s):
            with namespace.module_visible():
                exec(code, namespace.globals)
            check = namespace.globals.get("check_func")
            if not callable(check):
                return {
                    "passed": None,
                    "error": {
                        "code": "missing_function",
                        "message": "the code defines no `check_func(final_state)`",
                    },
                }
            verdict = check(json.loads(final_state_json))
    except BaseException as exc:
        code_name = _classify(exc)
        return {
            "passed": None,
            "error": {
                "code": "check_raised" if code_name == errors.TOOL_RAISED else code_name,
                "message": describe_exception(exc),
            },
        }
    if type(verdict) is not bool:
        return {
            "passed": None,
            "error": {
                "code": errors.BAD_RETURN,
                "message": f"check_func returned a {type(verdict).__name__}; it must return True or False",
            },
        }
    return {"passed": verdict, "error": None}


class ProgramCallLimit(Exception):
    """A program made more tool calls than its budget allows."""


def run_program(session: EnvSession, code: types.CodeType, timeout_s: float | None) -> dict[str, Any]:
    """Run a task program against a session.

    Contract: the code defines `solve(call)`; `call(tool_name, **arguments)` runs one tool call
    against the session (same validation and rollback as any call) and returns the ToolResult as a
    fresh dict; `solve` returns the answer (any JSON value, usually a dict). Each call is recorded.
    """
    calls: list[list[Any]] = []
    limits = session.limits

    def call(tool_name: str, **arguments: Any) -> dict[str, Any]:
        if len(calls) >= limits.max_program_calls:
            raise ProgramCallLimit(f"the program made more than {limits.max_program_calls} tool calls")
        try:
            args_text = json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            text, ok = failure(errors.INVALID_ARGUMENTS, f"arguments are not JSON: {exc}"), False
            args_text = "{}"
        else:
            text, ok = session.call(tool_name, json.loads(args_text))
        calls.append([str(tool_name), args_text, text, ok])
        result: dict[str, Any] = json.loads(text)
        return result

    namespace = _fresh_namespace({})
    answer: Any = None
    error: dict[str, str] | None = None
    try:
        with running(session.deadlines, namespace, timeout_s):
            with namespace.module_visible():
                exec(code, namespace.globals)
            solve = namespace.globals.get("solve")
            if not callable(solve):
                error = {"code": "missing_function", "message": "the program defines no `solve(call)`"}
            else:
                answer = solve(call)
    except BaseException as exc:
        kind = _classify(exc)
        error = {
            "code": "program_raised" if kind == errors.TOOL_RAISED else kind,
            "message": describe_exception(exc),
        }
    answer_text = "null"
    if error is None:
        try:
            answer_text = json.dumps(answer, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            error = {"code": errors.BAD_RETURN, "message": f"solve returned a value that is not JSON: {exc}"}
    return {
        "answer_json": answer_text,
        "calls": calls,
        "stdout": namespace.output.text(),
        "error": error,
    }
