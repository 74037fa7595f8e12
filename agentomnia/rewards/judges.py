"""Judges: rubric decisions from what a run *said and did*, without looking at the end state.

A judge (an LLM, or a reward model) sees the request, the rubric item's text, the calls and the
final answer — the transcript — and must decide the item the way a code check would from the
state. Calibration (`calibration.judge_calibration`) measures how far such a judge can be trusted
with RL rewards. In LLM mode the judge is `trajectories.quality.rubric_judge`; offline it is
`transcript_judge` here: a deterministic reader of the transcript that believes a change happened
when a call asked for it. It is right when calls succeed and wrong in the ways transcript judges
are wrong (a refused write, a value overwritten later, a change made to the wrong record), which is
what the calibration metrics are there to expose.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from typing import Any

from agentomnia.tasks.grading import Judge, Outcome, values_match
from agentomnia.tasks.models import RubricItem, Task

_FIELD_IS = re.compile(r"^(?P<table>\w+)\[(?P<key>[^\]]+)\]\.(?P<field>\w+) is (?P<value>.+?) \(was .*\)\.?$")
_REMOVED = re.compile(r"^The .+ (?P<key>\S+) has been removed\.?$")
_CREATED = re.compile(r"^A new record in (?P<table>\w+) has (?P<fields>\{.*\})\.?$")
_ANSWER = re.compile(r"^The answer gives .* as (?P<value>.+) \(field `(?P<field>[^`]+)`\)\.?$")
_UNCHANGED = re.compile(r"^Nothing outside the requested records was changed\.?$")
_WRITE_VERBS = ("create", "add", "new", "insert", "register", "open", "book", "submit", "place")
_DELETE_VERBS = ("delete", "remove", "cancel", "archive", "drop", "close", "void")


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        return text.strip().strip("'\"")


def _values(data: Any) -> Iterable[Any]:
    if isinstance(data, Mapping):
        for v in data.values():
            yield from _values(v)
    elif isinstance(data, (list, tuple)):
        for v in data:
            yield from _values(v)
    else:
        yield data


def _mentions(args: Mapping[str, Any], value: Any) -> bool:
    return any(values_match(v, value, 0.01) for v in _values(args))


def _field_set(item_text: str, outcome: Outcome) -> bool | None:
    m = _FIELD_IS.match(item_text)
    if m is None:
        return None
    key, field, value = m["key"], m["field"], _literal(m["value"])
    # the last call that names both the record and the field decides, as a reader of the log would
    for _tool, args in reversed(outcome.calls):
        if _mentions(args, key) and (field in args or any(field in str(k) for k in args)):
            return _mentions(args, value)
    return any(_mentions(args, key) and _mentions(args, value) for _tool, args in outcome.calls)


def _removed(item_text: str, outcome: Outcome) -> bool | None:
    m = _REMOVED.match(item_text)
    if m is None:
        return None
    key = m["key"]
    return any(
        _mentions(args, key) and any(v in tool.lower() for v in _DELETE_VERBS) for tool, args in outcome.calls
    )


def _created(item_text: str, outcome: Outcome) -> bool | None:
    m = _CREATED.match(item_text)
    if m is None:
        return None
    fields = _literal(m["fields"])
    if not isinstance(fields, Mapping):
        return None
    for tool, args in outcome.calls:
        if any(v in tool.lower() for v in _WRITE_VERBS) and all(_mentions(args, v) for v in fields.values()):
            return True
    return False


def _answered(item_text: str, outcome: Outcome) -> bool | None:
    m = _ANSWER.match(item_text)
    if m is None:
        return None
    field, value = m["field"], _literal(m["value"])
    if field in outcome.answer:
        return values_match(outcome.answer[field], value, 0.01)
    return any(values_match(v, value, 0.01) for v in _values(outcome.answer))


def _no_collateral(item_text: str, task: Task, outcome: Outcome) -> bool | None:
    if _UNCHANGED.match(item_text) is None:
        return None
    # writes to records the request or the rubric never names look like collateral damage
    named = task.query + " " + " ".join(i.text for i in task.rubric)
    for tool, args in outcome.calls:
        if not any(v in tool.lower() for v in _WRITE_VERBS + _DELETE_VERBS + ("update", "set", "assign")):
            continue
        ids = [v for v in _values(args) if isinstance(v, str) and re.fullmatch(r"[A-Z]{2,}-\d+", v)]
        if any(i not in named for i in ids):
            return False
    return True


def transcript_judge() -> Judge:
    """The offline judge: decides rubric items of the shapes the rubric builder writes from the
    transcript alone; an item it cannot read is undecided (None), never a silent pass or fail."""

    def judge(item: RubricItem, task: Task, outcome: Outcome) -> bool | None:
        for rule in (_field_set, _removed, _created, _answered):
            verdict = rule(item.text, outcome)
            if verdict is not None:
                return verdict
        return _no_collateral(item.text, task, outcome)

    return judge


def outcome_groups(
    tasks: Mapping[str, Task],
    runs: Iterable[Any],
    final_state: Any,
    *,
    min_group: int = 2,
) -> list[tuple[Task, list[Outcome]]]:
    """Rollout groups for calibration: every task with at least `min_group` runs, each run turned into
    an Outcome. `runs` are trajectories (task_id, answer, calls()); `final_state(task, calls)` replays
    the calls in a fresh session and returns the end state (the sandbox does it)."""
    by_task: dict[str, list[Any]] = {}
    for run in runs:
        if run.task_id in tasks:
            by_task.setdefault(run.task_id, []).append(run)
    groups: list[tuple[Task, list[Outcome]]] = []
    for task_id in sorted(by_task):
        members = by_task[task_id]
        task = tasks[task_id]
        checked = [i for i in task.rubric if i.check is not None and i.check.kind != "verifier"]
        if len(members) < min_group or not checked:
            continue
        outcomes = []
        for run in members:
            calls = run.calls()
            outcomes.append(
                Outcome(final_state=final_state(task, calls), answer=dict(run.answer), calls=calls)
            )
        groups.append((task, outcomes))
    return groups
