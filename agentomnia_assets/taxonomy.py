"""The `taxonomy` asset: load and validate Domain x Capability x Atomic Difficulty, draw its map."""

import dagster as dg

from agentomnia.catalog import STATIC_ROUND, TAXONOMY
from agentomnia.embeddings import default_embedder
from agentomnia.taxonomy import counts_table, embedding_map_png, load_and_validate, load_taxonomy
from agentomnia_assets._common import md_table, png
from resources import StorageResource


@dg.asset(
    group_name="seeds",
    description=(
        "The full-scenario taxonomy: 354 level-2 domains under 90 level-1 domains (ToC/ToB/ToE, aligned with "
        "OmniaBench ids), each with a domain knowledge base (entities, typed attributes, relations, checkable "
        "rules, operations); the 10 capabilities and the 8 atomic difficulties. Fails if any count, reference "
        "or rule is inconsistent."
    ),
)
def taxonomy(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    summary = load_and_validate(strict=True)
    tax = load_taxonomy()
    out = storage.get().round(STATIC_ROUND).path(TAXONOMY, "map")
    embedding_map_png(out, default_embedder(), taxonomy=tax)
    rows = counts_table(tax)
    total = next(r for r in rows if r["split"] == "all")
    return dg.MaterializeResult(
        metadata={
            "l1_domains": summary.l1,
            "l2_domains": summary.l2,
            "capabilities": summary.capabilities,
            "atoms": summary.atoms,
            "levers": summary.levers,
            "avg_entities_per_l2": round(total["avg_entities"], 2),
            "avg_attributes_per_l2": round(total["avg_attributes"], 2),
            "counts": md_table(rows),
            "embedding_map": png(out, "L2 domains, t-SNE of their descriptions, coloured by split"),
            "embedding_map_path": dg.MetadataValue.path(str(out)),
        }
    )
