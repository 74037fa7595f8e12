"""Sandbox environments as TRL tool environments, with golden-prefix replay.

TRL's GRPOTrainer discovers tools as the public methods of an environment class. Synthesized
environments differ in their tools, so each bundle gets its own small class, built here from its
`tools.json`: one method per tool, whose signature and docstring render the tool schema and whose body
forwards the call to a sandbox session. `reset(**row)` opens (or resets) the session at the task's
initial state and replays the golden prefix the curriculum gave this prompt, so the environment's state
matches the conversation the policy continues. Replayed calls are kept apart from the policy's own
calls: the policy is neither credited nor penalised for them.
"""

from __future__ import annotations

import inspect
import json
import keyword
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentomnia.envs.naming import python_name
from agentomnia.records import ToolResult
from agentomnia.rewards.process import ProcessSettings, ProcessStop, ProcessValidator
from agentomnia.sandbox import errors as sandbox_errors
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import SandboxError
from agentomnia.tasks.models import Task

# Failure codes that mean the environment (generated code or the sandbox), not the policy, broke.
ENVIRONMENT_FAULTS = frozenset(
    {
        sandbox_errors.TOOL_RAISED,
        sandbox_errors.TIMEOUT,
        sandbox_errors.CPU_LIMIT,
        sandbox_errors.MEMORY_LIMIT,
        sandbox_errors.RECURSION_LIMIT,
        sandbox_errors.BAD_RETURN,
        sandbox_errors.RESULT_TOO_LARGE,
        sandbox_errors.POLICY_VIOLATION,
        sandbox_errors.WORKER_CRASHED,
    }
)
_PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
_RESERVED = frozenset({"reset", "get_reward"})


# What environments need from the sandbox: open(bundle, init_config) -> a session (`Sandbox.open`).
SessionOpener = Callable[[Bundle, Mapping[str, Any]], Any]


def golden_turns(golden: Sequence[Mapping[str, Any]]) -> list[list[dict[str, Any]]]:
    """Golden messages grouped into turns: one assistant message and the tool results that follow it."""
    turns: list[list[dict[str, Any]]] = []
    for message in golden:
        if message.get("role") == "assistant" or not turns:
            turns.append([dict(message)])
        else:
            turns[-1].append(dict(message))
    return turns


def prefix_messages(golden: Sequence[Mapping[str, Any]], turns: int) -> list[dict[str, Any]]:
    """The first `turns` golden turns, flattened back into messages."""
    return [m for turn in golden_turns(golden)[:turns] for m in turn]


def prefix_calls(golden: Sequence[Mapping[str, Any]], turns: int) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the first `turns` golden turns made, arguments decoded."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for message in prefix_messages(golden, turns):
        for call in message.get("tool_calls") or []:
            function = call.get("function", call)
            args = function.get("arguments", {})
            calls.append((str(function["name"]), json.loads(args) if isinstance(args, str) else dict(args)))
    return calls


