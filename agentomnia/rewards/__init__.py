"""Rewards for agentic RL: rule- and rubric-based task rewards, a router between them, auxiliary
shaping terms, reward-model calibration metrics, the rollout analysis that turns behaviour separating
failed from successful rollouts into auxiliary rewards, and the reward-hacking audit.

Task rewards are binary ({0, 1}) or unscored (None), never a silent 0 for something that could not
be decided: a verifier that fails to execute falls back to the judge when there is one and is
otherwise unscored, so training can drop the rollout instead of learning from a wrong label.
"""

from agentomnia.rewards.analysis import (
    INDICATORS,
    AnalysisReport,
    AnalysisSettings,
    AuxiliaryWeights,
    ScoredRollout,
    Transcript,
    analysis_markdown,
    analyze_rollouts,
    auxiliary_reward,
    auxiliary_terms,
)
from agentomnia.rewards.audit import (
    AuditFlag,
    AuditReport,
    AuditSettings,
    audit_markdown,
    audit_rollouts,
    permissive_rejection,
    permissive_rubric_findings,
)
from agentomnia.rewards.auxiliary import FormatCheck, check_format, redundancy_penalty
from agentomnia.rewards.calibration import (
    CalibrationReport,
    CalibrationSettings,
    ItemJudgment,
    ScoredGroup,
    calibration_report,
    judge_calibration,
)
from agentomnia.rewards.process import ProcessSettings, ProcessStop, ProcessValidator
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
from agentomnia.rewards.stream import RewardStream, RewardTiming, latency_summary

__all__ = [
    "INDICATORS",
    "AnalysisReport",
    "AnalysisSettings",
    "AuditFlag",
    "AuditReport",
    "AuditSettings",
    "AuxiliaryWeights",
    "ScoredRollout",
    "Transcript",
    "analysis_markdown",
    "analyze_rollouts",
    "audit_markdown",
    "audit_rollouts",
    "auxiliary_reward",
    "auxiliary_terms",
    "permissive_rejection",
    "permissive_rubric_findings",
    "CalibrationReport",
    "CalibrationSettings",
    "FormatCheck",
    "ItemJudgment",
    "ProcessSettings",
    "ProcessStop",
    "ProcessValidator",
    "RewardStream",
    "RewardTiming",
    "latency_summary",
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
