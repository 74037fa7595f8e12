"""Reward-model calibration: is a judge (or reward model) fit to hand out RL rewards?

Five dimensions C_j, each in [0, 1], higher is better, computed against gold labels from code checks
run on the end state. λ and ε are the paper's; ε keeps every denominator away from zero.

- Rubric reliability (Eq. 4): the weighted harmonic mean of the judge's accuracy on basic items and
  on advanced items, R = (α / max(Acc_basic, ε) + (1 − α) / max(Acc_adv, ε))⁻¹ with
  α = basic_weight / (basic_weight + advanced_weight); a judge that only gets the easy items right
  scores low. With items of one level only, R is that level's accuracy (floored at ε).
- C_Rank: within each rollout group, Kendall's tau-b between judge and gold scores (tau-b corrects for
  the ties binary rewards produce), averaged over groups and mapped from [-1, 1] to [0, 1]; a group
  where either side is constant carries no ranking and is skipped.
- C_Dir (Eq. 5): does the judge give a rollout the advantage sign gold gives it?
  C_Dir = (λ / max(1 − AdvFPR, ε) + (1 − λ) / max(1 − AdvFNR, ε))⁻¹, where AdvFNR is the share of
  gold-positive advantages the judge makes non-positive and AdvFPR the share of gold-negative ones it
  makes non-negative (a zero advantage pushes neither way, so a constant judge fails both).
- C_Mag (Eq. 6): C_Mag = max(0, 1 − MSE(A_judge, A_gold) / max(Var(A_gold), ε)) over all rollouts,
  with GRPO advantages (reward minus the group mean, over the group's standard deviation; 0 in a
  constant group). A constant judge has A_judge = 0, so its MSE equals Var(A_gold) and C_Mag = 0; a
  sign-flipping judge has MSE = 4 Var(A_gold) and C_Mag = 0 too.
- C_Con (Eq. 7): 1 − the mean population variance of repeated scorings of one sample over 0.25 (the
  largest variance of a score in [0, 1]), floored at 0; samples scored once are skipped.

C_RM = Σ_j w_j C_j (the weights sum to 1). The judge passes when C_RM and every dimension clear their
minimums; a dimension the data cannot measure fails the gate, and then C_RM is not defined either.
`judge_calibration` builds every input from rollout groups: gold from the rubric items' code checks
on the end state, the judge's decisions from the same items asked of the judge, which is never shown
the end state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from agentomnia.tasks.grading import Judge, Outcome, run_check
from agentomnia.tasks.models import Task

Dimension = Literal["reliability", "rank", "direction", "magnitude", "consistency"]
DIMENSIONS: tuple[Dimension, ...] = ("reliability", "rank", "direction", "magnitude", "consistency")
MAX_SCORE_VARIANCE = 0.25  # the largest population variance of values in [0, 1]


class ItemJudgment(BaseModel):
    """One rubric item as the judge decided it (None: undecided, which counts as wrong), next to gold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: Literal["basic", "advanced"]
    predicted: bool | None
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
    """λ (Eq. 5), ε (Eqs. 4-6), the basic/advanced weights of Eq. 4, the C_RM weights and the gates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lam: float = Field(default=0.5, ge=0, le=1)  # weight of the false-positive side in Eq. 5
    eps: float = Field(default=1e-6, gt=0, lt=1)
    basic_weight: float = Field(default=1.0, gt=0)
    advanced_weight: float = Field(default=1.0, gt=0)
    weights: dict[Dimension, float] = Field(default_factory=_equal_weights)
    minimums: dict[Dimension, float] = Field(default_factory=_default_minimums)
    min_overall: float = Field(default=0.7, ge=0, le=1)  # the minimum C_RM

    @model_validator(mode="after")
    def _weights_sum_to_one(self) -> CalibrationSettings:
        if any(w < 0 for w in self.weights.values()):
            raise ValueError(f"C_RM weights must not be negative, got {self.weights}")
        total = sum(self.weights.values())
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(
                f"C_RM weights must sum to 1 (C_RM = Σ w_j C_j), got {total:g} from {self.weights}; rescale them"
            )
        return self


class CalibrationReport(BaseModel):
    """Everything a reward-model report needs: the five dimensions, C_RM, the gates and the inputs
    behind each number (λ, ε, counts, accuracies, direction rates, the advantage MSE and variance)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lam: float
    eps: float
    items: int = 0
    undecided: int = 0  # items the judge could not decide (counted as wrong)
    groups: int = 0
    outcomes: int = 0
    basic_accuracy: float | None
    advanced_accuracy: float | None
    adv_fnr: float | None
    adv_fpr: float | None
    advantage_mse: float | None
    gold_advantage_variance: float | None
    scores: dict[Dimension, float | None]
    weights: dict[Dimension, float]
    minimums: dict[Dimension, float]
    c_rm: float | None
    min_c_rm: float
    failed_minimums: tuple[Dimension, ...]  # dimensions below their minimum or not computable
    passed: bool
    failures: tuple[str, ...]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def overall(self) -> float | None:
        """C_RM under the name earlier reports and their readers use (kept in the JSON too)."""
        return self.c_rm


