"""Execution-grounded debugging of solution programs, and the canonical run that grounds a task.

A program runs only in the sandbox (`Sandbox.run_program`). Each attempt records the error and the
failed calls; a bounded repair loop then fixes what the trace shows (offline: rules that rewrite the
plan — a status guard for refused moves, reporting refusals as outcomes, a smaller page size; with a
model: the model rewrites the program from the trace). A program that still fails is dropped with its
reason. The accepted program is re-executed from the task's initial state in a fresh session: that
run's calls are the reference trajectory and its return value the ground-truth answer.

A fresh session is a new one or, with a `SessionSlot`, the slot's session reset to the run's initial
state: the same environment from the same config, without sending the environment's code again.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from agentomnia.envs.spec import EnvSpec, compound_of
from agentomnia.llm import LLM
from agentomnia.sandbox.bundle import Bundle
from agentomnia.sandbox.errors import SandboxError
from agentomnia.sandbox.policy import parse_python
from agentomnia.sandbox.results import ProgramCall, ProgramResult
from agentomnia.sandbox.sandbox import Sandbox
from agentomnia.sandbox.session import Session
from agentomnia.tasks.grading import diff_states
from agentomnia.tasks.models import ReferenceCall
from agentomnia.tasks.program.plan import ProgramPlan
from agentomnia.tasks.program.templates import render


class Attempt(BaseModel):
    round: int
    error: str | None = None
    failed_calls: list[str] = Field(default_factory=list)
    calls: int = 0
    repair: str | None = None


class Execution(BaseModel):
    """A program that ran cleanly, with its trace and end state."""

    source: str
    plan: ProgramPlan | None = None
    answer: Any = None
    calls: list[ProgramCall] = Field(default_factory=list)
    final_state: dict[str, Any] = Field(default_factory=dict)
    attempts: list[Attempt] = Field(default_factory=list)


class ControlFlow(BaseModel):
    loops: int
    branches: int

    @property
    def ok(self) -> bool:
        return self.loops >= 1 and self.branches >= 1


def control_flow(source: str) -> ControlFlow:
    """Loops and branches in a program's source (comprehension filters count as branches)."""
    tree = parse_python(source)
    loops = sum(isinstance(n, (ast.For, ast.While, ast.comprehension)) for n in ast.walk(tree))
    branches = sum(isinstance(n, (ast.If, ast.IfExp)) for n in ast.walk(tree))
    branches += sum(len(n.ifs) for n in ast.walk(tree) if isinstance(n, ast.comprehension))
    return ControlFlow(loops=loops, branches=branches)


class SessionSlot:
    """One session of a bundle, reused run after run: each `at` resets it to that run's initial
    state. A session the sandbox lost or closed (a worker failure) is replaced by a new one."""

    def __init__(self, sandbox: Sandbox, bundle: Bundle) -> None:
        self._sandbox = sandbox
        self._bundle = bundle
        self._session: Session | None = None

    def at(self, init_config: Mapping[str, Any]) -> Session:
        if self._session is not None:
            try:
                self._session.reset(init_config)
                return self._session
            except SandboxError:
                self._session.close()  # lost or broken: start over in a new session
        self._session = self._sandbox.open(self._bundle, init_config)
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None

    def __enter__(self) -> SessionSlot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_once(
    sandbox: Sandbox,
    bundle: Bundle,
    init_config: Mapping[str, Any],
    source: str,
    *,
    slot: SessionSlot | None = None,
) -> tuple[ProgramResult, dict[str, Any]]:
    if slot is not None:
        session = slot.at(init_config)
        return sandbox.run_program(source, session), session.state()
    session = sandbox.open(bundle, init_config)
    try:
        result = sandbox.run_program(source, session)
        return result, session.state()
    finally:
        session.close()


def _attempt(index: int, result: ProgramResult, writes: set[str]) -> Attempt:
    failed = [
        f"{c.tool}({json.dumps(c.arguments, sort_keys=True)[:120]}) -> {c.result.error.code if c.result.error else '?'}"
        for c in result.calls
        if not c.result.ok and c.tool in writes
    ]
    error = f"{result.error.code}: {result.error.message[:300]}" if result.error else None
    return Attempt(round=index, error=error, failed_calls=failed, calls=len(result.calls))


def rule_repair(plan: ProgramPlan, attempt: Attempt) -> tuple[ProgramPlan, str] | None:
    """The next plan for an error the trace explains, or None when no rule applies."""
    error = attempt.error or ""
    if "listing failed" in error and "limit" in error and plan.list_args.get("limit") != 20:
        return plan.model_copy(
            update={"list_args": {**plan.list_args, "limit": 20}}
        ), "page size lowered to 20"
    codes = {c.rsplit("-> ", 1)[-1] for c in attempt.failed_calls}
    if "write refused" in error or codes:
        if "invalid_transition" in codes and plan.write.allowed_from is not None and not plan.guard_status:
            return plan.model_copy(
                update={"guard_status": True}
            ), "guard added: skip records whose status cannot make the move"
        if not plan.record_refusals:
            return plan.model_copy(
                update={"record_refusals": True}
            ), f"refusals ({', '.join(sorted(codes)) or 'write'}) reported in the answer"
    return None


_FENCE = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)


