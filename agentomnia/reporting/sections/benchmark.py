"""The OmniaBench section: the held-out benchmark, and each policy evaluated in the round."""

from __future__ import annotations

from collections import Counter

from agentomnia.catalog import EVALUATIONS
from agentomnia.omniabench.metrics import report as eval_report
from agentomnia.omniabench.service import load_results
from agentomnia.reporting.model import Section
from agentomnia.reporting.reader import RoundReader
from agentomnia.reporting.widgets import details, heading, pairs, table

AXES: tuple[str, ...] = ("route", "split", "challenging", "l1", "capability", "atom")
OPEN_AXES = frozenset({"route", "split"})  # shown unfolded; the finer breakdowns start collapsed


def benchmark(r: RoundReader, s: Section) -> None:
    split = r.catalog.benchmark_split()
    if split is None:
        r.need_path(s, "benchmark split", r.catalog.benchmark_split_path)  # absent: noted as missing
    else:
        s.add(
            pairs(
                {
                    "benchmark": split.id,
                    "items": len(split.items),
                    "challenging items": sum(1 for i in split.items if i.challenging),
                    "items by route": dict(sorted(Counter(i.route for i in split.items).items())),
                },
                caption="the held-out benchmark (built once, shared by every round)",
            )
        )
    results = load_results(r.store, r.key)
    folder = r.artifacts.folder(EVALUATIONS)
    if not results:
        s.lack("evaluation", f"not materialized for this round (no results under {r.rel(folder)})")
        return
    for policy, runs in results.items():
        rep = eval_report(runs)
        parts = [heading(3, f"policy {policy}"), table(rep.rows("overall"), caption=f"overall (k = {rep.k})")]
        for axis in AXES:
            if axis in rep.breakdowns:
                parts.append(details(f"by {axis}", table(rep.rows(axis)), open_=axis in OPEN_AXES))
        s.add("".join(parts))
    for path in r.artifacts.files(EVALUATIONS, "*.png"):
        s.add(r.image(path, path.stem.replace("_", " ")))