def harmonic_mean(terms: Sequence[tuple[float, float]], eps: float) -> float:
    """(Σ w_i / max(x_i, ε))⁻¹ over (weight, value) pairs, the weights normalised to sum to 1."""
    total = sum(w for w, _ in terms)
    if not terms or total <= 0:
        raise ValueError("a weighted harmonic mean needs at least one term with positive weight")
    return 1.0 / sum((w / total) / max(x, eps) for w, x in terms)


def _accuracy(items: Sequence[ItemJudgment]) -> float | None:
    return sum(i.predicted is i.gold for i in items) / len(items) if items else None


def rubric_reliability(
    judgments: Sequence[ItemJudgment],
    basic_weight: float = 1.0,
    advanced_weight: float = 1.0,
    eps: float = 1e-6,
) -> tuple[float | None, float | None, float | None]:
    """(R of Eq. 4, basic accuracy, advanced accuracy); R is None when there are no items."""
    basic = _accuracy([j for j in judgments if j.level == "basic"])
    advanced = _accuracy([j for j in judgments if j.level == "advanced"])
    present = [(w, a) for w, a in ((basic_weight, basic), (advanced_weight, advanced)) if a is not None]
    return (harmonic_mean(present, eps) if present else None), basic, advanced


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


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """GRPO advantages of one group: (r − mean) / std (population std), all 0 when the group is constant."""
    mean = sum(rewards) / len(rewards)
    centred = [r - mean for r in rewards]
    std = math.sqrt(sum(c * c for c in centred) / len(centred))
    return [c / std if std > 0 else 0.0 for c in centred]


def rank_score(groups: Sequence[ScoredGroup]) -> float | None:
    taus = [t for g in groups if (t := kendall_tau_b(g.gold, g.predicted)) is not None]
    return (1 + sum(taus) / len(taus)) / 2 if taus else None


def direction_rates(groups: Sequence[ScoredGroup]) -> tuple[float | None, float | None]:
    """(AdvFNR, AdvFPR) over all rollouts with a non-zero gold advantage."""
    false_neg = positives = false_pos = negatives = 0
    for g in groups:
        for gold, pred in zip(group_advantages(g.gold), group_advantages(g.predicted), strict=True):
            if gold > 0:
                positives += 1
                false_neg += pred <= 0
            elif gold < 0:
                negatives += 1
                false_pos += pred >= 0
    return (false_neg / positives if positives else None, false_pos / negatives if negatives else None)


def direction_score(
    fnr: float | None, fpr: float | None, lam: float = 0.5, eps: float = 1e-6
) -> float | None:
    """C_Dir of Eq. 5; None when gold gives no rollout a non-zero advantage."""
    if fnr is None or fpr is None:
        return None
    return harmonic_mean([(lam, 1 - fpr), (1 - lam, 1 - fnr)], eps)


def _pooled_advantages(groups: Sequence[ScoredGroup]) -> tuple[list[float], list[float]]:
    gold: list[float] = []
    judged: list[float] = []
    for g in groups:
        gold += group_advantages(g.gold)
        judged += group_advantages(g.predicted)
    return gold, judged


def advantage_mse(groups: Sequence[ScoredGroup]) -> float | None:
    """MSE(A_judge, A_gold) over every rollout of every group."""
    gold, judged = _pooled_advantages(groups)
    return sum((p - g) ** 2 for g, p in zip(gold, judged, strict=True)) / len(gold) if gold else None


def gold_advantage_variance(groups: Sequence[ScoredGroup]) -> float | None:
    """Var(A_gold): the population variance of the gold advantages of every rollout."""
    gold, _ = _pooled_advantages(groups)
    if not gold:
        return None
    mean = sum(gold) / len(gold)
    return sum((a - mean) ** 2 for a in gold) / len(gold)


def magnitude_score(mse: float | None, variance: float | None, eps: float = 1e-6) -> float | None:
    """C_Mag of Eq. 6."""
    if mse is None or variance is None:
        return None
    return max(0.0, 1 - mse / max(variance, eps))


def consistency_score(repeats: Sequence[Sequence[float]]) -> float | None:
    """C_Con of Eq. 7; None when no sample was scored twice."""
    variances = []
    for scores in repeats:
        if len(scores) < 2:
            continue
        mean = sum(scores) / len(scores)
        variances.append(sum((s - mean) ** 2 for s in scores) / len(scores))
    return max(0.0, 1 - (sum(variances) / len(variances)) / MAX_SCORE_VARIANCE) if variances else None


