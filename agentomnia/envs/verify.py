"""Three-level verification of an environment in the sandbox (paper §4.2.4), on top of its contract.

- contract: `check_env` (the environment protocol as executable checks: policy, load, schemas,
  JSON state, determinism, reset, failed calls and reads leave the state alone, snapshots, close)
  runs on every bundle first, with a small call budget; the levels below check what the spec says;
- initialization: the class instantiates with s0, the state it holds is s0, and s0 keeps every
  field-level invariant (types, enums, references, rules);
- tool: every tool is exercised by generated unit checks — a valid call succeeds and changes state
  only as its spec says (reads change nothing; writes touch only their entity's table, or for a
  compound tool the tables its steps reach, each changed exactly as the spec's reference semantics
  say, and the record reflects the arguments), and invalid calls (a missing argument, a wrong type,
  an unknown id, and for a compound tool a call that breaks one of its requirements) return the
  protocol's error (`precondition_failed` for a broken requirement) and leave the state exactly as
  it was; every state a valid write leaves keeps every invariant;
- environment: random multi-tool rollouts from s0 never reach a state that breaks an invariant or a
  reference, and replaying the same calls from the same s0 in a fresh session gives the same state
  hashes step by step.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agentomnia.envs.calls import breaking_calls, invalid_calls, target_view, valid_calls
from agentomnia.envs.spec import (
    EnvSpec,
    ToolSpec,
    apply_steps,
    compound_of,
    compound_value,
    requirement_failure,
)
from agentomnia.envs.state import CLOCK, CLOCK_START, state_violations
from agentomnia.records import ToolResult
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.conformance import ConformanceReport, check_env
from agentomnia.sandbox.errors import SandboxError
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Batch, Session


class LevelResult(BaseModel):
    passed: bool
    checks: int = 0
    failures: list[str] = Field(default_factory=list)


class ToolCheck(BaseModel):
    name: str
    passed: bool
    checks: int = 0
    failures: list[str] = Field(default_factory=list)


# The contract's call budget inside verification: the levels below exercise every tool and replay
# long rollouts in two sessions, so one short sequence is enough for what only the contract looks
# at (schemas against methods, a JSON state, reset, snapshots, close) and keeps it to a few
# percent of a build.
CONTRACT_SEQUENCES = 1
CONTRACT_STEPS = 8


class ContractResult(BaseModel):
    """`check_env`'s verdict on a bundle, as `verification.json` keeps it."""

    passed: bool
    checks: dict[str, bool]  # every contract check, in order, and whether it passed
    problems: list[str] = Field(default_factory=list)  # "check: what failed (the likely cause)"
    calls: int = 0

    @classmethod
    def of(cls, report: ConformanceReport) -> ContractResult:
        return cls(
            passed=report.passed,
            checks={c.name: c.passed for c in report.checks},
            problems=[f"{c.name}: {c.message}" for c in report.failures()],
            calls=report.calls,
        )


class VerificationReport(BaseModel):
    init: LevelResult
    tool: LevelResult
    env: LevelResult
    tools: list[ToolCheck] = Field(default_factory=list)
    contract: ContractResult | None = None  # None: the contract was not run, which does not pass
    seconds: float = 0.0

    @property
    def levels_passed(self) -> bool:
        return self.init.passed and self.tool.passed and self.env.passed

    @property
    def passed(self) -> bool:
        return self.levels_passed and self.contract is not None and self.contract.passed

    def failing_tools(self) -> list[ToolCheck]:
        return [t for t in self.tools if not t.passed]


def _changed_tables(before: Mapping[str, Any], after: Mapping[str, Any]) -> set[str]:
    return {k for k in set(before) | set(after) if before.get(k) != after.get(k)}


def check_initialization(
    session: Session,
    spec: EnvSpec,
    s0: Mapping[str, Any],
    state: Mapping[str, Any] | None = None,
) -> LevelResult:
    """The class holds s0 after construction, and s0 keeps every invariant (`state`: the session's
    state when the caller already has it)."""
    failures: list[str] = []
    if state is None:
        state = session.state()
    for entity in spec.entities:
        if state.get(entity.table) != s0.get(entity.table):
            failures.append(
                f"after construction, table {entity.table} differs from s0: the class ignores init_config"
            )
    failures += [f"s0 breaks an invariant: {v}" for v in state_violations(spec, state)[:10]]
    return LevelResult(passed=not failures, checks=len(spec.entities) + 1, failures=failures)


