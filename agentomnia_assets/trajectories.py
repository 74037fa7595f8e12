"""Trajectory synthesis and training datasets (paper §4.5, §5.1-5.2.1)."""

from pathlib import Path
from typing import Literal

import dagster as dg

from agentomnia.catalog import (
    CHECKPOINT_SFT,
    RL,
    SFT,
    SPLIT,
    TRAJECTORIES,
    VERIFIED_TRAJECTORIES,
    Catalog,
)
from agentomnia.lineage import Edge, lineage_row
from agentomnia.llm.ledger import fallback, verdict
from agentomnia.storage import Storage, save_records
from agentomnia.trajectories import (
    Trajectory,
    build_rl_dataset,
    build_sft_dataset,
    generate_trajectories,
    guidance_ablation_png,
    leaked_trajectories,
    llm_policy,
    pass_rates,
    round_split,
    sft_format_problems,
    summarize,
    training_runs,
)
from agentomnia_assets._common import llm_usage, md_table, png, round_asset, round_check
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


class TrajectoriesConfig(dg.Config):
    # auto: the served model in llm mode (the offline teacher takes over a task whose model run fails
    # verification, and both runs are kept), the offline teacher otherwise; offline | llm force one
    teacher: Literal["auto", "offline", "llm"] = "auto"
    fallback: bool = True
    max_steps: int = 30
    # also run every task without guidance, for the guidance ablation (and the calibration's second run)
    ablation: bool = True


@round_asset(
    "trajectories",
    deps=[dg.AssetKey(SPLIT.name)],
    description=(
        "Agent trajectories on every task: a teacher (offline: follows the reference plan through the tools, "
        "reasoning only from observations; llm: an OpenAI-compatible model) with capability-aware privileged "
        "guidance, a persona-driven user simulator for multi-turn tasks; each run verified for correctness, "
        "continuity, consistency, evidence grounding and guidance leaks. Also run without guidance for the ablation."
    ),
)
def trajectories(
    context: dg.AssetExecutionContext,
    config: TrajectoriesConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store, box, model = storage.get(), sandbox.get(), llm.get()
    round_key = context.partition_key
    tasks = store.round(round_key).training_tasks()
    bundles = Catalog(store).bundles(t.env_id for t in tasks)
    if config.teacher == "llm" and model is None:
        raise ValueError("trajectories: teacher 'llm' needs AGENTOMNIA_MODE=llm and an endpoint; use 'auto'")
    teacher: Literal["offline", "llm"] = "offline" if model is None or config.teacher == "offline" else "llm"
    runs = {
        with_guidance: generate_trajectories(
            tasks,
            bundles,
            box,
            teacher=teacher,
            guidance=with_guidance,
            llm=model,
            max_steps=config.max_steps,
            fallback=config.fallback,
        )  # fmt: skip
        for with_guidance in ((True, False) if config.ablation else (True,))
    }
    guided, plain = runs[True], runs.get(False, [])
    all_runs = [t.in_round(round_key) for t in guided + plain]
    path = save_records(
        store.round(round_key).path(TRAJECTORIES),
        all_runs,
        flat=["task_id", "env_id", "task_kind", "policy", "guidance", "stop_reason"],
    )
    rows = [
        lineage_row(
            t,
            status="ok" if t.verified else "rejected",
            reason=None if t.verified else _why(t),
            run_id=context.run.run_id,
            location=str(path),
        )
        for t in all_runs
    ]
    edges = [Edge(child=t.id, parent=t.task_id, relation="trajectory_of") for t in all_runs]
    lineage.get().record(rows, edges)
    plot = guidance_ablation_png(
        pass_rates(guided),
        pass_rates(plain),
        store.round(round_key).path(TRAJECTORIES, "ablation"),
    )
    with_g, without_g = summarize(guided), summarize(plain)
    teacher_counts = _model_teacher(guided + plain, teacher)
    if teacher_counts:  # the model's runs as the teacher, judged by verification
        verdict(model, "teacher_turn", True, teacher_counts["model_teacher_verified"])
        verdict(model, "teacher_turn", False,
                teacher_counts["model_teacher_runs"] - teacher_counts["model_teacher_verified"])  # fmt: skip
        fallback(model, "teacher_turn", teacher_counts["offline_fallback_runs"])
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "tasks": len(tasks),
            "trajectories": len(all_runs),
            "teacher": teacher if model is None else f"{teacher} ({model.model})",
            **teacher_counts,
            "yield_with_guidance": with_g["yield"],
            "yield_without_guidance": without_g["yield"],
            "grounding_pass_rate": with_g["grounding_pass_rate"],
            "consistency_pass_rate": with_g["consistency_pass_rate"],
            "leak_pass_rate": with_g["leak_pass_rate"],
            "mean_steps": with_g["mean_steps"],
            "pass_rates": md_table(
                [
                    {"paradigm": r.paradigm, "guidance": r.guidance, "total": r.total, **r.rates}
                    for r in pass_rates(guided) + pass_rates(plain)
                ]
            ),
            "guidance_ablation": png(plot, "verified rate per paradigm, with and without guidance"),
            "path": dg.MetadataValue.path(str(path)),
        }
    )


