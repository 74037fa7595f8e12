"""The OmniaBench section: the held-out benchmark, and each policy evaluated in the round."""

from __future__ import annotations

from collections import Counter

from agentomnia.catalog import EVALUATIONS, LEARNING
from agentomnia.omniabench.learning import ALL_ROUTES
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


def learning(r: RoundReader, s: Section) -> None:
    """What the round's checkpoints learned on the benchmark's reference steps, beside the untrained model."""
    if not r.need(s, "learning figures", LEARNING, "report"):
        return
    data = r.artifacts.learning() or {}
    rows = data.get("rows") or []
    s.add(
        pairs(
            {"benchmark tasks probed": data.get("tasks"), "reference steps": data.get("probes")},
            caption="teacher-forced probes on the benchmark's reference trajectories",
        )
    )
    overall = [row for row in rows if row.get("route") == ALL_ROUTES]
    s.add(
        table(
            overall,
            caption="per model, all routes (base = untrained, start = what this round continued from)",
        )
    )
    by_route = [row for row in rows if row.get("route") != ALL_ROUTES]
    if by_route:
        s.add(details("per model and route", table(by_route)))
