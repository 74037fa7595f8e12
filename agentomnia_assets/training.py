"""Agentic post-training (paper §5): SFT capability bootstrapping, then GRPO with the rollback curriculum."""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import dagster as dg

from agentomnia.catalog import REWARD_MODEL_REPORT, RL, RL_DATASET, SFT, SFT_DATASET, TRAJECTORIES, Catalog
from agentomnia.lineage import Edge, LineageRow
from agentomnia.records import content_hash
from agentomnia.rewards import CalibrationSettings, judge_calibration
from agentomnia.rewards.judges import outcome_groups, transcript_judge
from agentomnia.storage import write_parquet
from agentomnia.tasks.models import Task
from agentomnia.trajectories.rollout import replay
from agentomnia_assets._common import png, round_asset
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


class SFTConfig(dg.Config):
    base_model_path: str = ""  # a local Hugging Face checkpoint; empty = the tiny offline Qwen3
    max_steps: int = 40
    learning_rate: float = 3e-3
    max_length: int | None = None  # tokens per SFT row; None: the model's context window


class GRPOConfig(dg.Config):
    max_steps: int = 3
    num_generations: int = 2


def _checkpoint_row(
    context: dg.AssetExecutionContext, kind: str, folder: str, report: dict, parent: str
) -> tuple[LineageRow, Edge]:  # type: ignore[type-arg]
    rid = content_hash({"kind": kind, "folder": folder, "loss": report.get("loss_history")})
    row = LineageRow(id=rid, kind="checkpoint", round=context.partition_key, run_id=context.run.run_id, location=folder,
                     meta={"trainer": kind, "steps": report.get("steps"), "last_loss": report.get("last_loss")})  # fmt: skip
    return row, Edge(child=rid, parent=parent, relation="trained_on")


@round_asset(
    "training",
    deps=[dg.AssetKey(SFT_DATASET)],
    description=(
        "SFT checkpoint (TRL SFTTrainer): assistant-only loss with tool results masked, AdamW, cosine schedule with "
        "warmup; the model, tokenizer, config and loss curve. Offline: a tiny Qwen3 with a locally trained tokenizer."
    ),
)
def sft_checkpoint(
    context: dg.AssetExecutionContext, config: SFTConfig, storage: StorageResource, lineage: LineageResource
) -> dg.MaterializeResult:
    from trainers import ModelSettings, SFTSettings, train_sft

    store = storage.get()
    artifacts = store.round(context.partition_key)
    data = artifacts.dataset_dir(SFT) / "hf"
    out = artifacts.checkpoint_dir(SFT)
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
    return dg.MaterializeResult(
        metadata={
            "steps": report.steps,
            "first_loss": round(report.first_loss or 0.0, 4),
            "last_loss": round(report.last_loss or 0.0, 4),
            "loss_drop": round(report.loss_drop or 0.0, 4),
            "seconds": round(report.seconds, 1),
            **{f"truncation_{k}": v for k, v in report.extra.get("truncation", {}).items() if v is not None},
            "curves": png(report.plot, "training loss") if report.plot else "no plot",
            "checkpoint": dg.MetadataValue.path(str(out)),
        }
    )


@round_asset(
    "training",
    deps=[sft_checkpoint, dg.AssetKey(RL_DATASET)],
    description=(
        "RL checkpoint: GRPO over the sandbox environments with no KL term and asymmetric clipping (0.2/0.28), "
        "dynamic filtering of broken and truncated rollouts, and the rollback curriculum (golden-prefix replay for "
        "all-fail groups, adaptive prefix lengths, hybrid SFT+GRPO objective); rewards, prefix lengths and loss terms."
    ),
)
def rl_checkpoint(
    context: dg.AssetExecutionContext,
    config: GRPOConfig,
    storage: StorageResource,
    lineage: LineageResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    import datasets

    from trainers import GRPOSettings, train_grpo

    store = storage.get()
    artifacts = store.round(context.partition_key)
    data = artifacts.dataset_dir(RL) / "hf"
    if not data.exists():
        # every RL candidate was too easy for the pass@K policy, or none was verified: nothing to learn from
        context.log.warning(
            f"no RL rows for round {context.partition_key}; the RL checkpoint is not trained this round"
        )
        return dg.MaterializeResult(
            metadata={"steps": 0, "rows": 0, "trained": False, "reason": "the RL dataset has no rows"}
        )
    rows = list(datasets.load_from_disk(str(data)))
    init = artifacts.checkpoint_dir(SFT)
    out = artifacts.checkpoint_dir(RL)
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
    return dg.MaterializeResult(
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
            "checkpoint": dg.MetadataValue.path(str(out)),
        }
    )


