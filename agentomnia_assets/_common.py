"""Metadata helpers shared by the stage modules: tables, counts and embedded plots for the UI."""

from __future__ import annotations

import base64
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
from dagster import MetadataValue

from agentomnia.storage import Storage
from agentomnia_assets.instance import DUCKDB_POOL
from agentomnia_assets.partitions import rounds


def md_table(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None, limit: int = 60
) -> MetadataValue:
    """A Markdown table (the UI renders it), truncated to `limit` rows with a note."""
    if not rows:
        return MetadataValue.md("_none_")
    cols = list(columns or rows[0].keys())
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in rows[:limit]:
        cells = [str(row.get(c, "")).replace("|", "\\|").replace("\n", " ") for c in cols]
        lines.append("| " + " | ".join(cells) + " |")
    if len(rows) > limit:
        lines.append(f"\n_{len(rows) - limit} more rows not shown_")
    return MetadataValue.md("\n".join(lines))


def count_table(values: Iterable[Any], label: str) -> MetadataValue:
    counts = Counter(values)
    return md_table(
        [{label: k, "count": v} for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))]
    )


def png(path: Path, title: str = "plot") -> MetadataValue:
    """A PNG shown inline in the asset's metadata (base64 in Markdown)."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return MetadataValue.md(f"![{title}](data:image/png;base64,{data})")


def round_asset(group: str, *, pool: str | None = DUCKDB_POOL, **kwargs: Any) -> Any:
    """`@dg.asset` for one stage of a round: partitioned by round, in `group`, holding the DuckDB
    pool unless `pool=None` (a stage that writes no lineage)."""
    return dg.asset(group_name=group, partitions_def=rounds, pool=pool, **kwargs)


def round_check(asset: Any, *, description: str, blocking: bool = False, **kwargs: Any) -> Any:
    """`@dg.asset_check` on a round asset's partition; `blocking` stops the run when it fails."""
    return dg.asset_check(
        asset=asset, partitions_def=rounds, blocking=blocking, description=description, **kwargs
    )


def llm_usage(context: dg.AssetExecutionContext, store: Storage, model: Any) -> dict[str, Any]:
    """What the stage asked the model (calls, tokens, cache hits, usable and kept answers, fallbacks),
    saved beside its artifact for the run report and returned as metadata; empty in offline mode."""
    from agentomnia.llm.ledger import ledger_of, save_usage

    ledger = ledger_of(model)
    if ledger is None:
        return {}
    stage = context.asset_key.to_user_string()
    path = store.llm_usage_path(stage, context.partition_key)
    save_usage(ledger, path, stage=stage, model=str(getattr(model, "model", "")))
    total = ledger.total()
    return {
        "llm_calls": total.calls,
        "llm_requests": total.requests,
        "llm_cache_hits": total.cache_hits,
        "llm_tokens": total.prompt_tokens + total.completion_tokens,
        "llm_valid_rate": total.valid_rate if total.valid_rate is not None else "n/a",
        "llm_accepted_rate": total.accepted_rate if total.accepted_rate is not None else "n/a",
        "llm_fallbacks": total.fallbacks,
        "llm": md_table(ledger.rows()),
    }
