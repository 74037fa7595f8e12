"""Capability-aware privileged guidance: what a teacher may know that the agent being trained may not.

DAG-Challenge and program tasks get outcome-oriented guidance (the rubric criteria, the target state
changes and the expected answer JSON): the path is the hard part to find, so the teacher is told where
it must end. Solver tasks get planning-oriented guidance (a decomposition into steps, heuristics and
solution-level hints): the end state is a computed optimum, so the teacher is told how to get there.
DAG-Standard tasks get none: they are solvable from the query alone.

Guidance is given to the teacher only (a system-prompt addendum for model teachers, structured hints
for the offline teacher). It is never written into a trajectory; `leak_fragments` lists the pieces of
text whose appearance in a retained trajectory counts as a leak.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.tasks.families import PROGRAM, SOLVER, family_of, is_challenging_kind
from agentomnia.tasks.models import TASK_KINDS, Task, TaskKind
from agentomnia.trajectories.models import GuidanceKind


def _guidance_for(kind: TaskKind) -> GuidanceKind:
    """Planning for the solver family, outcome for program tasks and challenging kinds, else none."""
    family = family_of(kind)
    if family is SOLVER:
        return "planning"
    if family is PROGRAM or is_challenging_kind(kind):
        return "outcome"
    return "none"


GUIDANCE_KIND: dict[str, GuidanceKind] = {k: _guidance_for(k) for k in TASK_KINDS}
GUIDANCE_HEADER = "PRIVILEGED GUIDANCE (for the teacher only; never quote or mention it)"
# Words a trajectory has no reason to use unless it is talking about the guidance itself.
LEAK_PHRASES = (
    "privileged guidance",
    "the guidance",
    "reference plan",
    "reference solution",
    "the rubric",
    "rubric item",
    "expected answer",
    "target state",
    "solution-level hint",
    "i was told the answer",
)


class Guidance(BaseModel):
    """Guidance for one task. `text` is the rendering a model teacher reads; the rest is structured."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: GuidanceKind
    text: str = ""
    answer_fields: tuple[str, ...] = ()
    target_answer: dict[str, Any] = Field(default_factory=dict)
    target_changes: tuple[dict[str, Any], ...] = ()
    plan: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()


def guidance_kind(task: Task) -> GuidanceKind:
    return GUIDANCE_KIND.get(task.kind, "none")


def _change_line(change: dict[str, Any]) -> str:
    where = f"{change.get('table')}[{change.get('key')}]"
    if change.get("field"):
        where += f".{change['field']}"
    return f"{where}: {json.dumps(change.get('before'), default=str)} -> {json.dumps(change.get('after'), default=str)}"


def _plan_lines(task: Task) -> list[str]:
    lines: list[str] = []
    for i, call in enumerate(task.reference_calls, start=1):
        args = ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in sorted(call.args.items()))
        lines.append(f"step {i}: call {call.tool}({args})")
    if task.reference_program:
        lines.append("a program that reads the records it needs, computes the result and returns it as JSON")
    return lines


def build_guidance(task: Task, *, enabled: bool = True) -> Guidance:
    """The guidance a teacher gets for `task`; kind `none` (and empty) when disabled or not applicable."""
    kind = guidance_kind(task) if enabled else "none"
    if kind == "none":
        return Guidance(kind="none")
    criteria = tuple(item.text for item in task.rubric)
    answer_fields = tuple(sorted(task.expected_answer))
    if kind == "outcome":
        parts = [GUIDANCE_HEADER, "The result is judged by these criteria:"]
        parts += [f"- {c}" for c in criteria]
        if task.expected_diff:
            parts.append("Target state changes:")
            parts += [f"- {_change_line(dict(c))}" for c in task.expected_diff]
        if task.expected_answer:
            parts.append(
                "Expected answer JSON: " + json.dumps(task.expected_answer, sort_keys=True, default=str)
            )
        return Guidance(
            kind="outcome",
            text="\n".join(parts),
            answer_fields=answer_fields,
            target_answer=dict(task.expected_answer),
            target_changes=tuple(dict(c) for c in task.expected_diff),
            criteria=criteria,
        )
    plan = tuple(_plan_lines(task))
    parts = [GUIDANCE_HEADER, "Decompose the problem into these steps:"]
    parts += [f"- {line}" for line in plan]
    parts.append(
        "Heuristics: read the records a decision depends on before writing; check each constraint "
        "against observed values; prefer the option that satisfies every constraint, then the objective."
    )
    if answer_fields:
        parts.append(
            "Solution-level hint: report the answer with the fields "
            + ", ".join(answer_fields)
            + "; a reference solution reaches "
            + json.dumps(task.expected_answer, sort_keys=True, default=str)
            + " (equal or better is fine)."
        )
    return Guidance(
        kind="planning",
        text="\n".join(parts),
        answer_fields=answer_fields,
        target_answer=dict(task.expected_answer),
        plan=plan,
        criteria=criteria,
    )


def leak_fragments(guidance: Guidance | None) -> list[str]:
    """Pieces of guidance text that must not appear in a retained trajectory (case-insensitive)."""
    if guidance is None or guidance.kind == "none":
        return []
    fragments = {GUIDANCE_HEADER}
    fragments.update(line.lstrip("- ").strip() for line in guidance.text.splitlines())
    fragments.update(guidance.criteria)
    fragments.update(guidance.plan)
    return sorted(f for f in fragments if len(f) >= 24)
