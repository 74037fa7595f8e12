"""Reward-model calibration: is a judge (or reward model) fit to hand out RL rewards?

Five dimensions, each in [0, 1], higher is better, computed against gold labels:

- rubric reliability (advanced-balanced): accuracy on basic items and on advanced items, combined by a
  weighted harmonic mean, so a judge that only gets the easy items right scores low;
- C_Rank: within each rollout group, Kendall's tau-b between judge scores and gold scores (tau-b
  corrects for ties, which binary rewards produce a lot of), averaged over groups and mapped from
  [-1, 1] to [0, 1]; groups where either side is constant carry no ranking and are skipped;
- C_Dir: does the judge give the same advantage sign as gold? 1 - (AdvFNR + AdvFPR) / 2, where AdvFNR is
  the share of gold-positive advantages the judge makes non-positive and AdvFPR the share of
  gold-negative advantages it makes non-negative;
- C_Mag: 1 - MSE / 4 between group-normalised advantages (mean 0, std 1 per group; 4 is the largest
  possible MSE of two unit-variance vectors, reached when one is the negative of the other);
- C_Con: 1 - mean variance of repeated scorings of the same sample / 0.25 (the largest variance of a
  score in [0, 1]).

The overall score is their weighted mean; the judge passes when the overall score and every dimension
clear their minimums. `judge_calibration` builds all inputs for a judge from tasks whose rubric items
carry code checks, which serve as the gold labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.tasks.grading import Judge, Outcome, run_check
from agentomnia.tasks.models import Task

Dimension = Literal["reliability", "rank", "direction", "magnitude", "consistency"]
DIMENSIONS: tuple[Dimension, ...] = ("reliability", "rank", "direction", "magnitude", "consistency")


class ItemJudgment(BaseModel):
    """One rubric item as the judge decided it, next to the gold decision."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Literal["basic", "advanced"]
    predicted: bool
    gold: bool


class ScoredGroup(BaseModel):
    """The rollouts of one prompt: gold rewards and the judge's scores, in the same order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gold: tuple[float, ...]
    predicted: tuple[float, ...]


def _equal_weights() -> dict[Dimension, float]:
    return dict.fromkeys(DIMENSIONS, 0.2)


def _default_minimums() -> dict[Dimension, float]:
    return {"reliability": 0.7, "rank": 0.6, "direction": 0.7, "magnitude": 0.5, "consistency": 0.8}


class CalibrationSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    basic_weight: float = Field(default=1.0, gt=0)
    advanced_weight: float = Field(default=1.0, gt=0)
    weights: dict[Dimension, float] = Field(default_factory=_equal_weights)
    minimums: dict[Dimension, float] = Field(default_factory=_default_minimums)
    min_overall: float = Field(default=0.7, ge=0, le=1)


class CalibrationReport(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    basic_accuracy: float | None
    advanced_accuracy: float | None
    adv_fnr: float | None
    adv_fpr: float | None
    advantage_mse: float | None
    scores: dict[Dimension, float | None]
    overall: float | None
    passed: bool
    failures: tuple[str, ...]


def _accuracy(items: Sequence[ItemJudgment]) -> float | None:
    return sum(i.predicted == i.gold for i in items) / len(items) if items else None


def rubric_reliability(
    judgments: Sequence[ItemJudgment], basic_weight: float = 1.0, advanced_weight: float = 1.0
) -> tuple[float | None, float | None, float | None]:
    """(reliability, basic accuracy, advanced accuracy); the weighted harmonic mean of the two accuracies,
    or the one that exists when the other level has no items."""
    basic = _accuracy([j for j in judgments if j.level == "basic"])
    advanced = _accuracy([j for j in judgments if j.level == "advanced"])
    present = [(w, a) for w, a in ((basic_weight, basic), (advanced_weight, advanced)) if a is not None]
    if not present:
        return None, basic, advanced
    if any(a == 0 for _, a in present):
        return 0.0, basic, advanced
    return sum(w for w, _ in present) / sum(w / a for w, a in present), basic, advanced


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b with tie correction; None when either sequence is constant (no ranking)."""
    if len(x) != len(y):
        raise ValueError(f"kendall_tau_b needs sequences of equal length, got {len(x)} and {len(y)}")
    concordant = discordant = ties_x = ties_y = 0
    n = len(x)
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                ties_x += 1
                ties_y += 1
            elif dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - ties_x) * (pairs - ties_y))
    return None if denominator == 0 else (concordant - discordant) / denominator


def _advantages(rewards: Sequence[float], normalise: bool) -> list[float]:
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    if not normalise:
        return centred
    std = math.sqrt(sum(c * c for c in centred) / len(centred))
    return [c / std if std > 0 else 0.0 for c in centred]


def rank_score(groups: Sequence[ScoredGroup]) -> float | None:
    taus = [t for g in groups if (t := kendall_tau_b(g.gold, g.predicted)) is not None]
    return (1 + sum(taus) / len(taus)) / 2 if taus else None


