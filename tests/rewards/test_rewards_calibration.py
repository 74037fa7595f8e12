"""Reward-model calibration (Eqs. 4-7 and C_RM) against numbers worked out by hand from the formulas,
for a perfect, a constant, a sign-flipping and a noisy judge; scipy cross-checks Kendall's tau-b."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from scipy.stats import kendalltau

from agentomnia.rewards import judge_calibration
from agentomnia.rewards.calibration import (
    CalibrationSettings,
    ItemJudgment,
    ScoredGroup,
    advantage_mse,
    calibration_report,
    consistency_score,
    direction_rates,
    direction_score,
    gold_advantage_variance,
    kendall_tau_b,
    magnitude_score,
    rank_score,
    rubric_reliability,
)
from agentomnia.tasks.grading import Outcome
from agentomnia.tasks.models import RubricItem, Task

EPS = 1e-6
# two rollout groups; GRPO gold advantages are (+1, -1, +1, -1) and (+1, +1, -1, -1), so Var(A_gold) = 1
GOLD = ((1.0, 0.0, 1.0, 0.0), (1.0, 1.0, 0.0, 0.0))


def _items(level: str, right: int, wrong: int) -> list[ItemJudgment]:
    return [ItemJudgment(level=level, predicted=True, gold=True)] * right + [  # type: ignore[arg-type]
        ItemJudgment(level=level, predicted=True, gold=False)  # type: ignore[arg-type]
    ] * wrong


def _groups(*predicted: tuple[float, ...]) -> list[ScoredGroup]:
    return [ScoredGroup(gold=g, predicted=p) for g, p in zip(GOLD, predicted, strict=True)]


def test_reliability_is_eq4_weighted_harmonic_mean() -> None:
    judgments = _items("basic", 9, 1) + _items("advanced", 3, 2)  # accuracies 0.9 and 0.6
    value, basic, advanced = rubric_reliability(judgments, 1.0, 1.0)
    assert (basic, advanced) == (0.9, 0.6)
    assert value == pytest.approx(0.72)  # (0.5/0.9 + 0.5/0.6)^-1 = (5/9 + 5/6)^-1 = 18/25
    weighted, _, _ = rubric_reliability(judgments, 1.0, 3.0)
    assert weighted == pytest.approx(0.6545454545)  # (0.25/0.9 + 0.75/0.6)^-1 = (5/18 + 5/4)^-1 = 36/55
    # a level with accuracy 0 is floored at eps: (0.5/eps + 0.5/1)^-1
    assert rubric_reliability(_items("basic", 0, 2) + _items("advanced", 2, 0))[0] == pytest.approx(
        1 / (0.5 / EPS + 0.5), rel=1e-9
    )
    assert rubric_reliability(_items("basic", 3, 1))[0] == 0.75  # one level only: its accuracy
    undecided = [ItemJudgment(level="basic", predicted=None, gold=False)] * 2 + _items("basic", 2, 0)
    assert rubric_reliability(undecided)[1] == 0.5  # undecided counts as wrong
    assert rubric_reliability([]) == (None, None, None)


@pytest.mark.parametrize(
    ("x", "y"),
    [([1, 2, 3, 4], [1, 3, 2, 4]), ([1, 1, 0, 0], [0.9, 0.7, 0.8, 0.1]), ([1, 0, 1, 0, 1], [1, 1, 0, 0, 1])],
)
def test_kendall_tau_b_matches_scipy_with_ties(x: list[float], y: list[float]) -> None:
    assert kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic)


def test_kendall_tau_b_by_hand_and_constant_groups() -> None:
    # gold (1,1,0,0) vs judge (0.9,0.7,0.8,0.1): 3 concordant, 1 discordant, 2 gold ties, 0 judge ties
    assert kendall_tau_b([1, 1, 0, 0], [0.9, 0.7, 0.8, 0.1]) == pytest.approx(2 / math.sqrt(4 * 6))
    assert kendall_tau_b([1, 1, 1], [0.2, 0.5, 0.9]) is None
    perfect = ScoredGroup(gold=(1, 0), predicted=(0.8, 0.1))
    flat = ScoredGroup(gold=(0, 0), predicted=(0.3, 0.4))
    assert rank_score([perfect, flat]) == 1.0  # the flat group carries no ranking and is skipped


def test_perfect_judge_scores_one_everywhere() -> None:
    # any increasing affine map of gold has the same GRPO advantages
    groups = _groups((0.9, 0.1, 0.9, 0.1), (0.8, 0.8, 0.2, 0.2))
    report = calibration_report(_items("basic", 4, 0) + _items("advanced", 2, 0), groups, [[1, 1], [0, 0]])
    assert report.scores == {
        "reliability": 1.0,
        "rank": 1.0,
        "direction": 1.0,
        "magnitude": 1.0,
        "consistency": 1.0,
    }
    assert (report.adv_fnr, report.adv_fpr) == (0.0, 0.0) and report.advantage_mse == pytest.approx(0.0)
    assert report.c_rm == pytest.approx(1.0) and report.passed and report.failed_minimums == ()
    assert json.loads(report.model_dump_json())["overall"] == report.c_rm  # the name report readers use


def test_constant_judge_has_no_direction_and_no_magnitude() -> None:
    groups = _groups((0.5,) * 4, (0.5,) * 4)
    judgments = _items("basic", 2, 2)  # it passes every item: right on the 2 gold passes only
    report = calibration_report(judgments, groups, [[0.5, 0.5]] * 8)
    # every judge advantage is 0: all 4 gold positives become non-positive, all 4 negatives non-negative
    assert (report.adv_fnr, report.adv_fpr) == (1.0, 1.0)
    assert report.scores["direction"] == pytest.approx(EPS)  # (0.5/eps + 0.5/eps)^-1 = eps
    # MSE = mean(A_gold^2) = 1 = Var(A_gold): C_Mag = 1 - 1/1 = 0 (it was 1 - 1/4 = 0.75 before Eq. 6)
    assert report.advantage_mse == pytest.approx(1.0) and report.gold_advantage_variance == pytest.approx(1.0)
    assert report.scores["magnitude"] == 0.0
    assert report.scores["rank"] is None and report.scores["reliability"] == 0.5
    assert report.c_rm is None and not report.passed  # rank is not measurable, so neither is C_RM
    assert report.failed_minimums == ("reliability", "rank", "direction", "magnitude")
    assert "rank is not computable from the given data" in report.failures


def test_sign_flipping_judge() -> None:
    groups = _groups((0.0, 1.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0))
    flipped = [ItemJudgment(level="basic", predicted=False, gold=True)] * 3 + [
        ItemJudgment(level="advanced", predicted=True, gold=False)
    ]
    report = calibration_report(flipped, groups, [[1, 1], [0, 0]])
    assert report.scores["rank"] == 0.0  # tau = -1 in both groups, (1 - 1) / 2
    assert (report.adv_fnr, report.adv_fpr) == (1.0, 1.0)
    assert report.scores["direction"] == pytest.approx(EPS)
    # A_judge = -A_gold: MSE = mean((2 A_gold)^2) = 4; C_Mag = max(0, 1 - 4/1) = 0
    assert report.advantage_mse == pytest.approx(4.0) and report.scores["magnitude"] == 0.0
    assert report.scores["reliability"] == pytest.approx(EPS)  # both accuracies 0: (0.5/eps + 0.5/eps)^-1
    # C_RM = 0.2 * (eps + 0 + eps + 0 + 1)
    assert report.c_rm == pytest.approx(0.2000004, abs=1e-9)
    assert not report.passed and "C_RM 0.200 < minimum 0.7" in report.failures


def test_noisy_judge_by_hand() -> None:
    # group 1: judge (1,0,1,1): centred (.25,-.75,.25,.25), std sqrt(.1875) -> A = (1/√3, -√3, 1/√3, 1/√3)
    # group 2: judge equals gold
    groups = _groups((1.0, 0.0, 1.0, 1.0), (1.0, 1.0, 0.0, 0.0))
    judgments = _items("basic", 9, 1) + _items("advanced", 3, 2)
    repeats: list[list[float]] = [[1, 1, 0], [0.5, 0.5, 0.5]]  # variances 2/9 and 0
    report = calibration_report(judgments, groups, repeats)
    assert report.scores["reliability"] == pytest.approx(0.72)  # 18/25, as above
    # group 1 tau-b: C=2, D=0, 6 pairs, 2 gold ties, 3 judge ties -> 2/sqrt(4*3) = 1/√3; group 2: 1
    assert report.scores["rank"] == pytest.approx(0.8943375673)  # (1 + (1 + 0.5773502692)/2) / 2
    # positives: 4, none made non-positive; negatives: 4, one made non-negative (group 1, rollout 4)
    assert (report.adv_fnr, report.adv_fpr) == (0.0, 0.25)
    assert report.scores["direction"] == pytest.approx(0.8571428571)  # (0.5/0.75 + 0.5/1)^-1 = 6/7
    # squared errors of group 1: (1/√3-1)^2 * 2 + (√3-1)^2 + (1/√3+1)^2 = 8 - 8/√3; MSE over 8 = 1 - 1/√3
    assert report.advantage_mse == pytest.approx(0.4226497308)
    assert report.scores["magnitude"] == pytest.approx(0.5773502692)  # 1 - (1 - 1/√3) / 1
    assert report.scores["consistency"] == pytest.approx(0.5555555556)  # 1 - (1/9) / 0.25 = 5/9
    # C_RM = 0.2 * (0.72 + 0.8943375673 + 0.8571428571 + 0.5773502692 + 0.5555555556)
    assert report.c_rm == pytest.approx(0.7208772498)
    # C_RM clears 0.7 but consistency is under its minimum of 0.8: the per-dimension gate fails it
    assert report.failed_minimums == ("consistency",) and not report.passed
    assert report.failures == ("consistency 0.556 < minimum 0.8",)
    assert (report.lam, report.eps, report.groups, report.outcomes, report.items) == (0.5, EPS, 2, 8, 15)
    # lambda weights the false-positive side: (0.8/0.75 + 0.2/1)^-1 = 15/19
    heavy = calibration_report(judgments, groups, repeats, CalibrationSettings(lam=0.8))
    assert heavy.scores["direction"] == pytest.approx(0.7894736842) and heavy.lam == 0.8


def test_formula_pieces_and_settings() -> None:
    assert direction_rates([ScoredGroup(gold=(1, 0, 0, 1), predicted=(0.9, 0.6, 0.1, 0.2))]) == (0.5, 0.5)
    assert direction_score(None, None) is None
    assert direction_score(0.0, 1.0, lam=0.0) == 1.0  # all weight on the FNR side
    assert magnitude_score(0.3, 0.0, eps=0.5) == pytest.approx(0.4)  # 1 - 0.3 / max(0, 0.5)
    assert advantage_mse([]) is None and gold_advantage_variance([]) is None
    # a constant gold group has zero advantages: only the other group contributes variance
    mixed = [ScoredGroup(gold=(1, 1), predicted=(0.2, 0.9)), ScoredGroup(gold=(1, 0), predicted=(1, 0))]
    assert gold_advantage_variance(mixed) == pytest.approx(0.5)  # values (0, 0, 1, -1)
    assert advantage_mse(mixed) == pytest.approx(0.5)  # judge (-1, 1) where gold is (0, 0): 2/4
    assert consistency_score([[1, 1, 1], [0, 0]]) == 1.0
    assert consistency_score([[0, 1], [1, 1]]) == pytest.approx(0.5)  # 1 - (0.25 + 0)/2 / 0.25
    assert consistency_score([[1]]) is None
    with pytest.raises(ValueError, match="sum to 1"):
        CalibrationSettings(weights={"reliability": 0.5, "rank": 0.6})
    custom = CalibrationSettings(weights={"reliability": 0.5, "rank": 0.5}, minimums={"rank": 0.9})
    report = calibration_report(_items("basic", 1, 0), [ScoredGroup(gold=(1, 0), predicted=(0.9, 0.1))], [])
    assert report.scores["consistency"] is None and report.c_rm is None  # consistency carries weight 0.2
    weighted = calibration_report(
        _items("basic", 1, 0), [ScoredGroup(gold=(1, 0), predicted=(0.9, 0.1))], [], custom
    )
    assert weighted.c_rm == pytest.approx(1.0)  # consistency has weight 0 here
    assert weighted.failed_minimums == ("consistency",)  # not computable still fails the gate
    with pytest.raises(ValueError, match="align them"):
        calibration_report([], [ScoredGroup(gold=(1, 0), predicted=(0.1,))], [])


def _task(cases: Any) -> Task:
    advanced = RubricItem(
        id="T2", text="…", scope="task", level="advanced", check=cases.status_done.check.model_copy()
    )
    return cases.make_task(cases.status_done, advanced)  # type: ignore[no-any-return]


def test_judge_calibration_hides_the_end_state_and_keeps_the_target(cases: Any) -> None:
    task = _task(cases)
    done = Outcome(final_state=cases.done_state(), calls=[("close", {"task_id": "task_1"})])
    idle = Outcome(final_state=cases.s0)
    seen: list[tuple[Any, dict[str, Any]]] = []

    def spy(item, task, outcome):  # type: ignore[no-untyped-def]
        seen.append((item.check, outcome.final_state))
        return bool(outcome.calls)  # right from the transcript: a call was made iff the task is done

    report = judge_calibration([(task, [done, idle])], spy, repeats=2)
    assert all(state == {} for _, state in seen) and all(check is not None for check, _ in seen)
    assert len(seen) == 2 * 2 * 2  # items x outcomes x repeats
    assert report.passed and report.basic_accuracy == 1.0 and report.advanced_accuracy == 1.0
    assert report.c_rm == pytest.approx(1.0)


def test_judge_calibration_of_contrarian_and_undecided_judges(cases: Any) -> None:
    task = _task(cases)
    group = [
        (task, [Outcome(final_state=cases.done_state(), calls=[("x", {})]), Outcome(final_state=cases.s0)])
    ]
    contrarian = judge_calibration(group, lambda item, task, outcome: not outcome.calls)
    assert contrarian.basic_accuracy == 0.0 and contrarian.scores["direction"] == pytest.approx(EPS)
    assert contrarian.scores["magnitude"] == 0.0 and contrarian.scores["rank"] == 0.0
    undecided = judge_calibration(group, lambda item, task, outcome: None)
    # an undecided item is a wrong decision, whatever gold says
    assert undecided.undecided == 4 and undecided.basic_accuracy == 0.0 and undecided.advanced_accuracy == 0.0
    assert undecided.scores["magnitude"] == 0.0  # a constant judge
    with pytest.raises(ValueError, match="no code-checked rubric items"):
        judge_calibration(
            [(cases.make_task(cases.open_item), [Outcome(final_state=cases.s0)])], lambda *a: True
        )