def _reads_back(tool: ToolSpec) -> bool:
    """A seed's update whose arguments map onto nothing in the state answers with the record unchanged."""
    return tool.origin == "seed" and tool.op == "update" and not tool.binding.get("fields")


def _already_so(tool: ToolSpec, args: Mapping[str, Any], table: Mapping[str, Any]) -> bool:
    """An update whose arguments equal what the record already holds changes nothing, rightly."""
    key = tool.binding.get("key")
    if tool.op != "update" or key is None or key not in args:
        return False
    record = table.get(str(args[key]))
    if not isinstance(record, dict):
        return False
    fields = tool.binding.get("fields", {})
    return all(record.get(attr) == args[p] for p, attr in fields.items() if p in args)


def touched_tables(spec: EnvSpec, tool: ToolSpec) -> set[str]:
    """The tables a write may change: its own entity's, and those its compound steps reach."""
    found = compound_of(tool) or {}
    return {spec.entity(tool.entity).table} | {spec.entity(n).table for n in found.get("touches", [])}


def effect_problems(
    spec: EnvSpec,
    tool: ToolSpec,
    args: Mapping[str, Any],
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    result: Any,
) -> list[str]:
    """What a compound tool's call did to each entity it touches, against the spec's reference
    semantics (`spec.apply_steps`) run on the state before the call: every set, add, subtract and
    `each` lands where it should and nowhere else, and every `create` step made exactly one linked
    record with the declared values."""
    found = compound_of(tool)
    if found is None or not found.get("steps"):
        return []
    e = spec.entity(tool.entity)
    data = result if isinstance(result, dict) else {}
    key = data.get(e.key) if tool.op != "delete" else args.get(tool.binding.get("key", ""))
    if key is None:
        return [f"the call answered no {e.key}, so its effects cannot be traced"]
    key = str(key)
    now = str(before.get(CLOCK) or CLOCK_START)
    staged = {k: dict(v) if isinstance(v, dict) else v for k, v in before.items()}
    if tool.op == "create":
        pre = dict(after.get(e.table, {}).get(key) or {})
    else:
        pre = target_view(spec, before, tool, args) or {}
    staged[e.table] = {**staged.get(e.table, {}), key: pre}
    expected = apply_steps(spec, staged, e.name, key, now, found["steps"])
    if tool.op == "delete":
        expected[e.table] = {k: v for k, v in expected[e.table].items() if k != key}
    problems: list[str] = []
    creates: dict[str, list[dict[str, Any]]] = {}
    for step in found["steps"]:
        if step["kind"] == "create":
            creates.setdefault(step["entity"], [])
            when = step.get("when")
            if not when or requirement_failure(spec, staged, e.name, pre, when, now) is None:
                creates[step["entity"]].append(step)
    for name in found.get("touches", []):
        table = spec.entity(name).table
        if name in creates:
            continue
        want, got = expected.get(table) or {}, after.get(table) or {}
        for k in sorted(set(want) | set(got)):
            if want.get(k) != got.get(k):
                diff = sorted(
                    a
                    for a in set(want.get(k) or {}) | set(got.get(k) or {})
                    if (want.get(k) or {}).get(a) != (got.get(k) or {}).get(a)
                )
                problems.append(
                    f"{table}[{k!r}] should differ from before only as the steps say; fields {diff[:4]} do not"
                )
                break
    target = (expected.get(e.table) or {}).get(key) or pre
    for side, steps in creates.items():
        table = spec.entity(side).table
        new = sorted(set(after.get(table) or {}) - set(before.get(table) or {}))
        if len(new) != len(steps):
            problems.append(f"expected {len(steps)} new {side} record(s), found {len(new)}")
            continue
        for k, step in zip(new, steps, strict=True):
            record = after[table][k]
            for attr, value in step["fields"].items():
                want = compound_value(spec, expected, e.name, target, value, now)
                if record.get(attr) != want and str(record.get(attr)) != str(want):
                    problems.append(f"new {side} {k}: {attr} is {record.get(attr)!r}, the step says {want!r}")
    return problems


