"""The rollback curriculum (RCRL, the paper's Algorithm 1) as a plain state machine.

Every RL prompt q has a golden trajectory tau* of |tau*| assistant turns and a prefix length P_q: the
first P_q golden turns (calls and their results) are given to the policy, which continues from there.
Two rules move P_q:

- Retry-triggered extension. When a group of rollouts for q is all-zero, the prompt is retried with a
  longer prefix, P_q += M_q, at most T_max times per round. In the first epoch M_q = ceil(alpha*|tau*|)
  (alpha = 0.2: a fifth of the golden path at a time, to find signal fast); afterwards M_q = 1.
- Round-wise adaptation (Eq. 10). At the end of a round (every prompt seen once), the group mean
  reward R_q of the prompt's last group sets delta_q: -delta_max when R_q >= R_th (solved: take the
  training wheels off quickly), -1 when 0 < R_q < R_th (partly solved: back off slowly), +1 when
  R_q = 0 (still failing: give one more turn). P_q <- clip(P_q + delta_q, 0, |tau*| - 1).

P_q never reaches |tau*|, so the policy always owns at least the last turn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field


class CurriculumSettings(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    alpha: float = Field(default=0.2, gt=0, le=1, description="first-epoch extension as a share of |tau*|")
    max_retries: int = Field(default=2, ge=0, description="T_max: retries of one prompt per round")
    delta_max: int = Field(default=2, ge=1, description="prefix cut after a solved round")
    reward_threshold: float = Field(default=0.5, gt=0, le=1, description="R_th")
    initial_prefix: int = Field(default=0, ge=0)


class PromptState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    golden_turns: int = Field(ge=1)
    prefix: int = 0
    retries: int = 0
    last_mean: float | None = None


class Decision(BaseModel):
    """What to do after a group: retry with `prefix`, or move on."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    retry: bool
    prefix: int
    reason: str


def eq10_delta(mean_reward: float, threshold: float, delta_max: int) -> int:
    """Eq. 10: -delta_max at or above R_th, -1 for partial success, +1 for an all-fail group."""
    if mean_reward >= threshold:
        return -delta_max
    if mean_reward > 0:
        return -1
    return 1


class RolloutCurriculum:
    """Per-prompt prefix lengths, updated by group rewards (see the module docstring)."""

    def __init__(self, golden_turns: Mapping[str, int], settings: CurriculumSettings | None = None) -> None:
        self.settings = settings or CurriculumSettings()
        self.epoch = 0
        self.history: list[dict[str, int]] = []
        self.states: dict[str, PromptState] = {}
        for prompt_id, turns in golden_turns.items():
            if turns < 1:
                raise ValueError(
                    f"prompt {prompt_id} has a golden trajectory of {turns} turns; it needs at least one"
                )
            start = min(self.settings.initial_prefix, turns - 1)
            self.states[prompt_id] = PromptState(golden_turns=turns, prefix=start)
        self._seen: set[str] = set()

    def _state(self, prompt_id: str) -> PromptState:
        try:
            return self.states[prompt_id]
        except KeyError:
            raise KeyError(
                f"prompt {prompt_id} is not in the curriculum; build it from the RL task rows"
            ) from None

    def prefix(self, prompt_id: str) -> int:
        return self._state(prompt_id).prefix

    def max_prefix(self, prompt_id: str) -> int:
        return self._state(prompt_id).golden_turns - 1

    def step_size(self, prompt_id: str) -> int:
        """M_q: ceil(alpha * |tau*|) in the first epoch, 1 afterwards."""
        if self.epoch == 0:
            return max(1, math.ceil(self.settings.alpha * self._state(prompt_id).golden_turns))
        return 1

    def observe(self, prompt_id: str, rewards: Sequence[float]) -> Decision:
        """Record one group's rewards; an all-zero group is retried with a longer prefix while allowed."""
        if not rewards:
            raise ValueError(f"prompt {prompt_id}: a group needs at least one reward")
        state = self._state(prompt_id)
        state.last_mean = sum(rewards) / len(rewards)
        self._seen.add(prompt_id)
        if any(r > 0 for r in rewards):
            return Decision(retry=False, prefix=state.prefix, reason="the group has a success")
        if state.retries >= self.settings.max_retries:
            return Decision(
                retry=False,
                prefix=state.prefix,
                reason=f"retry cap T_max={self.settings.max_retries} reached",
            )
        if state.prefix >= self.max_prefix(prompt_id):
            return Decision(
                retry=False, prefix=state.prefix, reason="the prefix already covers all but the last turn"
            )
        state.prefix = min(state.prefix + self.step_size(prompt_id), self.max_prefix(prompt_id))
        state.retries += 1
        return Decision(
            retry=True, prefix=state.prefix, reason="all-zero group: extend the golden prefix and retry"
        )

    @property
    def round_complete(self) -> bool:
        return self._seen >= set(self.states)

    def end_round(self) -> dict[str, int]:
        """Apply Eq. 10 to every prompt seen this round, reset retry counters, advance the epoch.
        Returns delta_q per prompt."""
        deltas: dict[str, int] = {}
        for prompt_id, state in self.states.items():
            if prompt_id in self._seen and state.last_mean is not None:
                delta = eq10_delta(state.last_mean, self.settings.reward_threshold, self.settings.delta_max)
                state.prefix = max(0, min(state.prefix + delta, state.golden_turns - 1))
                deltas[prompt_id] = delta
            state.retries = 0
        self._seen.clear()
        self.epoch += 1
        self.history.append({pid: s.prefix for pid, s in self.states.items()})
        return deltas
