"""Rewards for agentic RL: rule- and rubric-based task rewards, a router between them, auxiliary
shaping terms, and reward-model calibration metrics.

Task rewards are binary ({0, 1}) or unscored (None), never a silent 0 for something that could not
be decided: a verifier that fails to execute falls back to the judge when there is one and is
otherwise unscored, so training can drop the rollout instead of learning from a wrong label.
"""

from agentomnia.rewards.auxiliary import FormatCheck, check_format, redundancy_penalty
from agentomnia.rewards.calibration import (
    CalibrationReport,
    CalibrationSettings,
    ItemJudgment,
    ScoredGroup,
    calibration_report,
    judge_calibration,
)
from agentomnia.rewards.router import RewardMode, TaskReward, choose_mode, score_task
from agentomnia.rewards.rubric import rubric_reward
from agentomnia.rewards.rules import (
    answer_matches,
    extract_answer,
    fuzzy_ratio,
    rule_reward,
    schema_errors,
    state_predicates_hold,
)

__all__ = [
    "CalibrationReport",
    "CalibrationSettings",
    "FormatCheck",
    "ItemJudgment",
    "RewardMode",
    "ScoredGroup",
    "TaskReward",
    "answer_matches",
    "calibration_report",
    "check_format",
    "choose_mode",
    "extract_answer",
    "fuzzy_ratio",
    "judge_calibration",
    "redundancy_penalty",
    "rubric_reward",
    "rule_reward",
    "schema_errors",
    "score_task",
    "state_predicates_hold",
]
