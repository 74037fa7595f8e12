"""Environment synthesis (paper §4.2.2-4.2.4): state spaces, toolsets, verified bundles, statistics."""

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)
from pydantic import BaseModel

from agentomnia.envs.build import (
    BuildConfig,
    BuildFailure,
    BuiltEnv,
    state_stage,
    toolset_stage,
    verification_record,
    verify_stage,
    write_bundle,
)
from agentomnia.envs.spec import EnvSpec
from agentomnia.envs.state_space import StateSpaceReport
from agentomnia.envs.stats import environment_stats as table5_stats
from agentomnia.envs.stats import stats_histogram_png
from agentomnia.envs.toolset import Normalization, ToolsetConfig
from agentomnia.lineage import Edge, LineageRow, lineage_row
from agentomnia.seeds.inference import EnvCandidate
from agentomnia.seeds.models import Seed
from agentomnia.storage import load_records, read_parquet, save_records, write_parquet
from agentomnia.taxonomy import load_taxonomy
from agentomnia_assets._common import count_table, md_table, png
from agentomnia_assets.instance import DUCKDB_POOL
from agentomnia_assets.partitions import rounds
from agentomnia_assets.seeds import selected_environment_seeds
from resources import LineageResource, LLMResource, SandboxResource, StorageResource


class EnvironmentsConfig(Config):
    min_tools: int = 8
    max_tools: int = 56
    rollouts: int = 6
    rollout_steps: int = 12
    repair_rounds: int = 2
    max_environments: int = 0  # 0 = every selected candidate; a smaller number for quick runs


class StagedSpec(BaseModel):
    spec: EnvSpec
    space: StateSpaceReport
    normalization: list[Normalization] = []


def _failure_rows(
    failures: list[BuildFailure], round_key: str, run_id: str
) -> tuple[list[LineageRow], list[Edge]]:
    rows, edges = [], []
    for f in failures:
        rid = f"fail-{f.stage}-{f.candidate_id}"
        rows.append(
            LineageRow(
                id=rid,
                kind="environment",
                round=round_key,
                status="rejected",
                reason=f"{f.stage}: {f.reason}"[:2000],
                run_id=run_id,
            )
        )
        edges.append(Edge(child=rid, parent=f.candidate_id, relation="built_from"))
    return rows, edges


@asset(
    group_name="environments",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[selected_environment_seeds],
    description=(
        "State-space construction: per selected candidate an EnvSpec of entities (typed attributes, keys, "
        "enums, references), relations, invariants and business rules — the L2 domain's knowledge base merged "
        "with what the seed's schemas imply (id parameters become entities, properties attributes, enums stay enums)."
    ),
)
def state_specs(
    context: AssetExecutionContext,
    config: EnvironmentsConfig,
    storage: StorageResource,
    lineage: LineageResource,
) -> MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    candidates = load_records(store.artifact("selected_environment_seeds", round_key), EnvCandidate)
    if config.max_environments:
        candidates = candidates[: config.max_environments]
    seeds = {s.id: s for s in load_records(store.artifact("raw_seeds", round_key), Seed)}
    taxonomy = load_taxonomy()
    staged: list[StagedSpec] = []
    failures: list[BuildFailure] = []
    for c in candidates:
        result = state_stage(
            c, [seeds[i] for i in c.seed_ids if i in seeds], taxonomy.by_id(c.coordinate.taxonomy_id)
        )
        if isinstance(result, BuildFailure):
            failures.append(result)
        else:
            staged.append(StagedSpec(spec=result[0].in_round(round_key), space=result[1]))  # type: ignore[arg-type]
    path = store.artifact("state_specs", round_key)
    write_parquet(
        path, [{"id": s.spec.id, "record": s.model_dump_json()} for s in staged], columns=["id", "record"]
    )
    rows = [lineage_row(s.spec, run_id=context.run.run_id, location=str(path)) for s in staged]
    edges = [Edge(child=s.spec.id, parent=s.spec.candidate_id, relation="state_space_of") for s in staged]
    frows, fedges = _failure_rows(failures, round_key, context.run.run_id)
    lineage.get().record(rows + frows, edges + fedges)
    return MaterializeResult(
        metadata={
            "specs": len(staged),
            "failed": len(failures),
            "entities_mean": round(sum(len(s.spec.entities) for s in staged) / max(1, len(staged)), 2),
            "attributes_mean": round(sum(s.spec.attribute_count for s in staged) / max(1, len(staged)), 2),
            "seed_entities_added": sum(len(s.space.seed_entities_added) for s in staged),
            "seed_entities_merged": sum(len(s.space.seed_entities_merged) for s in staged),
            "failures": md_table([f.model_dump() for f in failures]),
        }
    )