def model_repair(llm: LLM, source: str, attempt: Attempt) -> str | None:
    """The model rewrites the program from its error trace; None if it returns no program."""
    prompt = (
        "This Python program defines solve(call) and runs against a tool environment; call(tool, **args) returns "
        '{"ok", "data", "error"}. It failed:\n'
        f"error: {attempt.error}\nfailed calls: {attempt.failed_calls[:8]}\n\nProgram:\n```python\n{source}```\n"
        "Return the corrected full program in one ```python block. Keep its goal; handle refusals explicitly."
    )
    try:
        text = llm.complete([{"role": "user", "content": prompt}], schema_name="program_repair").text
    except Exception:  # a model failure ends the repair loop for this program, not the run
        return None
    match = _FENCE.search(text)
    return match.group(1) if match else None


def debug_program(
    sandbox: Sandbox,
    bundle: Bundle,
    spec: EnvSpec,
    init_config: Mapping[str, Any],
    *,
    plan: ProgramPlan | None = None,
    source: str | None = None,
    llm: LLM | None = None,
    budget: int = 3,
    slot: SessionSlot | None = None,
) -> Execution | str:
    """Run, record, repair until the program runs cleanly; a string is the reason it was dropped."""
    writes = {t.name for t in spec.tools if t.kind == "write"}
    if plan is None and source is None:
        raise ValueError("debug_program needs a plan (offline) or a program source (model)")
    current = render(plan) if plan is not None else str(source)
    attempts: list[Attempt] = []
    for index in range(budget + 1):
        result, final = run_once(sandbox, bundle, init_config, current, slot=slot)
        attempt = _attempt(index, result, writes)
        # refused writes are fine once the program reports them as outcomes (the plan says so; a
        # generated program that ran to completion handled them itself)
        handled = plan.record_refusals if plan is not None else True
        if result.ok and (handled or not attempt.failed_calls):
            attempts.append(attempt)
            return Execution(
                source=current,
                plan=plan,
                answer=result.answer,
                calls=result.calls,
                final_state=final,
                attempts=attempts,
            )
        if index == budget:
            attempts.append(attempt)
            break
        if plan is not None:
            repaired = rule_repair(plan, attempt)
            if repaired is None:
                attempts.append(attempt)
                break
            plan, note = repaired
            current = render(plan)
        elif llm is not None:
            rewritten = model_repair(llm, current, attempt)
            if rewritten is None:
                attempts.append(attempt)
                break
            current, note = rewritten, "model rewrote the program from its trace"
        else:
            attempts.append(attempt)
            break
        attempts.append(attempt.model_copy(update={"repair": note}))
    last = attempts[-1]
    return f"unresolved after {len(attempts) - 1} repairs: {last.error or 'failed writes ' + '; '.join(last.failed_calls[:2])}"


def canonical_run(
    sandbox: Sandbox,
    bundle: Bundle,
    init_config: Mapping[str, Any],
    execution: Execution,
    *,
    slot: SessionSlot | None = None,
) -> Execution | str:
    """Re-execute the accepted program from the initial state; it must reproduce the same end state and answer."""
    result, final = run_once(sandbox, bundle, init_config, execution.source, slot=slot)
    if not result.ok:
        return f"re-execution from the initial state failed: {result.error.message if result.error else '?'}"
    if final != execution.final_state or result.answer != execution.answer:
        return "re-execution from the initial state is not deterministic (state or answer differ)"
    return execution.model_copy(update={"calls": result.calls, "answer": result.answer, "final_state": final})


def _find(value: Any, data: Any, path: str) -> str | None:
    if isinstance(data, Mapping):
        for k, v in data.items():
            hit = _find(value, v, f"{path}.{k}")
            if hit:
                return hit
    elif isinstance(data, list):
        for i, v in enumerate(data):
            hit = _find(value, v, f"{path}[{i}]")
            if hit:
                return hit
    elif data == value and not isinstance(data, bool):
        return path
    return None


def provenance(calls: Sequence[ProgramCall], init_config: Mapping[str, Any]) -> list[ReferenceCall]:
    """Reference calls whose arguments say where each value came from: an earlier output, s0, or a literal."""
    out: list[ReferenceCall] = []
    for i, call in enumerate(calls):
        sources: dict[str, str] = {}
        for param, value in call.arguments.items():
            found = None
            if isinstance(value, str):
                for j in range(i):
                    hit = _find(value, calls[j].result.data, "")
                    if hit:
                        found = f"out:{j}{hit}"
                        break
                if found is None:
                    hit = _find(value, {k: v for k, v in init_config.items() if isinstance(v, dict)}, "")
                    found = f"s0:{hit.lstrip('.')}" if hit else None
            sources[param] = found or "literal"
        out.append(ReferenceCall(tool=call.tool, args=dict(call.arguments), sources=sources))
    return out


def alignment_problems(
    spec: EnvSpec, calls: Sequence[ProgramCall], before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[str]:
    """Trace-state alignment: every successful write changed its record, and nothing changed unwritten."""
    tools = {t.name: t for t in spec.tools}
    written: set[tuple[str, str]] = set()
    side_tables: set[str] = set()  # where a compound tool's declared effects may change other records
    for c in calls:
        tool = tools.get(c.tool)
        if tool is None or tool.kind != "write" or not c.result.ok:
            continue
        key_param = tool.binding.get("key")
        table = spec.entity(tool.entity).table
        if key_param and key_param in c.arguments:
            written.add((table, str(c.arguments[key_param])))
        compound = compound_of(tool)
        if compound is not None:
            side_tables |= {spec.entity(e).table for e in compound.get("touches", []) if e}
    changed = {(d["table"], str(d["key"])) for d in diff_states(before, after) if d["table"] != "now"}
    problems = [f"{t}[{k}] was written but did not change" for t, k in sorted(written - changed)]
    problems += [
        f"{t}[{k}] changed without a write to it"
        for t, k in sorted(changed - written)
        if t not in side_tables
    ]
    return problems
