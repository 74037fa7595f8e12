"""`check_env`: the environment contract as executable checks, run against a live sandbox.

Every synthesized environment must pass it (as a test and as a Dagster asset check). Each check says
what failed and names the likely cause, so a repair step (or a person) knows what to change:

- `policy`: the source passes the static policy;
- `load`: the class builds from s0 within the time budget;
- `schemas`: every declared tool is a public method, its schema is valid JSON Schema, and schema
  properties and method parameters agree (required parameters are required properties);
- `state`: the state is JSON-serializable without lossy placeholders;
- `determinism`: the same calls from the same s0 in two fresh sessions (on different workers when
  the pool has several) give the same results and the same state hashes;
- `reset`: reset restores the initial state exactly;
- `errors_leave_state`: a failed call leaves the state unchanged;
- `read_only`: tools declared read-only never change the state;
- `snapshot`: restore returns exactly to the snapshot;
- `close`: closing twice is safe and a closed session refuses calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import Record
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import SandboxError, SessionClosed
from agentomnia.sandbox.policy import validate_source
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Session
from agentomnia.sandbox.workload import ArgumentSampler

CHECKS = (
    "policy",
    "load",
    "schemas",
    "state",
    "determinism",
    "reset",
    "errors_leave_state",
    "read_only",
    "snapshot",
    "close",
)

_NONDETERMINISM = (
    "the environment likely depends on object identity (hash() of objects, iteration order of a set of "
    "objects) or on something outside its init_config and calls; randomness and the clock are already "
    "seeded per session"
)


class ConformanceCheck(BaseModel):
    """One contract check: whether it passed and, when not, what to change."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    passed: bool
    message: str = ""
    details: list[str] = Field(default_factory=list)


class ConformanceReport(Record):
    """Per-check results of `check_env` for one bundle."""

    kind: ClassVar[str] = "env_conformance"

    bundle_key: str
    class_name: str
    checks: list[ConformanceCheck]
    sequences: int
    calls: int

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def failures(self) -> list[ConformanceCheck]:
        return [check for check in self.checks if not check.passed]

    def check(self, name: str) -> ConformanceCheck:
        for item in self.checks:
            if item.name == name:
                return item
        raise KeyError(f"no conformance check {name!r}; checks: {', '.join(CHECKS)}")

    def summary(self) -> str:
        lines = [
            f"{self.class_name}: {'PASS' if self.passed else 'FAIL'} ({self.sequences} sequences, {self.calls} calls)"
        ]
        for check in self.checks:
            mark = "ok " if check.passed else "FAIL"
            lines.append(f"  [{mark}] {check.name}{': ' + check.message if check.message else ''}")
        return "\n".join(lines)


