"""Grading an outcome against a task's rubric: the OmniaBench score contract, decided by code.

An outcome is what a run left behind: the final state, the final answer (a dict) and the calls it
made. Each rubric item with a deterministic check passes or fails; an item without one is unscored
(`None`) unless a judge is given — never silently 0. The score is earned / total over scored
items, and a task passes (Pass@1) only when every item is scored and the score is exactly 1.0.

General items that guard against harm (no collateral change, a tool not called) are constraints
on doing the task, not achievements: a run that achieved none of the task-specific items earns
nothing for having broken nothing, so a do-nothing run scores 0 (the vacuous-pass guard), while
the items themselves still report what they found.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agentomnia.tasks.models import Check, RubricItem, Task


class Outcome(BaseModel):
    final_state: dict[str, Any]
    answer: dict[str, Any] = Field(default_factory=dict)
    calls: list[tuple[str, dict[str, Any]]] = Field(default_factory=list)


class ItemResult(BaseModel):
    id: str
    passed: bool | None  # None: unscored (no check, no judge)
    weight: int
    detail: str = ""
    judged: bool = False


class Score(BaseModel):
    items: list[ItemResult]
    earned: int
    total: int
    unscored: int

    @property
    def value(self) -> float | None:
        return None if self.total == 0 else self.earned / self.total

    @property
    def passed(self) -> bool:
        return self.unscored == 0 and self.total > 0 and self.earned == self.total


class VerifierRunner(Protocol):
    """Runs `check_func(final_state)` code with `initial_state` in scope (the sandbox implements it)."""

    def __call__(
        self, code: str, initial_state: Mapping[str, Any], final_state: Mapping[str, Any]
    ) -> bool | None: ...


Judge = Callable[[RubricItem, Task, Outcome], bool | None]


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(value.split()).casefold()
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def values_match(actual: Any, expected: Any, tolerance: float = 0.0) -> bool:
    """Equality for graded answers: numbers within tolerance, strings case- and space-insensitive,
    lists as multisets of matching items, dicts key by key."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected or actual == expected
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return math.isclose(float(actual), float(expected), rel_tol=0, abs_tol=max(tolerance, 1e-9))
    if (
        isinstance(expected, str)
        and isinstance(actual, (int, float))
        or isinstance(actual, str)
        and isinstance(expected, (int, float))
    ):
        try:
            return math.isclose(float(actual), float(expected), rel_tol=0, abs_tol=max(tolerance, 1e-9))
        except (TypeError, ValueError):
            return False
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return False
        remaining = list(actual)
        for e in expected:
            hit = next((i for i, a in enumerate(remaining) if values_match(a, e, tolerance)), None)
            if hit is None:
                return False
            remaining.pop(hit)
        return True
    if isinstance(expected, dict) and isinstance(actual, dict):
        return set(expected) <= set(actual) and all(
            values_match(actual[k], v, tolerance) for k, v in expected.items()
        )
    return _norm(actual) == _norm(expected)


def _records(state: Mapping[str, Any], table: str | None) -> list[Mapping[str, Any]]:
    records = state.get(table or "") if table else None
    return list(records.values()) if isinstance(records, Mapping) else []


def _new_records(
    final: Mapping[str, Any], initial: Mapping[str, Any], table: str | None
) -> list[Mapping[str, Any]]:
    """The records of `table` whose keys the initial state does not hold."""
    rows, before = final.get(table or ""), initial.get(table or "")
    if not isinstance(rows, Mapping):
        return []
    old = before if isinstance(before, Mapping) else {}
    return [r for k, r in rows.items() if k not in old and isinstance(r, Mapping)]


def _matches(record: Mapping[str, Any], match: Mapping[str, Any], tolerance: float) -> bool:
    return all(values_match(record.get(k), v, tolerance) for k, v in match.items())


def call_matches(check: Check, tool: str, args: Mapping[str, Any]) -> bool:
    """A call is the one a `called` / `not_called` check names: its tool, with `args` as a subset."""
    return tool == check.tool and all(values_match(args.get(k), v) for k, v in check.args.items())