def check_tool(
    session: Session,
    spec: EnvSpec,
    tool: ToolSpec,
    s0: Mapping[str, Any],
    base: Mapping[str, Any],
    base_hash: str,
    rng: random.Random,
) -> ToolCheck:
    """Unit checks of one tool. The session is at s0 on entry and on exit.

    One round trip runs the valid candidates until one succeeds, then takes what the check needs
    (a fresh hash after a read; the state, then a reset, after a write), then the invalid calls and
    a hash showing they left the state alone.
    """
    failures: list[str] = []
    table = spec.entity(tool.entity).table
    # The candidates are drawn up front, noting where `rng` stood after each; it is then put back
    # where trying them one at a time would have left it (at the first success), so later draws do
    # not depend on batching.
    candidates: list[dict[str, Any]] = []
    rng_after: list[tuple[Any, ...]] = []
    for args in valid_calls(spec, s0, tool, rng):
        candidates.append(args)
        rng_after.append(rng.getstate())
    bad = invalid_calls(spec, s0, tool) + breaking_calls(spec, s0, tool)
    target = None if session.init_config == s0 else s0  # None: reset to the config it holds, s0
    batch = Batch()
    tried_at = batch.calls([(tool.name, args) for args in candidates], first_ok=True)
    # A refused write is rolled back by the sandbox, which compares the state to its copy, so the
    # cached hash stands; reads have no such copy, so their hashes are computed afresh.
    reads = tool.kind == "read"
    if reads:
        after_at = batch.hash(fresh=True, if_ok=True)
    else:
        after_at = batch.state(if_ok=True)
        batch.reset(target, if_ok=True)
    refused_at = batch.calls([(tool.name, args) for _, args in bad]) if bad else -1
    final_at = batch.hash(fresh=reads) if bad else -1
    answers = session.run(batch)
    tried: list[ToolResult] = answers[tried_at]
    succeeded = bool(tried) and tried[-1].ok
    if succeeded:
        rng.setstate(rng_after[len(tried) - 1])
    checks = len(tried)
    attempts = [  # what went wrong first, so that a long call cut short still says it
        f"{result.error.code if result.error else '?'}: {result.error.message if result.error else ''}"[:160]
        + f" <- {args}"[:140]
        for args, result in zip(candidates, tried, strict=False)
        if not result.ok
    ]
    changed_by_read = False
    if succeeded and reads:
        if answers[after_at] != base_hash:
            failures.append("read tool changed the state")
            changed_by_read = True
    elif succeeded:
        args = candidates[len(tried) - 1]
        result = tried[-1]
        after, _ = answers[after_at]
        changed = _changed_tables(base, after)
        if not changed and not _reads_back(tool) and not _already_so(tool, args, base.get(table) or {}):
            failures.append(f"write succeeded but changed nothing: {args}")
        elif changed - touched_tables(spec, tool) - {"now"}:
            allowed = touched_tables(spec, tool)
            failures.append(f"write touched tables beyond {sorted(allowed)}: {sorted(changed - allowed)}")
        failures += effect_problems(spec, tool, args, base, after, result.data)
        record = result.data if isinstance(result.data, dict) else {}
        for param, attr in tool.binding.get("fields", {}).items():
            if param in args and record.get(attr) != args[param] and tool.op in ("create", "update"):
                failures.append(
                    f"{param}={args[param]!r} was not stored in {attr} (found {record.get(attr)!r})"
                )
        problems = state_violations(spec, after, tables=changed)
        if problems:
            failures.append(f"valid call left a broken state: {problems[0]}")
    if not succeeded:
        failures.append(
            "no valid call succeeded: "
            + (attempts[0] if attempts else "no arguments could be grounded in s0")
        )
    if bad:
        refused: list[ToolResult] = answers[refused_at]
        final_hash: str = answers[final_at]
        if changed_by_read:
            # The invalid calls must start from s0: put it back and run them again.
            redo = Batch()
            redo.reset(target)
            refused_at, final_at = redo.calls([(tool.name, args) for _, args in bad]), redo.hash(fresh=reads)
            again = session.run(redo)
            refused, final_hash = again[refused_at], again[final_at]
        checks += len(bad)
        for (what, _), result in zip(bad, refused, strict=True):
            if result.ok:
                failures.append(f"accepted a call with {what}")
            elif what == "breaks a requirement" and (
                result.error is None or result.error.code != "precondition_failed"
            ):
                code = result.error.code if result.error else "?"
                failures.append(
                    f"a call that breaks a requirement was refused as {code}, not precondition_failed"
                )
        if final_hash != base_hash:
            failures.append("a refused call changed the state")
            session.reset(s0)
    elif changed_by_read:
        session.reset(s0)
    return ToolCheck(name=tool.name, passed=not failures, checks=checks, failures=failures)