def _model_teacher(runs: list[Trajectory], teacher: str) -> dict[str, int]:
    """How the model fared as teacher: its runs, how many verified, and the tasks the offline teacher
    took over (runs of both guidance settings)."""
    if teacher != "llm":
        return {}
    model_runs = [t for t in runs if t.policy.startswith("llm:")]
    return {
        "model_teacher_runs": len(model_runs),
        "model_teacher_verified": sum(t.verified for t in model_runs),
        "offline_fallback_runs": sum(t.policy == "offline-teacher" for t in runs),
    }


def _why(t: Trajectory) -> str:
    if t.error:
        return f"error: {t.error}"[:300]
    if t.verification is None:
        return "not verified"
    failed = [
        name
        for name in ("correctness", "grounding", "consistency", "continuity", "leak")
        if getattr(t.verification, name).passed is False
    ]
    return "failed: " + ", ".join(failed) if failed else "unverified checks"


@round_asset(
    "trajectories",
    pool=None,
    deps=[trajectories],
    description=(
        "The trajectories that passed every quality check, from the teacher with the guidance each task kind "
        "is designed to get (DAG-Standard: none; not the ablation's plain runs), kept for training."
    ),
)
def verified_trajectories(
    context: dg.AssetExecutionContext, storage: StorageResource
) -> dg.MaterializeResult:
    store = storage.get()
    runs = store.round(context.partition_key).trajectories()
    kept = training_runs(runs)
    path = save_records(
        store.round(context.partition_key).path(VERIFIED_TRAJECTORIES),
        kept,
        flat=["task_id", "env_id", "task_kind"],
    )
    return dg.MaterializeResult(
        metadata={"verified": len(kept), "of": len(runs), "path": dg.MetadataValue.path(str(path))}
    )


