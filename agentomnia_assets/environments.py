"""Environment synthesis (paper §4.2.2-4.2.4): state spaces, toolsets, verified bundles, statistics."""

from pathlib import Path
from typing import Any

import dagster as dg

from agentomnia.catalog import (
    ENVIRONMENT_STATS,
    ENVIRONMENTS,
    SELECTED_CANDIDATES,
    STATE_SPECS,
    TOOLSETS,
    RoundArtifacts,
)
from agentomnia.envs.build import BuildConfig
from agentomnia.envs.stats import environment_stats as table5_stats
from agentomnia.envs.stats import stats_histogram_png
from agentomnia.envs.toolset import ToolsetConfig
from agentomnia.envs.verify import record_verdict
from agentomnia.processes import worker_processes
from agentomnia.progress import tracked_map
from agentomnia.realism import consistency_metrics, read_bundles, tool_metrics, value_metrics
from agentomnia.stages import (
    StageContext,
    StagedSpec,
    environments_stage,
    publish,
    state_space_stage,
    toolsets_stage,
    write_environments,
    write_staged,
)
from agentomnia.storage import write_parquet
from agentomnia.taxonomy import load_taxonomy
from agentomnia_assets._common import count_table, llm_usage, md_table, png, round_asset, round_check
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


class EnvironmentsConfig(dg.Config):
    min_tools: int = 8
    max_tools: int = 56
    rollouts: int = 6
    rollout_steps: int = 12
    repair_rounds: int = 2
    max_environments: int = 0  # 0 = every selected candidate; a smaller number for quick runs
    # processes that build offline, each with a one-worker sandbox (building is bound by the interpreter,
    # which threads share); None: one per core; 0 or 1: threads of this process on its sandbox
    processes: int | None = None


def _staged(artifacts: RoundArtifacts, artifact: Any) -> list[StagedSpec]:
    return [StagedSpec.model_validate_json(r["record"]) for r in artifacts.rows(artifact)]


def _failures(out: Any) -> dg.MetadataValue:
    return md_table([{"candidate_id": r.subject, "name": r.detail.get("name"), "stage": r.stage, "reason": r.reason}
                     for r in out.rejected])  # fmt: skip


@round_asset(
    "environments",
    deps=[dg.AssetKey(SELECTED_CANDIDATES.name)],
    description=(
        "State-space construction: per selected candidate an EnvSpec of entities (typed attributes, keys, "
        "enums, references), relations, invariants and business rules — the L2 domain's knowledge base merged "
        "with what the seed's schemas imply (id parameters become entities, properties attributes, enums stay enums). "
        "In llm mode the model adds attributes the domain's records carry (knowledge augmentation), each checked "
        "and named in the report as added or refused."
    ),
)
def state_specs(
    context: dg.AssetExecutionContext,
    config: EnvironmentsConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    candidates = artifacts.selected()
    if config.max_environments:
        candidates = candidates[: config.max_environments]
    seeds = {s.id: s for s in artifacts.seeds()}
    ctx = StageContext(context.partition_key, context.run.run_id)
    model = llm.get()
    out = state_space_stage(ctx, candidates, seeds, load_taxonomy(), llm=model)
    publish(out, ctx, artifacts, STATE_SPECS, lineage.get(), write=write_staged)
    staged = out.kept
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "specs": len(staged),
            "failed": len(out.rejected),
            "entities_mean": round(sum(len(s.spec.entities) for s in staged) / max(1, len(staged)), 2),
            "attributes_mean": round(sum(s.spec.attribute_count for s in staged) / max(1, len(staged)), 2),
            "seed_entities_added": sum(len(s.space.seed_entities_added) for s in staged),
            "seed_entities_merged": sum(len(s.space.seed_entities_merged) for s in staged),
            "model_attributes": sum(len(s.space.model_attributes) for s in staged),
            "failures": _failures(out),
        }
    )


@round_asset(
    "environments",
    deps=[state_specs],
    description=(
        "Tool-set synthesis: candidate operations from the seed (names and parameter names kept), the knowledge "
        "base and generated coverage, refined (grounding, redundancy, chain support), normalised (kept / merged / "
        "split / rewritten / removed) and diversified (mode selectors, cross-parameter constraints, structured "
        "outputs, confusable near-twins). In llm mode the model proposes further operations, judged by the same "
        "refinement; the refused go back to it once with their reasons. Tools in OpenAI function format."
    ),
)
def toolsets(
    context: dg.AssetExecutionContext,
    config: EnvironmentsConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    seeds = {s.id: s for s in artifacts.seeds()}
    cfg = ToolsetConfig(min_tools=config.min_tools, max_tools=config.max_tools)
    ctx = StageContext(context.partition_key, context.run.run_id)
    model = llm.get()
    result = toolsets_stage(ctx, _staged(artifacts, STATE_SPECS), seeds, cfg, llm=model)
    publish(result, ctx, artifacts, TOOLSETS, lineage.get(), write=write_staged)
    out = result.kept
    table: list[dict[str, Any]] = [
        {"env": s.spec.name, **n.model_dump()} for s in out for n in s.normalization
    ]
    write_parquet(artifacts.path(TOOLSETS, "normalization"), table,
                  columns=["env", "candidate", "origin", "fate", "tool", "reason"])  # fmt: skip
    tools = [len(s.spec.tools) for s in out]
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "toolsets": len(out),
            "failed": len(result.rejected),
            "tools_total": sum(tools),
            "tools_mean": round(sum(tools) / max(1, len(tools)), 2),
            "normalization_by_fate": count_table([r["fate"] for r in table], "fate"),
            "normalization_by_origin": count_table(
                [f"{r['origin']}:{r['fate']}" for r in table], "origin:fate"
            ),
            "normalization_sample": md_table(
                table, ["env", "candidate", "origin", "fate", "tool", "reason"], limit=40
            ),
            "by_op": count_table([t.op for s in out for t in s.spec.tools], "op"),
        }
    )


