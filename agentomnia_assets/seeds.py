"""Stage one of environment synthesis: seeds in, selected environment candidates out (paper §4.2.1)."""

from collections import Counter

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
    asset_check,
)

from agentomnia.evolution import seeds_for
from agentomnia.lineage import Edge, lineage_row
from agentomnia.seeds.inference import DomainMatcher, EnvCandidate, candidate_text, infer_candidates
from agentomnia.seeds.ingest import corpus_dir, ingest
from agentomnia.seeds.models import Seed, SeedRejection
from agentomnia.seeds.selection import SelectionConfig, select
from agentomnia.storage import load_records, save_records, write_parquet
from agentomnia.taxonomy import Coordinate, load_knowledge, load_taxonomy
from agentomnia_assets._common import count_table, md_table
from agentomnia_assets.evolution import round_directives, round_prds
from agentomnia_assets.instance import DUCKDB_POOL
from agentomnia_assets.partitions import BASE_ROUND, rounds
from resources import EmbedderResource, LineageResource, LLMResource, StorageResource


class SeedsConfig(Config, SelectionConfig):  # type: ignore[misc]
    """Selection thresholds, settable per run from the launchpad (defaults: SelectionConfig's)."""


@asset(
    group_name="seeds",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[AssetKey("taxonomy"), AssetKey("prds")],
    description=(
        "Seeds parsed from files: user queries (JSONL/CSV/Parquet/HF datasets), SKILL.md skills, MCP tools/list "
        "results and OpenAPI/Swagger specs. Round r0 reads the shipped corpus; every round reads "
        "$AGENTOMNIA_HOME/seeds/; a round with PRDs in force adds query seeds composed for the targeted domains "
        "and capabilities. Unreadable inputs become rejected records with the file, place and fix."
    ),
)
def raw_seeds(
    context: AssetExecutionContext, storage: StorageResource, lineage: LineageResource
) -> MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    inbox = store.root / "seeds"
    result = ingest([corpus_dir()], relative_to=corpus_dir()) if round_key == BASE_ROUND else ingest([])
    if inbox.exists():
        result.extend(ingest([inbox], relative_to=store.root))
    directives = round_directives(store, round_key)
    documents = round_prds(store, round_key)
    steered = []
    if directives is not None:
        steered = seeds_for(directives, load_taxonomy(), load_knowledge(), prds=documents)
    seeds = [s.in_round(round_key) for s in [*result.accepted, *steered]]
    seeds = list({s.id: s for s in seeds}.values())  # the same seed in two places is one seed
    rejected = [r.in_round(round_key) for r in result.rejected]
    path = save_records(
        store.artifact("raw_seeds", round_key), seeds, flat=["kind", "name", "source", "title"]
    )
    save_records(
        store.artifact("raw_seeds", round_key, "rejected.parquet"), rejected, flat=["source", "reason"]
    )
    rows = [lineage_row(s, run_id=context.run.run_id, location=str(path)) for s in seeds]
    rows += [lineage_row(r, status="rejected", reason=r.message, run_id=context.run.run_id) for r in rejected]
    record_of = {p.prd_id: p.id for p in documents}
    edges = [
        Edge(child=s.id, parent=record_of[pid], relation="steered_by")
        for s in seeds
        for pid in s.metadata.get("prd_ids") or ()
        if pid in record_of
    ]
    lineage.get().record(rows, edges)
    return MaterializeResult(
        metadata={
            "seeds": len(seeds),
            "prd_seeds": len(steered),
            "rejected": len(rejected),
            "tools": sum(len(s.tools) for s in seeds),
            "by_kind": count_table([s.kind for s in seeds], "kind"),
            "rejections": md_table(
                [{"source": r.source, "place": r.place, "reason": r.reason} for r in rejected]
            ),
            "path": MetadataValue.path(str(path)),
        }
    )


