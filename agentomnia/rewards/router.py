"""The reward router: picks rule, rubric or both from a task's metadata, and applies the safeguard.

Mode: `task.metadata["reward_mode"]` when set ("rule" | "rubric" | "both"); otherwise decided by what
the task carries — code-decidable ground truth (verifier code, expected answer, checked rubric items)
means rules, rubric items without a check mean the rubric, a task with both gets both.

Safeguard: when rule verification fails to execute (no sandbox runner, verifier code that crashed or
timed out, a check that cannot be decided), the judge re-scores the rubric: the served model in LLM
mode, the transcript judge offline (it decides a verifier item from the task's expected changes on
the state the transcript shows). What no judge can decide is unscored (None), never silently 0,
which would teach the policy that a correct run was wrong.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentomnia.rewards.rubric import rubric_reward
from agentomnia.rewards.rules import rule_reward
from agentomnia.tasks.grading import Judge, Outcome, VerifierRunner
from agentomnia.tasks.models import Task

RewardMode = Literal["rule", "rubric", "both"]
RewardSource = Literal["rule", "rubric", "both", "judge_fallback", "unscored"]
_MODES: tuple[RewardMode, ...] = ("rule", "rubric", "both")


class TaskReward(BaseModel):
    """A binary task reward: `value` is 0.0, 1.0, or None when nothing could decide it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: float | None
    mode: RewardMode
    source: RewardSource
    reason: str = ""


def choose_mode(task: Task) -> RewardMode:
    """The reward mode of `task` (see the module docstring)."""
    declared = task.metadata.get("reward_mode")
    if declared is not None:
        if declared not in _MODES:
            raise ValueError(
                f"task {task.id}: metadata reward_mode={declared!r} is not one of {list(_MODES)}; fix the task metadata"
            )
        return declared  # type: ignore[no-any-return]
    has_rule = bool(task.verifier_code or task.expected_answer) or any(
        i.check is not None for i in task.rubric
    )
    has_open = any(i.check is None for i in task.rubric)
    if has_rule and has_open:
        return "both"
    return "rule" if has_rule else "rubric"


def _judge_fallback(task: Task, outcome: Outcome, judge: Judge, reason: str, mode: RewardMode) -> TaskReward:
    # Without a sandbox runner the items the sandbox should have decided cannot run, so the judge
    # decides them from their targets; every other check stays deterministic.
    value, _ = rubric_reward(task, outcome, judge=judge)
    return TaskReward(
        value=value, mode=mode, source="judge_fallback", reason=f"rule verification failed: {reason}"
    )


def score_task(
    task: Task,
    outcome: Outcome,
    *,
    verifier: VerifierRunner | None = None,
    judge: Judge | None = None,
    mode: RewardMode | None = None,
) -> TaskReward:
    """The binary reward of one outcome, routed by `mode` (default: `choose_mode(task)`)."""
    chosen = mode or choose_mode(task)
    rule_value: float | None = None
    if chosen in ("rule", "both"):
        rule = rule_reward(task, outcome, verifier=verifier)
        if rule.passed is None:
            reason = rule.error or "a rule could not execute"
            if judge is not None:
                return _judge_fallback(task, outcome, judge, reason, chosen)
            return TaskReward(
                value=None, mode=chosen, source="unscored", reason=f"rule verification failed: {reason}"
            )
        rule_value = 1.0 if rule.passed else 0.0
        if chosen == "rule" or rule_value == 0.0:
            detail = "" if rule.passed else "; ".join(rule.details[-1:])
            return TaskReward(value=rule_value, mode=chosen, source="rule", reason=detail)
    value, score = rubric_reward(task, outcome, judge=judge, verifier=verifier)
    if value is None:
        open_items = [i.id for i in score.items if i.passed is None]
        return TaskReward(
            value=None,
            mode=chosen,
            source="unscored",
            reason=f"rubric items without a decision: {open_items}",
        )
    failed = [f"{i.id}: {i.detail}" for i in score.items if i.passed is False]
    return TaskReward(value=value, mode=chosen, source=chosen, reason="; ".join(failed[:2]))