class SandboxToolEnv:
    """Base of the per-bundle environment classes; tool methods are added by `environment_class`.

    Every helper here is private: TRL exposes each public method of the class as a tool."""

    bundle: Bundle

    def __init__(self, opener: SessionOpener, process: ProcessSettings | None = None) -> None:
        self._opener = opener
        self._process = process
        self._session: Any = None
        self.task: Task | None = None
        self.policy_calls: list[tuple[str, dict[str, Any]]] = []
        self.replayed_calls: list[tuple[str, dict[str, Any]]] = []
        self.calls_ok: list[bool] = []  # whether each replayed, then policy, call succeeded
        self.refused_calls: list[tuple[str, dict[str, Any]]] = []  # made after a process stop, never run
        self.fault: str | None = None
        self.verdict: Any = None
        self._validator: ProcessValidator | None = None

    @property
    def stopped(self) -> ProcessStop | None:
        """Why process validation ended this rollout early, if it did."""
        return self._validator.stop if self._validator is not None else None

    def reset(self, **row: Any) -> None:
        """Start a rollout: the task's initial state, then the golden prefix replayed."""
        self.task = (
            Task.model_validate_json(row["task"])
            if isinstance(row["task"], str)
            else Task.model_validate(row["task"])
        )
        self.policy_calls, self.replayed_calls, self.refused_calls, self.calls_ok = [], [], [], []
        self.fault, self.verdict = None, None
        self._validator = ProcessValidator(self.task, self._process) if self._process is not None else None
        try:
            if self._session is None:
                self._session = self._opener(self.bundle, self.task.init_config)
            else:
                self._session.reset(self.task.init_config)
        except SandboxError as exc:
            self._session = None
            self.fault = f"could not open the environment: {exc}"
            return
        golden = row.get("golden") or []
        golden = json.loads(golden) if isinstance(golden, str) else golden
        for tool, args in prefix_calls(golden, int(row.get("prefix_turns") or 0)):
            result = self._execute(tool, args)
            self.replayed_calls.append((tool, args))
            self.calls_ok.append(result.ok)
            if not result.ok and self.fault is None:
                self.fault = f"replaying golden call {tool} failed: {result.error}"

    def _execute(self, tool: str, args: Mapping[str, Any]) -> ToolResult:
        if self._session is None:
            return ToolResult.failure(sandbox_errors.WORKER_CRASHED, self.fault or "no environment session")
        try:
            result: ToolResult = self._session.call(tool, dict(args))
        except SandboxError as exc:
            self.fault = f"{tool}: {exc}"
            return ToolResult.failure(sandbox_errors.WORKER_CRASHED, str(exc))
        if not result.ok and result.error is not None and result.error.code in ENVIRONMENT_FAULTS:
            self.fault = f"{tool}: {result.error.code}: {result.error.message}"
        return result

    def _tool(self, tool: str, args: dict[str, Any]) -> str:
        stop = self.stopped
        if stop is not None:
            self.refused_calls.append((tool, args))
            return stop.refusal().model_dump_json()
        self.policy_calls.append((tool, args))
        result = self._execute(tool, args)
        self.calls_ok.append(result.ok)
        if self._validator is not None:
            self._validator.after_call(tool, args, result)
        return result.model_dump_json()

    def _final_state(self) -> dict[str, Any] | None:
        if self._session is None:
            return None
        try:
            state: dict[str, Any] = self._session.state()
        except SandboxError as exc:
            self.fault = f"reading the final state failed: {exc}"
            return None
        return state

    def _close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def _tool_method(schema: Mapping[str, Any]) -> Callable[..., str]:
    function = schema["function"]
    name = str(function["name"])
    parameters = function.get("parameters") or {}
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [str(function.get("description") or name).strip() or name, "", "Args:"]
    # A seed keeps its own argument names (`from`, `page-size`); the trainer's tool functions need
    # identifiers, so such an argument is offered as `from_` / `page_size` and sent under its own name.
    aliases: dict[str, str] = {}
    for real in properties:
        if not real.isidentifier() or keyword.iskeyword(real):
            alias = f"{real}_" if keyword.iskeyword(real) else python_name(real)
            while alias in properties or alias in aliases:
                alias += "_"
            aliases[alias] = real
    shown = {v: k for k, v in aliases.items()}
    for real, spec in properties.items():
        arg = shown.get(real, real)
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        hint: Any = _PY_TYPES.get(kind, Any) if isinstance(kind, str) else Any
        if real not in required:
            hint = hint | None if hint is not Any else Any
        annotations[arg] = hint
        default = inspect.Parameter.empty if real in required else None
        params.append(
            inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint)
        )
        text = " ".join(str(spec.get("description") or arg).split()) if isinstance(spec, Mapping) else arg
        choices = (
            f" (choices: {json.dumps(spec['enum'])})"
            if isinstance(spec, Mapping) and spec.get("enum")
            else ""
        )
        lines.append(f"    {arg}: {text}{choices}")

    def method(self: SandboxToolEnv, **kwargs: Any) -> str:
        # Absent optional arguments arrive as None from the signature defaults; the tool never saw them.
        return self._tool(name, {aliases.get(k, k): v for k, v in kwargs.items() if v is not None})

    method.__name__ = method.__qualname__ = name
    method.__doc__ = "\n".join(lines if properties else lines[:1])
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    return method


def environment_class(bundle: Bundle, name: str) -> type[SandboxToolEnv]:
    """A SandboxToolEnv subclass whose public methods are exactly `bundle`'s tools."""
    methods: dict[str, Any] = {"bundle": bundle}
    for schema in bundle.tools:
        tool = schema["function"]["name"]
        if tool in _RESERVED or tool.startswith("_") or hasattr(SandboxToolEnv, tool):
            raise ValueError(
                f"bundle {name}: tool `{tool}` collides with the environment protocol (reset, get_reward, "
                "private or base-class names); rename the tool"
            )
        methods[tool] = _tool_method(schema)
    return type(f"Env_{name}", (SandboxToolEnv,), methods)
