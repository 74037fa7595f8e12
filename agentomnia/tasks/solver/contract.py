"""What a solver-anchored task is built from: an input contract, a blueprint and the trusted artifact.

The input contract says what an instance of a problem family is (fields, their business meaning,
scale, value ranges, the conditions under which an instance is feasible). The blueprint traces
every explicit and implicit constraint, and the objective, to the state fields the agent has to
gather through tools. The artifact is the solver's verdict on one instance; rubric and verifier are
derived from it and nothing else.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ContractField(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str  # table.attribute in the environment's state
    meaning: str
    scale: str  # unit or kind of quantity
    range: str  # value range the generator draws from


class InputContract(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    summary: str
    fields: tuple[ContractField, ...]
    feasibility: tuple[str, ...]  # conditions an instance must meet to have any feasible plan
    size: str  # how many records of each kind an instance has


class Trace(BaseModel):
    """One constraint or the objective, traced to the state fields it reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    role: Literal["explicit", "implicit", "objective"]
    text: str
    fields: tuple[str, ...]


class Blueprint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str
    sense: Literal["min", "max"]
    objective: Trace
    constraints: tuple[Trace, ...]
    decisions: dict[str, str]  # table -> the status value that means "in the plan"


class SolverArtifact(BaseModel):
    """The trusted result for one instance: status, objective and one optimal plan."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    solver: str = "scipy.optimize.milp (HiGHS)"
    status: str
    objective: float
    plan: dict[str, list[str]]  # table -> keys set to the decision value
    second_best: float | None = None  # best objective of any other plan (None: no other feasible plan)
    baseline: float | None = None  # a greedy plan's objective, when the greedy plan is feasible
    variables: int = 0
    rows: int = 0
    seconds: float = 0.0
    proven_optimal: bool = True
    notes: list[str] = Field(default_factory=list)
