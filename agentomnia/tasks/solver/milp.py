"""Mixed-integer linear programs and the one solver the solver-anchored tasks trust (HiGHS via scipy).

Every problem family states its instance as a `Milp`: an objective, linear constraint rows and
variable bounds, with the binary decision variables mapped to the state records an agent writes
to. The solver's status, objective and solution are the task's trusted artifact. Two extra solves
make the comparison space measurable: the best plan other than the optimum (a no-good cut over
the binary variables; none means only one plan is feasible, a degenerate instance) and another
plan with the same objective (used to show the rubric accepts any optimal plan, not one answer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.optimize import Bounds, LinearConstraint, milp

Sense = Literal["min", "max"]


class Row(BaseModel):
    """lower <= sum(coefs[i] * x[i]) <= upper; `name` ties the row to the blueprint's constraint."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    coefs: dict[int, float]
    lower: float = -math.inf
    upper: float = math.inf


class Milp(BaseModel):
    """Variables 0..n-1; the first `len(binaries)` are the binary decisions, the rest auxiliary."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sense: Sense
    objective: list[float]
    rows: list[Row]
    binaries: list[tuple[str, str]]  # (table, key) of the record each binary decision selects
    aux_bounds: list[tuple[float, float]] = Field(default_factory=list)  # continuous auxiliaries
    offset: float = 0.0  # a constant part of the objective (fixed costs outside the decisions)

    @property
    def size(self) -> int:
        return len(self.binaries) + len(self.aux_bounds)


class Solution(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["optimal", "infeasible", "unbounded", "failed"]
    objective: float | None = None
    chosen: tuple[tuple[str, str], ...] = ()  # the binary decisions set to 1
    values: tuple[int, ...] = ()  # the binary part of the solution vector
    message: str = ""


def _solve(model: Milp, extra: Sequence[Row] = ()) -> Solution:
    n = model.size
    if n == 0:
        return Solution(status="failed", message="the model has no variables")
    sign = 1.0 if model.sense == "min" else -1.0
    c = sign * np.asarray(model.objective, dtype=float)
    rows = [*model.rows, *extra]
    constraints = []
    if rows:
        a = np.zeros((len(rows), n))
        lo = np.empty(len(rows))
        hi = np.empty(len(rows))
        for i, row in enumerate(rows):
            for j, v in row.coefs.items():
                a[i, j] = v
            lo[i], hi[i] = row.lower, row.upper
        constraints.append(LinearConstraint(a, lo, hi))
    nb = len(model.binaries)
    integrality = np.array([1] * nb + [0] * len(model.aux_bounds))
    lower = np.array([0.0] * nb + [b[0] for b in model.aux_bounds])
    upper = np.array([1.0] * nb + [b[1] for b in model.aux_bounds])
    result = milp(c, constraints=constraints, integrality=integrality, bounds=Bounds(lower, upper))
    if result.status == 2:
        return Solution(status="infeasible", message=str(result.message))
    if result.status == 3:
        return Solution(status="unbounded", message=str(result.message))
    if result.x is None or result.status != 0:
        return Solution(status="failed", message=str(result.message))
    values = tuple(int(round(v)) for v in result.x[:nb])
    objective = float(np.dot(model.objective[:nb], values)) + model.offset
    objective += float(np.dot(model.objective[nb:], result.x[nb:])) if model.aux_bounds else 0.0
    return Solution(
        status="optimal",
        objective=round(objective, 6),
        chosen=tuple(ref for ref, v in zip(model.binaries, values, strict=True) if v == 1),
        values=values,
        message=str(result.message),
    )


def solve(model: Milp) -> Solution:
    """The optimum (HiGHS branch and bound, proven within its default gap)."""
    return _solve(model)


def _no_good(model: Milp, values: Sequence[int]) -> Row:
    """Excludes exactly the binary vector `values`: at least one decision must differ."""
    ones = [j for j, v in enumerate(values) if v == 1]
    coefs = {j: (1.0 if values[j] == 1 else -1.0) for j in range(len(model.binaries))}
    return Row(name="no_good", coefs=coefs, upper=len(ones) - 1)


def second_best(model: Milp, best: Solution) -> Solution:
    """The best plan whose decisions differ from `best`; status infeasible means `best` is the only plan."""
    return _solve(model, [_no_good(model, best.values)])


def alternative_optimum(model: Milp, best: Solution, tolerance: float = 1e-6) -> Solution:
    """Another plan with exactly the optimal objective, if the instance has one."""
    if best.objective is None:
        return Solution(status="failed", message="no optimum to match")
    nb = len(model.binaries)
    target = best.objective - model.offset
    equal = Row(
        name="same_objective",
        coefs={j: model.objective[j] for j in range(nb) if model.objective[j]},
        lower=target - tolerance,
        upper=target + tolerance,
    )
    if model.aux_bounds and any(model.objective[nb:]):
        return Solution(status="failed", message="auxiliary variables carry cost; no equal-objective search")
    return _solve(model, [_no_good(model, best.values), equal])


def worse_plan(model: Milp, best: Solution, margin: float = 1e-3) -> Solution:
    """A feasible plan strictly worse than `best` (by at least `margin`), if one exists."""
    if best.objective is None:
        return Solution(status="failed", message="no optimum to compare with")
    target = best.objective - model.offset
    coefs = {j: c for j, c in enumerate(model.objective) if c}
    row = (
        Row(name="worse", coefs=coefs, upper=target - margin)
        if model.sense == "max"
        else Row(name="worse", coefs=coefs, lower=target + margin)
    )
    return _solve(model, [row])


def evaluate(model: Milp, values: Sequence[int]) -> tuple[bool, float]:
    """(feasible, objective) of a binary decision vector, checking only rows without auxiliaries.

    Used to pick perturbations; the task's own verdict always comes from the verifier code run on
    the final state.
    """
    nb = len(model.binaries)
    feasible = True
    for row in model.rows:
        if any(j >= nb for j in row.coefs):
            continue
        total = sum(v * values[j] for j, v in row.coefs.items())
        if total < row.lower - 1e-9 or total > row.upper + 1e-9:
            feasible = False
            break
    objective = sum(model.objective[j] * values[j] for j in range(nb)) + model.offset
    return feasible, round(objective, 6)