def check_env(
    sandbox: Sandbox,
    bundle: Bundle,
    *,
    sequences: int = 12,
    steps: int = 10,
    seed: int = 0,
    init_config: Mapping[str, Any] | None = None,
) -> ConformanceReport:
    """Run the contract checks for `bundle` in `sandbox`; never raises for a misbehaving environment."""
    results: dict[str, ConformanceCheck] = {}
    total_calls = 0

    def finish() -> ConformanceReport:
        checks = [
            results.get(name)
            or ConformanceCheck(name=name, passed=False, message="not run: an earlier check failed")
            for name in CHECKS
        ]
        return ConformanceReport(
            bundle_key=bundle.key,
            class_name=bundle.class_name,
            checks=checks,
            sequences=sequences,
            calls=total_calls,
        )

    violations = validate_source(bundle.source)
    results["policy"] = ConformanceCheck(
        name="policy",
        passed=not violations,
        message=""
        if not violations
        else f"{len(violations)} construct(s) refused; the first: {violations[0]}",
        details=[str(v) for v in violations],
    )
    if violations:
        return finish()
    config = dict(bundle.s0 if init_config is None else init_config)
    try:
        first = sandbox.open(bundle, config)
        second = sandbox.open(bundle, config)
    except SandboxError as exc:
        results["load"] = ConformanceCheck(name="load", passed=False, message=exc.message)
        return finish()
    results["load"] = ConformanceCheck(name="load", passed=True)
    try:
        results["schemas"] = _check_schemas(bundle, first)
        results["state"] = _check_state(first)
        sampler = ArgumentSampler(bundle, config, seed=seed)
        plans = [sampler.calls(steps) for _ in range(sequences)]
        total_calls = sum(len(plan) for plan in plans) * 2
        initial = first.state_hash()
        results["determinism"] = _check_determinism(first, second, plans, initial)
        results["reset"] = _check_reset(first, plans, initial)
        results["errors_leave_state"], results["read_only"] = _check_step_effects(
            first, bundle, plans[: max(2, sequences // 3)]
        )
        results["snapshot"] = _check_snapshot(first, plans)
    except SandboxError as exc:
        name = next(n for n in CHECKS if n not in results)
        results[name] = ConformanceCheck(
            name=name, passed=False, message=f"the sandbox failed during the check: {exc.message}"
        )
        first.close()
        second.close()
        return finish()
    second.close()
    results["close"] = _check_close(first)
    return finish()


def _check_schemas(bundle: Bundle, session: Session) -> ConformanceCheck:
    description = session.describe()
    methods: dict[str, Any] = description.get("methods", {})
    problems: list[str] = [
        f"tool `{name}`: {error}" for name, error in description.get("schema_errors", {}).items()
    ]
    for tool in bundle.tools:
        function = tool["function"]
        name = function["name"]
        if name not in methods:
            problems.append(f"tool `{name}` is declared but the class has no public method `{name}`")
            continue
        parameters = function.get("parameters", {})
        if parameters.get("type", "object") != "object":
            problems.append(f"tool `{name}`: parameters must be an object schema")
            continue
        properties = set((parameters.get("properties") or {}).keys())
        required = set(parameters.get("required") or [])
        method = methods[name]
        accepted, needed = set(method["accepted"]), set(method["required"])
        if not method["var_keyword"]:
            for extra in sorted(properties - accepted):
                problems.append(f"tool `{name}`: schema property `{extra}` is not a parameter of the method")
        for missing in sorted(needed - properties):
            problems.append(
                f"tool `{name}`: method parameter `{missing}` has no default and is missing from the schema"
            )
        for loose in sorted(needed & properties - required):
            problems.append(
                f"tool `{name}`: method parameter `{loose}` has no default but the schema does not require it"
            )
        for unknown in sorted(required - properties):
            problems.append(f"tool `{name}`: schema requires `{unknown}` but does not define it")
    undeclared = sorted(set(methods) - set(bundle.tool_names))
    return ConformanceCheck(
        name="schemas",
        passed=not problems,
        message=""
        if not problems
        else f"{len(problems)} mismatch(es) between tools.json and the class; the first: {problems[0]}",
        details=problems
        + [f"public method `{m}` has no tool schema (agents cannot call it)" for m in undeclared],
    )


def _check_state(session: Session) -> ConformanceCheck:
    state = session.state()
    text = json.dumps(state, sort_keys=True)
    placeholders = sorted({part.split('"')[0] for part in text.split('"<')[1:]})
    if placeholders:
        return ConformanceCheck(
            name="state",
            passed=False,
            message=f"the state holds values with no JSON form ({', '.join(p.rstrip('>') for p in placeholders)}); "
            "keep dicts, lists, strings, numbers, booleans and dates in attributes",
        )
    return ConformanceCheck(name="state", passed=True)


def _check_determinism(
    first: Session, second: Session, plans: list[list[tuple[str, dict[str, Any]]]], initial: str
) -> ConformanceCheck:
    if second.state_hash() != initial:
        return ConformanceCheck(
            name="determinism",
            passed=False,
            message=f"two sessions built from the same s0 differ before any call; {_NONDETERMINISM}",
        )
    for index, plan in enumerate(plans):
        first.reset()
        second.reset()
        results_a = first.call_many(plan)
        results_b = second.call_many(plan)
        for step, (a, b) in enumerate(zip(results_a, results_b, strict=True)):
            if a.model_dump() != b.model_dump():
                return ConformanceCheck(
                    name="determinism",
                    passed=False,
                    message=f"sequence {index}, step {step} (`{plan[step][0]}`) returned different results in two "
                    f"fresh sessions; {_NONDETERMINISM}",
                )
        if first.state_hash() != second.state_hash():
            return ConformanceCheck(
                name="determinism",
                passed=False,
                message=f"sequence {index} left different states in two fresh sessions; {_NONDETERMINISM}",
            )
    return ConformanceCheck(name="determinism", passed=True)


def _check_reset(
    session: Session, plans: list[list[tuple[str, dict[str, Any]]]], initial: str
) -> ConformanceCheck:
    for index, plan in enumerate(plans[:3]):
        session.reset()
        session.call_many(plan)
        session.reset()
        if session.state_hash() != initial:
            return ConformanceCheck(
                name="reset",
                passed=False,
                message=f"after sequence {index}, reset did not restore the initial state; the constructor likely "
                "keeps references into shared module-level objects instead of building fresh tables from init_config",
            )
    return ConformanceCheck(name="reset", passed=True)


def _check_step_effects(
    session: Session, bundle: Bundle, plans: list[list[tuple[str, dict[str, Any]]]]
) -> tuple[ConformanceCheck, ConformanceCheck]:
    error_problems: list[str] = []
    read_problems: list[str] = []
    for plan in plans:
        session.reset()
        before = session.state_hash(fresh=True)
        for tool, args in plan:
            result = session.call(tool, args)
            after = session.state_hash(fresh=True)
            if not result.ok and after != before:
                error_problems.append(
                    f"`{tool}` failed with {result.error.code if result.error else '?'} but changed the state"
                )
            if result.ok and tool in bundle.read_tools and after != before:
                read_problems.append(f"`{tool}` is declared read-only but changed the state")
            before = after
    errors_check = ConformanceCheck(
        name="errors_leave_state",
        passed=not error_problems,
        message="" if not error_problems else error_problems[0] + " (the sandbox's rollback did not hold)",
        details=error_problems,
    )
    read_check = ConformanceCheck(
        name="read_only",
        passed=not read_problems,
        message=""
        if not read_problems
        else read_problems[0] + "; mark it as a write tool in spec.json or stop it writing",
        details=read_problems,
    )
    return errors_check, read_check


def _check_snapshot(session: Session, plans: list[list[tuple[str, dict[str, Any]]]]) -> ConformanceCheck:
    session.reset()
    session.call_many(plans[0][: len(plans[0]) // 2])
    marker = session.snapshot()
    before = session.state_hash()
    session.call_many(plans[-1])
    session.restore(marker)
    if session.state_hash() != before:
        return ConformanceCheck(
            name="snapshot",
            passed=False,
            message="restore did not return to the snapshot's state; the state likely holds objects that cannot be copied exactly",
        )
    return ConformanceCheck(name="snapshot", passed=True)


def _check_close(session: Session) -> ConformanceCheck:
    session.close()
    try:
        session.close()
    except Exception as exc:  # the contract says close is idempotent; any exception is the finding
        return ConformanceCheck(
            name="close", passed=False, message=f"a second close() raised {type(exc).__name__}: {exc}"
        )
    try:
        session.call(session.bundle.tool_names[0], {})
    except SessionClosed:
        return ConformanceCheck(name="close", passed=True)
    return ConformanceCheck(name="close", passed=False, message="a closed session still accepted a call")
