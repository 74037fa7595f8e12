"""The router's mode choice, binary outputs and the safeguard (judge fallback or unscored, never 0)."""

from __future__ import annotations

from typing import Any

import pytest

from agentomnia.rewards import choose_mode, rubric_reward, score_task
from agentomnia.tasks.grading import Outcome
from agentomnia.tasks.models import Check, RubricItem

VERIFIER = "def check_func(final_state):\n    return True"


def test_mode_follows_metadata_then_task_content(cases: Any) -> None:
    assert choose_mode(cases.make_task(cases.status_done)) == "rule"
    assert choose_mode(cases.make_task(cases.open_item)) == "rubric"
    assert choose_mode(cases.make_task(cases.status_done, cases.open_item)) == "both"
    assert choose_mode(cases.make_task(cases.open_item, verifier_code=VERIFIER)) == "both"
    assert choose_mode(cases.make_task(cases.status_done, metadata={"reward_mode": "rubric"})) == "rubric"
    with pytest.raises(ValueError, match="reward_mode"):
        choose_mode(cases.make_task(cases.status_done, metadata={"reward_mode": "vibes"}))


def test_rule_rewards_are_binary(cases: Any) -> None:
    task = cases.make_task(cases.status_done)
    assert score_task(task, Outcome(final_state=cases.done_state())).value == 1.0
    failed = score_task(task, Outcome(final_state=cases.s0))
    assert failed.value == 0.0 and failed.source == "rule" and "status" in failed.reason


def test_failed_verifier_is_unscored_offline_and_judged_in_llm_mode(cases: Any) -> None:
    task = cases.make_task(cases.status_done, verifier_code=VERIFIER)
    outcome = Outcome(final_state=cases.done_state())
    offline = score_task(task, outcome, verifier=lambda *a: None)
    assert offline.value is None and offline.source == "unscored"
    calls: list[str] = []

    def judge(item: RubricItem, *_: object) -> bool:
        calls.append(item.id)
        return True

    judged = score_task(task, outcome, verifier=lambda *a: None, judge=judge)
    assert judged.value == 1.0 and judged.source == "judge_fallback"
    # the deterministic state check still decided T1; the judge was asked only about what code could not settle
    assert calls == []
    verifier_item = RubricItem(id="T2", text="verifier passes", scope="task", check=Check(kind="verifier"))
    task2 = cases.make_task(cases.status_done, verifier_item, verifier_code=VERIFIER)
    judged2 = score_task(task2, outcome, verifier=lambda *a: None, judge=judge)
    assert judged2.source == "judge_fallback" and calls == ["T2"]


def test_rubric_items_without_checks_are_unscored_offline_not_zero(cases: Any) -> None:
    task = cases.make_task(cases.status_done, cases.open_item)
    outcome = Outcome(final_state=cases.done_state())
    offline = score_task(task, outcome)
    assert offline.mode == "both" and offline.value is None and "G1" in offline.reason
    assert score_task(task, outcome, judge=lambda *a: True).value == 1.0
    assert score_task(task, outcome, judge=lambda *a: False).value == 0.0
    # a failed rule decides 0 without asking the judge
    assert score_task(task, Outcome(final_state=cases.s0), judge=lambda *a: True).value == 0.0


def test_rubric_reward_filters_by_scope(cases: Any) -> None:
    task = cases.make_task(cases.status_done, cases.open_item)
    value, score = rubric_reward(task, Outcome(final_state=cases.done_state()), scopes=("task",))
    assert value == 1.0 and [i.id for i in score.items] == ["T1"]
    with pytest.raises(ValueError, match="no rubric items"):
        rubric_reward(cases.make_task(cases.status_done), Outcome(final_state=cases.s0), scopes=("general",))
