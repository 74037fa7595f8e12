"""OmniaBench records: the benchmark split, one result per (task, trial), and failures.

These are the contracts the benchmark stages share. The split says which tasks are held out and
why others were dropped; an `EvalResult` keeps a whole scored run (coordinates, score components,
the per-field end-state diff and the trajectory) so any failure can be re-examined later without
rerunning it; a `Failure` is the failed subset with tags and evidence, the input of self-evolution.
Infrastructure errors (the sandbox or environment broke, not the agent) are kept apart: they are
results with `infra_error` set and never become failures.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import Record
from agentomnia.tasks.families import ROUTES as ROUTES  # the benchmark routes are the task families'
from agentomnia.tasks.families import Route as Route
from agentomnia.taxonomy import Coordinate
from agentomnia.trajectories.models import Step, StopReason

FailureTag = Literal[
    "no_action",  # never called a tool and gave no usable answer
    "wrong_tool",  # called tools the reference never needs instead of those it does
    "misunderstood_tool",  # called the right tool but it refused the request for a semantic reason
    "invalid_arguments",  # arguments that do not parse or that the schema refuses
    "wrong_order",  # the needed calls happened, but a dependency ran before what it depends on
    "missed_constraint",  # a rubric constraint (no collateral change, a rule) was broken
    "hallucinated_value",  # an argument or answer value that appears nowhere in what the agent saw
    "incomplete",  # stopped before making every required change
    "wrong_answer",  # reported an answer that does not match the expected one
    "collateral_change",  # changed state the task did not ask to change
    "budget_exhausted",  # ran out of turns or invalid-call allowance
]
FAILURE_TAGS: tuple[str, ...] = (
    "no_action",
    "wrong_tool",
    "misunderstood_tool",
    "invalid_arguments",
    "wrong_order",
    "missed_constraint",
    "hallucinated_value",
    "incomplete",
    "wrong_answer",
    "collateral_change",
    "budget_exhausted",
)


class BenchmarkItem(BaseModel):
    """One held-out task: which route it is posed on and whether it is in the challenging subset."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    route: Route
    challenging: bool = False


class DroppedCandidate(BaseModel):
    """A task not admitted to the benchmark, with the reason (e.g. too close to a training task)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_id: str
    reason: str
    nearest: str | None = None  # the training task it is too close to
    similarity: float | None = None


class BenchmarkSplit(Record):
    """The held-out benchmark: fixed once built; later rounds never draw from it."""

    record_kind: ClassVar[str] = "benchmark_split"

    items: tuple[BenchmarkItem, ...]
    thresholds: dict[str, float]  # e.g. {"ngram_jaccard": 0.6, "embedding_cosine": 0.92}
    strata: dict[str, dict[str, int]] = Field(default_factory=dict)  # axis -> value -> count
    dropped: tuple[DroppedCandidate, ...] = ()

    @property
    def task_ids(self) -> list[str]:
        return [i.task_id for i in self.items]


class FieldDiff(BaseModel):
    """One field of the end state that differs from what the task expects."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    table: str
    key: str
    field: str
    initial: Any = None
    expected: Any = None
    actual: Any = None


class EvalResult(Record):
    """One scored run of one policy on one benchmark task."""

    record_kind: ClassVar[str] = "eval_result"

    eval_id: str  # one evaluation: a policy on the benchmark version at one round
    task_id: str
    env_id: str
    task_kind: str
    route: Route
    challenging: bool = False
    coordinate: Coordinate
    policy: str
    trial: int
    score: float | None  # earned / total over scored rubric items; None when nothing was scored
    passed: bool  # only when every item is scored and the score is exactly 1.0
    components: dict[str, bool | None] = Field(default_factory=dict)  # rubric item id -> result
    details: dict[str, str] = Field(default_factory=dict)  # rubric item id -> what the grader saw
    infra_error: str | None = None  # the environment or sandbox failed: not the agent's fault
    error: str | None = None  # why a run stopped with "error" when the policy itself raised
    stop_reason: StopReason = "answer"
    state_diff: tuple[FieldDiff, ...] = ()
    answer: dict[str, Any] = Field(default_factory=dict)
    messages: tuple[dict[str, Any], ...] = ()
    steps: tuple[Step, ...] = ()
    initial_hash: str = ""  # state hash before the first step (tells which steps changed state)
    seconds: float = 0.0

    unhashed: ClassVar[frozenset[str]] = frozenset({"seconds"})


class Failure(Record):
    """A failed (task, trial): where it sits on the taxonomy, what went wrong and the evidence."""

    record_kind: ClassVar[str] = "failure"

    eval_id: str
    result_id: str
    task_id: str
    env_id: str
    task_kind: str
    route: Route
    policy: str
    trial: int
    coordinate: Coordinate
    score: float | None
    tags: tuple[str, ...]  # FailureTag values, most decisive first
    evidence: tuple[str, ...]  # one sentence per tag, quoting the step, field or value involved
