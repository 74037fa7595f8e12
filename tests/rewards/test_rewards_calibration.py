"""Reward-model calibration metrics against hand-computed cases, with scipy as a cross-check."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scipy.stats import kendalltau

from agentomnia.rewards.calibration import (
    CalibrationSettings,
    ItemJudgment,
    ScoredGroup,
    advantage_mse,
    calibration_report,
    consistency_score,
    direction_rates,
    kendall_tau_b,
    rank_score,
    rubric_reliability,
)


def _items(level: str, right: int, wrong: int) -> list[ItemJudgment]:
    return [ItemJudgment(level=level, predicted=True, gold=True)] * right + [
        ItemJudgment(level=level, predicted=True, gold=False)
    ] * wrong  # type: ignore[arg-type]


def test_reliability_is_the_weighted_harmonic_mean() -> None:
    judgments = _items("basic", 9, 1) + _items("advanced", 1, 1)  # 0.9 and 0.5
    value, basic, advanced = rubric_reliability(judgments, 1.0, 1.0)
    assert (basic, advanced) == (0.9, 0.5)
    assert value == pytest.approx(2 / (1 / 0.9 + 1 / 0.5))  # 0.642857...
    weighted, _, _ = rubric_reliability(judgments, 1.0, 3.0)
    assert weighted == pytest.approx(4 / (1 / 0.9 + 3 / 0.5))
    assert rubric_reliability(_items("basic", 0, 2) + _items("advanced", 2, 0))[0] == 0.0
    assert rubric_reliability(_items("basic", 3, 1))[0] == 0.75


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


def test_direction_rates_and_magnitude_by_hand() -> None:
    group = ScoredGroup(gold=(1, 0, 0, 1), predicted=(0.9, 0.6, 0.1, 0.2))
    # gold advantages (+.5,-.5,-.5,+.5); judge mean .45 -> (+.45,+.15,-.35,-.25)
    fnr, fpr = direction_rates([group])
    assert (fnr, fpr) == (0.5, 0.5)
    same = ScoredGroup(gold=(1, 0), predicted=(0.7, 0.2))
    assert advantage_mse([same]) == pytest.approx(0.0)
    flipped = ScoredGroup(gold=(1, 0), predicted=(0.2, 0.7))
    assert advantage_mse([flipped]) == pytest.approx(4.0)


def test_consistency_from_repeated_scores() -> None:
    assert consistency_score([[1, 1, 1], [0, 0]]) == 1.0
    assert consistency_score([[0, 1], [1, 1]]) == pytest.approx(1 - (0.25 + 0.0) / 2 / 0.25)
    assert consistency_score([[1]]) is None


def test_report_combines_dimensions_and_enforces_minimums() -> None:
    judgments = _items("basic", 10, 0) + _items("advanced", 10, 0)
    groups = [
        ScoredGroup(gold=(1, 0, 0), predicted=(0.9, 0.2, 0.1)),
        ScoredGroup(gold=(0, 1), predicted=(0.3, 0.8)),
    ]
    report = calibration_report(judgments, groups, [[1, 1], [0, 0]])
    assert report.passed and report.overall == pytest.approx(1.0, abs=0.05)
    strict = CalibrationSettings(
        minimums={"reliability": 1.0, "rank": 1.0, "direction": 1.0, "magnitude": 0.999, "consistency": 1.0}
    )
    assert not calibration_report(judgments, groups, [[1, 1], [0, 0]], strict).passed
    noisy = calibration_report(judgments, groups, [[0, 1], [1, 0]])
    assert not noisy.passed and any(f.startswith("consistency") for f in noisy.failures)
    flipped = calibration_report(judgments, [ScoredGroup(gold=(1, 0), predicted=(0.1, 0.9))], [[1, 1]])
    assert flipped.scores["direction"] == 0.0 and flipped.scores["magnitude"] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="align them"):
        calibration_report(judgments, [ScoredGroup(gold=(1, 0), predicted=(0.1,))], [])


def test_judge_calibration_uses_code_checks_as_gold(cases: Any) -> None:
    from agentomnia.rewards import judge_calibration
    from agentomnia.tasks.grading import Outcome, run_check

    task = cases.make_task(cases.status_done)
    group = [(task, [Outcome(final_state=cases.done_state()), Outcome(final_state=cases.s0)])]

    def oracle(item, task, outcome):  # type: ignore[no-untyped-def]
        return run_check(cases.status_done.check, task, outcome)[0]  # type: ignore[arg-type]

    good = judge_calibration(group, oracle, repeats=2)
    assert good.passed and good.basic_accuracy == 1.0 and good.scores["consistency"] == 1.0
    contrarian = judge_calibration(group, lambda item, task, outcome: not oracle(item, task, outcome))
    assert (
        not contrarian.passed and contrarian.basic_accuracy == 0.0 and contrarian.scores["direction"] == 0.0
    )
