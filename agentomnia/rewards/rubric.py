"""Rubric-based rewards: the task's general (G#) and task-specific (T#) items, graded by
`agentomnia.tasks.grading.grade` (deterministic checks, a judge for the rest).

The reward is binary: 1 only when every item is scored and the weighted score is 1.0, the same
pass rule as OmniaBench's Pass@1. An item nobody could decide makes the whole reward None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from agentomnia.tasks.grading import Judge, Outcome, Score, VerifierRunner, grade
from agentomnia.tasks.models import Task

Scope = Literal["general", "task"]


def rubric_reward(
    task: Task,
    outcome: Outcome,
    *,
    judge: Judge | None = None,
    verifier: VerifierRunner | None = None,
    scopes: Sequence[Scope] = ("general", "task"),
) -> tuple[float | None, Score]:
    """(reward, score) over the rubric items whose scope is in `scopes`."""
    wanted = set(scopes)
    picked = tuple(item for item in task.rubric if item.scope in wanted)
    if not picked:
        raise ValueError(
            f"task {task.id} has no rubric items of scope {sorted(wanted)}; widen `scopes` or fix the rubric"
        )
    view = task if len(picked) == len(task.rubric) else task.model_copy(update={"rubric": picked})
    score = grade(view, outcome, verifier=verifier, judge=judge)
    if score.unscored:
        return None, score
    return (1.0 if score.passed else 0.0), score
