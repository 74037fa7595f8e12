"""The platform's definitions, run by Celery workers, with lineage as Parquet segments.

Same assets, checks, jobs, schedules and sensors as `agentomnia_assets.definitions`; two things
change for many machines. Every job's steps go to Celery workers through the Redis broker named
by `AGENTOMNIA_CELERY_BROKER` (results via `AGENTOMNIA_CELERY_BACKEND`). And the `lineage`
resource appends one Parquet segment per write to a shared folder instead of writing the DuckDB
file, whose lock cannot span hosts; readers see the segments and the DuckDB store as one.

`distributed_round_job` is one round of seeds -> environments -> DAG tasks, the part of the
pipeline the deployment test runs across two workers; `lineage_compaction_job` merges segments.
"""

from pathlib import Path
from typing import Any

from dagster import (
    AssetSelection,
    Config,
    DefaultScheduleStatus,
    Definitions,
    MetadataValue,
    OpExecutionContext,
    ScheduleDefinition,
    define_asset_job,
    in_process_executor,
    job,
    op,
)
from dagster_celery import celery_executor
from pydantic import Field

from agentomnia.catalog import (
    DAG_TASKS,
    ENV_CANDIDATES,
    ENVIRONMENTS,
    RAW_SEEDS,
    SELECTED_CANDIDATES,
    STATE_SPECS,
    TOOLSETS,
)
from agentomnia.lineage.segments import SegmentStore, absorb, compact
from agentomnia.storage import Storage
from agentomnia_assets import definitions as single_host
from resources import LineageResource

BROKER_ENV = "AGENTOMNIA_CELERY_BROKER"
BACKEND_ENV = "AGENTOMNIA_CELERY_BACKEND"
SEGMENTS_DIR = "lineage_segments"

ROUND_ASSETS = tuple(
    a.name
    for a in (RAW_SEEDS, ENV_CANDIDATES, SELECTED_CANDIDATES, STATE_SPECS, TOOLSETS, ENVIRONMENTS, DAG_TASKS)
)


class SegmentLineageResource(LineageResource):
    """Lineage for writers on many hosts: segments under a shared folder, read with the DuckDB store."""

    segments: str = Field(
        default="", description=f"shared segment folder; empty means <platform home>/{SEGMENTS_DIR}"
    )

    def get(self) -> SegmentStore:
        storage = Storage(Path(self.home) if self.home else None)
        folder = Path(self.segments) if self.segments else storage.root / SEGMENTS_DIR
        return SegmentStore(folder, store=storage.lineage_path, timeout_s=self.timeout_s)


celery_on_redis = celery_executor.configured(
    {"broker": {"env": BROKER_ENV}, "backend": {"env": BACKEND_ENV}},
    name="celery_on_redis",
)

distributed_round_job = define_asset_job(
    "distributed_round_job",
    selection=AssetSelection.assets(*ROUND_ASSETS),
    description="One round of seeds -> environment candidates -> selected seeds -> environments -> DAG tasks.",
)


def small_round_config(max_environments: int = 3) -> dict[str, Any]:
    """Run config for a quick round: a few environments, one task of each DAG variant per environment."""
    return {
        "ops": {
            STATE_SPECS.name: {"config": {"max_environments": max_environments}},
            DAG_TASKS.name: {"config": {"standard_per_env": 1, "challenge_per_env": 1}},
        }
    }


class CompactionConfig(Config):
    absorb: bool = Field(
        default=False,
        description="move the segments into the DuckDB store instead (for the single-host CLI and UI)",
    )


@op(description="Merge the lineage segments into one, or absorb them into the DuckDB store.")
def compact_lineage_segments(
    context: OpExecutionContext, config: CompactionConfig, lineage: SegmentLineageResource
) -> None:
    store = lineage.get()
    if config.absorb:
        result = absorb(store.folder, LineageResource(home=lineage.home, timeout_s=lineage.timeout_s).get())
    else:
        result = compact(store.folder)
    context.add_output_metadata(
        {
            "merged_segments": result.merged_segments,
            "records": result.records,
            "edges": result.edges,
            "output": MetadataValue.text(result.output or "nothing to merge"),
        }
    )


@job(
    executor_def=in_process_executor,  # one small op: not worth a trip through the broker
    description="Merge lineage segments written by many workers (or absorb them into the DuckDB store).",
)
def lineage_compaction_job() -> None:
    compact_lineage_segments()


lineage_compaction_schedule = ScheduleDefinition(
    job=lineage_compaction_job,
    cron_schedule="17 * * * *",
    default_status=DefaultScheduleStatus.STOPPED,
    description="Hourly segment compaction; start it in the UI once workers write lineage segments.",
)

defs = Definitions(
    assets=single_host.defs.assets,
    asset_checks=single_host.defs.asset_checks,
    jobs=[*(single_host.defs.jobs or []), distributed_round_job, lineage_compaction_job],
    schedules=[*(single_host.defs.schedules or []), lineage_compaction_schedule],
    sensors=single_host.defs.sensors,
    resources={**(single_host.defs.resources or {}), "lineage": SegmentLineageResource()},
    executor=celery_on_redis,
)