def run_check(
    check: Check,
    task: Task,
    outcome: Outcome,
    verifier: VerifierRunner | None = None,
) -> tuple[bool | None, str]:
    """(passed, detail); passed is None when the check cannot be decided (no verifier runner given)."""
    final, initial = outcome.final_state, task.init_config
    if check.kind in ("field_equals", "field_changed", "field_unchanged"):
        rec = (final.get(check.table or "") or {}).get(check.key or "")
        before = (initial.get(check.table or "") or {}).get(check.key or "")
        if not isinstance(rec, Mapping):
            return False, f"{check.table}[{check.key}] does not exist in the final state"
        value = rec.get(check.field or "")
        if check.kind == "field_equals":
            ok = values_match(value, check.value, check.tolerance)
            return ok, f"{check.table}[{check.key}].{check.field} is {value!r}, expected {check.value!r}"
        old = before.get(check.field or "") if isinstance(before, Mapping) else None
        changed = not values_match(value, old)
        ok = changed if check.kind == "field_changed" else not changed
        return ok, f"{check.table}[{check.key}].{check.field}: {old!r} -> {value!r}"
    if check.kind in ("record_exists", "record_absent", "count_equals"):
        hits = [r for r in _records(final, check.table) if _matches(r, check.match, check.tolerance)]
        if check.kind == "record_exists":
            # a record the run made: one that was already there earns nothing
            fresh = [
                r
                for r in _new_records(final, initial, check.table)
                if _matches(r, check.match, check.tolerance)
            ]
            return bool(fresh), f"{len(fresh)} new records in {check.table} match {check.match}"
        if check.kind == "record_absent":
            return not hits, f"{len(hits)} records in {check.table} match {check.match}"
        return len(
            hits
        ) == check.value, f"{len(hits)} records in {check.table} match {check.match}, expected {check.value}"
    if check.kind == "answer_equals":
        value = outcome.answer.get(check.field or "")
        return values_match(
            value, check.value, check.tolerance
        ), f"answer.{check.field} is {value!r}, expected {check.value!r}"
    if check.kind == "answer_contains":
        value = outcome.answer.get(check.field or "")
        wanted = check.value if isinstance(check.value, list) else [check.value]
        if isinstance(value, str):
            ok = all(_norm(str(w)) in _norm(value) for w in wanted)
        elif isinstance(value, list):
            ok = all(any(values_match(v, w, check.tolerance) for v in value) for w in wanted)
        else:
            ok = False
        return ok, f"answer.{check.field} is {value!r}, must contain {wanted!r}"
    if check.kind in ("called", "not_called"):
        made = any(call_matches(check, name, args) for name, args in outcome.calls)
        return (
            made if check.kind == "called" else not made
        ), f"{check.tool} {'called' if made else 'not called'}"
    if check.kind == "diff_within":
        allowed = {(a.get("table"), a.get("key")) for a in (check.value or []) if isinstance(a, Mapping)}
        stray = []
        for d in diff_states(initial, final):
            if not isinstance(initial.get(d["table"]), Mapping):
                continue  # scalar attributes (the logical clock) are not records
            new = d["key"] not in initial[d["table"]]
            if (d["table"], d["key"]) not in allowed and not (new and (d["table"], None) in allowed):
                stray.append(f"{d['table']}[{d['key']}]")
        return not stray, (
            "changed beyond the request: " + ", ".join(sorted(set(stray))[:5])
        ) if stray else "no collateral changes"
    if check.kind == "verifier":
        if not task.verifier_code:
            return False, "the task has no verifier code"
        if verifier is None:
            return None, "verifier code needs a sandbox runner"
        result = verifier(task.verifier_code, initial, final)
        return result, f"check_func returned {result!r}"
    return None, f"unknown check kind {check.kind!r}"


def grade(
    task: Task,
    outcome: Outcome,
    *,
    verifier: VerifierRunner | None = None,
    judge: Judge | None = None,
) -> Score:
    items: list[ItemResult] = []
    for item in task.rubric:
        if item.check is not None:
            passed, detail = run_check(item.check, task, outcome, verifier)
            judged = False
            if passed is None and judge is not None:  # a check that could not run: the judge decides it
                passed, detail, judged = judge(item, task, outcome), f"judged ({detail})", True
        elif judge is not None:
            passed, detail, judged = judge(item, task, outcome), "judged", True
        else:
            passed, detail, judged = None, "no deterministic check; needs a judge", False
        items.append(ItemResult(id=item.id, passed=passed, weight=item.weight, detail=detail, judged=judged))
    scored = [i for i in items if i.passed is not None]
    scopes = {item.id: item.scope for item in task.rubric}
    achieved = any(i.passed for i in scored if scopes[i.id] == "task")
    has_task_items = any(scope == "task" for scope in scopes.values())
    return Score(
        items=items,
        earned=sum(i.weight for i in scored if i.passed) if achieved or not has_task_items else 0,
        total=sum(i.weight for i in scored),
        unscored=len(items) - len(scored),
    )


def reference_outcome_passes(
    task: Task, outcome: Outcome, empty: Outcome, verifier: VerifierRunner | None = None
) -> tuple[bool, str]:
    """The oracle check: the reference scores 1.0 and the empty run does not."""
    ref = grade(task, outcome, verifier=verifier)
    if not ref.passed:
        failed = [f"{i.id}: {i.detail}" for i in ref.items if i.passed is not True]
        return False, "reference does not pass: " + "; ".join(failed[:3])
    blank = grade(task, empty, verifier=verifier)
    if blank.passed:
        return False, "the empty run passes too: the rubric checks nothing the task asks for"
    return True, ""


def empty_outcome(task: Task) -> Outcome:
    return Outcome(final_state=dict(task.init_config), answer={}, calls=[])


def diff_states(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-field differences between two states: {table, key, field, before, after}."""
    out: list[dict[str, Any]] = []
    for table in sorted(set(before) | set(after)):
        b, a = before.get(table), after.get(table)
        if not isinstance(b, Mapping) or not isinstance(a, Mapping):
            if b != a:
                out.append({"table": table, "key": None, "field": None, "before": b, "after": a})
            continue
        for key in sorted(set(b) | set(a)):
            rb, ra = b.get(key), a.get(key)
            if rb == ra:
                continue
            if not isinstance(rb, Mapping) or not isinstance(ra, Mapping):
                out.append({"table": table, "key": key, "field": None, "before": rb, "after": ra})
                continue
            for f in sorted(set(rb) | set(ra)):
                if rb.get(f) != ra.get(f):
                    out.append(
                        {"table": table, "key": key, "field": f, "before": rb.get(f), "after": ra.get(f)}
                    )
    return out


def items_by_scope(rubric: Sequence[RubricItem]) -> dict[str, list[RubricItem]]:
    out: dict[str, list[RubricItem]] = {"general": [], "task": []}
    for item in rubric:
        out[item.scope].append(item)
    return out