@round_check(
    verified_trajectories,
    blocking=True,
    description="No retained trajectory contains guidance text.",
)
def no_guidance_in_trajectories(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    artifacts = store.round(context.partition_key)
    kept = artifacts.verified_trajectories()
    tasks = {t.id: t for t in artifacts.tasks()}
    leaking = leaked_trajectories(kept, tasks)
    return dg.AssetCheckResult(
        passed=not leaking, metadata={"trajectories": len(kept), "leaking": len(leaking)}
    )


def _split(store: Storage, round_key: str) -> tuple[list[str], list[str]]:
    return round_split(store.round(round_key))


class SFTDatasetConfig(dg.Config):
    # the tools a trajectory used plus distractors up to this many: every schema is rendered into the prompt
    max_tools: int = 8


@round_asset(
    "trajectories",
    pool=None,
    deps=[verified_trajectories],
    description=(
        "SFT dataset: format-validated rows (parsable calls, known tools, schema-valid arguments), context-aligned "
        "(only the final assistant turn keeps its reasoning), budgeted per source; a Hugging Face dataset with "
        "`messages` and `tools` columns for TRL's SFTTrainer, and OpenAI fine-tuning JSONL."
    ),
)
def sft_dataset(
    context: dg.AssetExecutionContext, config: SFTDatasetConfig, storage: StorageResource
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    runs = artifacts.verified_trajectories()
    sft_ids, _ = _split(store, context.partition_key)
    bundles = Catalog(store).bundles(t.env_id for t in runs)
    out = artifacts.dataset_dir(SFT)
    report = build_sft_dataset(
        runs,
        out,
        tools_by_env={env: b.tools for env, b in bundles.items()},
        task_ids=sft_ids,
        max_tools=config.max_tools,
    )
    return dg.MaterializeResult(
        metadata={
            "rows": report.rows,
            "budgeting": report.budgeting,
            "tokens": report.tokens,
            "mean_tokens": report.mean_tokens,
            "tool_tokens": report.tool_tokens,
            "sources": md_table([s.model_dump() for s in report.sources]),
            "dropped": md_table([{"reason": k, "count": v} for k, v in report.dropped.items()]),
            "hf_path": dg.MetadataValue.path(report.hf_path),
            "jsonl_path": dg.MetadataValue.path(report.jsonl_path),
        }
    )


@round_check(
    sft_dataset,
    blocking=True,
    description="Every SFT row passes format validation.",
)
def sft_rows_valid(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    problems = sft_format_problems(storage.get().round(context.partition_key).dataset_dir(SFT) / "hf")
    if problems is None:
        return dg.AssetCheckResult(
            passed=True,
            metadata={"problems": 0, "rows": 0, "note": "the SFT dataset is empty (see its dropped table)"},
        )
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"problems": len(problems), "examples": md_table([{"problem": p} for p in problems[:20]])},
    )


class RLDatasetConfig(dg.Config):
    k: int = 4
    # Whose pass@K sorts the candidates into difficulty levels (paper §5.2.1): "sft" samples the round's
    # SFT checkpoint; "model" samples the served model (llm mode), one sampling seed per attempt;
    # "teacher" replays the reference with a 25% slip per step; "auto" is "model" in llm mode and
    # "teacher" offline. Offline the default is the teacher: on two CPU cores "sft" took 207 s for r0's
    # 33 candidates (the teacher 13 s) and put every one in "hard", since the tiny model passes nothing.
    # With a real checkpoint, use "sft", and materialize rl_dataset after sft_checkpoint (it does not wait
    # for it): without a checkpoint it uses the teacher and says so.
    difficulty_from: Literal["auto", "teacher", "sft", "model"] = "auto"
    temperature: float = 0.7  # sampling temperature of the SFT checkpoint's pass@K runs
    max_new_tokens: int = 64  # per assistant turn of those runs
    max_steps: int = 8  # assistant turns per pass@K run


@round_asset(
    "trajectories",
    pool=None,
    # Not a dependency of sft_checkpoint, though "sft" difficulty reads it: with that edge the UI's global
    # lineage no longer expands its groups (tests/e2e/test_ui.py), so "sft" needs the checkpoint made first.
    deps=[verified_trajectories],
    description=(
        "RL dataset: prompt-level dedup (n-gram and embedding), minimum length, rubric validation, difficulty by "
        "pass@K of a policy (the noisy teacher, or the round's SFT checkpoint sampled once it exists), uniform sampling across levels within pass@K in [0, 0.8], 10-20% overlap with the SFT "
        "set; each item with its golden trajectory (columns prompt, task, bundle_dir, golden)."
    ),
)
def rl_dataset(
    context: dg.AssetExecutionContext,
    config: RLDatasetConfig,
    storage: StorageResource,
    sandbox: SandboxResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    runs = artifacts.verified_trajectories()
    sft_ids, rl_ids = _split(store, context.partition_key)
    tasks = [t for t in artifacts.tasks() if t.id in set(rl_ids)]
    dirs: dict[str, str | Path] = {env: Catalog(store).bundle_dir(env) for env in {t.env_id for t in tasks}}
    out = artifacts.dataset_dir(RL)
    model = llm.get()
    source = config.difficulty_from
    if source == "auto":
        source = "model" if model is not None else "teacher"
    policy = None
    why = "teacher (configured)" if config.difficulty_from == "teacher" else "teacher (offline mode)"
    if source == "model":
        if model is None:
            why = "teacher: no served model (offline mode)"
        else:
            policy = llm_policy(model, temperature=config.temperature)
            why = f"the served model {model.model}, sampled at temperature {config.temperature}"
    if source == "sft":
        folder = artifacts.trained_checkpoint(CHECKPOINT_SFT)
        if folder is None:
            why = "teacher: the round has no trained SFT checkpoint yet (materialize sft_checkpoint first)"
        else:
            from agentomnia.omniabench.hf import sampling_policy  # torch and transformers only when used

            policy = sampling_policy(
                folder, temperature=config.temperature, max_new_tokens=config.max_new_tokens
            )
            why = f"the round's SFT checkpoint, sampled at temperature {config.temperature}"
    report = build_rl_dataset(
        tasks, runs, out, sandbox=sandbox.get(), bundle_dirs=dirs, k=config.k, sft_task_ids=sft_ids,
        policy=policy, max_steps=config.max_steps,
    )  # fmt: skip
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "rows": report.rows,
            "candidates": report.candidates,
            "overlap_with_sft": report.overlap,
            "overlap_in_range": report.overlap_in_range,
            "policy": report.policy,
            "difficulty_from": why,
            "k": report.k,
            "levels": md_table([{"level": k, "items": v} for k, v in report.levels.items()]),
            "dropped": md_table([{"reason": k, "count": v} for k, v in report.dropped.items()]),
            "hf_path": dg.MetadataValue.path(report.hf_path),
        }
    )


@round_check(
    sft_dataset,
    blocking=True,
    description="No trajectory behind the round's training data is of an OmniaBench task (held-out stays held out).",
)
def training_data_avoids_benchmark(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    store = storage.get()
    benchmark = Catalog(store).benchmark()
    held = set(benchmark[0].task_ids) if benchmark else set()
    used = {t.task_id for t in store.round(context.partition_key).verified_trajectories()}
    leaked = sorted(held & used)
    return dg.AssetCheckResult(
        passed=not leaked,
        metadata={
            "benchmark_items": len(held),
            "training_tasks": len(used),
            "leaked": md_table([{"task": t} for t in leaked[:20]]),
        },
    )
