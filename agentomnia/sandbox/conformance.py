"""`check_env`: the environment contract as executable checks, run against a live sandbox.

Every synthesized environment passes it: the three-level verification (`envs.verify`) runs it on
each bundle it builds, its result lands in the bundle's `verification.json`, and the `environments`
asset check reads it from there. Each check says what failed and names the likely cause, so a
repair step (or a person) knows what to change:

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
- `snapshot`: restore returns exactly to the snapshot (skipped, and so passed, for an environment
  without the snapshot capability);
- `close`: closing twice is safe and a closed session refuses calls.

The checks program against the `Environment` protocol and its capabilities, and travel in batches:
the whole contract costs a handful of round trips, cheap enough to run on every build.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import Record
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.environment import Call, Environment, SupportsSnapshot, call_all, run_batch
from agentomnia.sandbox.errors import PolicyError, SandboxError, SessionClosed
from agentomnia.sandbox.policy import prepare
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Batch, Session
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

    results["policy"] = _check_policy(bundle)
    if not results["policy"].passed:
        return finish()
    config = dict(bundle.s0 if init_config is None else init_config)
    try:
        first = sandbox.open(bundle, config)
    except SandboxError as exc:
        results["load"] = ConformanceCheck(name="load", passed=False, message=exc.message)
        return finish()
    try:
        second = sandbox.open(bundle, config)
    except SandboxError as exc:
        first.close()
        results["load"] = ConformanceCheck(name="load", passed=False, message=exc.message)
        return finish()
    results["load"] = ConformanceCheck(name="load", passed=True)
    try:
        results["schemas"] = _check_schemas(bundle, first)
        sampler = ArgumentSampler(bundle, config, seed=seed)
        plans = [sampler.calls(steps) for _ in range(sequences)]
        total_calls = sum(len(plan) for plan in plans) * 2
        state, replayed = _check_replays(first, second, bundle, plans)
        results["state"] = _check_state(state)
        results.update(replayed)
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
    results["close"] = _check_close(first, bundle)
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


_PLACEHOLDER = re.compile(r'"<([A-Za-z_][A-Za-z0-9_]*)>"')


def _check_state(state: Mapping[str, Any]) -> ConformanceCheck:
    # a value with no JSON form comes back as its type's name alone (`"<function>"`, see
    # `statehash._leaf`); a string that merely starts with "<" (an HTML e-mail body) is a value
    text = json.dumps(state, sort_keys=True)
    placeholders = sorted(set(_PLACEHOLDER.findall(text)))
    if placeholders:
        return ConformanceCheck(
            name="state",
            passed=False,
            message=f"the state holds values with no JSON form ({', '.join(placeholders)}); "
            "keep dicts, lists, strings, numbers, booleans and dates in attributes",
        )
    return ConformanceCheck(name="state", passed=True)


def _check_policy(bundle: Bundle) -> ConformanceCheck:
    # `prepare` is the check the sandbox runs before loading code, and remembers code that passed:
    # after a build has opened the bundle, this costs a dictionary lookup instead of a parse.
    try:
        prepare(bundle.source, "env", label=f"environment `{bundle.class_name}`")
    except PolicyError as exc:
        violations = exc.violations
        return ConformanceCheck(
            name="policy",
            passed=False,
            message=f"{len(violations)} construct(s) refused; the first: {violations[0]}"
            if violations
            else exc.message,
            details=[str(v) for v in violations],
        )
    return ConformanceCheck(name="policy", passed=True)


Plan = Sequence[Call]


def _check_replays(
    first: Environment, second: Environment, bundle: Bundle, plans: Sequence[Plan]
) -> tuple[dict[str, Any], dict[str, ConformanceCheck]]:
    """The initial state, and determinism, reset and the effects of single steps, from one batch
    per session.

    `first` runs each call alone with a fresh state hash after it (a failed call and a read must
    leave the hash where it was); `second` runs each plan as one list. After each plan both report
    their state hash (they must agree), reset, and the hash after the reset (it must be the
    initial one).
    """
    mine, theirs = Batch(), Batch()
    start, their_start = mine.state(), theirs.hash(fresh=True)
    steps_at, ends_at = [], []
    for plan in plans:
        steps_at.append([(mine.calls([call]), mine.hash(fresh=True)) for call in plan])
        mine.reset()
        ends_at.append((theirs.calls(plan), theirs.hash(fresh=True), mine.hash(fresh=True)))
        theirs.reset()
    answers, other = run_batch(first, mine), run_batch(second, theirs)
    state, initial = answers[start]
    if other[their_start] != initial:
        not_run = "not run: two fresh sessions already differ"
        return state, {
            "determinism": ConformanceCheck(
                name="determinism",
                passed=False,
                message=f"two sessions built from the same s0 differ before any call; {_NONDETERMINISM}",
            ),
            **{name: ConformanceCheck(name=name, passed=False, message=not_run) for name in _REPLAYED[1:]},
        }
    found: dict[str, str] = {}
    error_problems: list[str] = []
    read_problems: list[str] = []
    before = initial
    for index, (plan, steps, (listed_at, hash_at, reset_at)) in enumerate(
        zip(plans, steps_at, ends_at, strict=True)
    ):
        for step, ((tool, _), (called_at, hashed_at), listed) in enumerate(
            zip(plan, steps, other[listed_at], strict=True)
        ):
            (result,) = answers[called_at]
            after = answers[hashed_at]
            if not result.ok and after != before:
                error_problems.append(
                    f"`{tool}` failed with {result.error.code if result.error else '?'} but changed the state"
                )
            if result.ok and tool in bundle.read_tools and after != before:
                read_problems.append(f"`{tool}` is declared read-only but changed the state")
            if "determinism" not in found and result.model_dump() != listed.model_dump():
                found["determinism"] = (
                    f"sequence {index}, step {step} (`{tool}`) returned different results in two fresh "
                    f"sessions; {_NONDETERMINISM}"
                )
            before = after
        if "determinism" not in found and before != other[hash_at]:
            found["determinism"] = (
                f"sequence {index} left different states in two fresh sessions; {_NONDETERMINISM}"
            )
        before = answers[reset_at]
        if "reset" not in found and before != initial:
            found["reset"] = (
                f"after sequence {index}, reset did not restore the initial state; the constructor likely keeps "
                "references into shared module-level objects instead of building fresh tables from init_config"
            )
    if error_problems:
        found["errors_leave_state"] = error_problems[0] + " (the sandbox's rollback did not hold)"
    if read_problems:
        found["read_only"] = read_problems[0] + "; mark it as a write tool in spec.json or stop it writing"
    details = {"errors_leave_state": error_problems, "read_only": read_problems}
    return state, {
        name: ConformanceCheck(
            name=name, passed=name not in found, message=found.get(name, ""), details=details.get(name, [])
        )
        for name in _REPLAYED
    }


_REPLAYED = ("determinism", "reset", "errors_leave_state", "read_only")


def _check_snapshot(env: Environment, plans: Sequence[Plan]) -> ConformanceCheck:
    if not isinstance(env, SupportsSnapshot):
        return ConformanceCheck(
            name="snapshot", passed=True, message="skipped: the environment offers no snapshots"
        )
    # `_check_replays` left the environment reset, at its initial state.
    call_all(env, plans[0][: len(plans[0]) // 2])
    marker = env.snapshot()
    batch = Batch()
    before_at = batch.hash()
    batch.calls(plans[-1])
    before = run_batch(env, batch)[before_at]
    env.restore(marker)
    if env.state_hash() != before:
        return ConformanceCheck(
            name="snapshot",
            passed=False,
            message="restore did not return to the snapshot's state; the state likely holds objects that cannot be copied exactly",
        )
    return ConformanceCheck(name="snapshot", passed=True)


def _check_close(env: Environment, bundle: Bundle) -> ConformanceCheck:
    env.close()
    try:
        env.close()
    except Exception as exc:  # the contract says close is idempotent; any exception is the finding
        return ConformanceCheck(
            name="close", passed=False, message=f"a second close() raised {type(exc).__name__}: {exc}"
        )
    try:
        env.call(bundle.tool_names[0], {})
    except SessionClosed:
        return ConformanceCheck(name="close", passed=True)
    return ConformanceCheck(name="close", passed=False, message="a closed session still accepted a call")
