"""Asset jobs and the nightly synthesis schedule.

Each job is a selection over asset groups, so a stage added later joins its job without edits
here. The nightly schedule adds the next `rounds` partition, then asks for the synthesis run.
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

from agentomnia_assets.partitions import next_round, rounds

SYNTHESIS_GROUPS = ("seeds", "environments", "tasks", "trajectories")

synthesis_job = define_asset_job(
    "synthesis_job",
    selection=AssetSelection.groups(*SYNTHESIS_GROUPS) - AssetSelection.assets("taxonomy"),
    description="One round of synthesis: seeds -> environment candidates -> selected seeds (and later stages).",
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


ALL_JOBS = [synthesis_job]
ALL_SCHEDULES = [nightly_synthesis]