@round_asset(
    "environments",
    deps=[toolsets],
    description=(
        "Executable environments: per toolset, the generated Python class, a valid s0 and three-level "
        "verification in the sandbox (initialization, tool unit checks, random rollouts with replay "
        "determinism) inside a bounded repair loop; in llm mode the model writes some records' descriptive values "
        "(kept only where they fit and every invariant holds) and rewrites failing methods. Bundles land in $AGENTOMNIA_HOME/envs/<env_id>/ "
        "(spec.json, env.py, tools.json, s0.json, verification.json)."
    ),
)
def environments(
    context: dg.AssetExecutionContext,
    config: EnvironmentsConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> dg.MaterializeResult:
    store = storage.get()
    artifacts = store.round(context.partition_key)
    staged = _staged(artifacts, TOOLSETS)
    cfg = BuildConfig(
        toolset=ToolsetConfig(min_tools=config.min_tools, max_tools=config.max_tools),
        rollouts=config.rollouts, steps=config.rollout_steps, repair_rounds=config.repair_rounds,
    )  # fmt: skip
    box = sandbox.get()

    def parallel(fn: Any, items: Any, **processes: Any) -> list[Any]:
        workers = max(1, box.config.workers)
        return tracked_map(context.op_def.name, "environments", fn, items, workers=workers, **processes)

    ctx = StageContext(context.partition_key, context.run.run_id)
    seeds = {s.id: s for s in artifacts.seeds()}  # a PRD round's seeds carry its environment variations
    model = llm.get()
    out = environments_stage(ctx, staged, box, store, llm=model, config=cfg, parallel=parallel, seeds=seeds,
                             processes=worker_processes(config.processes))  # fmt: skip
    built = out.kept
    publish(out, ctx, artifacts, ENVIRONMENTS, lineage.get(),
            write=lambda _path, kept: write_environments(artifacts, store, kept))  # fmt: skip
    index = artifacts.environments()
    kept = len(built) / max(1, len(staged))
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "environments": len(built),
            "discarded": len(out.rejected),
            "kept_share": round(kept, 3),
            "tools_total": sum(len(b.spec.tools) for b in built),
            "dropped_tools": sum(len(b.dropped_tools) for b in built),
            "varied_by_prd": sum(1 for b in built if b.variations),
            "model_values": sum(1 for b in built for v in b.model_values if v.startswith("model wrote")),
            "prd_variations": md_table(
                [{"env": b.spec.name, "change": v} for b in built for v in b.variations], limit=40
            ),
            "verification_checks": sum(
                b.report.init.checks + b.report.tool.checks + b.report.env.checks for b in built
            ),
            "discard_reasons": _failures(out),
            "dropped_tool_reasons": md_table(
                [{"env": b.spec.name, **d.model_dump()} for b in built for d in b.dropped_tools], limit=40
            ),
            "environments_table": md_table(
                index, ["name", "l2", "tools", "entities", "attributes", "dropped_tools"], limit=40
            ),
            "envs_dir": dg.MetadataValue.path(str(store.root / "envs")),
        }
    )


@round_check(
    environments,
    blocking=True,
    description="Every kept environment passed all three verification levels and the environment contract (check_env).",
)
def environments_fully_verified(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    rows = storage.get().round(context.partition_key).verification()
    verdicts = {r["env_id"]: record_verdict(r) for r in rows}
    bad = {env_id: problems for env_id, (ok, problems) in verdicts.items() if not ok}
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={
            "environments": len(rows),
            "not_fully_verified": len(bad),
            "problems": md_table([{"env": e, "problem": p[0] if p else ""} for e, p in bad.items()]),
        },
    )


@round_check(
    environments,
    description="Tools per environment within the configured bounds.",
)
def tools_per_environment_in_bounds(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    rows = storage.get().round(context.partition_key).environments()
    cfg = EnvironmentsConfig()
    out = [r for r in rows if not cfg.min_tools <= r["tools"] <= cfg.max_tools + 16]
    return dg.AssetCheckResult(
        passed=not out, metadata={"out_of_bounds": len(out), "min": cfg.min_tools, "max": cfg.max_tools + 16}
    )


@round_asset(
    "environments",
    pool=None,
    deps=[environments],
    description="Environment statistics in the shape of the paper's Table 5, with histograms.",
)
def environment_stats(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    artifacts = storage.get().round(context.partition_key)
    specs = artifacts.env_specs()
    stats = table5_stats(specs)
    out = stats_histogram_png(specs, artifacts.path(ENVIRONMENT_STATS, "histogram"))
    write_parquet(artifacts.path(ENVIRONMENT_STATS), [stats])
    # how real the worlds and tools read (the round's HTML report shows these beside their targets)
    worlds = read_bundles(Path(e["path"]) for e in artifacts.environments() if e.get("path"))
    realism = {**value_metrics(worlds), **consistency_metrics(worlds), **tool_metrics(specs)}
    return dg.MaterializeResult(
        metadata={
            **{k: v for k, v in stats.items() if isinstance(v, (int, float))},
            "table": md_table([stats]),
            "histogram": png(out),
            **{f"realism/{k}": v for k, v in realism.items() if isinstance(v, (int, float))},
            "realism/placeholder_examples": dg.MetadataValue.json(realism["placeholder_examples"]),
        }
    )
