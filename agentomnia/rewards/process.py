"""Process validation mid-trajectory (paper §5.2.2): step-level checks that end a doomed rollout early
and say why, so neither the sandbox nor the reward pipeline spends more on it.

`ProcessValidator` watches one rollout's tool calls as they happen. Two kinds of stop:

- fatal: the task can no longer pass, whatever the rollout does next. The rubric's `not_called` item
  decides every reward mode (rule, rubric, both, and the safeguard judge keeps deterministic checks), so
  calling a tool the task forbids fails the task there and then. The rollout's reward is 0 without
  running verification.
- stuck: the rollout made the same call with the same arguments and got the same result `repeat_limit`
  times in a row. The state cannot have moved between those calls, so the next identical call tells it
  nothing; further calls are refused with the reason and the rollout is graded as usual when it ends
  (its answer may still be right).

A stop is recorded with the step that caused it; later calls are refused without reaching the sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentomnia.records import ToolResult, canonical_json
from agentomnia.tasks.grading import call_matches
from agentomnia.tasks.models import Check, Task

STOPPED = "rollout_stopped"  # the error code of a call refused after a stop


class ProcessSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    forbidden_calls: bool = Field(default=True, description="end the rollout at a call the task forbids")
    repeat_limit: int | None = Field(
        default=3,
        ge=2,
        description="identical calls with identical results in a row that stop it; None: never",
    )


class ProcessStop(BaseModel):
    """Why a rollout was ended early, at which of its own calls (0-based)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["forbidden_call", "stuck"]
    step: int
    reason: str

    @property
    def fatal(self) -> bool:
        """The task cannot pass any more: the reward is 0 whatever follows."""
        return self.kind == "forbidden_call"

    def refusal(self) -> ToolResult:
        """What a call after the stop returns instead of running."""
        return ToolResult.failure(STOPPED, f"this rollout has ended: {self.reason}; give your final answer")


class ProcessValidator:
    """The step-level checks of one rollout (see the module docstring)."""

    def __init__(self, task: Task, settings: ProcessSettings | None = None) -> None:
        self.settings = settings or ProcessSettings()
        self.forbidden: list[tuple[str, Check]] = [
            (item.id, item.check)
            for item in task.rubric
            if item.check is not None and item.check.kind == "not_called" and item.check.tool
        ]
        self.steps = 0
        self.stop: ProcessStop | None = None
        self._last: tuple[str, ToolResult] | None = None
        self._streak = 0

    def after_call(self, tool: str, args: Mapping[str, Any], result: ToolResult) -> ProcessStop | None:
        """Check the call just made; the stop it causes (kept in `self.stop`), or None."""
        step = self.steps
        self.steps += 1
        if self.stop is not None:
            return self.stop
        if self.settings.forbidden_calls:
            for item_id, check in self.forbidden:
                if call_matches(check, tool, args):
                    self.stop = ProcessStop(
                        kind="forbidden_call",
                        step=step,
                        reason=f"called {tool}, which the task forbids (rubric item {item_id}); it cannot pass now",
                    )
                    return self.stop
        seen = (f"{tool}:{canonical_json(dict(args))}", result)  # results compare field by field
        self._streak = self._streak + 1 if seen == self._last else 1
        self._last = seen
        limit = self.settings.repeat_limit
        if limit is not None and self._streak >= limit:
            self.stop = ProcessStop(
                kind="stuck",
                step=step,
                reason=f"{tool} was called {self._streak} times in a row with the same arguments and the same result",
            )
        return self.stop
