"""One live environment inside a worker, with the tool-call contract enforced.

It receives code that already passed the static policy, runs it in a `guards.Namespace`, and
enforces the tool-call contract:

- the tool must be declared in tools.json and be a method of the class (`unknown_tool`);
- arguments are checked against the tool's JSON schema and the method's signature before the call
  (`invalid_arguments`, naming the argument);
- a call that raises, times out, exhausts memory or recursion, returns something outside the
  ToolResult protocol, returns something that is not JSON, or returns too much becomes a failure
  with a precise code, and the state *and* the ambient (generator, clock) are restored to what they
  were before the call: writes are all-or-nothing from the caller's view;
- tools declared read-only skip the pre-call state copy (the conformance checker verifies the
  declaration), which is what makes read-heavy rollouts cheap.

This is the code that runs *inside* a worker process (and, for the no-isolation reference, inside
the caller's process). Nothing here imports pydantic or touches the network, so a worker starts
quickly and holds nothing worth stealing.
"""

from __future__ import annotations

import copy
import json
import marshal
import pickle
import types
from base64 import b64decode
from dataclasses import dataclass, field
from datetime import datetime as _datetime
from typing import Any

from agentomnia.sandbox import errors, rules, views
from agentomnia.sandbox.deadlines import CallTimeout, Deadlines, Limits, running
from agentomnia.sandbox.guards import Namespace, Output, SandboxViolation
from agentomnia.sandbox.schema import ToolSchema
from agentomnia.sandbox.statehash import canonical_state, public_state, state_digest


def load_code(payload: str) -> types.CodeType:
    code = marshal.loads(b64decode(payload))
    if not isinstance(code, types.CodeType):
        raise ValueError("payload is not a code object")
    return code


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


def classify_exception(exc: BaseException) -> str:
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
                raw = getattr(self.instance, name)(**tool.arguments(args))
                text, ok = self._encode(name, raw)
        except BaseException as exc:
            code = classify_exception(exc)
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