@asset(
    group_name="seeds",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[raw_seeds],
    description=(
        "Environment inference per seed: a summary naming the domain, an overview (state components, "
        "operations, objectives), utility and realism scores with their features, and the taxonomy coordinate "
        "(nearest L2 by embedding, checked against the domain knowledge base)."
    ),
)
def environment_candidates(
    context: AssetExecutionContext,
    storage: StorageResource,
    lineage: LineageResource,
    llm: LLMResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    seeds = load_records(store.artifact("raw_seeds", round_key), Seed)
    matcher = DomainMatcher(load_taxonomy(), embedder.get())
    candidates, failed = infer_candidates(seeds, matcher, llm.get())
    candidates = [c.in_round(round_key) for c in candidates]
    path = save_records(
        store.artifact("environment_candidates", round_key),
        candidates,
        flat=["name", "summary", "utility", "realism"],
    )
    rows = [lineage_row(c, run_id=context.run.run_id, location=str(path)) for c in candidates]
    edges = [Edge(child=c.id, parent=sid, relation="inferred_from") for c in candidates for sid in c.seed_ids]
    rejects = [SeedRejection(source=s.source, kind=s.kind, reason=why, round=round_key) for s, why in failed]
    rows += [lineage_row(r, status="rejected", reason=r.reason, run_id=context.run.run_id) for r in rejects]
    edges += [
        Edge(child=r.id, parent=s.id, relation="rejection_of")
        for r, (s, _) in zip(rejects, failed, strict=True)
    ]
    lineage.get().record(rows, edges)
    expected = [
        (c, s.metadata.get("taxonomy_id"))
        for c in candidates
        for s in seeds
        if s.id in c.seed_ids and isinstance(s.metadata.get("taxonomy_id"), int)
    ]
    return MaterializeResult(
        metadata={
            "candidates": len(candidates),
            "failed": len(failed),
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
            "path": MetadataValue.path(str(path)),
        }
    )


@asset(
    group_name="seeds",
    partitions_def=rounds,
    pool=DUCKDB_POOL,
    deps=[environment_candidates],
    description=(
        "Quality-aware selection: granularity control (too broad / too narrow), utility and realism thresholds, "
        "exact dedup on summaries keeping the higher realism, and embedding clustering with each cluster's "
        "medoid kept. Every rejected candidate keeps a row with its rule and reason."
    ),
)
def selected_environment_seeds(
    context: AssetExecutionContext,
    config: SeedsConfig,
    storage: StorageResource,
    lineage: LineageResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    round_key = context.partition_key
    store = storage.get()
    candidates = load_records(store.artifact("environment_candidates", round_key), EnvCandidate)
    vectors = embedder.get().embed([candidate_text(c) for c in candidates])
    selection = select(candidates, vectors, SelectionConfig(**config.model_dump()))
    path = save_records(
        store.artifact("selected_environment_seeds", round_key), selection.selected, flat=["name", "summary"]
    )
    rejected_rows = [r.model_dump() for r in selection.rejected]
    write_parquet(store.artifact("selected_environment_seeds", round_key, "rejected.parquet"), rejected_rows,
                  columns=["candidate_id", "seed_ids", "rule", "reason"])  # fmt: skip
    by_id = {c.id: c for c in candidates}
    rows = [
        lineage_row(c, kind="selected_candidate", run_id=context.run.run_id, location=str(path))
        for c in selection.selected
    ]
    # a selection decision is a record of its own: the candidate row stays as inference wrote it
    rows = [r.model_copy(update={"id": f"sel-{round_key}-{r.id}"}) for r in rows]
    rows += [
        lineage_row(by_id[r.candidate_id], kind="selected_candidate", status="rejected", reason=f"{r.rule}: {r.reason}",
                    run_id=context.run.run_id).model_copy(update={"id": f"sel-{round_key}-{r.candidate_id}"})
        for r in selection.rejected
    ]  # fmt: skip
    edges = [Edge(child=r.id, parent=r.id.split("-", 2)[2], relation="selection_of") for r in rows]
    lineage.get().record(rows, edges)
    return MaterializeResult(
        metadata={
            "candidates": len(candidates),
            "selected": len(selection.selected),
            "rejected": len(selection.rejected),
            "rejected_by_rule": count_table([r.rule for r in selection.rejected], "rule"),
            "rejections": md_table(rejected_rows, ["candidate_id", "rule", "reason"]),
            "selected_by_split": count_table([c.coordinate.split for c in selection.selected], "split"),
            "selected_l1_domains": len({c.coordinate.l1_key for c in selection.selected}),
            "path": MetadataValue.path(str(path)),
        }
    )


@asset_check(
    asset=selected_environment_seeds,
    partitions_def=rounds,
    blocking=True,
    description="No two selected candidates share a summary.",
)
def selected_summaries_unique(context, storage: StorageResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    selected = load_records(
        storage.get().artifact("selected_environment_seeds", context.partition_key), EnvCandidate
    )
    counts = Counter(" ".join(c.summary.lower().split()) for c in selected)
    dupes = [s for s, n in counts.items() if n > 1]
    return AssetCheckResult(
        passed=not dupes, metadata={"duplicate_summaries": len(dupes), "selected": len(selected)}
    )


@asset_check(
    asset=selected_environment_seeds,
    partitions_def=rounds,
    description="Every selected candidate has a valid taxonomy coordinate.",
)
def selected_coordinates_valid(context, storage: StorageResource) -> AssetCheckResult:  # type: ignore[no-untyped-def]
    selected = load_records(
        storage.get().artifact("selected_environment_seeds", context.partition_key), EnvCandidate
    )
    bad = []
    for c in selected:
        try:
            Coordinate.model_validate(c.coordinate.model_dump())
        except ValueError as exc:
            bad.append({"candidate": c.id, "problem": str(exc)[:200]})
    return AssetCheckResult(
        passed=not bad,
        severity=AssetCheckSeverity.ERROR,
        metadata={"invalid": len(bad), "problems": md_table(bad)},
    )
