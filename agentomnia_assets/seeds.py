"""Stage one of environment synthesis: seeds in, selected environment candidates out (paper §4.2.1)."""

from collections import Counter

import dagster as dg

from agentomnia.catalog import ENV_CANDIDATES, PRDS, RAW_SEEDS, SELECTED_CANDIDATES, TAXONOMY
from agentomnia.evolution import seeds_for
from agentomnia.seeds.inference import DomainMatcher, candidate_text
from agentomnia.seeds.ingest import corpus_dir, ingest
from agentomnia.seeds.selection import SelectionConfig
from agentomnia.stages import StageContext, candidates_stage, publish, seeds_stage, selection_stage
from agentomnia.taxonomy import Coordinate, load_knowledge, load_taxonomy
from agentomnia_assets._common import count_table, llm_usage, md_table, round_asset, round_check
from agentomnia_assets.partitions import BASE_ROUND
from resources import EmbedderResource, LineageResource, LLMResource, StorageResource


class SeedsConfig(dg.Config, SelectionConfig):  # type: ignore[misc]
    """Selection thresholds, settable per run from the launchpad (defaults: SelectionConfig's)."""


@round_asset(
    "seeds",
    deps=[dg.AssetKey(TAXONOMY.name), dg.AssetKey(PRDS.name)],
    description=(
        "Seeds parsed from files: user queries (JSONL/CSV/Parquet/HF datasets), SKILL.md skills, MCP tools/list "
        "results and OpenAPI/Swagger specs. Round r0 reads the shipped corpus; every round reads "
        "$AGENTOMNIA_HOME/seeds/; a round with PRDs in force adds query seeds composed for the targeted domains "
        "and capabilities (in llm mode the model writes their requests from the PRDs' text). Unreadable inputs become rejected records with the file, place and fix."
    ),
)
def raw_seeds(
    context: dg.AssetExecutionContext, storage: StorageResource, lineage: LineageResource, llm: LLMResource
) -> dg.MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    artifacts = store.round(round_key)
    inbox = store.root / "seeds"
    result = ingest([corpus_dir()], relative_to=corpus_dir()) if round_key == BASE_ROUND else ingest([])
    if inbox.exists():
        result.extend(ingest([inbox], relative_to=store.root))
    directives = artifacts.directives()
    documents = artifacts.prds()
    steered = []
    model = llm.get()
    if directives is not None:
        # in llm mode the model writes each PRD seed's request from the PRDs' text
        steered = seeds_for(directives, load_taxonomy(), load_knowledge(), prds=documents, llm=model)
    ctx = StageContext(round_key, context.run.run_id)
    out = seeds_stage(ctx, [*result.accepted, *steered], result.rejected,
                      prd_records={p.prd_id: p.id for p in documents})  # fmt: skip
    path = publish(out, ctx, artifacts, RAW_SEEDS, lineage.get(), flat=["kind", "name", "source", "title"])
    seeds, rejected = out.kept, out.rejected
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "seeds": len(seeds),
            "prd_seeds": len(steered),
            "prd_requests_by": count_table(
                [str(s.metadata.get("request_by", "rules")).split(" ")[0] for s in steered], "written by"
            ),
            "rejected": len(rejected),
            "tools": sum(len(s.tools) for s in seeds),
            "by_kind": count_table([s.kind for s in seeds], "kind"),
            "rejections": md_table(
                [{"source": r.subject, "place": r.place, "reason": r.reason} for r in rejected]
            ),
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@round_asset(
    "seeds",
    deps=[raw_seeds],
    description=(
        "Environment inference per seed: a summary naming the domain, an overview (state components, "
        "operations, objectives), utility and realism scores with their features, and the taxonomy coordinate "
        "(nearest L2 by embedding, checked against the domain knowledge base)."
    ),
)
def environment_candidates(
    context: dg.AssetExecutionContext,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    round_key = context.partition_key
    store, model = storage.get(), llm.get()
    artifacts = store.round(round_key)
    seeds = artifacts.seeds()
    matcher = DomainMatcher(load_taxonomy(), embedder.get())
    ctx = StageContext(round_key, context.run.run_id)
    out = candidates_stage(ctx, seeds, matcher, model)
    path = publish(
        out, ctx, artifacts, ENV_CANDIDATES, lineage.get(), flat=["name", "summary", "utility", "realism"]
    )
    candidates, failed = out.kept, out.rejected
    expected = [
        (c, s.metadata.get("taxonomy_id"))
        for c in candidates
        for s in seeds
        if s.id in c.seed_ids and isinstance(s.metadata.get("taxonomy_id"), int)
    ]
    return dg.MaterializeResult(
        metadata={
            **llm_usage(context, store, model),
            "candidates": len(candidates),
            "failed": len(failed),
            # in llm mode: candidates the offline proposer made because the model's answer was unusable
            "model_fallbacks": sum(bool(c.fallback) for c in candidates),
            "splits": count_table([c.coordinate.split for c in candidates], "split"),
            "l1_domains": len({c.coordinate.l1_key for c in candidates}),
            "by_l1": count_table([c.coordinate.l1_key for c in candidates], "split/L1"),
            "mean_utility": round(sum(c.utility for c in candidates) / max(1, len(candidates)), 3),
            "mean_realism": round(sum(c.realism for c in candidates) / max(1, len(candidates)), 3),
            # where a query seed says which domain it was written for, how often inference agrees
            "labelled_domain_agreement": round(
                sum(c.coordinate.taxonomy_id == t for c, t in expected) / len(expected), 3
            )
            if expected
            else "n/a",
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@round_asset(
    "seeds",
    deps=[environment_candidates],
    description=(
        "Quality-aware selection: granularity control (too broad / too narrow), utility and realism thresholds, "
        "exact dedup on summaries keeping the higher realism, and embedding clustering with each cluster's "
        "medoid kept. Every rejected candidate keeps a row with its rule and reason."
    ),
)
def selected_environment_seeds(
    context: dg.AssetExecutionContext,
    config: SeedsConfig,
    storage: StorageResource,
    lineage: LineageResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    round_key = context.partition_key
    artifacts = storage.get().round(round_key)
    candidates = artifacts.candidates()
    vectors = embedder.get().embed([candidate_text(c) for c in candidates])
    ctx = StageContext(round_key, context.run.run_id)
    out = selection_stage(ctx, candidates, vectors, SelectionConfig(**config.model_dump()))
    path = publish(out, ctx, artifacts, SELECTED_CANDIDATES, lineage.get(), flat=["name", "summary"])
    rejected_rows = [
        {"candidate_id": r.subject, "rule": r.detail.get("rule"), "reason": r.reason} for r in out.rejected
    ]
    return dg.MaterializeResult(
        metadata={
            "candidates": len(candidates),
            "selected": len(out.kept),
            "rejected": len(out.rejected),
            "rejected_by_rule": count_table([r["rule"] for r in rejected_rows], "rule"),
            "rejections": md_table(rejected_rows, ["candidate_id", "rule", "reason"]),
            "selected_by_split": count_table([c.coordinate.split for c in out.kept], "split"),
            "selected_l1_domains": len({c.coordinate.l1_key for c in out.kept}),
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@round_check(
    selected_environment_seeds,
    blocking=True,
    description="No two selected candidates share a summary.",
)
def selected_summaries_unique(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    selected = storage.get().round(context.partition_key).selected()
    counts = Counter(" ".join(c.summary.lower().split()) for c in selected)
    dupes = [s for s, n in counts.items() if n > 1]
    return dg.AssetCheckResult(
        passed=not dupes, metadata={"duplicate_summaries": len(dupes), "selected": len(selected)}
    )


@round_check(
    selected_environment_seeds,
    description="Every selected candidate has a valid taxonomy coordinate.",
)
def selected_coordinates_valid(context, storage: StorageResource) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    selected = storage.get().round(context.partition_key).selected()
    bad = []
    for c in selected:
        try:
            Coordinate.model_validate(c.coordinate.model_dump())
        except ValueError as exc:
            bad.append({"candidate": c.id, "problem": str(exc)[:200]})
    return dg.AssetCheckResult(
        passed=not bad,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"invalid": len(bad), "problems": md_table(bad)},
    )