class RewardModelConfig(dg.Config):
    repeats: int = 3  # scorings of each outcome, for the consistency dimension
    max_groups: int = 60  # tasks (rollout groups) to calibrate on; 0 = all
    min_overall: float = 0.7


@round_asset(
    "training",
    deps=[dg.AssetKey(TRAJECTORIES.name)],
    description=(
        "Reward-model calibration: the judge that would score rubric items without code checks (LLM mode: the "
        "configured model; offline: a transcript judge that reads only the calls and the answer) is scored "
        "against code-checked rubric items on the round's rollout groups: advanced-balanced rubric reliability, "
        "C_Rank (Kendall tau-b), C_Dir (AdvFNR/AdvFPR), C_Mag (advantage MSE), C_Con (repeat variance)."
    ),
)
def reward_model_report(
    context: dg.AssetExecutionContext,
    config: RewardModelConfig,
    storage: StorageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    from agentomnia.trajectories.quality import rubric_judge

    store, box, model = storage.get(), sandbox.get(), llm.get()
    round_key = context.partition_key
    artifacts = store.round(round_key)
    tasks = {t.id: t for t in artifacts.tasks()}
    runs = artifacts.trajectories()
    bundles = Catalog(store).bundles(t.env_id for t in tasks.values())

    def final_state(task: Task, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        return replay(task, bundles[task.env_id], box, calls)[1]

    groups = outcome_groups(tasks, runs, final_state)
    if config.max_groups:
        groups = groups[: config.max_groups]
    judge_name = f"llm:{model.model}" if model is not None else "offline:transcript"
    judge = rubric_judge(model) if model is not None else transcript_judge()
    if not groups:
        return dg.MaterializeResult(metadata={"groups": 0, "judge": judge_name, "passed": False,
                                           "reason": "no task has two or more runs to compare"})  # fmt: skip
    report = judge_calibration(
        groups, judge, repeats=config.repeats, settings=CalibrationSettings(min_overall=config.min_overall)
    )
    path = artifacts.path(REWARD_MODEL_REPORT, "report")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report.model_dump_json(indent=2))
    write_parquet(
        artifacts.path(REWARD_MODEL_REPORT),
        [
            {"dimension": d, "score": s, "minimum": CalibrationSettings().minimums.get(d)}
            for d, s in report.scores.items()
        ],
    )
    plot = _calibration_png(
        {str(d): v for d, v in report.scores.items()},
        artifacts.path(REWARD_MODEL_REPORT, "plot"),
    )
    return dg.MaterializeResult(
        metadata={
            "judge": judge_name,
            "groups": len(groups),
            "outcomes": sum(len(o) for _, o in groups),
            **{d: round(s, 4) if s is not None else "n/a" for d, s in report.scores.items()},
            "overall": round(report.overall, 4) if report.overall is not None else "n/a",
            "passed": report.passed,
            "failures": dg.MetadataValue.md("\n".join(f"- {f}" for f in report.failures) or "_none_"),
            "plot": png(plot, "calibration"),
            "report": dg.MetadataValue.path(str(path)),
        }
    )


def _calibration_png(scores: Mapping[str, float | None], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dims = list(scores)
    values = [float(scores[d] or 0.0) for d in dims]
    minimums = {str(d): v for d, v in CalibrationSettings().minimums.items()}
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(dims, values, color=["#4c72b0" if scores[d] is not None else "#cccccc" for d in dims])
    ax.scatter(
        dims, [minimums.get(d, 0.0) for d in dims], marker="_", s=600, color="#c44e52", label="minimum"
    )
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score")
    ax.set_title("reward-model calibration")
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
