"""Verified agent trajectories on synthesized tasks, and the SFT and RL datasets built from them.

    from agentomnia.trajectories import generate_trajectories, build_sft_dataset, build_rl_dataset

    trajs = generate_trajectories(tasks, bundles, sandbox, teacher="offline", guidance=True)
    build_sft_dataset(trajs, out / "sft", tools_by_env={env: bundle.tools, ...})
    build_rl_dataset(tasks, trajs, out / "rl", sandbox=sandbox, bundle_dirs={env: folder, ...}, k=4)

Pieces: `rollout` (the loop any `Agent` runs in), `OfflineTeacher` / `LLMAgent` / `NoisyTeacher`,
`ScriptedUser` / `LLMUser` (persona-driven user simulation), `build_guidance` (privileged guidance,
never stored), `verify_trajectory` (correctness, continuity, consistency, grounding, leak).
"""

from agentomnia.trajectories.agents import (
    Agent,
    LLMAgent,
    NoisyTeacher,
    OfflineTeacher,
    PolicyFactory,
    TeacherFactory,
    llm_teacher,
    noisy_policy,
    offline_teacher,
    read_tool_tables,
)
from agentomnia.trajectories.guidance import Guidance, build_guidance, guidance_kind, leak_fragments
from agentomnia.trajectories.messages import parse_answer
from agentomnia.trajectories.models import (
    CheckVerdict,
    GuidanceKind,
    QualityReport,
    RolloutResult,
    Step,
    Trajectory,
)
from agentomnia.trajectories.plots import guidance_ablation_png
from agentomnia.trajectories.quality import (
    check_consistency,
    check_continuity,
    check_grounding,
    check_leak,
    sandbox_verifier,
    verify_trajectory,
)
from agentomnia.trajectories.rl import (
    RLDatasetReport,
    build_rl_dataset,
    llm_policy,
    partition_tasks,
    pass_at_k,
    round_split,
    validated_task,
)
from agentomnia.trajectories.rollout import reference_plan, replay, rollout
from agentomnia.trajectories.sft import (
    SFTDatasetReport,
    align_context,
    build_sft_dataset,
    convergence_budget,
    sft_format_problems,
    validate_format,
    validate_sft_dataset,
)
from agentomnia.trajectories.synthesis import (
    PassRates,
    generate_trajectories,
    leaked_trajectories,
    pass_rates,
    summarize,
    training_runs,
)
from agentomnia.trajectories.users import LLMUser, ScriptedUser, UserSimulator, make_user

__all__ = [
    "Agent",
    "CheckVerdict",
    "Guidance",
    "GuidanceKind",
    "LLMAgent",
    "LLMUser",
    "NoisyTeacher",
    "OfflineTeacher",
    "PassRates",
    "PolicyFactory",
    "QualityReport",
    "RLDatasetReport",
    "RolloutResult",
    "SFTDatasetReport",
    "ScriptedUser",
    "Step",
    "TeacherFactory",
    "Trajectory",
    "UserSimulator",
    "align_context",
    "build_guidance",
    "build_rl_dataset",
    "build_sft_dataset",
    "check_consistency",
    "check_continuity",
    "check_grounding",
    "check_leak",
    "convergence_budget",
    "generate_trajectories",
    "guidance_ablation_png",
    "guidance_kind",
    "leaked_trajectories",
    "leak_fragments",
    "llm_policy",
    "llm_teacher",
    "make_user",
    "noisy_policy",
    "offline_teacher",
    "parse_answer",
    "partition_tasks",
    "round_split",
    "pass_at_k",
    "pass_rates",
    "read_tool_tables",
    "reference_plan",
    "replay",
    "rollout",
    "sandbox_verifier",
    "summarize",
    "training_runs",
    "validate_format",
    "sft_format_problems",
    "validate_sft_dataset",
    "validated_task",
    "verify_trajectory",
]
