"""Trajectory records and the reports that travel with them.

A trajectory is the retained transcript of one agent run on one task: OpenAI-format messages
(assistant turns with `tool_calls`, `role: "tool"` results), the state hash after every tool call,
the grade and the quality verdicts. Privileged guidance shapes a teacher's run but is never part of
this record: only the kind of guidance used is kept, so a dataset built from trajectories cannot
carry it by construction (and `quality.guidance_leak` checks the text anyway).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import Record

GuidanceKind = Literal["none", "planning", "outcome"]
StopReason = Literal["answer", "user_done", "budget", "invalid_calls", "error"]


class Step(BaseModel):
    """One tool call made during a run, what it returned and the state hash right after it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    turn: int  # index of the assistant message that issued the call
    tool: str
    arguments: dict[str, Any]
    ok: bool
    error_code: str | None = None
    state_hash: str
    valid: bool = True  # False: unparsable arguments or an unknown tool (never reached the environment)


class CheckVerdict(BaseModel):
    """The result of one quality check: `passed` None means it could not be decided."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    passed: bool | None
    problems: list[str] = Field(default_factory=list)
    judged: bool = False  # True when an LLM judge decided part of it (LLM mode only)


class QualityReport(BaseModel):
    """Task correctness first, then the process checks; a trajectory is kept only if all pass."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    correctness: CheckVerdict
    continuity: CheckVerdict
    consistency: CheckVerdict
    grounding: CheckVerdict
    leak: CheckVerdict
    score: float | None = None
    replay_matches: bool | None = None  # the calls replayed in a fresh session give the same hashes

    @property
    def verdicts(self) -> list[CheckVerdict]:
        return [self.correctness, self.continuity, self.consistency, self.grounding, self.leak]

    @property
    def passed(self) -> bool:
        return all(v.passed is True for v in self.verdicts) and self.replay_matches is not False

    def failed_checks(self) -> list[str]:
        return [v.name for v in self.verdicts if v.passed is not True]


class Trajectory(Record):
    record_kind: ClassVar[str] = "trajectory"

    task_id: str
    env_id: str
    task_kind: str
    policy: str
    interaction: Literal["single", "multi"] = "single"
    messages: tuple[dict[str, Any], ...]
    steps: tuple[Step, ...] = ()
    initial_hash: str = ""
    answer: dict[str, Any] = Field(default_factory=dict)
    stop_reason: StopReason = "answer"
    guidance: GuidanceKind = "none"
    rewards: dict[str, float | None] = Field(default_factory=dict)  # score, pass, format, grounding...
    verification: QualityReport | None = None
    attempt: int = 0  # which of several runs of the same policy on the same task
    error: str | None = None  # why the run stopped with `error` (a policy or environment failure)

    @property
    def state_hashes(self) -> list[str]:
        return [s.state_hash for s in self.steps]

    @property
    def verified(self) -> bool:
        return self.verification is not None and self.verification.passed

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        return [(s.tool, dict(s.arguments)) for s in self.steps if s.valid]

    def with_verification(self, report: QualityReport) -> Trajectory:
        """A copy carrying `report` (and so a new content id)."""
        rewards = dict(self.rewards)
        rewards.update({v.name: None if v.passed is None else float(v.passed) for v in report.verdicts})
        rewards["score"] = report.score
        data = self.model_dump(exclude={"id", "verification", "rewards"})
        return Trajectory.model_validate({**data, "verification": report.model_dump(), "rewards": rewards})


class RolloutResult(BaseModel):
    """Everything one run left behind: the transcript and the live end state for grading."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    messages: list[dict[str, Any]]
    steps: list[Step]
    initial_hash: str
    final_state: dict[str, Any]
    answer: dict[str, Any]
    stop_reason: StopReason
    error: str | None = None

    @property
    def truncated(self) -> bool:
        return self.stop_reason in ("budget", "invalid_calls")

    @property
    def anomalous(self) -> bool:
        return self.stop_reason == "error"
