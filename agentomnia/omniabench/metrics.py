"""Benchmark metrics: pass@1, pass@k and pass^k, overall and along every taxonomy axis.

Per task, n counts the trials that ran (infrastructure errors are left out of n and counted apart)
and c the trials that passed (score exactly 1.0 with every rubric item scored). Then

    pass@1 = c / n                           the expected success of one try
    pass@k = 1 - C(n - c, k) / C(n, k)       some of k tries succeeds (the unbiased estimator)
    pass^k = C(c, k) / C(n, k)               all of k tries succeed (consistency)

each averaged over tasks. k defaults to the trials per task; a task with fewer usable trials than k
(some hit infrastructure errors) is estimated at k = n, and a task with none at all counts only
under `infra_errors`. Breakdowns group by result metadata, so every table is a group-by: a task
counts under each of its capabilities and each atom set in its profile.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from math import comb
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.omniabench.models import EvalResult

AXES: tuple[str, ...] = ("route", "split", "l1", "capability", "atom", "challenging")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn without replacement from n (c correct) passes."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all of k trials drawn without replacement from n (c correct) pass."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")
    return comb(c, k) / comb(n, k)


class TaskTally(BaseModel):
    """One task's trials: n usable, c passed, and how many hit infrastructure errors."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    n: int
    c: int
    infra_errors: int
    mean_score: float | None


class MetricRow(BaseModel):
    """Metrics of one group of tasks (all of them, or one value of one axis)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    axis: str
    value: str
    tasks: int  # tasks with at least one usable trial
    trials: int  # usable trials (infrastructure errors excluded)
    passed: int
    pass_at_1: float
    pass_at_k: float
    pass_hat_k: float
    infra_errors: int
    mean_score: float | None = None

    def as_dict(self, k: int) -> dict[str, Any]:
        return {
            self.axis: self.value, "tasks": self.tasks, "trials": self.trials, "passed": self.passed,
            "pass@1": round(self.pass_at_1, 4), f"pass@{k}": round(self.pass_at_k, 4),
            f"pass^{k}": round(self.pass_hat_k, 4), "infra_errors": self.infra_errors,
            "mean_score": None if self.mean_score is None else round(self.mean_score, 4),
        }  # fmt: skip


def tally(results: Iterable[EvalResult]) -> dict[str, TaskTally]:
    """Per task id: usable trials, passes, infrastructure errors and mean score."""
    groups: dict[str, list[EvalResult]] = defaultdict(list)
    for r in results:
        groups[r.task_id].append(r)
    out: dict[str, TaskTally] = {}
    for task_id, rs in groups.items():
        usable = [r for r in rs if r.infra_error is None]
        scores = [r.score for r in usable if r.score is not None]
        out[task_id] = TaskTally(
            task_id=task_id,
            n=len(usable),
            c=sum(1 for r in usable if r.passed),
            infra_errors=len(rs) - len(usable),
            mean_score=sum(scores) / len(scores) if scores else None,
        )
    return out


def metric_row(axis: str, value: str, tallies: Sequence[TaskTally], k: int) -> MetricRow:
    scored = [t for t in tallies if t.n > 0]
    count = len(scored)

    def mean(f: Callable[[TaskTally], float]) -> float:
        return sum(f(t) for t in scored) / count if count else 0.0

    scores = [t.mean_score for t in scored if t.mean_score is not None]
    return MetricRow(
        axis=axis,
        value=value,
        tasks=count,
        trials=sum(t.n for t in scored),
        passed=sum(t.c for t in scored),
        pass_at_1=mean(lambda t: t.c / t.n),
        pass_at_k=mean(lambda t: pass_at_k(t.n, t.c, min(k, t.n))),
        pass_hat_k=mean(lambda t: pass_hat_k(t.n, t.c, min(k, t.n))),
        infra_errors=sum(t.infra_errors for t in tallies),
        mean_score=sum(scores) / len(scores) if scores else None,
    )


def _keys(result: EvalResult, axis: str) -> tuple[str, ...]:
    coord = result.coordinate
    if axis == "route":
        return (result.route,)
    if axis == "split":
        return (coord.split,)
    if axis == "l1":
        return (coord.l1_key,)
    if axis == "capability":
        return coord.capabilities
    if axis == "atom":
        return coord.atoms
    if axis == "challenging":
        return ("challenging" if result.challenging else "regular",)
    raise ValueError(f"unknown report axis {axis!r}; use one of {', '.join(AXES)}")


class EvalReport(BaseModel):
    """Metrics of one evaluation: overall and per value of every axis in `AXES`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    eval_id: str | None = None
    policy: str | None = None
    k: int
    overall: MetricRow
    breakdowns: dict[str, list[MetricRow]] = Field(default_factory=dict)

    def rows(self, axis: str = "overall") -> list[dict[str, Any]]:
        """Plain dicts for a metadata table (one per group of `axis`, or the overall row)."""
        if axis == "overall":
            return [self.overall.as_dict(self.k)]
        if axis not in self.breakdowns:
            raise ValueError(f"no breakdown by {axis!r}; the report has {', '.join(self.breakdowns)}")
        return [row.as_dict(self.k) for row in self.breakdowns[axis]]

    def value(self, axis: str, key: str) -> MetricRow | None:
        return next((r for r in self.breakdowns.get(axis, []) if r.value == key), None)

    def render(self, axes: Sequence[str] = AXES) -> str:
        """Fixed-width text tables: the overall line, then one table per axis."""
        title = " ".join(p for p in (self.policy, f"({self.eval_id})" if self.eval_id else None) if p)
        blocks = [f"OmniaBench report {title}".rstrip(), _table("overall", self.rows("overall"))]
        blocks += [_table(axis, self.rows(axis)) for axis in axes if axis in self.breakdowns]
        return "\n\n".join(blocks)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _table(axis: str, rows: Sequence[dict[str, Any]]) -> str:
    if not rows:
        return f"{axis}: no results"
    headers = list(rows[0])
    cells = [[_cell(r[h]) for h in headers] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    body = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join([line, "-" * len(line), *body])


def report(results: Sequence[EvalResult], *, k: int | None = None, axes: Sequence[str] = AXES) -> EvalReport:
    """Overall metrics and a breakdown per axis. `k` defaults to the most trials any task had."""
    per_task = tally(results)
    if k is None:
        trials: dict[str, set[int]] = defaultdict(set)
        for r in results:
            trials[r.task_id].add(r.trial)
        k = max((len(v) for v in trials.values()), default=1)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    first: dict[str, EvalResult] = {}
    for r in results:
        first.setdefault(r.task_id, r)
    breakdowns: dict[str, list[MetricRow]] = {}
    for axis in axes:
        groups: dict[str, list[TaskTally]] = defaultdict(list)
        for task_id, result in first.items():
            for key in _keys(result, axis):
                groups[key].append(per_task[task_id])
        breakdowns[axis] = [metric_row(axis, key, groups[key], k) for key in sorted(groups)]
    ids = {r.eval_id for r in results}
    policies = {r.policy for r in results}
    return EvalReport(
        eval_id=ids.pop() if len(ids) == 1 else None,
        policy=policies.pop() if len(policies) == 1 else None,
        k=k,
        overall=metric_row("overall", "all", list(per_task.values()), k),
        breakdowns=breakdowns,
    )