@asset(
    group_name="environments",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[state_specs],
    description=(
        "Tool-set synthesis: candidate operations from the seed (names and parameter names kept), the knowledge "
        "base and generated coverage, refined (grounding, redundancy, chain support), normalised (kept / merged / "
        "split / rewritten / removed) and diversified (mode selectors, cross-parameter constraints, structured "
        "outputs, confusable near-twins). Tools in OpenAI function format."
    ),
)
def toolsets(
    context: AssetExecutionContext,
    config: EnvironmentsConfig,
    storage: StorageResource,
    lineage: LineageResource,
) -> MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    staged = [
        StagedSpec.model_validate_json(r["record"])
        for r in read_parquet(store.artifact("state_specs", round_key))
    ]
    seeds = {s.id: s for s in load_records(store.artifact("raw_seeds", round_key), Seed)}
    cfg = ToolsetConfig(min_tools=config.min_tools, max_tools=config.max_tools)
    out: list[StagedSpec] = []
    parents: list[str] = []
    failures: list[BuildFailure] = []
    table: list[dict[str, Any]] = []
    for s in staged:
        result = toolset_stage(s.spec, [seeds[i] for i in s.spec.seed_ids if i in seeds], s.space, cfg)
        if isinstance(result, BuildFailure):
            failures.append(result)
            continue
        spec, norm = result
        out.append(StagedSpec(spec=spec.in_round(round_key), space=s.space, normalization=norm))  # type: ignore[arg-type]
        parents.append(s.spec.id)
        table += [{"env": spec.name, **n.model_dump()} for n in norm]
    path = store.artifact("toolsets", round_key)
    write_parquet(
        path, [{"id": s.spec.id, "record": s.model_dump_json()} for s in out], columns=["id", "record"]
    )
    write_parquet(
        store.artifact("toolsets", round_key, "normalization.parquet"),
        table,
        columns=["env", "candidate", "origin", "fate", "tool", "reason"],
    )
    rows = [lineage_row(s.spec, kind="toolset", run_id=context.run.run_id, location=str(path)) for s in out]
    edges = [
        Edge(child=s.spec.id, parent=parent, relation="tools_for")
        for s, parent in zip(out, parents, strict=True)
    ]
    frows, fedges = _failure_rows(failures, round_key, context.run.run_id)
    lineage.get().record(rows + frows, edges + fedges)
    tools = [len(s.spec.tools) for s in out]
    return MaterializeResult(
        metadata={
            "toolsets": len(out),
            "failed": len(failures),
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


@asset(
    group_name="environments",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[toolsets],
    description=(
        "Executable environments: per toolset, the generated Python class, a valid s0 and three-level "
        "verification in the sandbox (initialization, tool unit checks, random rollouts with replay "
        "determinism) inside a bounded repair loop. Bundles land in $AGENTOMNIA_HOME/envs/<env_id>/ "
        "(spec.json, env.py, tools.json, s0.json, verification.json)."
    ),
)
def environments(
    context: AssetExecutionContext,
    config: EnvironmentsConfig,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    sandbox: SandboxResource,
) -> MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    staged = [
        StagedSpec.model_validate_json(r["record"])
        for r in read_parquet(store.artifact("toolsets", round_key))
    ]
    cfg = BuildConfig(
        toolset=ToolsetConfig(min_tools=config.min_tools, max_tools=config.max_tools),
        rollouts=config.rollouts, steps=config.rollout_steps, repair_rounds=config.repair_rounds,
    )  # fmt: skip
    box, model = sandbox.get(), llm.get()

    def build(s: StagedSpec) -> BuiltEnv | BuildFailure:
        return verify_stage(s.spec, s.space, s.normalization, box, llm=model, config=cfg)

    with ThreadPoolExecutor(max_workers=max(1, box.config.workers)) as pool:
        results = list(pool.map(build, staged))
    built = [r for r in results if isinstance(r, BuiltEnv)]
    failures = [r for r in results if isinstance(r, BuildFailure)]
    rows, edges, index = [], [], []
    for b, s in ((b, s) for b, s in zip(results, staged, strict=True) if isinstance(b, BuiltEnv)):
        folder = write_bundle(b, store.env_dir(b.env_id))
        row = lineage_row(b.spec.in_round(round_key), kind="environment", run_id=context.run.run_id, location=str(folder),
                          meta={"tools": len(b.spec.tools), "dropped_tools": len(b.dropped_tools), "spec_id": b.spec.id})  # fmt: skip
        rows.append(row.model_copy(update={"id": b.env_id}))
        edges.append(Edge(child=b.env_id, parent=s.spec.id, relation="built_from"))
        edges += [Edge(child=b.env_id, parent=sid, relation="seeded_by") for sid in b.spec.seed_ids]
        for t in b.spec.tools:
            tid = f"{b.env_id}:{t.name}"
            rows.append(LineageRow(id=tid, kind="tool", round=round_key, split=b.spec.coordinate.split, taxonomy_id=b.spec.coordinate.taxonomy_id,
                                   l1=b.spec.coordinate.l1, l2=b.spec.coordinate.l2, run_id=context.run.run_id, location=str(folder / "tools.json"),
                                   meta={"op": t.op, "kind": t.kind, "origin": t.origin}))  # fmt: skip
            edges.append(Edge(child=tid, parent=b.env_id, relation="tool_of"))
        index.append({"env_id": b.env_id, "name": b.spec.name, "path": str(folder), "taxonomy_id": b.spec.coordinate.taxonomy_id,
                      "split": b.spec.coordinate.split, "l1": b.spec.coordinate.l1, "l2": b.spec.coordinate.l2,
                      "tools": len(b.spec.tools), "entities": len(b.spec.entities), "attributes": b.spec.attribute_count,
                      "dropped_tools": len(b.dropped_tools), "verify_seconds": b.report.seconds})  # fmt: skip
    save_records(
        store.artifact("environments", round_key, "specs.parquet"),
        [b.spec.in_round(round_key) for b in built],
        flat=["name", "class_name"],
    )
    write_parquet(store.artifact("environments", round_key), index,
                  columns=["env_id", "name", "path", "taxonomy_id", "split", "l1", "l2", "tools", "entities", "attributes", "dropped_tools", "verify_seconds"])  # fmt: skip
    write_parquet(
        store.artifact("environments", round_key, "verification.parquet"),
        [verification_record(b) for b in built],
    )
    frows, fedges = _failure_rows(failures, round_key, context.run.run_id)
    lineage.get().record(rows + frows, edges + fedges)
    kept = len(built) / max(1, len(staged))
    return MaterializeResult(
        metadata={
            "environments": len(built),
            "discarded": len(failures),
            "kept_share": round(kept, 3),
            "tools_total": sum(len(b.spec.tools) for b in built),
            "dropped_tools": sum(len(b.dropped_tools) for b in built),
            "verification_checks": sum(
                b.report.init.checks + b.report.tool.checks + b.report.env.checks for b in built
            ),
            "discard_reasons": md_table([f.model_dump() for f in failures]),
            "dropped_tool_reasons": md_table(
                [{"env": b.spec.name, **d.model_dump()} for b in built for d in b.dropped_tools], limit=40
            ),
            "environments_table": md_table(
                index, ["name", "l2", "tools", "entities", "attributes", "dropped_tools"], limit=40
            ),
            "envs_dir": MetadataValue.path(str(store.root / "envs")),
        }
    )


@asset_check(
    asset=environments,
    partitions_def=rounds,
    blocking=True,
    description="Every kept environment passed all three verification levels.",
)
def environments_fully_verified(context, storage: StorageResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    rows = read_parquet(
        storage.get().artifact("environments", context.partition_key, "verification.parquet"),
        json_columns=["levels"],
    )
    bad = [r["env_id"] for r in rows if not (r["verified"] and all(r["levels"].values()))]
    return AssetCheckResult(
        passed=not bad, metadata={"environments": len(rows), "not_fully_verified": len(bad)}
    )


@asset_check(
    asset=environments,
    partitions_def=rounds,
    description="Tools per environment within the configured bounds.",
)
def tools_per_environment_in_bounds(context, storage: StorageResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    rows = read_parquet(storage.get().artifact("environments", context.partition_key))
    cfg = EnvironmentsConfig()
    out = [r for r in rows if not cfg.min_tools <= r["tools"] <= cfg.max_tools + 16]
    return AssetCheckResult(
        passed=not out, metadata={"out_of_bounds": len(out), "min": cfg.min_tools, "max": cfg.max_tools + 16}
    )


@asset(
    group_name="environments",
    partitions_def=rounds,
    deps=[environments],
    description="Environment statistics in the shape of the paper's Table 5, with histograms.",
)
def environment_stats(context: AssetExecutionContext, storage: StorageResource) -> MaterializeResult:
    store = storage.get()
    specs = load_records(store.artifact("environments", context.partition_key, "specs.parquet"), EnvSpec)
    stats = table5_stats(specs)
    out = stats_histogram_png(
        specs, store.artifact("environment_stats", context.partition_key, "histogram.png")
    )
    write_parquet(store.artifact("environment_stats", context.partition_key), [stats])
    return MaterializeResult(
        metadata={
            **{k: v for k, v in stats.items() if isinstance(v, (int, float))},
            "table": md_table([stats]),
            "histogram": png(out),
        }
    )
