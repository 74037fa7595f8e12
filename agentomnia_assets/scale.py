"""The corpus at paper scale (or any size), as one Dagster asset over sharded parallel workers.

`scale_corpus` runs `agentomnia.scale`: composed seeds for every level-2 domain, environments,
DAG / program / solver tasks, in shards across worker processes, resumable (a rerun of the same
configuration skips finished shards), with its lineage moved into the DuckDB store at the end.
The default configuration is the paper's corpus; `agentomnia run --scale paper` materializes it.
It is its own job (`scale_job`), never part of a default round.
"""

import dagster as dg
from pydantic import Field

from agentomnia.scale.plan import PAPER_ENVIRONMENTS, ScalePlan
from agentomnia.scale.runner import run_scale, scale_dir
from agentomnia_assets._common import md_table, round_asset
from resources import StorageResource


class ScaleConfig(dg.Config):
    environments: int = Field(default=PAPER_ENVIRONMENTS, ge=1, description="verified environments to make")
    workers: int = Field(default=2, ge=1, description="worker processes (each with its own sandbox)")
    shard_environments: int = Field(default=60, ge=1, description="environments per shard, about")
    oversample: float = Field(default=1.3, ge=1.0, description="composed seeds per wanted environment")

    def plan(self) -> ScalePlan:
        return ScalePlan.for_environments(
            self.environments, shard_environments=self.shard_environments, oversample=self.oversample
        )


@round_asset(
    "scale",
    description=(
        "The synthesis corpus at scale (default: the paper's 5,018 environments and 52,361 tasks in its "
        "proportions of DAG-Standard, DAG-Challenge, program and solver tasks, over all 354 level-2 domains): "
        "sharded over worker processes, resumable after a kill, bounded in memory, with lineage for every record."
    ),
)
def scale_corpus(
    context: dg.AssetExecutionContext, config: ScaleConfig, storage: StorageResource
) -> dg.MaterializeResult:
    store = storage.get()
    summary = run_scale(
        config.plan(),
        storage=store,
        round_key=context.partition_key,
        workers=config.workers,
        run_id=context.run.run_id,
        progress=context.log.info,
    )
    return dg.MaterializeResult(
        metadata={
            "environments": summary.environments,
            "tools": summary.tools,
            "tasks": summary.tasks_total,
            **{f"tasks_{k}": v for k, v in summary.tasks.items()},
            "l2_domains": summary.l2_domains,
            "shards": summary.shards,
            "shards_skipped": summary.shards_skipped,
            "seconds": summary.seconds,
            "environments_per_min": summary.environments_per_min,
            "tasks_per_min": summary.tasks_per_min,
            "peak_rss_mb": summary.peak_rss_mb,
            "verification_share": summary.verification_share,
            "stages": md_table([s.model_dump() for s in summary.stages]),
            "folder": dg.MetadataValue.path(str(scale_dir(store, context.partition_key))),
        }
    )