def calibration_report(
    judgments: Sequence[ItemJudgment],
    groups: Sequence[ScoredGroup],
    repeats: Sequence[Sequence[float]],
    settings: CalibrationSettings | None = None,
) -> CalibrationReport:
    """The five dimensions, C_RM and the verdict of the minimum gates."""
    cfg = settings or CalibrationSettings()
    for g in groups:
        if len(g.gold) != len(g.predicted):
            raise ValueError(
                f"a group has {len(g.gold)} gold rewards but {len(g.predicted)} judge scores; align them"
            )
    reliability, basic, advanced = rubric_reliability(
        judgments, cfg.basic_weight, cfg.advanced_weight, cfg.eps
    )
    fnr, fpr = direction_rates(groups)
    mse, variance = advantage_mse(groups), gold_advantage_variance(groups)
    scores: dict[Dimension, float | None] = {
        "reliability": reliability,
        "rank": rank_score(groups),
        "direction": direction_score(fnr, fpr, cfg.lam, cfg.eps),
        "magnitude": magnitude_score(mse, variance, cfg.eps),
        "consistency": consistency_score(repeats),
    }
    weights = {d: cfg.weights.get(d, 0.0) for d in DIMENSIONS}
    minimums = {d: cfg.minimums.get(d, 0.0) for d in DIMENSIONS}
    missing = [d for d in DIMENSIONS if scores[d] is None]
    low = [d for d in DIMENSIONS if (s := scores[d]) is not None and s < minimums[d]]
    c_rm = (
        None
        if any(weights[d] > 0 for d in missing)
        else sum(weights[d] * (scores[d] or 0.0) for d in DIMENSIONS)
    )
    failures = [f"{d} is not computable from the given data" for d in missing]
    failures += [f"{d} {scores[d]:.3f} < minimum {minimums[d]}" for d in low]
    if c_rm is not None and c_rm < cfg.min_overall:
        failures.append(f"C_RM {c_rm:.3f} < minimum {cfg.min_overall}")
    return CalibrationReport(
        lam=cfg.lam,
        eps=cfg.eps,
        items=len(judgments),
        undecided=sum(j.predicted is None for j in judgments),
        groups=len(groups),
        outcomes=sum(len(g.gold) for g in groups),
        basic_accuracy=basic,
        advanced_accuracy=advanced,
        adv_fnr=fnr,
        adv_fpr=fpr,
        advantage_mse=mse,
        gold_advantage_variance=variance,
        scores=scores,
        weights=weights,
        minimums=minimums,
        c_rm=c_rm,
        min_c_rm=cfg.min_overall,
        failed_minimums=tuple(d for d in DIMENSIONS if d in missing or d in low),
        passed=c_rm is not None and not failures,
        failures=tuple(failures),
    )


def _decision(verdict: object) -> bool | None:
    return None if verdict is None else bool(verdict)


def judge_calibration(
    groups: Sequence[tuple[Task, Sequence[Outcome]]],
    judge: Judge,
    *,
    repeats: int = 3,
    settings: CalibrationSettings | None = None,
) -> CalibrationReport:
    """Calibrate `judge` against code on held-out labelled rollouts.

    Each group is one task with several outcomes (a rollout group). Gold: every rubric item with a
    deterministic check (verifier code aside) is run on the outcome's end state. Judge: the same item,
    its structured target included, on the outcome without its end state (only the transcript: calls,
    what they returned where the outcome keeps it, the answer), so the gold label is never among the
    judge's inputs. A rollout's reward is the weighted share of items passed (undecided counts as not
    passed); every outcome is judged `repeats` times for consistency."""
    judgments: list[ItemJudgment] = []
    scored: list[ScoredGroup] = []
    repeated: list[list[float]] = []
    for task, outcomes in groups:
        checked = [item for item in task.rubric if item.check is not None and item.check.kind != "verifier"]
        if not checked:
            raise ValueError(f"task {task.id} has no code-checked rubric items to calibrate a judge against")
        total = sum(item.weight for item in checked)
        gold_scores: list[float] = []
        judge_scores: list[float] = []
        for outcome in outcomes:
            gold = {item.id: run_check(item.check, task, outcome)[0] is True for item in checked}  # type: ignore[arg-type]
            transcript = outcome.model_copy(update={"final_state": {}})
            runs: list[float] = []
            for attempt in range(max(1, repeats)):
                verdicts = {item.id: _decision(judge(item, task, transcript)) for item in checked}
                runs.append(sum(item.weight for item in checked if verdicts[item.id] is True) / total)
                if attempt == 0:
                    judgments += [
                        ItemJudgment(level=item.level, predicted=verdicts[item.id], gold=gold[item.id])
                        for item in checked
                    ]
            gold_scores.append(sum(item.weight for item in checked if gold[item.id]) / total)
            judge_scores.append(runs[0])
            repeated.append(runs)
        scored.append(ScoredGroup(gold=tuple(gold_scores), predicted=tuple(judge_scores)))
    return calibration_report(judgments, scored, repeated, settings)