def random_rollout(
    spec: EnvSpec, state: Mapping[str, Any], rng: random.Random, steps: int
) -> list[tuple[str, dict[str, Any]]]:
    """A sequence of calls chosen up front from s0 (mostly valid, some invalid); ids may go stale as writes happen."""
    calls: list[tuple[str, dict[str, Any]]] = []
    tools = list(spec.tools)
    for _ in range(steps):
        tool = rng.choice(tools)
        if rng.random() < 0.2:
            bad = invalid_calls(spec, state, tool)
            if bad:
                calls.append((tool.name, rng.choice(bad)[1]))
                continue
        args = next(valid_calls(spec, state, tool, rng, tries=1), None)
        if args is not None:
            calls.append((tool.name, args))
    return calls


def check_environment(
    sandbox: Sandbox,
    bundle: Bundle,
    spec: EnvSpec,
    s0: Mapping[str, Any],
    rng: random.Random,
    rollouts: int,
    steps: int,
) -> tuple[LevelResult, list[str]]:
    """Rollouts keep every invariant; replays are deterministic. Returns the tools seen in failing steps.

    Each rollout runs in one round trip per session; only a rollout that ends broken or diverges is
    replayed call by call to find the step (and so the tool) responsible.
    """
    failures: list[str] = []
    suspects: list[str] = []
    checks = 0
    # What changed from a valid s0 is all a rollout can have broken, so only the changed tables
    # are checked (initialization has checked s0 when `verify` calls this; otherwise check here).
    s0_valid = not state_violations(spec, s0)
    first = sandbox.open(bundle, s0)
    second = sandbox.open(bundle, s0)
    try:
        for r in range(rollouts):
            calls = random_rollout(spec, s0, rng, steps)
            checks += len(calls)
            # Both sessions were opened at s0, so a plain reset goes back to it.
            mine, theirs = Batch(), Batch()
            for batch in (mine, theirs):
                batch.reset()
                batch.calls(calls)
            final_at, hash_at = mine.state(), mine.hash()
            other_at = theirs.hash()
            answers = first.run(mine)
            final, _ = answers[final_at]
            broken = state_violations(spec, final, tables=_changed_tables(s0, final) if s0_valid else None)
            diverged = answers[hash_at] != second.run(theirs)[other_at]
            if not broken and not diverged:
                continue
            first.reset(s0)
            second.reset(s0)
            for step, (name, args) in enumerate(calls):
                first.call(name, args)
                second.call(name, args)
                if broken and state_violations(spec, first.state()):
                    failures.append(f"rollout {r}: after {name}({args}) the state breaks: {broken[0]}")
                    suspects.append(name)
                    break
                if diverged and first.state_hash() != second.state_hash():
                    failures.append(f"rollout {r}: replay diverges at step {step} ({name})")
                    suspects.append(name)
                    break
    finally:
        first.close()
        second.close()
    return LevelResult(passed=not failures, checks=checks, failures=failures[:10]), suspects