def direction_rates(groups: Sequence[ScoredGroup]) -> tuple[float | None, float | None]:
    """(AdvFNR, AdvFPR) over all rollouts with a non-zero gold advantage."""
    false_neg = positives = false_pos = negatives = 0
    for g in groups:
        for gold, pred in zip(_advantages(g.gold, False), _advantages(g.predicted, False), strict=True):
            if gold > 0:
                positives += 1
                false_neg += pred <= 0
            elif gold < 0:
                negatives += 1
                false_pos += pred >= 0
    return (false_neg / positives if positives else None, false_pos / negatives if negatives else None)


def advantage_mse(groups: Sequence[ScoredGroup]) -> float | None:
    errors = [
        (p - g) ** 2
        for group in groups
        for g, p in zip(_advantages(group.gold, True), _advantages(group.predicted, True), strict=True)
    ]
    return sum(errors) / len(errors) if errors else None


def consistency_score(repeats: Sequence[Sequence[float]]) -> float | None:
    """1 - mean population variance of repeated scores / 0.25; samples scored once are skipped."""
    variances = []
    for scores in repeats:
        if len(scores) < 2:
            continue
        mean = sum(scores) / len(scores)
        variances.append(sum((s - mean) ** 2 for s in scores) / len(scores))
    return max(0.0, 1 - (sum(variances) / len(variances)) / 0.25) if variances else None


def calibration_report(
    judgments: Sequence[ItemJudgment],
    groups: Sequence[ScoredGroup],
    repeats: Sequence[Sequence[float]],
    settings: CalibrationSettings | None = None,
) -> CalibrationReport:
    """All five dimensions, their weighted mean over the dimensions that could be computed, and the verdict."""
    cfg = settings or CalibrationSettings()
    for g in groups:
        if len(g.gold) != len(g.predicted):
            raise ValueError(
                f"a group has {len(g.gold)} gold rewards but {len(g.predicted)} judge scores; align them"
            )
    reliability, basic, advanced = rubric_reliability(judgments, cfg.basic_weight, cfg.advanced_weight)
    fnr, fpr = direction_rates(groups)
    rates = [r for r in (fnr, fpr) if r is not None]
    mse = advantage_mse(groups)
    scores: dict[Dimension, float | None] = {
        "reliability": reliability,
        "rank": rank_score(groups),
        "direction": 1 - sum(rates) / len(rates) if rates else None,
        "magnitude": max(0.0, 1 - mse / 4) if mse is not None else None,
        "consistency": consistency_score(repeats),
    }
    known = {d: s for d, s in scores.items() if s is not None}
    weight = sum(cfg.weights.get(d, 0.0) for d in known)
    overall = sum(cfg.weights.get(d, 0.0) * s for d, s in known.items()) / weight if weight > 0 else None
    failures = [f"{d} is not computable from the given data" for d, s in scores.items() if s is None]
    failures += [
        f"{d} {s:.3f} < minimum {cfg.minimums[d]}" for d, s in known.items() if s < cfg.minimums.get(d, 0.0)
    ]
    if overall is not None and overall < cfg.min_overall:
        failures.append(f"overall {overall:.3f} < minimum {cfg.min_overall}")
    return CalibrationReport(
        basic_accuracy=basic,
        advanced_accuracy=advanced,
        adv_fnr=fnr,
        adv_fpr=fpr,
        advantage_mse=mse,
        scores=scores,
        overall=overall,
        passed=overall is not None and not failures,
        failures=tuple(failures),
    )


def judge_calibration(
    groups: Sequence[tuple[Task, Sequence[Outcome]]],
    judge: Judge,
    *,
    repeats: int = 3,
    settings: CalibrationSettings | None = None,
) -> CalibrationReport:
    """Calibrate `judge` against code: on rubric items that carry a deterministic check, the check is
    the gold label and the judge is asked the same question without it. Each group is one task with
    several outcomes (a rollout group); its gold reward is the checked score, the judge's the judged
    score, and every outcome is judged `repeats` times for consistency."""
    judgments: list[ItemJudgment] = []
    scored: list[ScoredGroup] = []
    repeated: list[list[float]] = []
    for task, outcomes in groups:
        checked = [item for item in task.rubric if item.check is not None and item.check.kind != "verifier"]
        if not checked:
            raise ValueError(f"task {task.id} has no code-checked rubric items to calibrate a judge against")
        gold_scores: list[float] = []
        judge_scores: list[float] = []
        for outcome in outcomes:
            total = sum(item.weight for item in checked)
            gold_points = 0.0
            runs: list[float] = []
            for attempt in range(max(1, repeats)):
                points = 0.0
                for item in checked:
                    verdict = bool(judge(item.model_copy(update={"check": None}), task, outcome))
                    points += item.weight * verdict
                    if attempt == 0:
                        gold = run_check(item.check, task, outcome)[0] is True  # type: ignore[arg-type]
                        gold_points += item.weight * gold
                        judgments.append(ItemJudgment(level=item.level, predicted=verdict, gold=gold))
                runs.append(points / total)
            gold_scores.append(gold_points / total)
            judge_scores.append(runs[0])
            repeated.append(runs)
        scored.append(ScoredGroup(gold=tuple(gold_scores), predicted=tuple(judge_scores)))
    return calibration_report(judgments, scored, repeated, settings)
