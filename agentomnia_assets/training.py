"""Agentic post-training (paper §5): SFT capability bootstrapping, then GRPO with the rollback curriculum."""

import json

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset

from agentomnia.lineage import Edge, LineageRow
from agentomnia.records import content_hash
from agentomnia_assets._common import png
from agentomnia_assets.instance import DUCKDB_POOL
from agentomnia_assets.partitions import rounds
from agentomnia_assets.trajectories import rl_dataset, sft_dataset
from resources import LineageResource, SandboxResource, StorageResource


class SFTConfig(Config):
    base_model_path: str = ""  # a local Hugging Face checkpoint; empty = the tiny offline Qwen3
    max_steps: int = 40
    learning_rate: float = 3e-3
    max_length: int = 2048


class GRPOConfig(Config):
    max_steps: int = 3
    num_generations: int = 2


def _checkpoint_row(
    context: AssetExecutionContext, kind: str, folder: str, report: dict, parent: str
) -> tuple[LineageRow, Edge]:  # type: ignore[type-arg]
    rid = content_hash({"kind": kind, "folder": folder, "loss": report.get("loss_history")})
    row = LineageRow(id=rid, kind="checkpoint", round=context.partition_key, run_id=context.run_id, location=folder,
                     meta={"trainer": kind, "steps": report.get("steps"), "last_loss": report.get("last_loss")})  # fmt: skip
    return row, Edge(child=rid, parent=parent, relation="trained_on")


@asset(
    group_name="training",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[sft_dataset],
    description=(
        "SFT checkpoint (TRL SFTTrainer): assistant-only loss with tool results masked, AdamW, cosine schedule with "
        "warmup; the model, tokenizer, config and loss curve. Offline: a tiny Qwen3 with a locally trained tokenizer."
    ),
)
def sft_checkpoint(
    context: AssetExecutionContext, config: SFTConfig, storage: StorageResource, lineage: LineageResource
) -> MaterializeResult:
    from trainers import ModelSettings, SFTSettings, train_sft

    store = storage.get()
    data = store.dataset_dir("sft", context.partition_key) / "hf"
    out = store.checkpoint_dir("sft", context.partition_key)
    settings = SFTSettings(
        model=ModelSettings(path=config.base_model_path or None),
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        max_length=config.max_length,
    )
    report = train_sft(data, out, settings)
    dump = json.loads(report.model_dump_json())
    row, edge = _checkpoint_row(context, "sft", str(out), dump, f"dataset:sft:{context.partition_key}")
    lineage.get().record(
        [
            row,
            LineageRow(
                id=f"dataset:sft:{context.partition_key}",
                kind="dataset",
                round=context.partition_key,
                location=str(data),
            ),
        ],
        [edge],
    )
    return MaterializeResult(
        metadata={
            "steps": report.steps,
            "first_loss": round(report.first_loss or 0.0, 4),
            "last_loss": round(report.last_loss or 0.0, 4),
            "loss_drop": round(report.loss_drop or 0.0, 4),
            "seconds": round(report.seconds, 1),
            "curves": png(report.plot, "training loss") if report.plot else "no plot",
            "checkpoint": MetadataValue.path(str(out)),
        }
    )


@asset(
    group_name="training",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[sft_checkpoint, rl_dataset],
    description=(
        "RL checkpoint: GRPO over the sandbox environments with no KL term and asymmetric clipping (0.2/0.28), "
        "dynamic filtering of broken and truncated rollouts, and the rollback curriculum (golden-prefix replay for "
        "all-fail groups, adaptive prefix lengths, hybrid SFT+GRPO objective); rewards, prefix lengths and loss terms."
    ),
)
def rl_checkpoint(
    context: AssetExecutionContext,
    config: GRPOConfig,
    storage: StorageResource,
    lineage: LineageResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    import datasets

    from trainers import GRPOSettings, train_grpo

    store = storage.get()
    data = store.dataset_dir("rl", context.partition_key) / "hf"
    if not data.exists():
        # every RL candidate was too easy for the pass@K policy, or none was verified: nothing to learn from
        context.log.warning(
            f"no RL rows for round {context.partition_key}; the RL checkpoint is not trained this round"
        )
        return MaterializeResult(
            metadata={"steps": 0, "rows": 0, "trained": False, "reason": "the RL dataset has no rows"}
        )
    rows = list(datasets.load_from_disk(str(data)))
    init = store.checkpoint_dir("sft", context.partition_key)
    out = store.checkpoint_dir("rl", context.partition_key)
    report = train_grpo(
        rows,
        None,
        sandbox.get(),
        init,
        out,
        GRPOSettings(max_steps=config.max_steps, num_generations=config.num_generations),
    )
    dump = json.loads(report.model_dump_json())
    row, edge = _checkpoint_row(context, "grpo", str(out), dump, f"dataset:rl:{context.partition_key}")
    lineage.get().record(
        [
            row,
            LineageRow(id=f"dataset:rl:{context.partition_key}", kind="dataset", round=context.partition_key),
        ],
        [edge],
    )
    extra = report.extra or {}
    return MaterializeResult(
        metadata={
            "steps": report.steps,
            "rows": len(rows),
            "trained": True,
            "mean_reward_by_step": str(extra.get("rewards", []))[:200],
            "prefix_turns_by_step": str(extra.get("prefix_turns", []))[:200],
            "loss_rl": str(extra.get("loss_rl", []))[:200],
            "loss_ce": str(extra.get("loss_ce", []))[:200],
            "dropped_rollouts": str(extra.get("dropped_rollouts", ""))[:200],
            "seconds": round(report.seconds, 1),
            "curves": png(report.plot, "GRPO rewards and losses") if report.plot else "no plot",
            "checkpoint": MetadataValue.path(str(out)),
        }
    )