def verify(
    sandbox: Sandbox,
    bundle: Bundle,
    spec: EnvSpec,
    s0: Mapping[str, Any],
    *,
    seed: int = 0,
    rollouts: int = 6,
    steps: int = 12,
) -> tuple[VerificationReport, list[str]]:
    """The contract, then all three levels; the second value lists tools implicated in
    environment-level failures."""
    started = time.perf_counter()
    contract = ContractResult.of(
        check_env(
            sandbox, bundle, sequences=CONTRACT_SEQUENCES, steps=CONTRACT_STEPS, seed=seed, init_config=s0
        )
    )
    rng = random.Random(seed)
    try:
        session = sandbox.open(bundle, s0)
    except SandboxError as exc:
        failed = LevelResult(passed=False, failures=[f"the class does not load: {exc}"])
        skipped = LevelResult(passed=False, failures=["not run: initialization failed"])
        return VerificationReport(
            init=failed, tool=skipped, env=skipped, contract=contract, seconds=time.perf_counter() - started
        ), []
    try:
        base, base_hash = session.state_with_hash()
        init = check_initialization(session, spec, s0, base)
        tool_checks = []
        if init.passed:
            tool_checks = [check_tool(session, spec, t, s0, base, base_hash, rng) for t in spec.tools]
    finally:
        session.close()
    bad = [t for t in tool_checks if not t.passed]
    tool_level = LevelResult(
        passed=init.passed and not bad,
        checks=sum(t.checks for t in tool_checks),
        failures=[f"{t.name}: {t.failures[0]}" for t in bad][:20],
    )
    suspects: list[str] = []
    if init.passed and not bad:
        env_level, suspects = check_environment(sandbox, bundle, spec, s0, rng, rollouts, steps)
    else:
        env_level = LevelResult(passed=False, failures=["not run: lower levels failed"])
    report = VerificationReport(
        init=init,
        tool=tool_level,
        env=env_level,
        tools=tool_checks,
        contract=contract,
        seconds=round(time.perf_counter() - started, 3),
    )
    return report, suspects


def record_verdict(record: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """Whether a verification record passes the contract and all three levels, and if not, why.

    `record` is a bundle's `verification.json` or a row of an environments round's
    `verification.parquet` (whose nested columns may still be JSON text). A record without a
    contract section predates the contract running on every bundle and does not pass.
    """

    def field(name: str) -> Any:
        value = record.get(name)
        return json.loads(value) if isinstance(value, str) else value

    problems: list[str] = []
    levels, failures = field("levels") or {}, field("failures") or {}
    for level in ("init", "tool", "env"):
        if not levels.get(level):
            why = (failures.get(level) or ["no failure recorded"])[0]
            problems.append(f"{level} level failed: {why}")
    contract = field("contract")
    if not contract:
        problems.append(
            "no contract result (verified before check_env ran on every bundle); rebuild the environment"
        )
    elif not contract.get("passed"):
        problems += [f"contract {p}" for p in contract.get("problems") or ["failed"]]
    if not record.get("verified") and not problems:
        problems.append("the record says it is not verified")
    return not problems, problems


def bundle_verdict(bundle: str | Path) -> tuple[bool, list[str]]:
    """`record_verdict` of a bundle folder's `verification.json` (or of that file's path)."""
    path = Path(bundle)
    file = path / "verification.json" if path.is_dir() else path
    if not file.is_file():
        return False, [f"{file} does not exist; the bundle was not written by a verified build"]
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return False, [f"{file} cannot be read: {exc}"]
    if not isinstance(record, dict):
        return False, [f"{file} does not hold a verification record (an object)"]
    return record_verdict(record)


def bundle_for(spec: EnvSpec, source: str, s0: Mapping[str, Any]) -> Bundle:
    return Bundle.from_source(
        source,
        [t.openai() for t in spec.tools],
        dict(s0),
        class_name=spec.class_name,
        read_tools=[t.name for t in spec.tools if t.kind == "read"],
    )


def with_tools(spec: EnvSpec, tools: Sequence[ToolSpec]) -> EnvSpec:
    """The spec with another tool list (and so another content id)."""
    data = spec.model_dump(exclude={"id", "tools"})
    return EnvSpec.model_validate({**data, "tools": [t.model_dump() for t in tools]})
