"""Task records: frozen, content-hashed task data, kept apart from the code that grades it.

A task lives on one environment bundle and starts from its own initial state (`init_config`, a
hardened variant of the environment's s0). The public `query` is all an agent sees; everything
else — the internal spec, the reference solution (ordered calls or a program), the expected end
state and answer, the rubric and optional verifier code — is ground truth for graders, teachers
and benchmarks. Rubric items are outcome-focused and, wherever code can decide them, carry a
deterministic `check`; an item without one needs a judge (LLM mode) and is unscored offline.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentomnia.records import Record
from agentomnia.rejection import Rejection
from agentomnia.taxonomy import Coordinate

TaskKind = Literal["dag_standard", "dag_challenge", "program", "solver_anchored", "solver_guided"]
TASK_KINDS: tuple[TaskKind, ...] = (
    "dag_standard",
    "dag_challenge",
    "program",
    "solver_anchored",
    "solver_guided",
)

CheckKind = Literal[
    "field_equals",  # final_state[table][key][field] == value
    "field_changed",  # the field differs from the initial state
    "field_unchanged",  # the field equals the initial state (no collateral damage)
    "record_exists",  # final_state[table] has a new record (a key not in init_config) matching `match`
    "record_absent",  # no record matching `match` (e.g. deleted)
    "count_equals",  # number of records in `table` matching `match` == value
    "answer_equals",  # answer[field] == value (numbers within `tolerance`; strings case/space-insensitive)
    "answer_contains",  # answer[field] (a list or a string) contains every item of value
    "called",  # the trajectory called `tool` (optionally with `args` as a subset)
    "not_called",  # the trajectory never called `tool`
    "verifier",  # run the task's verifier_code (check_func(final_state) with initial_state in scope)
    "diff_within",  # every change from the initial state is on an allowed {table, key}; key None admits new records
]


class Check(BaseModel):
    """One deterministic test of an outcome. Parameters depend on `kind` (see CheckKind)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: CheckKind
    table: str | None = None
    key: str | None = None
    field: str | None = None
    value: Any = None
    match: dict[str, Any] = Field(default_factory=dict)
    tolerance: float = 0.0
    tool: str | None = None
    args: dict[str, Any] = Field(default_factory=dict)


class RubricItem(BaseModel):
    """G# items are general (apply to any task), T# items task-specific; 1-3 points each."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str
    scope: Literal["general", "task"]
    level: Literal["basic", "advanced"] = "basic"
    weight: int = Field(1, ge=1, le=3)
    check: Check | None = None


class ReferenceCall(BaseModel):
    """One step of a reference solution; `sources` says where each argument came from
    (`s0:<table>.<key>.<field>`, `out:<step>.<path>`, `query`, or `literal`), so nothing is invented."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tool: str
    args: dict[str, Any]
    sources: dict[str, str] = Field(default_factory=dict)


class Persona(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    granularity: Literal["terse", "normal", "detailed"] = "normal"
    withheld: dict[str, Any] = Field(default_factory=dict)  # details given only when asked
    misleading: dict[str, Any] = Field(default_factory=dict)  # details stated wrongly at first


class Task(Record):
    record_kind: ClassVar[str] = "task"
    #: metadata that differs between two runs making the same task (wall-clock timings); it is kept
    #: but not hashed, so the id is the same on every run. Schema 1 hashed it; its ids stay valid.
    unhashed_metadata: ClassVar[frozenset[str]] = frozenset({"seconds", "solver_seconds"})

    schema_version: int = 2
    env_id: str
    kind: TaskKind
    coordinate: Coordinate
    init_config: dict[str, Any]
    query: str
    internal_spec: dict[str, Any] = Field(default_factory=dict)
    reference_calls: tuple[ReferenceCall, ...] = ()
    reference_program: str | None = None  # program tasks: `def solve(call):` run in the sandbox
    expected_answer: dict[str, Any] = Field(default_factory=dict)
    expected_diff: tuple[dict[str, Any], ...] = ()  # per-field changes: {table, key, field, before, after}
    rubric: tuple[RubricItem, ...]
    verifier_code: str | None = None  # check_func(final_state) -> bool, initial_state in scope
    interaction: Literal["single", "multi"] = "single"
    persona: Persona | None = None
    candidate_tools: tuple[str, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)

    def content(self) -> dict[str, Any]:
        data = super().content()
        if self.schema_version >= 2:
            data["metadata"] = {k: v for k, v in data["metadata"].items() if k not in self.unhashed_metadata}
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        ids = [i.id for i in self.rubric]
        if not self.rubric:
            raise ValueError("a task needs at least one rubric item")
        if len(set(ids)) != len(ids):
            raise ValueError(f"rubric item ids repeat: {ids}")
        if not self.query.strip():
            raise ValueError("a task needs a non-empty public query")
        if self.interaction == "multi" and self.persona is None:
            raise ValueError("a multi-turn task needs a persona for the user simulator")
        return self


def task_rejection(env_id: str, kind: str, stage: str, reason: str) -> Rejection:
    """A candidate task that did not make it, and why (kept so nothing vanishes silently)."""
    return Rejection(subject=env_id, subject_kind="task", stage=stage, reason=reason, parent=env_id,
                     detail={"kind": str(kind)})  # fmt: skip
