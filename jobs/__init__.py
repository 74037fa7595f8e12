"""Asset jobs and the nightly synthesis schedule.

Each job is a selection over asset groups, so a stage added later joins its job without edits
here. The nightly schedule adds the next `rounds` partition, then asks for the synthesis run.

- `synthesis_job`: PRDs in force (evolution) -> seeds -> environments -> tasks -> trajectories and
  datasets, with the benchmark hold-out that keeps training data away from OmniaBench;
- `training_job`: SFT, GRPO with the rollback curriculum, reward-model calibration;
- `omniabench_job`: the benchmark split and the evaluation of the round's policies;
- `scale_job`: the corpus at paper scale (or any size set in its run config), sharded over worker
  processes; never part of a default round;
- `evolution_job`: one whole self-evolution round, everything above for one partition — what the
  failure and inbox sensors request.
"""

from __future__ import annotations

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    define_asset_job,
    schedule,
)

from agentomnia.catalog import SPLIT, TAXONOMY
from agentomnia_assets.partitions import next_round, rounds

SYNTHESIS_GROUPS = ("evolution", "seeds", "environments", "tasks", "trajectories")
ROUND_GROUPS = (*SYNTHESIS_GROUPS, "training", "omniabench")

synthesis_job = define_asset_job(
    "synthesis_job",
    selection=(AssetSelection.groups(*SYNTHESIS_GROUPS) | AssetSelection.assets(SPLIT.name))
    - AssetSelection.assets(TAXONOMY.name),
    description=(
        "One round of synthesis: PRDs in force -> seeds -> environments -> tasks (held-out benchmark items "
        "set aside) -> trajectories -> SFT and RL datasets."
    ),
)
training_job = define_asset_job(
    "training_job",
    selection=AssetSelection.groups("training"),
    description="Post-training on one round's datasets: SFT, then GRPO with the rollback curriculum; judge calibration.",
)
omniabench_job = define_asset_job(
    "omniabench_job",
    selection=AssetSelection.groups("omniabench"),
    description="The held-out benchmark split and the evaluation of the round's policies on it.",
)
scale_job = define_asset_job(
    "scale_job",
    selection=AssetSelection.groups("scale"),
    description=(
        "The synthesis corpus at scale (default: the paper's 5,018 environments, 52,361 tasks), sharded over "
        "worker processes and resumable; set `environments` and `workers` in the run config."
    ),
)
evolution_job = define_asset_job(
    "evolution_job",
    selection=AssetSelection.groups(*ROUND_GROUPS) - AssetSelection.assets("taxonomy"),
    description=(
        "One whole self-evolution round for a new partition: diagnosis of the failures that triggered it, PRDs, "
        "PRD-guided synthesis, training and evaluation. Requested by the failure and PRD-inbox sensors."
    ),
)


@schedule(
    job=synthesis_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
    description="Nightly synthesis at 02:00 UTC: adds the next round partition, then materializes it.",
)
def nightly_synthesis(context: ScheduleEvaluationContext) -> RunRequest:
    existing = context.instance.get_dynamic_partitions(rounds.name)  # type: ignore[arg-type]
    round_key = next_round(list(existing))
    context.instance.add_dynamic_partitions(rounds.name, [round_key])  # type: ignore[arg-type]
    stamp = (
        context.scheduled_execution_time.strftime("%Y%m%d") if context.scheduled_execution_time else "manual"
    )
    return RunRequest(
        run_key=f"nightly-{stamp}",
        partition_key=round_key,
        tags={"agentomnia/trigger": "nightly_synthesis"},
    )


ALL_JOBS = [synthesis_job, training_job, omniabench_job, evolution_job, scale_job]
ALL_SCHEDULES = [nightly_synthesis]
