"""Environment statistics in the shape of the paper's Table 5, and the histogram behind them."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentomnia.envs.spec import EnvSpec


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 0.0
    return round(statistics.fmean(values), 2), round(statistics.pstdev(values), 2) if len(values) > 1 else 0.0


def environment_stats(specs: Sequence[EnvSpec]) -> dict[str, Any]:
    tools = [len(s.tools) for s in specs]
    entities = [len(s.entities) for s in specs]
    attributes = [s.attribute_count for s in specs]
    per_entity = [len(e.attributes) for s in specs for e in s.entities]
    tm, ts = _mean_std(tools)
    em, es = _mean_std(entities)
    am, as_ = _mean_std(attributes)
    pm, ps = _mean_std(per_entity)
    return {
        "environments": len(specs),
        "l1_covered": len({s.coordinate.l1_key for s in specs}),
        "l2_covered": len({s.coordinate.taxonomy_id for s in specs}),
        "splits": sorted({s.coordinate.split for s in specs}),
        "tools_total": sum(tools),
        "tools_mean": tm,
        "tools_std": ts,
        "entities_mean": em,
        "entities_std": es,
        "attributes_mean": am,
        "attributes_std": as_,
        "attributes_per_entity_mean": pm,
        "attributes_per_entity_std": ps,
        "write_tool_share": round(
            sum(1 for s in specs for t in s.tools if t.kind == "write") / max(1, sum(tools)), 3
        ),
    }


def stats_histogram_png(specs: Sequence[EnvSpec], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    series = [
        ("tools per environment", [len(s.tools) for s in specs]),
        ("entities per environment", [len(s.entities) for s in specs]),
        ("attributes per environment", [s.attribute_count for s in specs]),
    ]
    for ax, (title, values) in zip(axes, series, strict=True):
        ax.hist(values, bins=min(20, max(5, len(set(values)))), color="#4C72B0", edgecolor="white")
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("environments")
    fig.suptitle(f"{len(specs)} verified environments", fontsize=11)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
